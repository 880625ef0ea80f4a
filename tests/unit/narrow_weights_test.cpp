// narrow-weights on tiny graphs: MatMuls and Gemms with constant weights
// become MatMulNarrow nodes on packed bf16 or int8 weights (the printed IR
// shows which), and the graph, interpreted with the runtime kernels, stays
// within the format's rounding of a plain reference loop in double. Products
// the pass must leave alone stay as they were.
#include <catch2/catch.hpp>
#include <cmath>

#include "graph_builder.h"
#include "interpret.h"
#include "ir/conventions.h"
#include "ir/verifier.h"
#include "ir_check.h"
#include "passes/pass_manager.h"

using cgc::testing::checkIr;
using cgc::testing::GraphBuilder;
namespace ir = cgc::ir;
namespace passes = cgc::passes;
namespace rt = cgc::rt;

namespace {

std::vector<float> values(size_t n, float scale, int seed = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(static_cast<int>((i * 7919 + seed * 31) % 23) - 11) / 11.f;
  return v;
}

passes::PassTarget narrowTarget(rt::WeightFormat format) {
  passes::PassTarget target;
  target.narrowWeights = format;
  return target;
}

/// y[i, j] = act(alpha * sum_p x[i, p] w(p, j) + bias[j]) in double, and
/// the bound on the narrow product's error: int8 rounds each weight by at
/// most half its column's step (max |w| / 127); bf16 rounds weights and
/// (the kernel may) activations to 8 significant bits, each product by at
/// most 2^-8 of itself, plus float sums.
struct Expected {
  std::vector<double> y, bound;
};
Expected expected(const std::vector<float>& x, const std::vector<float>& w,
                  const std::vector<float>& bias, int64_t m, int64_t k, int64_t n, bool transposed,
                  double alpha, bool relu, rt::WeightFormat format) {
  auto weight = [&](int64_t p, int64_t j) {
    return alpha * (transposed ? w[j * k + p] : w[p * n + j]);
  };
  Expected e{std::vector<double>(m * n), std::vector<double>(m * n)};
  for (int64_t j = 0; j < n; ++j) {
    double columnMax = 0;
    for (int64_t p = 0; p < k; ++p) columnMax = std::max(columnMax, std::abs(weight(p, j)));
    for (int64_t i = 0; i < m; ++i) {
      double sum = bias.empty() ? 0.0 : bias[j], magnitude = 0, absX = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum += x[i * k + p] * weight(p, j);
        magnitude += std::abs(x[i * k + p] * weight(p, j));
        absX += std::abs(x[i * k + p]);
      }
      e.y[i * n + j] = relu ? std::max(sum, 0.0) : sum;
      e.bound[i * n + j] = (format == rt::WeightFormat::kInt8 ? 0.5 * columnMax / 127 * absX
                                                              : std::ldexp(magnitude, -8)) +
                           1e-5 * (magnitude + 1);
    }
  }
  return e;
}

void requireWithin(const std::vector<float>& actual, const Expected& e) {
  REQUIRE(actual.size() == e.y.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i << ": " << actual[i] << " against " << e.y[i]);
    REQUIRE(std::abs(actual[i] - e.y[i]) <= e.bound[i]);
  }
}

}  // namespace

TEST_CASE("narrow-weights: a MatMul with bias and Relu on int8 and bf16 weights") {
  const int64_t batch = 2, m = 3, k = 40, n = 37;  // n: a panel of 32 and a partial one
  for (auto format : {rt::WeightFormat::kInt8, rt::WeightFormat::kBf16}) {
    const bool int8 = format == rt::WeightFormat::kInt8;
    GraphBuilder b("mm");
    int x = b.input("x", {batch, m, k});
    const auto w = values(k * n, 0.7f), bias = values(n, 0.3f, 5);
    int wv = b.constant("w", {k, n}, w), bv = b.constant("bias", {n}, bias);
    int y = b.node("MatMul", "mm", {x, wv, bv}, {batch, m, n},
                   {{ir::conventions::kActivation, std::string("Relu")}});
    b.output(y, "y");
    REQUIRE(passes::narrowWeights(b.graph, narrowTarget(format)));
    ir::verifyGraph(b.graph);
    const std::string packed = int8 ? "w_int8" : "w_bf16";
    checkIr(b.graph,
            {int8 ? "%w_int8 = constant uint8[2560]" : "%w_bf16 = constant uint8[5120]",
             int8 ? "%w_int8_scale = constant float32[37]" : "NOT: _scale",
             "mm = MatMulNarrow(%x, %" + packed + ", " + (int8 ? "%w_int8_scale" : "none") +
                 ", %bias) -> %mm_out float32[2,3,37]",
             "SAME: cgc_activation = \"Relu\"",
             std::string("SAME: cgc_weight_format = ") + (int8 ? "1" : "0"), "NOT: MatMul("});
    const auto input = values(batch * m * k, 1.f, 3);
    requireWithin(cgc::testing::interpret(b.graph, input),
                  expected(input, w, bias, batch * m, k, n, false, 1.0, true, format));
    CHECK_FALSE(passes::narrowWeights(b.graph, narrowTarget(format)));  // nothing left
  }
}

