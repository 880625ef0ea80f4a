// quantize: --quantize int8 makes a float model a QDQ model, as ONNX
// Runtime's quantize_static would write it, so that fuse-quantized (the
// next pass) runs it on the int8 kernels. Only where those kernels pay:
//   - Conv, MatMul and Gemm with constant weights: the weights become int8
//     per output channel (symmetric; [-63, 63] where the target's int8
//     kernels are AVX2 without VNNI, so that vpmaddubsw's pairs cannot
//     saturate and need no split), a bias (a MatMul's: the constant an
//     Add after it adds) becomes int32 at x_scale * w_scale[c], and the
//     activation read and the one written (after a Relu or Clip that only
//     it feeds) get a QuantizeLinear and DequantizeLinear pair with
//     per-tensor params from their calibrated range; the activation
//     written stays float where it reaches a graph output (its rounding
//     would reach it undamped: a classifier's logits) and where no int8
//     op reads it, directly or through elementwise steps that
//     fuse-quantized makes a lookup table (a recogniser's logits before
//     its Softmax; the input of a layer kept in float);
//   - Add of two such activations (absorbed into the product before it or
//     QLinearAdd), GlobalAveragePool, and MaxPool, Reshape, Transpose and
//     Concat (which only move values: their inputs and output share one
//     range, the union of theirs) where their inputs are int8 and an int8
//     op reads their output.
// Nodes the spec keeps in float and those whose activations have no
// calibrated range stay as they are. Batch norms are
// folded first: the weights are rounded once they are final.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ir/conventions.h"
#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

using ir::Graph;
using ir::Node;

using ir::conventions::quantMax;
using ir::conventions::quantMin;

/// The ops that only move or compare values.
bool isMove(const std::string& op) {
  return op == "MaxPool" || op == "Reshape" || op == "Transpose" || op == "Concat";
}

bool isFloatValue(const Graph& g, int v) { return v >= 0 && g.value(v).type.dtype == DType::kF32; }

bool isConstantF32(const Graph& g, int v) { return isFloatValue(g, v) && g.value(v).isConstant(); }

/// The weights' output-channel axis of a Conv, MatMul or Gemm whose weights
/// and bias fuse-quantized takes; -1 for any other node.
int weightAxis(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || !isFloatValue(g, n.inputs[0]) || n.inputs.size() < 2 ||
      !isConstantF32(g, n.inputs[1]))
    return -1;
  const int bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
  if (bias >= 0 && !isConstantF32(g, bias)) return -1;
  const int rankX = g.value(n.inputs[0]).type.rank(), rankW = g.value(n.inputs[1]).type.rank();
  if (n.op == "Conv") return rankX >= 3 && rankX <= 4 ? 0 : -1;
  if (rankW != 2) return -1;
  if (n.op == "MatMul") return 1;
  if (n.op != "Gemm" || n.getInt("transA", 0) || n.getFloat("alpha", 1) != 1 ||
      n.getFloat("beta", 1) != 1)
    return -1;
  const int axis = n.getInt("transB", 0) ? 0 : 1;
  const int64_t channels = g.value(n.inputs[1]).type.shape[axis];
  return bias < 0 || g.value(bias).type.numElements() == channels ? axis : -1;
}

/// A node's output, or the output of the Relu or Clip that alone reads it.
int tailOf(const Graph& g, const Node& n) {
  const int out = n.outputs[0];
  const auto readers = g.consumers(out);
  if (g.isGraphOutput(out) || readers.size() != 1) return out;
  const Node& act = g.node(readers[0]);
  const bool isAct = (act.op == "Relu" && act.inputs.size() == 1) ||
                     (act.op == "Clip" && act.numPresentInputs() == 1);
  return isAct ? act.outputs[0] : out;
}

