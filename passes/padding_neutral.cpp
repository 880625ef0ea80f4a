// See padding_neutral.h.
#include "passes/padding_neutral.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace cgc::passes {
namespace {

using Axes = std::set<int>;

const std::set<std::string> kElementwise = {"Abs",
                                            "Acos",
                                            "Acosh",
                                            "Add",
                                            "And",
                                            "Asin",
                                            "Asinh",
                                            "Atan",
                                            "Atanh",
                                            "BitShift",
                                            "Cast",
                                            "CastLike",
                                            "Ceil",
                                            "Celu",
                                            "Clip",
                                            "Cos",
                                            "Cosh",
                                            "DequantizeLinear",
                                            "Div",
                                            "Dropout",
                                            "Elu",
                                            "Equal",
                                            "Erf",
                                            "Exp",
                                            "Expand",
                                            "FastGelu",
                                            "Floor",
                                            "Gelu",
                                            "Greater",
                                            "GreaterOrEqual",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "Identity",
                                            "IsInf",
                                            "IsNaN",
                                            "LeakyRelu",
                                            "Less",
                                            "LessOrEqual",
                                            "Log",
                                            "Max",
                                            "Mean",
                                            "Min",
                                            "Mish",
                                            "Mod",
                                            "Mul",
                                            "Neg",
                                            "Not",
                                            "Or",
                                            "Pow",
                                            "PRelu",
                                            "QuantizeLinear",
                                            "Reciprocal",
                                            "Relu",
                                            "Round",
                                            "Selu",
                                            "Sigmoid",
                                            "Sign",
                                            "Sin",
                                            "Sinh",
                                            "Softplus",
                                            "Softsign",
                                            "Sqrt",
                                            "Sub",
                                            "Sum",
                                            "Tan",
                                            "Tanh",
                                            "ThresholdedRelu",
                                            "Where",
                                            "Xor",
                                            "BatchNormalization"};

const std::set<std::string> kReductions = {
    "ReduceSum", "ReduceMean",   "ReduceMax",       "ReduceMin",       "ReduceProd", "ReduceL1",
    "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax",     "ArgMin"};

/// The inputs of `op` that give sizes, axes or positions rather than data:
/// a constant there may follow the size (the bound's Reshape target).
bool isIndexInput(const std::string& op, size_t i) {
  static const std::map<std::string, std::set<size_t>> kIndexInputs = {
      {"Reshape", {1}},         {"Slice", {1, 2, 3, 4}}, {"Expand", {1}}, {"Tile", {1}},
      {"Squeeze", {1}},         {"Unsqueeze", {1}},      {"Pad", {1, 3}}, {"Resize", {1, 2, 3}},
      {"Upsample", {1}},        {"Split", {1}},          {"TopK", {1}},   {"CumSum", {1}},
      {"ConstantOfShape", {0}}, {"Range", {0, 1, 2}},    {"OneHot", {1}}};
  if (kReductions.count(op)) return i == 1;
  const auto it = kIndexInputs.find(op);
  return it != kIndexInputs.end() && it->second.count(i);
}

int64_t innerProduct(const ir::Shape& shape, int axis) {
  int64_t product = 1;
  for (size_t a = static_cast<size_t>(axis) + 1; a < shape.size(); ++a) product *= shape[a];
  return product;
}

int normalized(int64_t axis, int rank) { return static_cast<int>(axis < 0 ? axis + rank : axis); }

bool meets(const Axes& axes, const Axes& other) {
  return std::any_of(axes.begin(), axes.end(), [&](int a) { return other.count(a); });
}

/// The two imports and the dimension's axes of every value of `bound`.
class Analysis {
 public:
  Analysis(const ir::Graph& bound, const ir::Graph& smaller) : bound_(bound), smaller_(smaller) {
    for (int v = 0; v < smaller.numValues(); ++v) byName_[smaller.value(v).name] = v;
  }

