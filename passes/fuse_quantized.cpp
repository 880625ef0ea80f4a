// fuse-quantized: runs QDQ models on int8 data. A QDQ model (PyTorch's
// quantised export, ONNX Runtime's quantiser) says "int8" with pairs of
// QuantizeLinear and DequantizeLinear around float ops; executed as
// written, every op runs in float between a dequantisation and a
// quantisation. This pass turns each chain that ends in a QuantizeLinear
// into the int8 op it describes:
//   DQ(x), DQ(w)[, DQ(b)] -> Conv [-> Relu | Clip] -> Q   => QLinearConv
//   DQ(a), DQ(b)[, DQ(c)] -> MatMul | Gemm [-> act] -> Q  => QLinearMatMul
//   DQ(x), DQ(w)[, DQ(b)] -> Conv | MatMul | Gemm (float   => the same with int32 sums,
//         output, no Q after it; w constant)                 then DQ by x_scale * w_scale[c]
//   QLinearConv | QLinearMatMul -> q -> DQ -> Add(DQ(r)) [-> act] -> Q
//                                                         => the same node with
//                                                            the add in its epilogue
//   DQ(a), DQ(b) -> Add [-> act] -> Q                     => QLinearAdd
//   DQ(x) -> GlobalAveragePool -> Q                       => QLinearGlobalAveragePool
//   DQ(x) -> MaxPool | Reshape (Flatten, Squeeze, Unsqueeze) | Transpose
//         | Concat -> Q, one scale and zero point         => the op on int8 data
//                                                            (exact: only moves or
//                                                            compares values)
//   DQ(x) -> elementwise ops of x and scalars -> Q        => QLinearLookup: the
//                                                            256 results as a table
//                                                            (an activation such as
//                                                            HardSwish, affine steps)
// so that tensors between int8 kernels stay int8 (the Q/DQ pair between
// them disappears) and the memory plan counts them at one byte. An
// activation becomes the output's clamp in integer units (Q is monotonic:
// Q(relu(v)) = max(Q(v), zero point)); a bias that a DQ of int32 with
// scale x_scale * w_scale[c] describes becomes the int32 bias; weights stay
// int8 (the frontend does not fold DQ of constants, pack-quantized-weights
// packs them). What does not match stays as written, and fold-constants
// turns the remaining DQ of weights into float weights: the float
// emulation, which `--disable-pass fuse-quantized` keeps for the whole
// model (the tests' reference). Casts to the same type (PyTorch's export
// puts one after every QuantizeLinear) are removed first.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "ir/conventions.h"
#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

namespace conv = ir::conventions;
using ir::Graph;
using ir::Node;

/// A QuantizeLinear's or DequantizeLinear's scalar scale and zero point.
struct QParams {
  int scale = -1, zero = -1;  // value ids (zero: -1 when absent)
  float scaleValue = 1.0f;
  int32_t zeroValue = 0;
  DType type = DType::kU8;  // the quantised side's element type
  bool operator==(const QParams& o) const {
    return scaleValue == o.scaleValue && zeroValue == o.zeroValue && type == o.type;
  }
};

using conv::quantMax;
using conv::quantMin;

bool isConstantScalar(const Graph& g, int v) {
  return v < 0 || (g.value(v).isConstant() && g.value(v).type.numElements() == 1);
}

std::optional<QParams> paramsOf(const Graph& g, int q, int scale, int zero);

/// The params of a Q or DQ node with per-tensor constant scale and zero
/// point on uint8 or int8 data.
std::optional<QParams> scalarParams(const Graph& g, const Node& n) {
  const int zero = n.inputs.size() > 2 ? n.inputs[2] : -1;
  auto q = paramsOf(g, n.op == "QuantizeLinear" ? n.outputs[0] : n.inputs[0], n.inputs[1], zero);
  if (!q || (q->type != DType::kU8 && q->type != DType::kI8)) return std::nullopt;
  return q;
}

/// The node producing v if it is a live `op`, else -1.
int producer(const Graph& g, int v, const char* op) {
  if (v < 0) return -1;
  const int p = g.value(v).producer;
  return p >= 0 && !g.node(p).dead && g.node(p).op == op ? p : -1;
}