/// A MatMul whose output only an Add of a constant [N] reads takes that
/// constant as its bias (fuse-epilogues' form), so that the bias joins
/// the int8 product.
void absorbBias(Graph& g, int id) {
  const Node& n = g.node(id);
  if (n.op != "MatMul" || n.inputs.size() != 2) return;
  const int out = n.outputs[0];
  const auto readers = g.consumers(out);
  if (g.isGraphOutput(out) || readers.size() != 1) return;
  const Node& add = g.node(readers[0]);
  if (add.op != "Add" || add.inputs.size() != 2) return;
  const int other = add.inputs[0] == out ? add.inputs[1] : add.inputs[0];
  const ir::TensorType& type = g.value(out).type;
  if (other == out || !isConstantF32(g, other) || type.shape.empty() ||
      g.value(other).type.shape != ir::Shape{type.shape.back()} ||
      !(g.value(add.outputs[0]).type == type))
    return;
  const int sum = add.outputs[0];
  g.removeNode(readers[0]);
  g.node(id).inputs.push_back(other);
  g.setNodeOutput(id, 0, sum);
}

/// Whether v is a graph output, or reaches one through moves alone.
bool reachesOutput(const Graph& g, int v) {
  if (g.isGraphOutput(v)) return true;
  const auto readers = g.consumers(v);
  if (readers.size() != 1) return false;
  const Node& r = g.node(readers[0]);
  return (r.op == "Reshape" || r.op == "Transpose") && reachesOutput(g, r.outputs[0]);
}

/// What becomes int8: the products, the values that get a Q/DQ pair, and
/// the sets of values that must share their params (a move's).
struct Selection {
  std::vector<int> products;
  std::vector<bool> marked;  // by value id
  std::vector<int> parent;   // union-find over value ids
  int find(int v) { return parent[v] == v ? v : parent[v] = find(parent[v]); }
};

class Quantizer {
 public:
  Quantizer(Graph& g, const QuantizeSpec& spec, int weightMax)
      : g_(g), spec_(spec), weightMax_(weightMax) {}

  bool run() {
    select();
    if (sel_.products.empty()) return false;
    std::map<int, std::pair<float, int32_t>> params;  // group root -> scale, zero
    std::map<int, std::pair<float, float>> ranges;
    const int values = static_cast<int>(sel_.marked.size());  // insertPair adds more
    for (int v = 0; v < values; ++v) {
      if (!sel_.marked[v]) continue;
      const auto [lo, hi] = spec_.ranges.at(g_.value(v).name);
      auto [it, fresh] = ranges.try_emplace(sel_.find(v), lo, hi);
      if (!fresh) it->second = {std::min(it->second.first, lo), std::max(it->second.second, hi)};
    }
    for (const auto& [root, range] : ranges) params[root] = activationParams(range);
    auto* record = spec_.record.get();
    for (int v = 0; v < values; ++v) {
      if (!sel_.marked[v]) continue;
      const auto [scale, zero] = params.at(sel_.find(v));
      const auto [lo, hi] = ranges.at(sel_.find(v));
      if (record) record->tensors.push_back({g_.value(v).name, lo, hi, scale, zero});
      insertPair(v, {scale, zero});
    }
    for (int id : sel_.products) {
      const auto [x, tail] = activations_.at(id);
      const double noise = quantizeWeights(id, params.at(sel_.find(x)).first);
      if (record)
        record->layers.push_back({g_.node(id).name, g_.value(x).name, g_.value(tail).name, noise});
    }
    return true;
  }

 private:
  bool hasRange(int v) const { return spec_.ranges.count(g_.value(v).name) > 0; }

  void select();
  void pruneMoves(const std::vector<int>& order, std::vector<bool>& int8Node);
  bool feedsInt8(int v, const std::vector<bool>& int8Node) const;
  void keepUnreadOutputsFloat(const std::vector<bool>& int8Node);
  std::pair<float, int32_t> activationParams(std::pair<float, float> range) const;
  void insertPair(int v, std::pair<float, int32_t> params);
  double quantizeWeights(int id, float xScale);
  int scalar(const std::string& name, float value);
  int zeroPoint(const std::string& name, int32_t value, DType type);

  Graph& g_;
  const QuantizeSpec& spec_;
  const int weightMax_;
  Selection sel_;
  std::map<int, std::pair<int, int>> activations_;  // product -> the values it reads and writes
};