  PaddingVerdict run() {
    for (int id : bound_.topologicalOrder()) {
      const ir::Node& node = bound_.node(id);
      std::string why = checkOperands(node);
      if (why.empty()) why = checkNode(node);
      if (!why.empty()) return {false, node.name, node.op, why};
    }
    return {};
  }

 private:
  const ir::Graph& bound_;
  const ir::Graph& smaller_;
  std::map<std::string, int> byName_;
  std::map<int, Axes> axes_;  // by value of bound_: the dimension's axes

  const ir::Value* smallerOf(int v) const {
    const auto it = byName_.find(bound_.value(v).name);
    return it == byName_.end() ? nullptr : &smaller_.value(it->second);
  }

  /// The axes where `v`'s extent differs between the imports; nothing
  /// where the smaller import has no value of its name or rank.
  std::optional<Axes> differing(int v) const {
    const ir::Value* other = smallerOf(v);
    const ir::Shape& shape = bound_.value(v).type.shape;
    if (!other || other->type.shape.size() != shape.size()) return std::nullopt;
    Axes axes;
    for (size_t a = 0; a < shape.size(); ++a)
      if (shape[a] != other->type.shape[a]) axes.insert(static_cast<int>(a));
    return axes;
  }

  /// Whether the smaller import's constant holds the leading block of the
  /// bound's (the same bytes where the shapes agree).
  bool leadingBlock(const ir::Value& big, const ir::Value& small) const {
    if (!big.data || !small.data || big.type.dtype != small.type.dtype) return false;
    const ir::Shape& bs = big.type.shape;
    const ir::Shape& ss = small.type.shape;
    for (size_t a = 0; a < bs.size(); ++a)
      if (ss[a] > bs[a]) return false;
    const size_t elem = static_cast<size_t>(dtypeSize(big.type.dtype));
    const int64_t count = small.type.numElements();
    std::vector<int64_t> index(ss.size(), 0);
    for (int64_t k = 0; k < count; ++k) {
      int64_t offset = 0;
      for (size_t a = 0; a < bs.size(); ++a) offset = offset * bs[a] + index[a];
      if (std::memcmp(big.data->data() + static_cast<size_t>(offset) * elem,
                      small.data->data() + static_cast<size_t>(k) * elem, elem) != 0)
        return false;
      for (size_t a = ss.size(); a-- > 0;) {
        if (++index[a] < ss[a]) break;
        index[a] = 0;
      }
    }
    return true;
  }

