// fuse-attention: scaled dot-product attention as PyTorch exports it becomes
// one FusedAttention node (rt::attention), which reads K and V once, in
// their stored layout, and keeps the scores in cache:
//
//   MatMul(q, Transpose(k, perm swaps the last two axes))
//     [-> Div | Mul by a scalar constant]
//     [-> Add(mask) | Where(condition, fill, .) | Where(condition, ., fill)]
//     -> Softmax(last axis)
//     -> MatMul(., v)
//   => FusedAttention(q, k, v, mask, condition) {scale, fill, fill_when}
//
// Unfused, a decoder step copies every key of its cache through the
// Transpose and writes and reads the scores three times; one query row
// over a long cache is two matrix-vector products bound by the bytes of K
// and V. With --cache-in-place the fused node reads the cache over its
// capacity (planning/cache_pairs.cpp), so nothing copies the cache. Any
// number of query rows is taken (the mask then differs per row).
//
// q, k and v are float tensors of rank 2 to 4 whose leading axes (batch,
// heads) broadcast as MatMul's do into q's, which is not broadcast; the
// mask (float, added) or condition (bool; `fill` where it equals
// `fill_when`) broadcasts into the scores. Each intermediate has the next
// op as its only reader and is not a graph output. The node takes the first
// MatMul's name with "/FuseAttention", so profiles still name the ONNX node.
#include <optional>

#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

/// The only reader of `value`, or -1 (none, several, or a graph output).
int onlyReader(const ir::Graph& g, int value) {
  const auto readers = g.consumers(value);
  if (readers.size() != 1 || g.isGraphOutput(value)) return -1;
  const ir::Node& reader = g.node(readers[0]);
  int uses = 0;
  for (int in : reader.inputs) uses += in == value;
  return uses == 1 ? readers[0] : -1;
}

/// A float scalar constant's value.
std::optional<double> scalarOf(const ir::Graph& g, int value) {
  if (value < 0) return std::nullopt;
  const ir::Value& v = g.value(value);
  if (!v.isConstant() || v.type.dtype != DType::kF32 || v.type.numElements() != 1)
    return std::nullopt;
  return v.doubleValues()[0];
}

bool isFloat(const ir::Graph& g, int value) {
  const ir::Value& v = g.value(value);
  return v.type.dtype == DType::kF32 && v.layout == ir::Layout::kPlain;
}

/// Whether `shape` broadcasts into `into` (right-aligned, as ONNX's).
bool broadcastsInto(const ir::Shape& shape, const ir::Shape& into) {
  if (shape.size() > into.size()) return false;
  const size_t offset = into.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && shape[d] != into[offset + d]) return false;
  return true;
}

/// The pattern's nodes and what the fused node takes from them.
struct Match {
  std::vector<int> nodes;  // to remove; the last one is the second MatMul
  int q = -1, k = -1, v = -1, add = -1, condition = -1;
  double scale = 1.0, fill = 0.0;
  bool fillWhen = true;
};

/// The Div or Mul by a scalar after the scores, folded into match.scale;
/// the value the next op reads.
int takeScale(const ir::Graph& g, int value, Match& m) {
  const int id = onlyReader(g, value);
  if (id < 0) return value;
  const ir::Node& n = g.node(id);
  if ((n.op != "Div" && n.op != "Mul") || n.inputs.size() != 2) return value;
  const bool first = n.inputs[0] == value;
  const auto c = scalarOf(g, n.inputs[first ? 1 : 0]);
  if (!c || (n.op == "Div" && (!first || *c == 0.0))) return value;
  if (g.value(n.outputs[0]).type != g.value(value).type) return value;
  m.scale = n.op == "Div" ? 1.0 / *c : *c;
  m.nodes.push_back(id);
  return n.outputs[0];
}