void Quantizer::select() {
  const int values = g_.numValues();
  sel_.marked.assign(values, false);
  sel_.parent.resize(values);
  std::iota(sel_.parent.begin(), sel_.parent.end(), 0);
  const auto order = g_.topologicalOrder();
  std::vector<bool> int8Node(g_.numNodeSlots(), false);
  auto marked = [&](int v) { return v >= 0 && sel_.marked[v]; };
  for (int id : order) {
    const Node& n = g_.node(id);
    if (spec_.keepFloat.count(n.name)) continue;
    if (n.op == "Conv" || n.op == "MatMul" || n.op == "Gemm") {
      if (weightAxis(g_, n) < 0) continue;
      absorbBias(g_, id);
      const int x = n.inputs[0], tail = tailOf(g_, n);
      // A layer that writes a graph output (or one that only moves its
      // output there) keeps a float output: its rounding would reach it
      // undamped. fuse-quantized runs it as an int8 product with int32
      // sums and a DequantizeLinear.
      const bool floatOutput = reachesOutput(g_, tail);
      if (!hasRange(x) || (!floatOutput && !hasRange(tail))) continue;
      sel_.marked[x] = int8Node[id] = true;
      if (!floatOutput) sel_.marked[tail] = true;
      sel_.products.push_back(id);
      activations_[id] = {x, floatOutput ? n.outputs[0] : tail};
    } else if (n.op == "Add" && n.inputs.size() == 2 && marked(n.inputs[0]) &&
               marked(n.inputs[1]) && g_.value(n.inputs[0]).type == g_.value(n.outputs[0]).type &&
               g_.value(n.inputs[1]).type == g_.value(n.outputs[0]).type) {
      const int tail = tailOf(g_, n);
      if (hasRange(tail)) sel_.marked[tail] = int8Node[id] = true;
    } else if (n.op == "GlobalAveragePool" && marked(n.inputs[0]) && hasRange(n.outputs[0])) {
      sel_.marked[n.outputs[0]] = int8Node[id] = true;
    } else if (isMove(n.op) && n.outputs.size() == 1 && isFloatValue(g_, n.outputs[0]) &&
               hasRange(n.outputs[0])) {
      const size_t data = n.op == "Concat" ? n.inputs.size() : 1;
      if (!std::all_of(n.inputs.begin(), n.inputs.begin() + data, marked)) continue;
      sel_.marked[n.outputs[0]] = int8Node[id] = true;
    }
  }
  pruneMoves(order, int8Node);
  keepUnreadOutputsFloat(int8Node);
}

/// Keeps a move or GlobalAveragePool int8 only where an int8 node reads its
/// output (else its Q/DQ pair is work for nothing), and joins each kept
/// move's values into one group.
void Quantizer::pruneMoves(const std::vector<int>& order, std::vector<bool>& kept) {
  const std::vector<bool> int8Node = kept;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = g_.node(*it);
    if (!int8Node[*it] || (!isMove(n.op) && n.op != "GlobalAveragePool")) continue;
    const auto readers = g_.consumers(n.outputs[0]);
    kept[*it] = std::any_of(readers.begin(), readers.end(), [&](int r) { return kept[r]; });
    if (!kept[*it]) {
      sel_.marked[n.outputs[0]] = false;
      continue;
    }
    if (!isMove(n.op)) continue;
    const size_t data = n.op == "Concat" ? n.inputs.size() : 1;
    for (size_t i = 0; i < data; ++i) sel_.parent[sel_.find(n.inputs[i])] = sel_.find(n.outputs[0]);
  }
}

/// Whether an int8 node reads v, directly or through elementwise ops of v
/// and scalars that end in a value that becomes int8 (fuse-quantized's
/// lookup table).
bool Quantizer::feedsInt8(int v, const std::vector<bool>& int8Node) const {
  const ir::TensorType& type = g_.value(v).type;
  std::vector<int> chain = {v};
  auto inChain = [&](int in) {
    return std::find(chain.begin(), chain.end(), in) != chain.end() ||
           (in >= 0 && g_.value(in).isConstant() && g_.value(in).type.numElements() == 1);
  };
  for (size_t i = 0; i < chain.size(); ++i)
    for (int r : g_.consumers(chain[i])) {
      if (int8Node[r]) return true;
      const Node& n = g_.node(r);
      if (n.outputs.size() != 1 || !(g_.value(n.outputs[0]).type == type) ||
          !std::all_of(n.inputs.begin(), n.inputs.end(), inChain))
        continue;
      if (sel_.marked[n.outputs[0]]) return true;
      if (!inChain(n.outputs[0])) chain.push_back(n.outputs[0]);
    }
  return false;
}