/// Whether v's only reader is node `reader` (and v is no graph output).
bool readOnlyBy(const Graph& g, int v, int reader) {
  const auto readers = g.consumers(v);
  return !g.isGraphOutput(v) && readers.size() == 1 && readers[0] == reader;
}

/// Removes node `id` if nothing reads its outputs.
void removeIfUnused(Graph& g, int id) {
  if (id < 0 || g.node(id).dead) return;
  for (int out : g.node(id).outputs)
    if (!g.consumers(out).empty() || g.isGraphOutput(out)) return;
  g.removeNode(id);
}

/// The integer clamp that Q(act(v)) applies, act being Relu or Clip.
std::pair<int32_t, int32_t> activationClamp(const Node* act, const QParams& q) {
  int32_t lo = quantMin(q.type), hi = quantMax(q.type);
  if (!act) return {lo, hi};
  auto quantize = [&](double bound) {
    if (std::isinf(bound)) return bound < 0 ? lo : hi;
    const float v = static_cast<float>(bound) / q.scaleValue;
    return static_cast<int32_t>(std::clamp<double>(std::nearbyint(v) + q.zeroValue, lo, hi));
  };
  if (act->op == "Relu") return {std::max(lo, q.zeroValue), hi};
  return {quantize(act->getFloat("min", -INFINITY)), quantize(act->getFloat("max", INFINITY))};
}

/// A Q node's chain: Q <- [act <-] head, each link read by the next only.
struct Chain {
  int q, act = -1, head = -1;
  QParams out;
};

std::optional<Chain> chainOf(const Graph& g, int qId) {
  const Node& q = g.node(qId);
  auto params = scalarParams(g, q);
  if (!params) return std::nullopt;
  Chain c{qId, -1, -1, *params};
  int v = q.inputs[0];
  int p = g.value(v).producer;
  if (p < 0 || !readOnlyBy(g, v, qId)) return std::nullopt;
  const Node& first = g.node(p);
  if ((first.op == "Relu" && first.inputs.size() == 1) ||
      (first.op == "Clip" && first.numPresentInputs() == 1)) {
    c.act = p;
    v = first.inputs[0];
    p = g.value(v).producer;
    if (p < 0 || !readOnlyBy(g, v, c.act)) return std::nullopt;
  }
  c.head = p;
  return c;
}

/// Sets the clamp of Q(act(.)) on node `id`.
void setClamp(Graph& g, const Chain& c, int id) {
  const auto [lo, hi] = activationClamp(c.act >= 0 ? &g.node(c.act) : nullptr, c.out);
  if (lo != quantMin(c.out.type)) g.node(id).attrs[conv::kQMin] = int64_t{lo};
  if (hi != quantMax(c.out.type)) g.node(id).attrs[conv::kQMax] = int64_t{hi};
}

/// Removes the chain's nodes and gives Q's output to a new node.
int replaceChain(Graph& g, const Chain& c, std::string op, std::string name,
                 std::vector<int> inputs, std::map<std::string, ir::Attribute> attrs = {}) {
  const int out = g.node(c.q).outputs[0];
  g.removeNode(c.q);
  if (c.act >= 0) g.removeNode(c.act);
  g.removeNode(c.head);
  const int id =
      g.addNode(std::move(op), std::move(name), std::move(inputs), {out}, std::move(attrs));
  setClamp(g, c, id);
  return id;
}

/// The params of a quantised value `q` read with `scale` and `zero`.
std::optional<QParams> paramsOf(const Graph& g, int q, int scale, int zero) {
  if (!isConstantScalar(g, scale) || scale < 0 || !isConstantScalar(g, zero)) return std::nullopt;
  return QParams{scale, zero, static_cast<float>(g.value(scale).doubleValues()[0]),
                 zero >= 0 ? static_cast<int32_t>(g.value(zero).intValues()[0]) : 0,
                 g.value(q).type.dtype};
}

/// DQ(q) feeding input `v`, with scalar params.
std::optional<std::pair<int, QParams>> dequantized(const Graph& g, int v) {
  const int dq = producer(g, v, "DequantizeLinear");
  if (dq < 0) return std::nullopt;
  auto params = scalarParams(g, g.node(dq));
  if (!params) return std::nullopt;
  return std::pair{dq, *params};
}

