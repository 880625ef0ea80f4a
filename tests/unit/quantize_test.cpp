// The quantize pass on a tiny float CNN: the QDQ graph it writes (checkIr),
// its weights' range per target (7-bit for AVX2 without VNNI), and, after
// fuse-quantized, the int8 graph interpreted with the runtime's kernels
// against the float one; and a table (QLinearLookup) for the elementwise
// step between two int8 layers.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <memory>

#include "graph_builder.h"
#include "interpret.h"
#include "ir/verifier.h"
#include "ir_check.h"
#include "passes/pass_manager.h"

using cgc::DType;
using cgc::testing::checkIr;
using cgc::testing::GraphBuilder;
using cgc::testing::interpret;
namespace ir = cgc::ir;
namespace passes = cgc::passes;

namespace {

using Attrs = std::map<std::string, ir::Attribute>;

std::vector<float> wave(size_t n, float amplitude, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = amplitude * std::sin(step * static_cast<float>(i));
  return v;
}

/// x -> Conv -> Relu -> Conv -> HardSigmoid * 0.5 -> Conv -> Sigmoid -> y, and the
/// calibrated ranges of the activations between them.
GraphBuilder floatCnn(std::map<std::string, std::pair<float, float>>& ranges) {
  GraphBuilder b("cnn");
  const Attrs window = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                        {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                        {"strides", std::vector<int64_t>{1, 1}},
                        {"dilations", std::vector<int64_t>{1, 1}},
                        {"group", int64_t{1}}};
  const ir::Shape shape = {1, 4, 6, 6};
  int x = b.input("x", shape);
  for (const char* layer : {"c1", "c2", "c3"}) {
    const int w = b.constant(std::string(layer) + "_w", {4, 4, 3, 3}, wave(144, 0.3f, 0.71f));
    const int bias = b.constant(std::string(layer) + "_b", {4}, {0.1f, -0.2f, 0.05f, 0.3f});
    x = b.node("Conv", layer, {x, w, bias}, shape, window);
  }
  // The graph as built: c1 -> c2 -> c3; put the steps between them.
  ir::Graph& g = b.graph;
  const int c1 = g.node(0).outputs[0], c2 = g.node(1).outputs[0];
  const int relu = b.node("Relu", "relu", {c1}, shape);
  g.node(1).inputs[0] = relu;
  const int hard = b.node("HardSigmoid", "hard", {c2}, shape, {{"alpha", 0.2}, {"beta", 0.5}});
  const int half = b.node("Mul", "half", {hard, b.constant("half_k", {}, {0.5f})}, shape);
  g.node(2).inputs[0] = half;
  // A layer that writes a graph output stays float: c3 feeds a Sigmoid.
  b.output(b.node("Sigmoid", "sigmoid", {g.node(2).outputs[0]}, shape), "y");
  ranges = {{"x", {-1, 1}},
            {"relu_out", {0, 3}},
            {"c2_out", {-4, 4}},
            {"half_out", {0, 0.5f}},
            {"c3_out", {-3, 3}}};
  return b;
}

}  // namespace