  /// The axes of each operand and result of `node`; why they cannot be
  /// told apart (a constant computed from the size read as data, a value
  /// the other import lacks).
  std::string checkOperands(const ir::Node& node) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int v = node.inputs[i];
      if (v < 0 || axes_.count(v)) continue;
      const ir::Value& value = bound_.value(v);
      const std::optional<Axes> axes = differing(v);
      if (isIndexInput(node.op, i)) {
        axes_[v] = axes.value_or(Axes{});
        continue;
      }
      if (!axes)
        return fmt::format("reads '{}', which the import at another size does not make",
                           value.name);
      if (value.isConstant() && !leadingBlock(value, *smallerOf(v)))
        return fmt::format("reads '{}', a constant computed from the size", value.name);
      axes_[v] = *axes;
    }
    for (int v : node.outputs) {
      if (v < 0) continue;
      const std::optional<Axes> axes = differing(v);
      if (!axes)
        return fmt::format("makes '{}', which the import at another size does not",
                           bound_.value(v).name);
      axes_[v] = *axes;
    }
    return "";
  }

  const Axes& axesOf(int v) const {
    static const Axes kNone;
    return v < 0 ? kNone : axes_.at(v);
  }
  const ir::Shape& shapeOf(int v) const { return bound_.value(v).type.shape; }
  int rankOf(int v) const { return static_cast<int>(shapeOf(v).size()); }

  /// The constant integers of input `i` (or attribute `attr`), nothing
  /// where neither is given.
  std::optional<std::vector<int64_t>> intsOf(const ir::Node& node, size_t i,
                                             const std::string& attr) const {
    if (node.has(attr)) return node.getInts(attr);
    if (i < node.inputs.size() && node.inputs[i] >= 0 && bound_.value(node.inputs[i]).isConstant())
      return bound_.value(node.inputs[i]).intValues();
    return std::nullopt;
  }

  /// Why `node` mixes positions along the dimension ("" where it keeps
  /// them apart).
  std::string checkNode(const ir::Node& node) const {
    bool reads = false, makes = false;
    for (size_t i = 0; i < node.inputs.size(); ++i)
      reads |= node.inputs[i] >= 0 && !isIndexInput(node.op, i) && !axesOf(node.inputs[i]).empty();
    for (int v : node.outputs) makes |= !axesOf(v).empty();
    if (!reads) return makes ? "sizes its result by the dimension from no operand's positions" : "";
    const int x = node.inputs[0];
    const Axes& in = axesOf(x);
    const int rank = rankOf(x);
    const std::string& op = node.op;
    if (kElementwise.count(op)) return broadcasts(node);
    if (op == "Transpose") return "";
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze")
      return carriedWhole(x, node.outputs[0]) ? "" : "merges or splits the axis with another";
    if (op == "MatMul" || op == "MatMulInteger") {
      const int w = node.inputs[1];
      if (rank < 2 || rankOf(w) < 2) return "multiplies along it";
      return in.count(rank - 1) || axesOf(w).count(rankOf(w) - 2) ? "sums products along it" : "";
    }
    if (op == "Gemm") {
      const int w = node.inputs[1];
      const int ka = node.getInt("transA", 0) ? 0 : 1, kb = node.getInt("transB", 0) ? 1 : 0;
      if (in.count(ka) || axesOf(w).count(kb)) return "sums products along it";
      return node.inputs.size() > 2 ? broadcastsFrom(node.inputs[2], node.outputs[0]) : "";
    }
    if (op == "Conv" || op == "ConvTranspose" || op == "ConvInteger")
      return in == Axes{0} && axesOf(node.inputs[1]).empty() ? ""
                                                             : "sums a window or channels along it";
    if (op == "MaxPool" || op == "AveragePool" || op == "LpPool" || op == "GlobalAveragePool" ||
        op == "GlobalMaxPool" || op == "InstanceNormalization")
      return meets(in, trailing(2, rank)) ? "pools or normalizes along it" : "";
    if (op == "GroupNormalization")
      return meets(in, trailing(1, rank)) ? "normalizes along it" : "";
    if (op == "LayerNormalization" || op == "SimplifiedLayerNormalization" ||
        op == "RMSNormalization")
      return meets(in, trailing(normalized(node.getInt("axis", -1), rank), rank))
                 ? "normalizes along it"
                 : "";
    if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax")
      return meets(in, trailing(normalized(node.getInt("axis", -1), rank), rank))
                 ? "normalizes along it"
                 : "";
    if (kReductions.count(op)) {
      const auto given = intsOf(node, 1, "axes");
      Axes reduced;
      if (op == "ArgMax" || op == "ArgMin")
        reduced = {normalized(node.getInt("axis", 0), rank)};
      else if (!given || given->empty())
        reduced = node.getInt("noop_with_empty_axes", 0) ? Axes{} : trailing(0, rank);
      else
        for (int64_t a : *given) reduced.insert(normalized(a, rank));
      return meets(in, reduced) ? "reduces along it" : "";
    }
    if (op == "Concat" || op == "Split" || op == "CumSum" || op == "Gather" || op == "TopK") {
      const auto given = op == "CumSum" ? intsOf(node, 1, "axis") : std::nullopt;
      if (op == "CumSum" && (!given || given->empty())) return "moves positions along it";
      const int axis =
          normalized(given ? given->front() : node.getInt("axis", op == "TopK" ? -1 : 0), rank);
      const size_t operands = op == "Concat" ? node.inputs.size() : 1;
      for (size_t i = 0; i < operands; ++i)
        if (axesOf(node.inputs[i]).count(axis)) return "moves positions along it";
      return op == "Concat" ? broadcasts(node) : "";
    }
    if (op == "Slice" || op == "Pad" || op == "Tile" || op == "Resize")
      return identityAlong(node) ? "" : "moves positions along it";
    return "is not known to keep positions apart along it";
  }

  static Axes trailing(int from, int rank) {
    Axes axes;
    for (int a = std::max(from, 0); a < rank; ++a) axes.insert(a);
    return axes;
  }

  /// Element-wise with broadcasting: each operand's axes land on the
  /// result's.
  std::string broadcasts(const ir::Node& node) const {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] < 0 || isIndexInput(node.op, i)) continue;
      for (int out : node.outputs)
        if (std::string why = broadcastsFrom(node.inputs[i], out); !why.empty()) return why;
    }
    return "";
  }

  std::string broadcastsFrom(int in, int out) const {
    if (out < 0) return "";
    const int shift = rankOf(out) - rankOf(in);
    for (int a : axesOf(in))
      if (!axesOf(out).count(a + shift)) return "broadcasts positions along it";
    return "";
  }

  /// A Reshape keeps each of the dimension's axes whole: its extent and
  /// the elements after it alike in both imports.
  bool carriedWhole(int in, int out) const {
    const Axes& from = axesOf(in);
    const Axes& to = axesOf(out);
    if (from.size() != to.size()) return false;
    const ir::Value* inSmall = smallerOf(in);
    const ir::Value* outSmall = smallerOf(out);
    for (int a : from) {
      const bool found = std::any_of(to.begin(), to.end(), [&](int b) {
        return shapeOf(in)[a] == shapeOf(out)[b] &&
               innerProduct(shapeOf(in), a) == innerProduct(shapeOf(out), b) &&
               innerProduct(inSmall->type.shape, a) == innerProduct(outSmall->type.shape, b);
      });
      if (!found) return false;
    }
    return true;
  }

  /// Slice, Pad, Tile or Resize: the dimension's axes come through as they
  /// are (the same extents as the operand's in both imports).
  bool identityAlong(const ir::Node& node) const {
    const int in = node.inputs[0], out = node.outputs[0];
    if (rankOf(in) != rankOf(out) || axesOf(in) != axesOf(out)) return false;
    const ir::Value* inSmall = smallerOf(in);
    const ir::Value* outSmall = smallerOf(out);
    return std::all_of(axesOf(in).begin(), axesOf(in).end(), [&](int a) {
      return shapeOf(in)[a] == shapeOf(out)[a] &&
             inSmall->type.shape[a] == outSmall->type.shape[a] && !slicesAt(node, a);
    });
  }

  /// A Slice that starts axis `a` elsewhere than at 0 or steps over it.
  bool slicesAt(const ir::Node& node, int a) const {
    if (node.op == "Pad") {
      const auto pads = intsOf(node, 1, "pads");
      return !pads || static_cast<size_t>(a) >= pads->size() ||
             (*pads)[static_cast<size_t>(a)] != 0;
    }
    if (node.op != "Slice") return false;
    const auto starts = intsOf(node, 1, "starts");
    const auto axes = intsOf(node, 3, "axes");
    const auto steps = intsOf(node, 4, "steps");
    if (!starts) return true;
    for (size_t k = 0; k < starts->size(); ++k) {
      const int axis = axes && k < axes->size() ? normalized((*axes)[k], rankOf(node.inputs[0]))
                                                : static_cast<int>(k);
      if (axis != a) continue;
      if ((*starts)[k] != 0 || (steps && k < steps->size() && (*steps)[k] != 1)) return true;
    }
    return false;
  }
};

}  // namespace

std::string PaddingVerdict::str() const {
  return neutral ? "neutral" : fmt::format("'{}' ({}) {}", node, op, why);
}

PaddingVerdict paddingNeutral(const ir::Graph& bound, const ir::Graph& smaller) {
  return Analysis(bound, smaller).run();
}

}  // namespace cgc::passes