/// A DQ of constant int8 or uint8 weights, per tensor or per `axis`.
int dequantizedWeights(const Graph& g, int v, int64_t axis) {
  const int dq = producer(g, v, "DequantizeLinear");
  if (dq < 0) return -1;
  const Node& n = g.node(dq);
  const ir::Value& w = g.value(n.inputs[0]);
  const int zero = n.inputs.size() > 2 ? n.inputs[2] : -1;
  if (!w.isConstant() || (w.type.dtype != DType::kU8 && w.type.dtype != DType::kI8)) return -1;
  if (!g.value(n.inputs[1]).isConstant() || (zero >= 0 && !g.value(zero).isConstant())) return -1;
  if (n.getInt("per_axis", 0) && n.getInt("axis", 0) != axis) return -1;
  return dq;
}

/// The int32 bias a DQ of int32 describes for scales x_scale * w_scale[c]
/// (within float rounding), as a new constant; -1 where there is none, -2
/// where the bias does not fit.
int int32Bias(Graph& g, int v, float xScale, const std::vector<double>& wScales, int64_t channels) {
  if (v < 0) return -1;
  const int dq = producer(g, v, "DequantizeLinear");
  if (dq < 0) return -2;
  const Node& n = g.node(dq);
  const ir::Value& b = g.value(n.inputs[0]);
  if (!b.isConstant() || b.type.dtype != DType::kI32 || b.type.numElements() != channels ||
      !g.value(n.inputs[1]).isConstant())
    return -2;
  const auto values = b.intValues();
  const auto scales = g.value(n.inputs[1]).doubleValues();
  std::vector<int32_t> out(values.size());
  for (size_t c = 0; c < values.size(); ++c) {
    const double want =
        static_cast<double>(xScale * static_cast<float>(wScales[wScales.size() > 1 ? c : 0]));
    const double have = scales[scales.size() > 1 ? c : 0];
    if (std::abs(have - want) > 1e-6 * std::abs(want)) return -2;
    out[c] = static_cast<int32_t>(std::nearbyint(static_cast<double>(values[c]) * have / want));
  }
  std::vector<uint8_t> bytes(out.size() * 4);
  std::memcpy(bytes.data(), out.data(), bytes.size());
  return g.addConstant(g.uniqueValueName(b.name + "_int32"), {DType::kI32, {channels}},
                       std::move(bytes));
}

/// A product's int8 form: QLinearConv's or QLinearMatMul's inputs before
/// y's scale and zero point, its int32 bias (-1: none), its attributes,
/// and the DequantizeLinear nodes it reads through.
struct ProductForm {
  std::vector<int> inputs;  // x, x_scale, x_zero, w, w_scale, w_zero
  int bias = -1;
  std::map<std::string, ir::Attribute> attrs;
  int xDq = -1, wDq = -1;
  bool isConv = false;
};

/// The int8 form of Conv, MatMul or Gemm `id` on dequantised data and
/// weights (constant weights only where `constantWeights`).
std::optional<ProductForm> productForm(Graph& g, int id, bool constantWeights) {
  const Node& head = g.node(id);
  auto x = dequantized(g, head.inputs[0]);
  if (!x) return std::nullopt;
  const bool isConv = head.op == "Conv", isGemm = head.op == "Gemm";
  const bool transB = isGemm && head.getInt("transB", 0) != 0;
  if (isConv &&
      (g.value(head.inputs[0]).type.rank() < 3 || g.value(head.inputs[0]).type.rank() > 4))
    return std::nullopt;
  if (isGemm &&
      (head.getInt("transA", 0) || head.getFloat("alpha", 1) != 1 || head.getFloat("beta", 1) != 1))
    return std::nullopt;
  const int64_t rankB = g.value(head.inputs[1]).type.rank();
  const int wq = dequantizedWeights(g, head.inputs[1], isConv || transB ? 0 : 1);
  std::optional<std::pair<int, QParams>> runtimeB;
  if (wq < 0) {
    if (constantWeights || head.op != "MatMul" || !(runtimeB = dequantized(g, head.inputs[1])))
      return std::nullopt;
  } else if (!isConv && rankB != 2) {
    return std::nullopt;
  }
  const int wDq = wq >= 0 ? wq : runtimeB->first;
  const Node& w = g.node(wDq);
  const int64_t channels =
      g.value(head.outputs[0]).type.shape[isConv ? 1 : g.value(head.outputs[0]).type.rank() - 1];
  const int bias = int32Bias(g, head.inputs.size() > 2 ? head.inputs[2] : -1, x->second.scaleValue,
                             g.value(w.inputs[1]).doubleValues(), channels);
  if (bias == -2) return std::nullopt;
  ProductForm form{{g.node(x->first).inputs[0], x->second.scale, x->second.zero, w.inputs[0],
                    w.inputs[1], w.inputs.size() > 2 ? w.inputs[2] : -1},
                   bias,
                   {},
                   x->first,
                   wDq,
                   isConv};
  if (isConv)
    for (const char* a : {"kernel_shape", "strides", "pads", "dilations", "group"})
      if (head.has(a)) form.attrs[a] = head.attrs.at(a);
  if (transB) form.attrs[conv::kQTransB] = int64_t{1};
  return form;
}

