// The conventions by which passes talk to later passes, to lowering and to
// the verifier: the attributes a pass sets on a node, the inputs a fusion
// appends, and which readers take the channel-blocked layout. Named once
// here so that the writer and every reader agree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "ir/graph.h"

namespace cgc::ir::conventions {

/// pack-conv-weights and pack-rnn-weights: the weights input holds the
/// kernel's own layout instead of ONNX's (ConvPacking for a Conv, 1 for a
/// recurrent cell).
inline constexpr const char* kPackedWeights = "cgc_packed_weights";
/// kBf16Panels: panels of bfloat16 pairs (--precision bf16).
enum class ConvPacking : int64_t {
  kNone = 0,
  kPanels = 1,
  kWinograd = 2,
  kWinograd4 = 3,
  kBf16Panels = 4
};

/// pack-conv-weights: the variant a float Conv runs (an
/// rt::ConvVariantInfo name, "Winograd"), chosen for the target.
inline constexpr const char* kConvVariant = "cgc_conv_variant";
/// pack-conv-weights: on a Conv it gives packed panels, the depth the
/// packed GEMM takes per pass on the target (rt::convPackedDepthStep).
inline constexpr const char* kConvDepthStep = "cgc_depth_step";
/// pack-conv-weights, for --dim's general code: the other variants a Conv
/// may run per call ("Packed:1024,Winograd:2": each a ConvChoice), and
/// where each one's weights start in the weights input, in floats
/// (rt::ConvParams::alternatives).
inline constexpr const char* kConvAlternatives = "cgc_conv_alternatives";
inline constexpr const char* kConvAlternativeWeights = "cgc_conv_alternative_weights";

/// fuse-epilogues: the activation applied to a Conv's, Gemm's or MatMul's
/// result ("Relu", or "Clip" with its bounds).
inline constexpr const char* kActivation = "cgc_activation";
inline constexpr const char* kActivationMin = "cgc_act_min";
inline constexpr const char* kActivationMax = "cgc_act_max";

/// fuse-epilogues: the input a Conv reads as its residual (summed before
/// the activation) and a MatMul as its bias.
inline constexpr size_t kConvResidual = 3;
inline constexpr size_t kMatMulBias = 2;

/// fuse-conv-maxpool: a Conv that stores the 3x3, stride-2 max pooling of
/// its output keeps its own output shape and the pool's top and left pads.
inline constexpr const char* kConvShape = "cgc_conv_shape";
inline constexpr const char* kPoolPads = "cgc_pool_pads";

/// The values of a quantised type (uint8 or int8): the clamps' defaults.
inline int32_t quantMin(DType t) { return t == DType::kI8 ? -128 : 0; }
inline int32_t quantMax(DType t) { return t == DType::kI8 ? 127 : 255; }

/// fuse-quantized: the clamp of a quantised product's or QLinearAdd's
/// output in its own integer units, a Relu or Clip folded in (absent: the
/// type's range).
inline constexpr const char* kQMin = "cgc_q_min";
inline constexpr const char* kQMax = "cgc_q_max";

/// fuse-quantized: a quantised Add folded into a QLinearConv or
/// QLinearMatMul. The product is requantised to the intermediate `mid`
/// (scale, zero point, element type, clamp), then added to the residual
/// input (its scale and zero point) and requantised to the output.
inline constexpr const char* kQMidScale = "cgc_q_mid_scale";
inline constexpr const char* kQMidZero = "cgc_q_mid_zero";
inline constexpr const char* kQMidType = "cgc_q_mid_type";
inline constexpr const char* kQMidMin = "cgc_q_mid_min";
inline constexpr const char* kQMidMax = "cgc_q_mid_max";
inline constexpr const char* kQResidualScale = "cgc_q_residual_scale";
inline constexpr const char* kQResidualZero = "cgc_q_residual_zero";
/// The inputs fuse-quantized appends: QLinearConv's residual after its
/// nine ONNX inputs; QLinearMatMul's int32 bias (from a Gemm) and residual
/// after its eight.
inline constexpr size_t kQLinearConvResidual = 9;
inline constexpr size_t kQLinearMatMulBias = 8;
inline constexpr size_t kQLinearMatMulResidual = 9;
/// fuse-quantized: a QLinearMatMul from a Gemm with transB (B stored [n, k]).
inline constexpr const char* kQTransB = "cgc_trans_b";

/// pack-quantized-weights: the weights input of QLinearConv, ConvInteger,
/// QLinearMatMul or MatMulInteger holds rt::packQWeights' bytes;
/// kPackedWeights is the rt::QPacking, these the rest of rt::QPackInfo and
/// whether the weights were int8.
inline constexpr const char* kQPackBlock = "cgc_q_pack_nb";
inline constexpr const char* kQSplitEntries = "cgc_q_split_entries";
inline constexpr const char* kQWeightsSigned = "cgc_q_w_signed";
/// pack-quantized-weights: the variant a QLinearConv or ConvInteger runs
/// (an rt::QConvVariantInfo name, "Direct"), chosen for the target's tier;
/// its packing is the weights'.
inline constexpr const char* kQConvVariant = "cgc_qconv_variant";

/// Control flow (If, Loop, Scan; see Node::subgraphs): for subgraph k of a
/// node, attribute "cgc_bindings_<k>" lists, for each input of the subgraph,
/// the index of the node input that feeds it, or -1 for an input the node
/// supplies itself (Loop's iteration number, condition and loop-carried
/// values; Scan's states and slices).
inline std::string subgraphBindings(size_t k) { return "cgc_bindings_" + std::to_string(k); }
/// If: the branch (0 then, 1 else) that could not be compiled for the bound
/// shapes, and why; taking it is a run-time error.
inline constexpr const char* kFailedBranch = "cgc_failed_branch";
inline constexpr const char* kFailedBranchReason = "cgc_failed_branch_reason";
/// Loop: how many loop-carried values it has (node inputs 2 ... 2 + n - 1).
inline constexpr const char* kLoopCarried = "cgc_carried";

/// narrow-weights: a MatMul or Gemm with constant weights becomes a
/// MatMulNarrow (a, w, scale, bias): `w` the rt::pack_narrow_weights bytes
/// (uint8), `scale` kInt8's per-column scales (float [n]; -1 for kBf16),
/// `bias` float [n] or -1, the activation kept; kWeightFormat is the
/// rt::WeightFormat.
inline constexpr const char* kWeightFormat = "cgc_weight_format";
inline constexpr size_t kNarrowWeights = 1;
inline constexpr size_t kNarrowScale = 2;
inline constexpr size_t kNarrowBias = 3;

/// Channels per block of Layout::kChannelBlocked (the runtime's
/// rt::kChannelBlock, which lowering checks it equals).
inline constexpr int64_t kChannelBlock = 16;

inline ConvPacking convPacking(const Node& n) {
  return static_cast<ConvPacking>(n.getInt(kPackedWeights, 0));
}

/// A float Conv's variant with its setting, as cgc tune tries it and a tuned
/// profile records it: "Winograd:4" (the form F(4x4, 3x3); the tile),
/// "Packed:512" (the packed GEMM's depth step), "Pointwise" (a variant
/// without settings). Setting 0: the target's default.
struct ConvChoice {
  std::string variant;
  int64_t setting = 0;
};

/// "Name" or "Name:N"; a setting that is not a positive number leaves the
/// text whole as the name (no variant has such a name).
inline ConvChoice parseConvChoice(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return {text, 0};
  const std::string digits = text.substr(colon + 1);
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoll(digits) == 0)
    return {text, 0};
  return {text.substr(0, colon), std::stoll(digits)};
}