/// The Add of a mask, or the Where of a condition, after the scores.
int takeMask(const ir::Graph& g, int value, Match& m) {
  const int id = onlyReader(g, value);
  if (id < 0) return value;
  const ir::Node& n = g.node(id);
  const ir::TensorType& scores = g.value(value).type;
  if (n.inputs.size() < 2 || g.value(n.outputs[0]).type != scores) return value;
  if (n.op == "Add" && n.inputs.size() == 2) {
    const int mask = n.inputs[0] == value ? n.inputs[1] : n.inputs[0];
    if (!isFloat(g, mask) || !broadcastsInto(g.value(mask).type.shape, scores.shape)) return value;
    m.add = mask;
  } else if (n.op == "Where" && n.inputs.size() == 3 && n.inputs[0] != value) {
    const int condition = n.inputs[0];
    const ir::Value& c = g.value(condition);
    if (c.type.dtype != DType::kBool || c.layout != ir::Layout::kPlain ||
        !broadcastsInto(c.type.shape, scores.shape))
      return value;
    const bool fillWhen = n.inputs[2] == value;  // Where(c, fill, scores)
    const auto fill = scalarOf(g, n.inputs[fillWhen ? 1 : 2]);
    if (!fill || n.inputs[fillWhen ? 2 : 1] != value) return value;
    m.condition = condition;
    m.fill = *fill;
    m.fillWhen = fillWhen;
  } else {
    return value;
  }
  m.nodes.push_back(id);
  return n.outputs[0];
}

/// The pattern from its first MatMul, `id`.
std::optional<Match> matchAt(const ir::Graph& g, int id) {
  const ir::Node& mm = g.node(id);
  if (mm.op != "MatMul" || mm.inputs.size() != 2) return std::nullopt;
  Match m;
  m.q = mm.inputs[0];
  const int kt = mm.inputs[1];
  const ir::Value& ktValue = g.value(kt);
  if (ktValue.producer < 0 || g.node(ktValue.producer).op != "Transpose") return std::nullopt;
  const ir::Node& transpose = g.node(ktValue.producer);
  m.k = transpose.inputs[0];
  const auto& q = g.value(m.q).type.shape;
  const auto& k = g.value(m.k).type.shape;
  const int rank = static_cast<int>(q.size());
  if (rank < 2 || rank > 4 || static_cast<int>(k.size()) != rank || !isFloat(g, m.q) ||
      !isFloat(g, m.k) || !isFloat(g, mm.outputs[0]))
    return std::nullopt;
  const auto perm = transpose.getInts("perm");
  for (int d = 0; d < rank; ++d) {
    const int64_t want = d < rank - 2 ? d : (d == rank - 2 ? rank - 1 : rank - 2);
    if (static_cast<int>(perm.size()) != rank || perm[static_cast<size_t>(d)] != want)
      return std::nullopt;
  }
  m.nodes.push_back(id);
  int value = takeScale(g, mm.outputs[0], m);
  value = takeMask(g, value, m);
  const int softmax = onlyReader(g, value);
  if (softmax < 0 || g.node(softmax).op != "Softmax" ||
      g.node(softmax).getInt("axis", -1) != rank - 1)
    return std::nullopt;
  m.nodes.push_back(softmax);
  const int second = onlyReader(g, g.node(softmax).outputs[0]);
  if (second < 0 || g.node(second).op != "MatMul" || g.node(second).inputs.size() != 2 ||
      g.node(second).inputs[0] != g.node(softmax).outputs[0])
    return std::nullopt;
  m.v = g.node(second).inputs[1];
  const int y = g.node(second).outputs[0];
  if (!isFloat(g, m.v) || !isFloat(g, y) || g.value(m.v).type.rank() != rank) return std::nullopt;
  // q is not broadcast: its leading axes are the output's.
  const auto& yShape = g.value(y).type.shape;
  for (int d = 0; d < rank - 2; ++d)
    if (yShape[static_cast<size_t>(d)] != q[static_cast<size_t>(d)]) return std::nullopt;
  m.nodes.push_back(second);
  return m;
}

}  // namespace

bool fuseAttention(ir::Graph& graph, const PassTarget&) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    if (graph.node(id).dead) continue;
    const auto m = matchAt(graph, id);
    if (!m) continue;
    const int y = graph.node(m->nodes.back()).outputs[0];
    const std::string name = graph.node(id).name + "/FuseAttention";
    for (int node : m->nodes) graph.removeNode(node);
    graph.addNode("FusedAttention", name, {m->q, m->k, m->v, m->add, m->condition}, {y},
                  {{"scale", m->scale}, {"fill", m->fill}, {"fill_when", int64_t{m->fillWhen}}});
    changed = true;
  }
  return changed;
}

}  // namespace cgc::passes
