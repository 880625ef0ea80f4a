// narrow-weights: --precision bf16 and --quantize int8 --weights-only. Every
// float MatMul whose B is a constant matrix [k, n], and every Gemm with a
// constant B (transA = 0), becomes a MatMulNarrow node (ir/conventions.h)
// whose weights are packed once, here, by rt::pack_narrow_weights: bfloat16,
// or int8 with a scale per output column. A product that reads each weight
// once per run (a decoder's one-token step, a batch-1 classifier head) is
// bound by the bytes of its weights; stored narrow they are half or a
// quarter of them, while activations, sums and everything else stay float.
//
//   MatMul(a [..., k], B [k, n]) [+ bias] [-> act]
//     => MatMulNarrow(a, packed, scale, bias)   a's leading dims are m
//   Gemm(a [m, k], B, C) alpha, beta, transB
//     => MatMulNarrow(a, packed(alpha * B or its transpose), scale,
//                     beta * C)                 C of n elements, [1, n] or one
//
// The node keeps its name, output and fused activation (fuse-epilogues runs
// before), so profiles and diagnostics still name the ONNX node. A B read
// by several products is packed once in each format; each product takes
// PassTarget::weightFormatFor's format (--keep-float: float; --keep-bf16:
// bfloat16), where the packing is smaller than the float B.
#include <cstring>
#include <map>
#include <optional>

#include "cgc/kernels.h"
#include "ir/conventions.h"
#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

namespace conv = ir::conventions;

/// What a product multiplies by: B's value, whether it is stored
/// transposed ([n, k]) and the factor folded into it.
struct Weights {
  int value;
  bool transposed;
  double alpha;
  auto operator<=>(const Weights&) const = default;
};

/// The packed weights and scales of one B, as constants.
struct Packed {
  int weights;
  int scale;  // -1 for kBf16
};

bool isFloatConstant(const ir::Graph& graph, int v) {
  return v >= 0 && graph.value(v).isConstant() && graph.value(v).type.dtype == DType::kF32;
}

/// B's extents [k, n] as the product reads it.
std::pair<int64_t, int64_t> extents(const ir::Graph& graph, const Weights& w) {
  const ir::Shape& shape = graph.value(w.value).type.shape;
  return {shape[w.transposed ? 1 : 0], shape[w.transposed ? 0 : 1]};
}

/// Whether `format`'s packing of B is smaller than B in float: the packing
/// pads n to its panels, so a narrow B of few columns can take more bytes,
/// and bytes are all a narrow product gains.
bool narrowSaves(const ir::Graph& graph, const Weights& w, rt::WeightFormat format) {
  const auto [k, n] = extents(graph, w);
  return rt::narrow_weights_bytes(format, k, n) < k * n * static_cast<int64_t>(sizeof(float));
}

Packed pack(ir::Graph& graph, const Weights& w, rt::WeightFormat format) {
  const ir::Value& b = graph.value(w.value);
  const auto [k, n] = extents(graph, w);
  const float* src = b.dataAs<float>();
  std::vector<float> kn(static_cast<size_t>(k * n));
  for (int64_t q = 0; q < k; ++q)
    for (int64_t j = 0; j < n; ++j)
      kn[q * n + j] =
          static_cast<float>(w.alpha * (w.transposed ? src[j * k + q] : src[q * n + j]));
  std::vector<uint8_t> bytes(static_cast<size_t>(rt::narrow_weights_bytes(format, k, n)));
  std::vector<float> scale(format == rt::WeightFormat::kInt8 ? n : 0);
  rt::pack_narrow_weights(format, k, n, kn.data(), bytes.data(),
                          scale.empty() ? nullptr : scale.data());
  const std::string name = b.name + (format == rt::WeightFormat::kBf16 ? "_bf16" : "_int8");
  const auto size = static_cast<int64_t>(bytes.size());
  Packed packed{
      graph.addConstant(graph.uniqueValueName(name), {DType::kU8, {size}}, std::move(bytes)), -1};
  if (!scale.empty()) packed.scale = addFloatConstant(graph, name + "_scale", {n}, scale);
  return packed;
}

