// fuse-matmuls: MatMuls that read the same left operand with constant 2-D
// right operands (and likewise Gemms without transA, alpha = beta = 1, with
// constant B and a constant or absent per-column C) become one product with
// the weights concatenated along N, followed by a Slice per original output
// (DeepCPU's MM fusion). Several small GEMMs over the same A - the Q/K/V
// projections of attention, the gate projections of hand-written RNN cells -
// each stream A and pay the per-call packing and threading overhead; one wide
// GEMM streams A once and keeps every core busy. The Slices are strided
// copies of the fused result along the last axis, cheap while that result
// is still in cache: a group is cut so that each fused output stays within
// kMaxFusedOutputBytes (512 products of [200,100] x [100,200] fused into one
// 80 MB result ran slower than unfused, the Slices streaming it from memory).
#include <map>
#include <optional>

#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

/// A fusable product: its constant weights (transposed when transB) and
/// bias (a value, -1 when absent), read only when a group fuses.
struct Candidate {
  int node;
  int64_t n;
  int weights, bias;
  bool transB;
  std::vector<int64_t> sources;  // the constants (and transB) they came from
};

/// Fused weights (and bias) by the constants they were made of: an unrolled
/// RNN repeats the same group at every step, and one copy serves them all.
using FusedConstants = std::map<std::vector<int64_t>, std::pair<int, int>>;

bool isPlainConstant2d(const ir::Graph& g, int v) {
  if (v < 0) return false;
  const ir::Value& value = g.value(v);
  return value.isConstant() && value.type.dtype == DType::kF32 && value.type.rank() == 2;
}

std::optional<Candidate> matMulCandidate(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.size() != 2 || !isPlainConstant2d(g, n.inputs[1])) return {};
  if (g.value(n.inputs[0]).type.rank() < 2) return {};
  const int64_t cols = g.value(n.inputs[1]).type.shape[1];
  return Candidate{n.id, cols, n.inputs[1], -1, false, {n.inputs[1], -1, 0}};
}

std::optional<Candidate> gemmCandidate(const ir::Graph& g, const ir::Node& n) {
  if (n.getInt("transA", 0) != 0 || n.getFloat("alpha", 1.0) != 1.0 ||
      n.getFloat("beta", 1.0) != 1.0 || n.inputs.size() < 2 || !isPlainConstant2d(g, n.inputs[1]))
    return {};
  const ir::Value& b = g.value(n.inputs[1]);
  bool transB = n.getInt("transB", 0) != 0;
  int64_t cols = b.type.shape[transB ? 0 : 1];
  int cv = n.inputs.size() > 2 ? n.inputs[2] : -1;
  if (cv >= 0) {
    const ir::Value& bias = g.value(cv);
    if (!bias.isConstant() || bias.type.dtype != DType::kF32) return {};
    // Only a bias per column broadcasts the same way after concatenation.
    const ir::Shape& s = bias.type.shape;
    bool perColumn =
        (s.size() == 1 && s[0] == cols) || (s.size() == 2 && s[0] == 1 && s[1] == cols);
    if (!perColumn && bias.type.numElements() != 1) return {};
  }
  return Candidate{n.id, cols, n.inputs[1], cv, transB, {n.inputs[1], cv, transB ? 1 : 0}};
}

/// Writes candidate `c`'s weights into columns [offset, offset + c.n) of
/// the [k, total] `weights`, and its bias (zeros when absent) after `bias`.
void appendColumns(const ir::Graph& g, const Candidate& c, int64_t k, int64_t total, int64_t offset,
                   std::vector<float>& weights, std::vector<float>& bias) {
  const float* w = g.value(c.weights).dataAs<float>();
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < c.n; ++j)
      weights[p * total + offset + j] = c.transB ? w[j * k + p] : w[p * c.n + j];
  if (c.bias < 0) {
    bias.insert(bias.end(), c.n, 0.f);
    return;
  }
  const ir::Value& b = g.value(c.bias);
  const float* cb = b.dataAs<float>();
  for (int64_t j = 0; j < c.n; ++j) bias.push_back(cb[b.type.numElements() == 1 ? 0 : j]);
}