/// The inputs of the int8 node: the form's, y's scale and zero point, and
/// the bias (QLinearConv's ninth input is there even when absent).
std::vector<int> productInputs(const ProductForm& form, int yScale, int yZero) {
  std::vector<int> inputs = form.inputs;
  inputs.insert(inputs.end(), {yScale, yZero});
  if (form.isConv || form.bias >= 0) inputs.push_back(form.bias);
  return inputs;
}

/// Conv, MatMul or Gemm on dequantised data and weights -> QLinearConv or
/// QLinearMatMul.
bool fuseProduct(Graph& g, const Chain& c) {
  auto form = productForm(g, c.head, false);
  if (!form) return false;
  const std::string name = g.node(c.head).name;
  replaceChain(g, c, form->isConv ? "QLinearConv" : "QLinearMatMul", name,
               productInputs(*form, c.out.scale, c.out.zero), form->attrs);
  removeIfUnused(g, form->xDq);
  removeIfUnused(g, form->wDq);
  return true;
}

/// Conv, MatMul or Gemm on dequantised data and constant weights whose
/// float output no QuantizeLinear takes (a classifier's logits) -> the int8
/// product's int32 sums, bias included, and a DequantizeLinear of them by
/// x_scale * w_scale[c] along the channel axis.
bool fuseFloatProduct(Graph& g, int id) {
  const Node& head = g.node(id);
  if (head.op != "Conv" && head.op != "MatMul" && head.op != "Gemm") return false;
  auto form = productForm(g, id, true);
  if (!form) return false;
  const int out = g.node(id).outputs[0];
  const ir::TensorType type = g.value(out).type;
  const int axis = form->isConv ? 1 : type.rank() - 1;
  const float xScale = static_cast<float>(g.value(form->inputs[1]).doubleValues()[0]);
  const auto wScales = g.value(form->inputs[4]).doubleValues();
  std::vector<float> scales(type.shape[axis]);
  for (size_t c = 0; c < scales.size(); ++c)
    scales[c] = xScale * static_cast<float>(wScales[wScales.size() > 1 ? c : 0]);
  const std::string name = g.node(id).name;
  const int sumsScale =
      addFloatConstant(g, g.uniqueValueName(name + "_sums_scale"), {type.shape[axis]}, scales);
  const int sums = g.addValue(g.uniqueValueName(name + "_sums"), {DType::kI32, type.shape});
  g.removeNode(id);
  g.addNode(form->isConv ? "QLinearConv" : "QLinearMatMul", name, productInputs(*form, -1, -1),
            {sums}, form->attrs);
  g.addNode("DequantizeLinear", name + "_sums_DequantizeLinear", {sums, sumsScale, -1}, {out},
            {{"axis", int64_t{axis}}, {"per_axis", int64_t{1}}});
  removeIfUnused(g, form->xDq);
  removeIfUnused(g, form->wDq);
  return true;
}