TEST_CASE("quantize: a float CNN becomes QDQ, then int8 layers and a table") {
  auto spec = std::make_shared<passes::QuantizeSpec>();
  GraphBuilder b = floatCnn(spec->ranges);
  ir::verifyGraph(b.graph);
  const auto x0 = wave(144, 0.9f, 0.37f);
  const auto before = interpret(b.graph, x0);

  for (const char* tier : {"avx2", "vnni"}) {
    INFO("tier " << tier);
    ir::Graph g = b.graph;
    passes::PassTarget target{.tier = tier, .quantize = spec};
    REQUIRE(passes::quantize(g, target));
    ir::verifyGraph(g);
    checkIr(g, {"x_QuantizeLinear = QuantizeLinear(%x, %x_scale, %x_zero_point)"});
    checkIr(g, {"c1_w_DequantizeLinear = DequantizeLinear(%c1_w_int8, %c1_w_scale, none)",
                "SAME: per_axis = 1"});
    checkIr(g, {"c1_b_DequantizeLinear = DequantizeLinear(%c1_b_int32,"});
    checkIr(g, {"relu_out_QuantizeLinear = QuantizeLinear(%relu_out,"});
    // c3's output goes to a Sigmoid and the graph output: it stays float.
    checkIr(g, {"NOT: c3_out_QuantizeLinear"});
    int8_t largest = 0;
    for (int v = 0; v < g.numValues(); ++v)
      if (g.value(v).name == "c1_w_int8")
        for (int64_t i = 0; i < g.value(v).type.numElements(); ++i)
          largest = std::max<int8_t>(largest, std::abs(g.value(v).dataAs<int8_t>()[i]));
    CHECK(largest == (std::string(tier) == "avx2" ? 63 : 127));

    REQUIRE(passes::fuseQuantized(g, target));
    passes::eliminateDeadCode(g);
    ir::verifyGraph(g);
    checkIr(g, {"c1 = QLinearConv(%x_quantized,", "c2 = QLinearConv(%relu_out_quantized,",
                "half = QLinearLookup(%c2_out_quantized, %half_out_QuantizeLinear_table)",
                "c3 = QLinearConv(%half_out_quantized,", "NOT: HardSigmoid", "NOT: Mul("});
    const auto after = interpret(g, x0);
    REQUIRE(after.size() == before.size());
    double diff = 0, power = 0;
    for (size_t i = 0; i < after.size(); ++i)
      diff += (after[i] - before[i]) * (after[i] - before[i]), power += before[i] * before[i];
    CHECK(std::sqrt(diff / power) < 0.05);
  }
}

TEST_CASE("quantize: a node kept float, and a graph without a spec, stay as they are") {
  auto spec = std::make_shared<passes::QuantizeSpec>();
  GraphBuilder b = floatCnn(spec->ranges);
  spec->keepFloat = {"c2"};
  ir::Graph g = b.graph;
  REQUIRE(passes::quantize(g, {.quantize = spec}));
  passes::fuseQuantized(g, {});
  passes::eliminateDeadCode(g);
  checkIr(g, {"c1 = QLinearConv(", "c2 = Conv(", "c3 = QLinearConv("});
  // No int8 op reads c1's output now: it is not rounded to 8 bits.
  checkIr(g,
          {"c1 = QLinearConv(%x_quantized,", "SAME: -> %c1_sums int32", "NOT: relu_out_quantized"});
  ir::Graph untouched = b.graph;
  CHECK_FALSE(passes::quantize(untouched, {}));
}

TEST_CASE("quantize: a layer that writes a graph output reads int8 and keeps a float output") {
  auto spec = std::make_shared<passes::QuantizeSpec>();
  GraphBuilder b("head");
  const int x = b.input("x", {2, 16});
  const int w = b.constant("fc_w", {16, 10}, wave(160, 0.4f, 0.53f));
  const int y = b.node("MatMul", "fc", {x, w}, {2, 10});
  b.output(b.node("Add", "fc_bias", {y, b.constant("fc_b", {10}, wave(10, 0.2f, 1.1f))}, {2, 10}),
           "y");
  spec->ranges = {{"x", {-1, 1}}, {"fc_bias_out", {-2, 2}}};
  ir::verifyGraph(b.graph);
  const auto x0 = wave(32, 0.9f, 0.37f);
  const auto before = interpret(b.graph, x0);
  ir::Graph g = b.graph;
  REQUIRE(passes::quantize(g, {.tier = "vnni", .quantize = spec}));
  ir::verifyGraph(g);
  checkIr(g, {"x_QuantizeLinear = QuantizeLinear(%x, %x_scale, %x_zero_point)",
              "NOT: fc_bias_out_QuantizeLinear"});
  REQUIRE(passes::fuseQuantized(g, {}));
  passes::eliminateDeadCode(g);
  ir::verifyGraph(g);
  checkIr(g, {"fc = QLinearMatMul(%x_quantized,", "SAME: -> %fc_sums int32[2,10]",
              "fc_sums_DequantizeLinear = DequantizeLinear(%fc_sums, %fc_sums_scale, none) -> "
              "%fc_bias_out float32[2,10]"});
  const auto after = interpret(g, x0);
  double diff = 0, power = 0;
  for (size_t i = 0; i < after.size(); ++i)
    diff += (after[i] - before[i]) * (after[i] - before[i]), power += before[i] * before[i];
  CHECK(std::sqrt(diff / power) < 0.02);
}
