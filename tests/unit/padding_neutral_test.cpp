// passes::paddingNeutral: each case builds a tiny graph at a bucket's bound
// and at a smaller size (as the importer would make them) and checks the
// verdict: neutral where every output position below the size reads only
// input positions below it along the dimension, else the node that mixes
// them, named. A failure prints both graphs.
#include "passes/padding_neutral.h"

#include <catch2/catch.hpp>
#include <functional>

#include "graph_builder.h"
#include "ir/printer.h"

using cgc::testing::GraphBuilder;
namespace ir = cgc::ir;

namespace {

/// The verdict on `build` at sizes 4 (the bound) and 3, the graphs printed
/// for a failure.
std::string verdict(const std::function<GraphBuilder(int64_t)>& build) {
  const GraphBuilder bound = build(4), smaller = build(3);
  INFO("at the bound:\n"
       << ir::printGraph(bound.graph) << "smaller:\n"
       << ir::printGraph(smaller.graph));
  return cgc::passes::paddingNeutral(bound.graph, smaller.graph).str();
}

std::vector<float> iota(size_t n, float scale = 1) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale;
  return v;
}

}  // namespace

TEST_CASE("padding-neutral: rows of a product, an activation and a Softmax over the features") {
  CHECK(verdict([](int64_t b) {
          GraphBuilder g("rows");
          const int x = g.input("x", {b, 6});
          const int w = g.constant("w", {6, 5}, iota(30));
          const int y = g.node("MatMul", "mm", {x, w}, {b, 5});
          const int r = g.node("Relu", "relu", {y}, {b, 5});
          g.output(g.node("Softmax", "sm", {r}, {b, 5}, {{"axis", int64_t{-1}}}), "out");
          return g;
        }) == "neutral");
}

TEST_CASE("padding-neutral: a Softmax along the dimension mixes positions") {
  CHECK(
      verdict([](int64_t s) {
        GraphBuilder g("softmax");
        const int x = g.input("x", {2, s, 8});
        const int r = g.node("Relu", "relu", {x}, {2, s, 8});
        g.output(g.node("Softmax", "/attn/Softmax", {r}, {2, s, 8}, {{"axis", int64_t{1}}}), "out");
        return g;
      }) == "'/attn/Softmax' (Softmax) normalizes along it");
}

TEST_CASE("padding-neutral: a product that sums along the dimension mixes positions") {
  CHECK(
      verdict([](int64_t s) {
        GraphBuilder g("scores");
        const int x = g.input("x", {3, s});
        const int t = g.node("Transpose", "t", {x}, {s, 3}, {{"perm", std::vector<int64_t>{1, 0}}});
        g.output(g.node("MatMul", "gram", {x, t}, {3, 3}), "out");
        return g;
      }) == "'gram' (MatMul) sums products along it");
}

TEST_CASE("padding-neutral: a Reshape keeps the axis whole, or merges it") {
  CHECK(verdict([](int64_t b) {
          GraphBuilder g("flatten");
          const int x = g.input("x", {b, 4, 6});
          g.output(g.node("Reshape", "r", {x}, {b, 24}), "out");
          return g;
        }) == "neutral");
  CHECK(verdict([](int64_t b) {
          GraphBuilder g("merge");
          const int x = g.input("x", {b, 4, 6});
          g.output(g.node("Reshape", "r", {x}, {b * 4, 6}), "out");
          return g;
        }) == "'r' (Reshape) merges or splits the axis with another");
}

TEST_CASE("padding-neutral: a constant that follows the size must be a leading block") {
  // A position table sliced by the size: row k holds k at every size.
  CHECK(verdict([](int64_t s) {
          GraphBuilder g("positions");
          const int x = g.input("x", {s, 2});
          const int pos = g.constant("pos", {s, 2}, iota(static_cast<size_t>(s) * 2));
          g.output(g.node("Add", "add", {x, pos}, {s, 2}), "out");
          return g;
        }) == "neutral");
  // Positions scaled by the size (k / s) differ at every row.
  CHECK(verdict([](int64_t s) {
          GraphBuilder g("scaled");
          const int x = g.input("x", {s, 2});
          const int pos = g.constant(
              "pos", {s, 2}, iota(static_cast<size_t>(s) * 2, 1.0f / static_cast<float>(s)));
          g.output(g.node("Add", "add", {x, pos}, {s, 2}), "out");
          return g;
        }) == "'add' (Add) reads 'pos', a constant computed from the size");
}

TEST_CASE("padding-neutral: reductions over other axes keep positions apart") {
  CHECK(verdict([](int64_t b) {
          GraphBuilder g("mean");
          const int x = g.input("x", {b, 8});
          g.output(g.node("ReduceMean", "mean", {x}, {b, 1},
                          {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{1}}}),
                   "out");
          return g;
        }) == "neutral");
  CHECK(verdict([](int64_t b) {
          GraphBuilder g("batch_mean");
          const int x = g.input("x", {b, 8});
          g.output(g.node("ReduceMean", "mean", {x}, {1, 8},
                          {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{1}}}),
                   "out");
          return g;
        }) == "'mean' (ReduceMean) reduces along it");
}

TEST_CASE("padding-neutral: a convolution over a batch, not over its plane") {
  auto conv = [](bool batch) {
    return [batch](int64_t n) {
      GraphBuilder g("conv");
      const int64_t b = batch ? n : 1, h = batch ? 8 : n + 4;
      const int x = g.input("x", {b, 2, h, 8});
      const int w = g.constant("w", {3, 2, 3, 3}, iota(54));
      g.output(g.node("Conv", "conv", {x, w}, {b, 3, h - 2, 6},
                      {{"kernel_shape", std::vector<int64_t>{3, 3}}}),
               "out");
      return g;
    };
  };
  CHECK(verdict(conv(true)) == "neutral");
  CHECK(verdict(conv(false)) == "'conv' (Conv) sums a window or channels along it");
}