/// QLinearConv | QLinearMatMul -> q -> DQ -> Add: folds the Add into the
/// product's epilogue; `side` is the Add operand that q feeds.
bool absorbAdd(Graph& g, const Chain& c, size_t side) {
  const Node& add = g.node(c.head);
  auto mid = dequantized(g, add.inputs[side]);
  auto residual = dequantized(g, add.inputs[1 - side]);
  const auto& shape = g.value(add.outputs[0]).type.shape;
  if (!mid || !residual || !readOnlyBy(g, add.inputs[side], c.head) ||
      g.value(add.inputs[0]).type.shape != shape || g.value(add.inputs[1]).type.shape != shape)
    return false;
  const int qMid = g.node(mid->first).inputs[0];
  int p = producer(g, qMid, "QLinearConv");
  if (p < 0) p = producer(g, qMid, "QLinearMatMul");
  if (p < 0 || !readOnlyBy(g, qMid, mid->first)) return false;
  Node& product = g.node(p);
  const size_t slot =
      product.op == "QLinearConv" ? conv::kQLinearConvResidual : conv::kQLinearMatMulResidual;
  if (product.inputs.size() > slot && product.inputs[slot] >= 0) return false;
  // The product requantises to mid with its own y params: the DQ must agree.
  auto own = paramsOf(g, qMid, product.inputs[6], product.inputs[7]);
  if (!own || !(*own == mid->second)) return false;
  const DType midType = g.value(qMid).type.dtype;
  product.attrs[conv::kQMidScale] = double{mid->second.scaleValue};
  product.attrs[conv::kQMidZero] = int64_t{mid->second.zeroValue};
  product.attrs[conv::kQMidType] = static_cast<int64_t>(midType);
  product.attrs[conv::kQMidMin] = product.getInt(conv::kQMin, quantMin(midType));
  product.attrs[conv::kQMidMax] = product.getInt(conv::kQMax, quantMax(midType));
  product.attrs.erase(conv::kQMin);
  product.attrs.erase(conv::kQMax);
  product.attrs[conv::kQResidualScale] = double{residual->second.scaleValue};
  product.attrs[conv::kQResidualZero] = int64_t{residual->second.zeroValue};
  product.inputs.resize(slot + 1, -1);
  product.inputs[slot] = g.node(residual->first).inputs[0];
  product.inputs[6] = c.out.scale;
  product.inputs[7] = c.out.zero;
  const int midDq = mid->first, residualDq = residual->first;
  const int out = g.node(c.q).outputs[0];
  g.removeNode(c.q);
  if (c.act >= 0) g.removeNode(c.act);
  g.removeNode(c.head);
  g.removeNode(midDq);
  g.setNodeOutput(p, 0, out);
  setClamp(g, c, p);
  removeIfUnused(g, residualDq);
  return true;
}

/// Add of two dequantised tensors of one shape -> QLinearAdd.
bool fuseAdd(Graph& g, const Chain& c) {
  if (absorbAdd(g, c, 0) || absorbAdd(g, c, 1)) return true;
  const Node& add = g.node(c.head);
  auto a = dequantized(g, add.inputs[0]);
  auto b = dequantized(g, add.inputs[1]);
  const auto& shape = g.value(add.outputs[0]).type.shape;
  if (!a || !b || g.value(add.inputs[0]).type.shape != shape ||
      g.value(add.inputs[1]).type.shape != shape)
    return false;
  replaceChain(
      g, c, "QLinearAdd", add.name,
      {g.node(a->first).inputs[0], a->second.scale, a->second.zero, g.node(b->first).inputs[0],
       b->second.scale, b->second.zero, c.out.scale, c.out.zero});
  removeIfUnused(g, a->first);
  removeIfUnused(g, b->first);
  return true;
}

/// An op that only moves or compares values, on data dequantised with the
/// output's own params -> the op on int8 data.
bool fuseMove(Graph& g, const Chain& c) {
  const Node& head = g.node(c.head);
  if (c.act >= 0 || head.outputs.size() != 1) return false;
  const bool concat = head.op == "Concat";
  std::vector<int> inputs = head.inputs, dqs;
  for (size_t i = 0; i < (concat ? inputs.size() : 1); ++i) {
    auto x = dequantized(g, inputs[i]);
    if (!x || !(x->second == c.out)) return false;
    inputs[i] = g.node(x->first).inputs[0];
    dqs.push_back(x->first);
  }
  replaceChain(g, c, head.op == "MaxPool" ? "MaxPoolInt8" : head.op, head.name, inputs, head.attrs);
  for (int dq : dqs) removeIfUnused(g, dq);
  return true;
}