/// A Gemm's C as a bias of n elements times beta (-1: none); nullopt where
/// C is of another shape (one bias per row) or not a constant.
std::optional<int> gemmBias(ir::Graph& graph, const ir::Node& gemm, int64_t n) {
  const int c = gemm.inputs.size() > 2 ? gemm.inputs[2] : -1;
  if (c < 0) return -1;
  if (!isFloatConstant(graph, c)) return std::nullopt;
  const ir::Value& value = graph.value(c);
  const ir::Shape& shape = value.type.shape;
  const int64_t count = value.type.numElements();
  const bool row = (shape == ir::Shape{n}) || (shape == ir::Shape{1, n});
  if (!row && count != 1) return std::nullopt;
  const double beta = gemm.getFloat("beta", 1.0);
  const float* src = value.dataAs<float>();
  std::vector<float> bias(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) bias[j] = static_cast<float>(beta * src[row ? j : 0]);
  return addFloatConstant(graph, value.name + "_bias", {n}, bias);
}

/// What `node` multiplies by and the bias it adds, where it can become a
/// MatMulNarrow.
struct Product {
  Weights weights;
  int bias;
};
std::optional<Product> narrowable(ir::Graph& graph, const ir::Node& node) {
  if (node.op != "MatMul" && node.op != "Gemm") return std::nullopt;
  const int a = node.inputs[0], b = node.inputs[1], y = node.outputs[0];
  if (graph.value(a).type.dtype != DType::kF32 || graph.value(y).type.dtype != DType::kF32 ||
      !isFloatConstant(graph, b) || graph.value(b).type.rank() != 2 ||
      graph.value(a).layout != ir::Layout::kPlain || graph.value(a).type.rank() < 1)
    return std::nullopt;
  const ir::Shape& bShape = graph.value(b).type.shape;
  if (node.op == "MatMul") {
    if (graph.value(a).type.shape.back() != bShape[0]) return std::nullopt;
    const int bias = node.inputs.size() > conv::kMatMulBias ? node.inputs[conv::kMatMulBias] : -1;
    return Product{{b, false, 1.0}, bias};
  }
  if (node.getInt("transA", 0) != 0 || graph.value(a).type.rank() != 2) return std::nullopt;
  const bool transB = node.getInt("transB", 0) != 0;
  const auto bias = gemmBias(graph, node, bShape[transB ? 0 : 1]);
  if (!bias) return std::nullopt;
  return Product{{b, transB, node.getFloat("alpha", 1.0)}, *bias};
}

}  // namespace

bool narrowWeights(ir::Graph& graph, const PassTarget& target) {
  if (!target.narrowWeights && target.bf16Weights.empty()) return false;
  std::map<std::pair<Weights, rt::WeightFormat>, Packed> packed;
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    const auto wanted = target.weightFormatFor(graph.node(id).name);
    if (!wanted) continue;
    const rt::WeightFormat format = *wanted;
    const auto product = narrowable(graph, graph.node(id));
    if (!product || !narrowSaves(graph, product->weights, format)) continue;
    const auto key = std::pair{product->weights, format};
    auto it = packed.find(key);
    if (it == packed.end()) it = packed.emplace(key, pack(graph, product->weights, format)).first;
    ir::Node& node = graph.node(id);  // addConstant may move values, not nodes
    std::map<std::string, ir::Attribute> attrs;
    for (const char* kept : {conv::kActivation, conv::kActivationMin, conv::kActivationMax})
      if (node.has(kept)) attrs[kept] = node.attrs.at(kept);
    attrs[conv::kWeightFormat] = static_cast<int64_t>(format);
    node.op = "MatMulNarrow";
    node.attrs = std::move(attrs);
    node.inputs = {node.inputs[0], it->second.weights, it->second.scale, product->bias};
    changed = true;
  }
  return changed;
}

}  // namespace cgc::passes
