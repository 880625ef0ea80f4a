// fuse-matmuls on tiny graphs: three products sharing a left operand become
// one wide product plus Slices, and the graph, interpreted with the runtime
// kernels, still computes what a plain reference loop computes.
#include <catch2/catch.hpp>
#include <cstring>
#include <map>

#include "graph_builder.h"
#include "interpret.h"
#include "ir/verifier.h"
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

using cgc::testing::GraphBuilder;
namespace ir = cgc::ir;
namespace passes = cgc::passes;

namespace {

std::vector<float> values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(static_cast<int>((i * 7919) % 23) - 11) / 11.f;
  return v;
}

/// y[m, n] = sum_k x[m, k] w[k, n] (+ bias[n]); `transposed` reads w as [n, k].
std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& bias, int64_t m, int64_t k, int64_t n,
                             bool transposed) {
  std::vector<float> y(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = bias.empty() ? 0.0 : bias[j];
      for (int64_t p = 0; p < k; ++p)
        s += x[i * k + p] * (transposed ? w[j * k + p] : w[p * n + j]);
      y[i * n + j] = static_cast<float>(s);
    }
  return y;
}

void requireNear(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == Approx(b[i]).margin(1e-5));
}

}  // namespace

TEST_CASE("fuse-matmuls joins MatMuls that share their left operand") {
  const int64_t batch = 2, m = 3, k = 5;
  const int64_t ns[] = {4, 7, 1};
  GraphBuilder b("mm");
  int x = b.input("x", {batch, m, k});
  std::vector<std::vector<float>> ws;
  const char* names[] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) {
    std::string name = names[i];
    ws.push_back(values(k * ns[i], 0.5f + i));
    int w = b.constant(name + "_w", {k, ns[i]}, ws.back());
    int y = b.node("MatMul", name + "_mm", {x, w}, {batch, m, ns[i]});
    b.output(b.node("Relu", name + "_relu", {y}, {batch, m, ns[i]}), name + "_y");
  }
  std::vector<float> input = values(batch * m * k, 1.f);
  REQUIRE(passes::fuseMatMuls(b.graph));
  ir::verifyGraph(b.graph);
  CHECK(b.graph.countOps("MatMul") == 1);
  CHECK(b.graph.countOps("Slice") == 3);
  auto outputs = cgc::testing::interpretAll(b.graph, input);
  for (int i = 0; i < 3; ++i) {
    auto expected = reference(input, ws[i], {}, batch * m, k, ns[i], false);
    for (auto& v : expected) v = std::max(v, 0.f);
    requireNear(outputs[i], expected);
  }
  CHECK_FALSE(passes::fuseMatMuls(b.graph));  // nothing left to fuse
}

TEST_CASE("fuse-matmuls joins Gemms with transB and per-column biases") {
  const int64_t m = 3, k = 6;
  GraphBuilder b("gemm");
  int x = b.input("x", {m, k});
  std::vector<float> w0 = values(k * 5, 1.f), w1 = values(4 * k, 2.f);
  std::vector<float> c0 = values(5, 3.f);
  int y0 =
      b.node("Gemm", "g0", {x, b.constant("w0", {k, 5}, w0), b.constant("c0", {5}, c0)}, {m, 5});
  int y1 =
      b.node("Gemm", "g1", {x, b.constant("w1", {4, k}, w1)}, {m, 4}, {{"transB", int64_t{1}}});
  // Not fusable: alpha scales the product.
  int y2 = b.node("Gemm", "g2", {x, b.constant("w2", {k, 2}, values(k * 2, 1.f))}, {m, 2},
                  {{"alpha", 2.0}});
  b.output(y0, "y0");
  b.output(y1, "y1");
  b.output(y2, "y2");
  std::vector<float> input = values(m * k, 1.f);
  REQUIRE(passes::fuseMatMuls(b.graph));
  ir::verifyGraph(b.graph);
  CHECK(b.graph.countOps("Gemm") == 2);
  auto outputs = cgc::testing::interpretAll(b.graph, input);
  requireNear(outputs[0], reference(input, w0, c0, m, k, 5, false));
  requireNear(outputs[1], reference(input, w1, {}, m, k, 4, true));
}

TEST_CASE("fuse-matmuls leaves a lone MatMul and non-constant weights alone") {
  GraphBuilder b("lone");
  int x = b.input("x", {2, 3});
  int w = b.input("w", {3, 4});
  int y0 = b.node("MatMul", "a", {x, w}, {2, 4});
  int y1 = b.node("MatMul", "b", {x, b.constant("c", {3, 2}, values(6, 1.f))}, {2, 2});
  b.output(y0, "y0");
  b.output(y1, "y1");
  CHECK_FALSE(passes::fuseMatMuls(b.graph));
}

TEST_CASE("fuse-matmuls keeps each fused output within the cache-sized bound") {
  // Eight [256, 16] x [16, 256] products: 256 KB each, so four fit 1 MB.
  const int64_t m = 256, k = 16, n = 256;
  GraphBuilder b("wide");
  int x = b.input("x", {m, k});
  for (int i = 0; i < 8; ++i) {
    std::string name = "p";
    name += std::to_string(i);
    int w = b.constant(name + "_w", {k, n}, values(k * n, 1.f));
    b.output(b.node("MatMul", name, {x, w}, {m, n}), name + "_y");
  }
  REQUIRE(passes::fuseMatMuls(b.graph));
  ir::verifyGraph(b.graph);
  CHECK(b.graph.countOps("MatMul") == 2);
  CHECK(b.graph.countOps("Slice") == 8);
}

TEST_CASE("fuse-matmuls shares the fused weights of groups made of the same constants") {
  // Two steps of an unrolled cell: each step's input times the same W1, W2.
  const int64_t m = 2, k = 3, n = 4;
  GraphBuilder b("steps");
  int w1 = b.constant("w1", {k, n}, values(k * n, 1.f));
  int w2 = b.constant("w2", {k, n}, values(k * n, 2.f));
  for (int step = 0; step < 2; ++step) {
    std::string s = "s";
    s += std::to_string(step);
    int x = b.input(s + "_x", {m, k});
    b.output(b.node("MatMul", s + "_a", {x, w1}, {m, n}), s + "_a_y");
    b.output(b.node("MatMul", s + "_b", {x, w2}, {m, n}), s + "_b_y");
  }
  REQUIRE(passes::fuseMatMuls(b.graph));
  ir::verifyGraph(b.graph);
  std::vector<int> fusedWeights;
  for (int id : b.graph.liveNodes())
    if (b.graph.node(id).op == "MatMul") fusedWeights.push_back(b.graph.node(id).inputs[1]);
  REQUIRE(fusedWeights.size() == 2);
  CHECK(fusedWeights[0] == fusedWeights[1]);
}