TEST_CASE("narrow-weights: a Gemm's transB, alpha and beta * C folded into the weights") {
  const int64_t m = 4, k = 9, n = 40;
  GraphBuilder b("gemm");
  int x = b.input("x", {m, k});
  const auto w = values(n * k, 1.3f), c = values(n, 0.9f, 7);
  int wv = b.constant("w", {n, k}, w), cv = b.constant("c", {1, n}, c);
  int y = b.node("Gemm", "fc", {x, wv, cv}, {m, n},
                 {{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
  b.output(y, "y");
  REQUIRE(passes::narrowWeights(b.graph, narrowTarget(rt::WeightFormat::kInt8)));
  ir::verifyGraph(b.graph);
  checkIr(b.graph,
          {"%c_bias = constant float32[40]",
           "fc = MatMulNarrow(%x, %w_int8, %w_int8_scale, %c_bias) -> %fc_out float32[4,40]",
           "NOT: transB", "NOT: Gemm"});
  std::vector<float> bias(n);
  for (int64_t j = 0; j < n; ++j) bias[j] = 2.0f * c[j];
  const auto input = values(m * k, 1.f, 11);
  requireWithin(cgc::testing::interpret(b.graph, input),
                expected(input, w, bias, m, k, n, true, 0.5, false, rt::WeightFormat::kInt8));
}

TEST_CASE("narrow-weights: weights read by two products are packed once") {
  GraphBuilder b("shared");
  int x = b.input("x", {2, 8});
  int wv = b.constant("w", {8, 40}, values(320, 1.f));
  int y1 = b.node("MatMul", "first", {x, wv}, {2, 40});
  int y2 = b.node("MatMul", "second", {x, wv}, {2, 40});
  b.output(y1, "y1");
  b.output(y2, "y2");
  REQUIRE(passes::narrowWeights(b.graph, narrowTarget(rt::WeightFormat::kBf16)));
  checkIr(b.graph, {"%w_bf16 = constant uint8[", "NOT: %w_bf16_1",
                    "first = MatMulNarrow(%x, %w_bf16, none, none)",
                    "second = MatMulNarrow(%x, %w_bf16, none, none)"});
}

TEST_CASE("narrow-weights leaves what it cannot or was not asked to narrow") {
  GraphBuilder b("kept");
  int x = b.input("x", {3, 8});
  int other = b.node("Relu", "other", {x}, {3, 8});
  int wv = b.constant("w", {8, 40}, values(320, 1.f));
  int cRows = b.constant("c_rows", {3, 40}, values(120, 1.f));
  int w3 = b.constant("w3", {3, 40}, values(120, 1.f));
  // B computed at run time; C of one value per row; transA; named in
  // keepFloatWeights (each B wide enough that packing it would save bytes).
  int y1 = b.node("MatMul", "dynamic_b", {x, other}, {3, 8});
  int y2 = b.node("Gemm", "row_bias", {x, wv, cRows}, {3, 40});
  int y3 = b.node("Gemm", "trans_a", {other, w3}, {8, 40}, {{"transA", int64_t{1}}});
  int y4 = b.node("MatMul", "kept_float", {x, wv}, {3, 40});
  for (int y : {y1, y2, y3, y4}) b.output(y, b.graph.value(y).name + "_y");
  passes::PassTarget target = narrowTarget(rt::WeightFormat::kInt8);
  target.keepFloatWeights = {"kept_float"};
  CHECK_FALSE(passes::narrowWeights(b.graph, target));
  CHECK(b.graph.countOps("MatMulNarrow") == 0);
  CHECK_FALSE(passes::narrowWeights(b.graph, {}));  // not asked: float
  CHECK_FALSE(passes::passForTarget("narrow-weights", {}));
  CHECK(passes::passForTarget("narrow-weights", target));
}

TEST_CASE("narrow-weights keeps a B in float where its packing takes more bytes") {
  // [64, 10]: 2560 bytes in float; bf16 pads the 10 columns to a panel of
  // 32 (4096 bytes), int8 too but at a byte each (2048 bytes).
  for (auto format : {rt::WeightFormat::kBf16, rt::WeightFormat::kInt8}) {
    GraphBuilder b("head");
    int x = b.input("x", {2, 64});
    int wv = b.constant("w", {64, 10}, values(640, 1.f));
    b.output(b.node("MatMul", "head", {x, wv}, {2, 10}), "y");
    const bool saves = format == rt::WeightFormat::kInt8;
    CHECK(passes::narrowWeights(b.graph, narrowTarget(format)) == saves);
    checkIr(b.graph, {saves ? "head = MatMulNarrow(" : "head = MatMul("});
  }
}