bool fuseGlobalAveragePool(Graph& g, const Chain& c) {
  const Node& head = g.node(c.head);
  auto x = dequantized(g, head.inputs[0]);
  if (c.act >= 0 || !x || g.value(head.inputs[0]).type.rank() < 3) return false;
  replaceChain(
      g, c, "QLinearGlobalAveragePool", head.name,
      {g.node(x->first).inputs[0], x->second.scale, x->second.zero, c.out.scale, c.out.zero});
  removeIfUnused(g, x->first);
  return true;
}

/// The elementwise ops a table can replace, on float data and scalar
/// constants, and each one's value for one element.
std::optional<float> applyScalar(const Node& n, const std::vector<float>& in) {
  const std::string& op = n.op;
  const float x = in[0];
  if (in.size() == 2) {
    const float y = in[1];
    if (op == "Add") return x + y;
    if (op == "Sub") return x - y;
    if (op == "Mul") return x * y;
    if (op == "Div") return x / y;
    if (op == "Max") return std::max(x, y);
    if (op == "Min") return std::min(x, y);
    return std::nullopt;
  }
  if (op == "Relu") return std::max(x, 0.0f);
  if (op == "Clip")
    return std::clamp(x, static_cast<float>(n.getFloat("min", -INFINITY)),
                      static_cast<float>(n.getFloat("max", INFINITY)));
  if (op == "Neg") return -x;
  if (op == "Abs") return std::abs(x);
  if (op == "Tanh") return std::tanh(x);
  if (op == "Sigmoid") return 1.0f / (1.0f + std::exp(-x));
  if (op == "LeakyRelu") return x < 0 ? static_cast<float>(n.getFloat("alpha", 0.01)) * x : x;
  if (op == "HardSigmoid" || op == "HardSwish") {
    const float alpha = op == "HardSwish" ? 1.0f / 6 : static_cast<float>(n.getFloat("alpha", 0.2));
    const float beta = op == "HardSwish" ? 0.5f : static_cast<float>(n.getFloat("beta", 0.5));
    const float hard = std::clamp(alpha * x + beta, 0.0f, 1.0f);
    return op == "HardSwish" ? x * hard : hard;
  }
  return std::nullopt;
}

/// The elementwise ops between a DQ and the Q that reads their result: the
/// nodes in order, the DQ; every input a scalar constant, the DQ's output
/// or another of them, of the DQ's shape, each read by these nodes only.
struct LookupDag {
  std::vector<int> nodes;
  int dq = -1;
};

bool collectDag(const Graph& g, int v, LookupDag& dag, const ir::Shape& shape) {
  const ir::Value& value = g.value(v);
  if (value.isConstant()) return value.type.numElements() == 1 && value.type.dtype == DType::kF32;
  const int p = value.producer;
  if (p < 0 || g.node(p).dead || value.type != ir::TensorType{DType::kF32, shape}) return false;
  if (g.node(p).op == "DequantizeLinear") {
    if (dag.dq >= 0 && dag.dq != p) return false;
    dag.dq = p;
    return scalarParams(g, g.node(p)).has_value();
  }
  if (std::find(dag.nodes.begin(), dag.nodes.end(), p) != dag.nodes.end()) return true;
  const Node& n = g.node(p);
  const std::vector<float> probe(n.inputs.size(), 1.0f);
  if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs.size() > 2 ||
      n.numPresentInputs() != static_cast<int>(n.inputs.size()) || !applyScalar(n, probe))
    return false;
  for (int in : n.inputs)
    if (!collectDag(g, in, dag, shape)) return false;
  dag.nodes.push_back(p);
  return true;
}

