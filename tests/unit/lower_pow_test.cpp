// Pow by a constant exponent: lowered to the unary kPowConstant (multiplies,
// sqrt and division for the common exponents) where the exponent is one
// float value and the base is float or double; left to the binary kernel
// (std::pow) otherwise. Each graph, interpreted with the runtime kernels,
// gives std::pow's values, special cases included.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>

#include "graph_builder.h"
#include "interpret.h"
#include "ir/printer.h"
#include "lowering/kernel_call.h"

using cgc::DType;
using cgc::testing::GraphBuilder;
namespace ir = cgc::ir;
namespace lowering = cgc::lowering;
namespace rt = cgc::rt;

namespace {

const float kExponents[] = {1, 2, 3, 4, 0.5f, -1, -0.5f, 1.5f, -2};

/// y = Pow(x, exponent), x float[n] (or `type`), the exponent a constant of
/// `shape` holding `values` (the base's type), or a graph input when
/// `values` is empty.
GraphBuilder powGraph(ir::Shape x, ir::Shape shape, const std::vector<double>& values,
                      ir::Shape out, DType type = DType::kF32) {
  GraphBuilder b("pow");
  const int in = b.input("x", x, type);
  int e;
  if (values.empty()) {
    e = b.input("e", shape, type);
  } else {
    std::vector<uint8_t> bytes(values.size() * cgc::dtypeSize(type));
    rt::cast({DType::kF64, type, static_cast<int64_t>(values.size())}, values.data(), bytes.data());
    e = b.graph.addConstant("e", {type, shape}, std::move(bytes));
  }
  b.output(b.node("Pow", "pow", {in, e}, std::move(out), {}, type), "y");
  return b;
}

/// The Pow node's call, described: "unary<float> kPowConstant 2 (x)".
std::string describe(const ir::Graph& g, const lowering::KernelCall& call) {
  std::string text = lowering::kernelFunction(call);
  if (call.kernel == lowering::Kernel::kUnary) {
    const auto& p = call.get<rt::UnaryParams>();
    text += fmt::format(" {} {}", rt::enumName(p.op), p.alpha);
  }
  for (int in : call.inputs) text += " %" + g.value(in).name;
  return text;
}

std::string lowerPow(const ir::Graph& g) {
  const ir::Node& pow = g.node(g.value(g.outputs[0]).producer);
  return describe(g, lowering::lowerNode(g, pow));
}

}  // namespace

TEST_CASE("Pow by a constant exponent lowers to the unary kPowConstant") {
  for (float e : kExponents) {
    GraphBuilder b = powGraph({2, 3}, {}, {e}, {2, 3});
    INFO("the IR:\n" << ir::printGraph(b.graph));
    CHECK(lowerPow(b.graph) == fmt::format("unary<float> kPowConstant {} %x", e));
  }
  SECTION("a tensor of one value, and double") {
    GraphBuilder tensor = powGraph({2, 3}, {1, 3}, {2, 2, 2}, {2, 3});
    INFO("the IR:\n" << ir::printGraph(tensor.graph));
    CHECK(lowerPow(tensor.graph) == "unary<float> kPowConstant 2 %x");
    GraphBuilder f64 = powGraph({4}, {}, {0.5}, {4}, DType::kF64);
    INFO("the IR:\n" << ir::printGraph(f64.graph));
    CHECK(lowerPow(f64.graph) == "unary<double> kPowConstant 0.5 %x");
  }
}

TEST_CASE("Pow stays binary for integers, run-time, mixed and widening exponents") {
  struct Case {
    const char* what;
    GraphBuilder graph;
  };
  Case cases[] = {
      {"int32 base", powGraph({4}, {}, {2}, {4}, DType::kI32)},
      {"int64 base", powGraph({4}, {}, {3}, {4}, DType::kI64)},
      {"exponent read at run time", powGraph({4}, {}, {}, {4})},
      {"exponents that differ", powGraph({2, 3}, {3}, {2, 3, 2}, {2, 3})},
      {"exponent that broadcasts the base", powGraph({3}, {2, 3}, {2, 2, 2, 2, 2, 2}, {2, 3})},
      {"double exponent float does not hold", powGraph({4}, {}, {0.1}, {4}, DType::kF64)},
  };
  for (const Case& c : cases) {
    INFO(c.what << ", the IR:\n" << ir::printGraph(c.graph.graph));
    CHECK(lowerPow(c.graph.graph).rfind("binary<", 0) == 0);
  }
}

TEST_CASE("Pow by a constant exponent gives std::pow's values") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0.0f,   -0.0f,  1.0f,    -1.0f, 2.0f,   -2.0f,  0.3f, -0.3f, 7.25f,
                                -7.25f, 1e-20f, -1e-20f, 1e20f, -1e20f, 3e-39f, inf,  -inf,  nan};
  for (float e : kExponents) {
    GraphBuilder b = powGraph({static_cast<int64_t>(x.size())}, {}, {e}, {int64_t(x.size())});
    const std::vector<float> y = cgc::testing::interpret(b.graph, x);
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = std::pow(x[i], e);
      INFO(fmt::format("{}^{}: std::pow {}, got {}; the call {}", x[i], e, want, y[i],
                       lowerPow(b.graph)));
      if (std::isnan(want)) {
        CHECK(std::isnan(y[i]));
      } else if (want == 0 || std::isinf(want)) {
        CHECK(y[i] == want);
        CHECK(std::signbit(y[i]) == std::signbit(want));
      } else {
        // Two roundings at most (x * x * x, 1 / sqrt(x)): within 2 ulp.
        CHECK(std::fabs(y[i] - want) <=
              2 * std::fabs(want) * std::numeric_limits<float>::epsilon());
      }
    }
  }
}