/// Whether a convolution records its variant: a float one
/// (pack-conv-weights) or an int8 one (pack-quantized-weights).
inline bool hasConvChoice(const Node& conv) {
  return conv.has(kConvVariant) || conv.has(kQConvVariant);
}

/// The choice pack-conv-weights made for `conv` (its variant, and the form
/// or depth step of the variants that have one), or pack-quantized-weights'
/// int8 variant; "" where neither made one.
inline std::string convChoice(const Node& conv) {
  if (!conv.has(kConvVariant)) return conv.getString(kQConvVariant, "");
  const std::string variant = conv.getString(kConvVariant, "");
  switch (convPacking(conv)) {
    case ConvPacking::kPanels:
    case ConvPacking::kBf16Panels:
      return variant + ":" + std::to_string(conv.getInt(kConvDepthStep, 0));
    case ConvPacking::kWinograd:
      return variant + ":2";
    case ConvPacking::kWinograd4:
      return variant + ":4";
    case ConvPacking::kNone:
      break;
  }
  return variant;
}

/// A Conv on weights that pack-conv-weights rearranged (panels or
/// Winograd's transform) and without a fused pool: the kernels that can
/// take the blocked layout.
inline bool isPackedConv(const Node& n) {
  return n.op == "Conv" && convPacking(n) != ConvPacking::kNone && !n.has(kConvShape);
}

/// A node whose every output element comes from the input elements at the
/// same index, all of the output's shape (an Add of two same-shape tensors,
/// a Relu): it runs on channel-blocked values as on plain ones, its inputs
/// and output in one layout (PathNet's sums of convolutions stay blocked).
inline bool isLayoutTransparent(const Graph& graph, const Node& n) {
  static constexpr const char* kOps[] = {"Add", "Sub",  "Mul",  "Div",     "Max",  "Min",
                                         "Sum", "Mean", "Relu", "Sigmoid", "Tanh", "LeakyRelu"};
  if (std::none_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return n.op == op; }))
    return false;
  if (n.outputs.size() != 1 || n.inputs.empty()) return false;
  const auto& shape = graph.value(n.outputs[0]).type.shape;
  return std::all_of(n.inputs.begin(), n.inputs.end(),
                     [&](int in) { return in >= 0 && graph.value(in).type.shape == shape; });
}

/// Whether node n may read its input `index` in the channel-blocked layout:
/// a packed Conv's input, its residual where its output is blocked too (a
/// residual follows the output's layout), a GlobalAveragePool's input, a
/// layout-transparent node's inputs where its output is blocked.
/// block-activations further asks the runtime whether the Conv's shape
/// allows it; the verifier checks that every reader of a blocked value is
/// one of these.
inline bool mayReadBlocked(const Graph& graph, const Node& n, size_t index) {
  if (n.op == "GlobalAveragePool") return index == 0;
  const bool outputBlocked =
      !n.outputs.empty() && graph.value(n.outputs[0]).layout == Layout::kChannelBlocked;
  if (isLayoutTransparent(graph, n)) return outputBlocked;
  if (!isPackedConv(n)) return false;
  if (index == kConvResidual) return outputBlocked;
  return index == 0;
}

}  // namespace cgc::ir::conventions