/// A product whose int8 output no int8 node would read keeps a float
/// output (its int32 sums dequantised): rounding it to 8 bits would only
/// add noise, as before a Softmax that ends a sequence recogniser, or
/// before a layer the spec keeps in float.
void Quantizer::keepUnreadOutputsFloat(const std::vector<bool>& int8Node) {
  for (int id : sel_.products) {
    auto& [x, out] = activations_.at(id);
    if (!sel_.marked[out] || feedsInt8(out, int8Node)) continue;
    sel_.marked[out] = false;
    out = g_.node(id).outputs[0];
  }
}

/// Scale and zero point of a range widened to hold 0 (ONNX's asymmetric
/// quantisation); an empty range gets scale 1.
std::pair<float, int32_t> Quantizer::activationParams(std::pair<float, float> range) const {
  const float lo = std::min(range.first, 0.0f), hi = std::max(range.second, 0.0f);
  const DType t = spec_.activations;
  const float levels = static_cast<float>(quantMax(t) - quantMin(t));
  const float scale = hi > lo ? (hi - lo) / levels : 1.0f;
  const float zero = std::nearbyint(static_cast<float>(quantMin(t)) - lo / scale);
  return {scale, static_cast<int32_t>(std::clamp<float>(zero, quantMin(t), quantMax(t)))};
}

int Quantizer::scalar(const std::string& name, float value) {
  return addFloatConstant(g_, g_.uniqueValueName(name), {}, {value});
}

int Quantizer::zeroPoint(const std::string& name, int32_t value, DType type) {
  const auto byte = static_cast<uint8_t>(static_cast<int8_t>(value));
  return g_.addConstant(g_.uniqueValueName(name), {type, {}},
                        {type == DType::kU8 ? static_cast<uint8_t>(value) : byte});
}

/// v -> QuantizeLinear -> DequantizeLinear, which every reader of v reads
/// instead, and which the graph outputs where it output v (so that the
/// quantised layer before fuses).
void Quantizer::insertPair(int v, std::pair<float, int32_t> params) {
  const std::string name = g_.value(v).name;
  const auto readers = g_.consumers(v);
  const DType type = spec_.activations;
  const int scale = scalar(name + "_scale", params.first);
  const int zero = zeroPoint(name + "_zero_point", params.second, type);
  const int q =
      g_.addValue(g_.uniqueValueName(name + "_quantized"), {type, g_.value(v).type.shape});
  const int dq = g_.addValue(g_.uniqueValueName(name + "_dequantized"), g_.value(v).type);
  const std::map<std::string, ir::Attribute> perTensor = {{"axis", int64_t{0}},
                                                          {"per_axis", int64_t{0}}};
  g_.addNode("QuantizeLinear", name + "_QuantizeLinear", {v, scale, zero}, {q}, perTensor);
  g_.addNode("DequantizeLinear", name + "_DequantizeLinear", {q, scale, zero}, {dq}, perTensor);
  for (int r : readers)
    for (int& in : g_.node(r).inputs)
      if (in == v) in = dq;
  for (int& out : g_.outputs)
    if (out == v) out = dq;
}