/// Replaces the products in `group` (all reading `a`) by one, plus Slices.
void fuse(ir::Graph& g, int a, const std::string& op, const std::vector<Candidate>& group,
          FusedConstants& fused) {
  int64_t k = g.value(a).type.shape.back(), total = 0;
  std::vector<int64_t> sources;
  for (const auto& c : group) {
    total += c.n;
    sources.insert(sources.end(), c.sources.begin(), c.sources.end());
  }
  sources.push_back(op == "Gemm");
  const ir::Node& first = g.node(group.front().node);
  std::string base = first.name + "_fused";
  ir::Shape outShape = g.value(first.outputs[0]).type.shape;
  outShape.back() = total;
  auto [known, isNew] = fused.try_emplace(sources, -1, -1);
  auto& [w, b] = known->second;
  if (isNew) {
    std::vector<float> weights(k * total), bias;
    int64_t offset = 0;
    for (const auto& c : group) {
      appendColumns(g, c, k, total, offset, weights, bias);
      offset += c.n;
    }
    w = addFloatConstant(g, base + "_weights", {k, total}, weights);
    if (op == "Gemm") b = addFloatConstant(g, base + "_bias", {total}, bias);
  }
  std::vector<int> inputs{a, w};
  std::map<std::string, ir::Attribute> attrs;
  if (op == "Gemm") inputs.push_back(b);
  int y = g.addValue(g.uniqueValueName(base), {DType::kF32, outShape});
  g.addNode(op, base, inputs, {y}, attrs);
  int64_t offset = 0;
  for (const auto& c : group) {
    ir::Node& node = g.node(c.node);
    int out = node.outputs[0];
    std::string name = node.name;
    std::vector<int64_t> starts(outShape.size(), 0), steps(outShape.size(), 1);
    starts.back() = offset;
    offset += c.n;
    g.removeNode(c.node);
    g.addNode("Slice", name + "_slice", {y}, {out}, {{"starts", starts}, {"steps", steps}});
  }
}

constexpr int64_t kMaxFusedOutputBytes = int64_t{1} << 20;

/// Consecutive runs of `group` whose fused output fits kMaxFusedOutputBytes.
std::vector<std::vector<Candidate>> cacheSizedRuns(const ir::Graph& g,
                                                   std::vector<Candidate> group) {
  const ir::Shape& shape = g.value(g.node(group.front().node).outputs[0]).type.shape;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  std::vector<std::vector<Candidate>> runs(1);
  int64_t columns = 0;
  for (auto& c : group) {
    if (!runs.back().empty() &&
        rows * (columns + c.n) * int64_t{sizeof(float)} > kMaxFusedOutputBytes) {
      runs.emplace_back();
      columns = 0;
    }
    columns += c.n;
    runs.back().push_back(std::move(c));
  }
  return runs;
}

}  // namespace

bool fuseMatMuls(ir::Graph& graph, const PassTarget&) {
  // Groups keyed by (left operand, op); insertion order keeps it deterministic.
  std::map<std::pair<int, std::string>, std::vector<Candidate>> groups;
  for (int id : graph.topologicalOrder()) {
    const ir::Node& n = graph.node(id);
    if (graph.value(n.outputs[0]).type.dtype != DType::kF32) continue;
    std::optional<Candidate> c;
    if (n.op == "MatMul")
      c = matMulCandidate(graph, n);
    else if (n.op == "Gemm")
      c = gemmCandidate(graph, n);
    if (c) groups[{n.inputs[0], n.op}].push_back(std::move(*c));
  }
  bool changed = false;
  FusedConstants fused;
  for (auto& [key, group] : groups) {
    if (group.size() < 2) continue;
    for (const auto& run : cacheSizedRuns(graph, std::move(group))) {
      if (run.size() < 2) continue;
      fuse(graph, key.first, key.second, run, fused);
      changed = true;
    }
  }
  return changed;
}

}  // namespace cgc::passes
