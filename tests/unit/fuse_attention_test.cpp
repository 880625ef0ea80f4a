// fuse-attention on tiny graphs: attention as PyTorch exports it (MatMul of q
// and a transposed K, a scale, a mask, Softmax, MatMul by V) becomes one
// FusedAttention node (the printed IR shows it), and the graph interpreted
// with the runtime kernels gives what the unfused graph gave. Graphs that
// only look like it stay as they were.
#include <catch2/catch.hpp>

#include "graph_builder.h"
#include "interpret.h"
#include "ir/printer.h"
#include "ir_check.h"
#include "passes/pass_manager.h"

using cgc::testing::checkIr;
using cgc::testing::GraphBuilder;
namespace ir = cgc::ir;
namespace passes = cgc::passes;

namespace {

constexpr int64_t kHeads = 2, kKeys = 5, kDepth = 8;

std::vector<float> values(size_t n, float scale, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(static_cast<int>((i * 7919 + seed * 31) % 23) - 11) / 11.f;
  return v;
}

int boolConstant(GraphBuilder& b, const std::string& name, ir::Shape shape,
                 std::vector<uint8_t> bytes) {
  return b.graph.addConstant(name, {cgc::DType::kBool, std::move(shape)}, std::move(bytes));
}

enum class Mask { kNone, kAdd, kWhere, kWhereSwapped };

struct Options {
  int64_t rows = 1;
  Mask mask = Mask::kWhere;
  std::vector<int64_t> perm{0, 1, 3, 2};
  int64_t softmaxAxis = 3;
  bool scoresAreOutput = false;
};

/// x [1, heads, keys, depth] is both K and (through Exp) V; q is a
/// constant of `rows` rows. The decoder's form: MatMul -> Div -> Where ->
/// Softmax -> MatMul.
GraphBuilder attention(const Options& o) {
  GraphBuilder b("attention");
  const int64_t rows = o.rows;
  int x = b.input("x", {1, kHeads, kKeys, kDepth});
  int q = b.constant("q", {1, kHeads, rows, kDepth}, values(kHeads * rows * kDepth, 2.f, 1));
  int v = b.node("Exp", "v", {x}, {1, kHeads, kKeys, kDepth});
  ir::Shape ktShape{1, kHeads, kDepth, kKeys};
  if (o.perm != std::vector<int64_t>{0, 1, 3, 2}) ktShape = {1, kDepth, kHeads, kKeys};
  int kt = b.node("Transpose", "kt", {x}, ktShape, {{"perm", o.perm}});
  int scores = b.node("MatMul", "scores", {q, kt}, {1, kHeads, rows, kKeys});
  int root = b.constant("root", {}, {2.8284271f});
  int scaled = b.node("Div", "div", {scores, root}, {1, kHeads, rows, kKeys});
  int masked = scaled;
  if (o.mask == Mask::kAdd) {
    int mask = b.constant("mask", {1, 1, rows, kKeys}, values(rows * kKeys, 3.f, 2));
    masked = b.node("Add", "add", {mask, scaled}, {1, kHeads, rows, kKeys});
  } else if (o.mask != Mask::kNone) {
    // Where(causal, fill, scores), or Where(!causal, scores, fill).
    const bool swapped = o.mask == Mask::kWhereSwapped;
    std::vector<uint8_t> condition(static_cast<size_t>(rows * kKeys));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < kKeys; ++j)
        condition[i * kKeys + j] = (j > kKeys - rows + i) != swapped;
    int cond = boolConstant(b, "causal", {1, 1, rows, kKeys}, condition);
    int fill = b.constant("fill", {}, {-1e30f});
    masked = b.node("Where", "where", {cond, swapped ? scaled : fill, swapped ? fill : scaled},
                    {1, kHeads, rows, kKeys});
  }
  int p =
      b.node("Softmax", "softmax", {masked}, {1, kHeads, rows, kKeys}, {{"axis", o.softmaxAxis}});
  int y = b.node("MatMul", "y", {p, v}, {1, kHeads, rows, kDepth});
  b.output(y, "y");
  if (o.scoresAreOutput) b.output(scaled, "scores");
  return b;
}

void requireFusedMatches(const Options& o, const std::vector<std::string>& expectedIr) {
  GraphBuilder b = attention(o);
  const auto x = values(kHeads * kKeys * kDepth, 1.f, 3);
  const auto before = cgc::testing::interpretAll(b.graph, x);
  REQUIRE(passes::fuseAttention(b.graph));
  passes::eliminateDeadCode(b.graph);
  checkIr(b.graph, expectedIr);
  const auto after = cgc::testing::interpretAll(b.graph, x);
  INFO(ir::printGraph(b.graph));
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after[0].size(); ++i) {
    INFO("element " << i);
    CHECK(after[0][i] == Approx(before[0][i]).epsilon(1e-5).margin(1e-6));
  }
}

void requireUntouched(const Options& o) {
  GraphBuilder b = attention(o);
  const std::string before = ir::printGraph(b.graph);
  CHECK_FALSE(passes::fuseAttention(b.graph));
  CHECK(ir::printGraph(b.graph) == before);
}

}  // namespace

TEST_CASE("fuse-attention: a decoder's one-token attention with a causal Where") {
  requireFusedMatches(
      {}, {"scores/FuseAttention = FusedAttention(%q, %x, %v_out, none, %causal)",
           "SAME: -> %y_out float32[1,2,1,8]", "SAME: fill = -1.00000001", "SAME: fill_when = 1",
           "SAME: scale = 0.35355", "NOT: Transpose", "NOT: Softmax"});
}

TEST_CASE("fuse-attention: several query rows, an added mask, a Where on the other side") {
  Options added;
  added.rows = 3;
  added.mask = Mask::kAdd;
  requireFusedMatches(added, {"FusedAttention(%q, %x, %v_out, %mask, none)"});
  Options swapped;
  swapped.rows = 3;
  swapped.mask = Mask::kWhereSwapped;
  requireFusedMatches(swapped,
                      {"FusedAttention(%q, %x, %v_out, none, %causal)", "SAME: fill_when = 0"});
  Options plain;
  plain.mask = Mask::kNone;
  requireFusedMatches(plain, {"FusedAttention(%q, %x, %v_out, none, none)"});
}

TEST_CASE("fuse-attention leaves graphs that only look like attention") {
  Options notLastAxes;  // the Transpose moves the heads, not K's last two axes
  notLastAxes.perm = {0, 2, 3, 1};
  requireUntouched(notLastAxes);
  Options otherAxis;  // softmax over the rows
  otherAxis.softmaxAxis = 2;
  requireUntouched(otherAxis);
  Options scoresRead;  // the scores are an output too
  scoresRead.scoresAreOutput = true;
  requireUntouched(scoresRead);
}