/// DQ(x) -> elementwise ops of it and scalars -> Q  =>  QLinearLookup(x,
/// table): the ops' 256 results, computed here in float as they would run.
bool fuseLookup(Graph& g, int qId) {
  auto out = scalarParams(g, g.node(qId));
  const int v = g.node(qId).inputs[0];
  LookupDag dag;
  if (!out || !readOnlyBy(g, v, qId) || !collectDag(g, v, dag, g.value(v).type.shape) ||
      dag.nodes.empty() || dag.dq < 0)
    return false;
  for (size_t i = 0; i + 1 < dag.nodes.size(); ++i)
    for (int r : g.consumers(g.node(dag.nodes[i]).outputs[0]))
      if (std::find(dag.nodes.begin(), dag.nodes.end(), r) == dag.nodes.end() ||
          g.isGraphOutput(g.node(dag.nodes[i]).outputs[0]))
        return false;
  const QParams in = *scalarParams(g, g.node(dag.dq));
  std::vector<uint8_t> table(256);
  for (int byte = 0; byte < 256; ++byte) {
    const int32_t q = in.type == DType::kI8 ? static_cast<int8_t>(byte) : byte;
    std::map<int, float> values = {
        {g.node(dag.dq).outputs[0], static_cast<float>(q - in.zeroValue) * in.scaleValue}};
    for (int id : dag.nodes) {
      std::vector<float> args;
      for (int a : g.node(id).inputs)
        args.push_back(values.count(a) ? values.at(a)
                                       : static_cast<float>(g.value(a).doubleValues()[0]));
      values[g.node(id).outputs[0]] = *applyScalar(g.node(id), args);
    }
    const float y = values.at(v);
    const float scaled = std::isnan(y) ? 0.0f : std::nearbyint(y / out->scaleValue);
    const auto level = static_cast<int32_t>(std::clamp<float>(
        scaled + static_cast<float>(out->zeroValue), quantMin(out->type), quantMax(out->type)));
    table[byte] = static_cast<uint8_t>(level);
  }
  const int tableValue =
      g.addConstant(g.uniqueValueName(g.node(qId).name + "_table"), {DType::kU8, {256}}, table);
  const int x = g.node(dag.dq).inputs[0], result = g.node(qId).outputs[0];
  const std::string name = g.node(dag.nodes.back()).name;
  g.removeNode(qId);
  for (int id : dag.nodes) g.removeNode(id);
  g.addNode("QLinearLookup", name, {x, tableValue}, {result});
  removeIfUnused(g, dag.dq);
  return true;
}

bool fuseChain(Graph& g, int q) {
  auto c = chainOf(g, q);
  if (!c) return false;
  const std::string& op = g.node(c->head).op;
  if (g.value(g.node(c->head).outputs[0]).type.dtype != DType::kF32) return false;
  if (op == "Conv" || op == "MatMul" || op == "Gemm") return fuseProduct(g, *c);
  if (op == "Add" && g.node(c->head).inputs.size() == 2) return fuseAdd(g, *c);
  if (op == "GlobalAveragePool") return fuseGlobalAveragePool(g, *c);
  for (const char* move : {"MaxPool", "Reshape", "Transpose", "Concat"})
    if (op == move) return fuseMove(g, *c);
  return false;
}

/// Casts to the type they already have (PyTorch's export of quantised
/// tensors) are identities.
bool removeIdentityCasts(Graph& g) {
  bool changed = false;
  for (int id : g.topologicalOrder()) {
    const Node& n = g.node(id);
    if (n.op != "Cast" || g.value(n.inputs[0]).type != g.value(n.outputs[0]).type) continue;
    const int in = n.inputs[0], out = n.outputs[0];
    g.removeNode(id);
    g.replaceAllUses(out, in);
    changed = true;
  }
  return changed;
}

}  // namespace

bool fuseQuantized(ir::Graph& graph, const PassTarget&) {
  bool changed = removeIdentityCasts(graph);
  for (int id : graph.topologicalOrder())
    if (!graph.node(id).dead && graph.node(id).op == "QuantizeLinear")
      changed |= fuseChain(graph, id) || fuseLookup(graph, id);
  for (int id : graph.topologicalOrder())
    if (!graph.node(id).dead) changed |= fuseFloatProduct(graph, id);
  return changed;
}

}  // namespace cgc::passes