/// The product's weights as int8 per output channel and its bias as int32
/// at xScale * w_scale[c], each behind a DequantizeLinear. Returns the
/// weights' relative rounding noise, |Q(w) - w|^2 / |w|^2.
double Quantizer::quantizeWeights(int id, float xScale) {
  const int axis = weightAxis(g_, g_.node(id));
  const std::vector<int> inputs = g_.node(id).inputs;  // nodes and values move as they grow
  const ir::Value w = g_.value(inputs[1]);
  const ir::Shape shape = w.type.shape;
  const int64_t channels = shape[axis];
  const int64_t inner = axis == 0 ? w.type.numElements() / channels : 1;
  const int64_t stride = axis == 0 ? 1 : channels;  // between a channel's values
  const int64_t count = w.type.numElements() / channels;
  const float* data = w.dataAs<float>();
  auto at = [&](int64_t c, int64_t i) { return axis == 0 ? c * inner + i : i * stride + c; };
  std::vector<float> scales(channels);
  std::vector<uint8_t> q(w.type.numElements());
  double noise = 0, power = 0;
  for (int64_t c = 0; c < channels; ++c) {
    float amax = 0;
    for (int64_t i = 0; i < count; ++i) amax = std::max(amax, std::abs(data[at(c, i)]));
    scales[c] = amax > 0 ? amax / static_cast<float>(weightMax_) : 1.0f;
    for (int64_t i = 0; i < count; ++i) {
      const float x = data[at(c, i)];
      const float v =
          std::clamp<float>(std::nearbyint(x / scales[c]), static_cast<float>(-weightMax_),
                            static_cast<float>(weightMax_));
      q[at(c, i)] = static_cast<uint8_t>(static_cast<int8_t>(v));
      noise += (v * scales[c] - x) * (v * scales[c] - x);
      power += x * x;
    }
  }
  const std::string name = w.name;
  const std::map<std::string, ir::Attribute> perAxis = {{"axis", int64_t{axis}},
                                                        {"per_axis", int64_t{1}}};
  const int wq = g_.addConstant(g_.uniqueValueName(name + "_int8"), {DType::kI8, shape}, q);
  const int wScale = addFloatConstant(g_, g_.uniqueValueName(name + "_scale"), {channels}, scales);
  const int wDq = g_.addValue(g_.uniqueValueName(name + "_dequantized"), w.type);
  g_.addNode("DequantizeLinear", name + "_DequantizeLinear", {wq, wScale, -1}, {wDq}, perAxis);
  g_.node(id).inputs[1] = wDq;
  const double relativeNoise = power > 0 ? noise / power : 0;
  const int bias = inputs.size() > 2 ? inputs[2] : -1;
  if (bias < 0) return relativeNoise;
  const ir::Value b = g_.value(bias);
  const auto values = b.doubleValues();
  std::vector<float> bScales(channels);
  std::vector<int32_t> bq(channels);
  for (int64_t c = 0; c < channels; ++c) {
    bScales[c] = xScale * scales[c];
    const double v = std::nearbyint(values[c] / static_cast<double>(bScales[c]));
    bq[c] = static_cast<int32_t>(std::clamp<double>(v, INT32_MIN, INT32_MAX));
  }
  std::vector<uint8_t> bytes(bq.size() * 4);
  std::memcpy(bytes.data(), bq.data(), bytes.size());
  const std::map<std::string, ir::Attribute> channelAxis = {{"axis", int64_t{0}},
                                                            {"per_axis", int64_t{1}}};
  const int bInt = g_.addConstant(g_.uniqueValueName(b.name + "_int32"), {DType::kI32, {channels}},
                                  std::move(bytes));
  const int bScale =
      addFloatConstant(g_, g_.uniqueValueName(b.name + "_scale"), {channels}, bScales);
  const int bDq =
      g_.addValue(g_.uniqueValueName(b.name + "_dequantized"), {DType::kF32, {channels}});
  g_.addNode("DequantizeLinear", b.name + "_DequantizeLinear", {bInt, bScale, -1}, {bDq},
             channelAxis);
  g_.node(id).inputs[2] = bDq;
  return relativeNoise;
}

}  // namespace

bool quantize(ir::Graph& graph, const PassTarget& target) {
  if (!target.quantize) return false;
  foldConvBatchNorm(graph, target);
  const bool split = rt::preferredQPacking(target.tier.c_str()) == rt::QPacking::kQuadsSplit;
  const int weightMax = split ? 63 : 127;
  return Quantizer(graph, *target.quantize, weightMax).run();
}

}  // namespace cgc::passes
