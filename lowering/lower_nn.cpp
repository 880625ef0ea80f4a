// Lowering of the neural-network ops: convolutions (with what the passes put
// on them: packed or Winograd weights, a fused epilogue or max pooling,
// channel-blocked layouts), pooling, Gemm and MatMul (and narrow-weights'
// MatMulNarrow), normalisations,
// softmax and the recurrent cells.
#include <limits>

#include "ir/conventions.h"
#include "lowering/lower_support.h"

namespace cgc::lowering {
namespace {

namespace conv = ir::conventions;
static_assert(conv::kChannelBlock == rt::kChannelBlock);

/// Spatial attributes right-aligned into (depth, height, width); 1-D and
/// 2-D ops get unit sizes in front.
struct Spatial3d {
  std::array<int64_t, 3> kernel, strides, dilations, padBegin;
};

std::array<int64_t, 3> rightAligned(const std::vector<int64_t>& values, size_t from, size_t count,
                                    int64_t unit) {
  std::array<int64_t, 3> out = {unit, unit, unit};
  for (size_t i = 0; i < count; ++i) out[3 - count + i] = values.at(from + i);
  return out;
}

std::variant<Spatial3d, Unsupported> spatialOf(const Node& n, const Shape& x) {
  if (x.size() < 3 || x.size() > 5)
    return unsupported("only 1-D, 2-D and 3-D {} is supported (input {})",
                       n.op == "MaxPool" || n.op == "AveragePool" ? "pooling" : "convolution",
                       ir::shapeString(x));
  const size_t spatial = x.size() - 2;
  return Spatial3d{rightAligned(n.getInts("kernel_shape"), 0, spatial, 1),
                   rightAligned(n.getInts("strides", Shape(spatial, 1)), 0, spatial, 1),
                   rightAligned(n.getInts("dilations", Shape(spatial, 1)), 0, spatial, 1),
                   rightAligned(n.getInts("pads", Shape(2 * spatial, 0)), 0, spatial, 0)};
}

/// The activation fuse-epilogues put on a Conv, Gemm or MatMul.
template <typename P>
void setActivation(const Node& n, P& p) {
  const std::string act = n.getString(conv::kActivation, "");
  p.activation = rt::Activation::kNone;
  if (act.empty()) return;
  CGC_ASSERT(act == "Relu" || act == "Clip", "node '{}': unknown fused activation '{}'", n.name,
             act);
  if (act == "Relu") {
    p.activation = rt::Activation::kRelu;
    return;
  }
  p.activation = rt::Activation::kClip;
  p.act_min =
      static_cast<float>(n.getFloat(conv::kActivationMin, -std::numeric_limits<float>::infinity()));
  p.act_max =
      static_cast<float>(n.getFloat(conv::kActivationMax, std::numeric_limits<float>::infinity()));
}

/// The max pooling fuse-conv-maxpool put on a Conv, checked against the
/// runtime.
void setPool(const Graph& g, const Node& n, int residual, rt::ConvParams& p) {
  const Shape& pooled = shapeOf(g, n.outputs[0]);
  const auto pads = n.getInts(conv::kPoolPads);
  CGC_ASSERT(pooled.size() == 4 && pads.size() == 2 && residual < 0,
             "node '{}': a fused max pooling needs a 2-D convolution without residual", n.name);
  p.pool_h_out = pooled[2];
  p.pool_w_out = pooled[3];
  p.pool_pad_top = pads[0];
  p.pool_pad_left = pads[1];
  rt::PoolParams pool{};
  pool.n_c = p.n * p.c_out;
  pool.h_in = p.h_out;
  pool.w_in = p.w_out;
  pool.h_out = p.pool_h_out;
  pool.w_out = p.pool_w_out;
  pool.k_h = pool.k_w = 3;
  pool.stride_h = pool.stride_w = 2;
  pool.pad_top = p.pool_pad_top;
  pool.pad_left = p.pool_pad_left;
  CGC_ASSERT(rt::convFusesMaxPool(p, pool),
             "node '{}': the runtime cannot fuse a 3x3, stride-2 max pooling into this Conv",
             n.name);
}

/// What pack-conv-weights and block-activations decided, checked against
/// the runtime (a mismatch is a pass's fault).
void setPackingAndLayouts(const Graph& g, const Node& n, rt::ConvParams& p) {
  const conv::ConvPacking packing = conv::convPacking(n);
  // Its own weights: those before the alternatives' (setAlternatives).
  const std::vector<int64_t> others = n.getInts(conv::kConvAlternativeWeights);
  const int64_t weights = others.empty() ? g.value(n.inputs[1]).type.numElements() : others.front();
  p.bf16_weights = packing == conv::ConvPacking::kBf16Panels;
  p.packed_weights = packing == conv::ConvPacking::kPanels || p.bf16_weights;
  p.winograd = packing == conv::ConvPacking::kWinograd || packing == conv::ConvPacking::kWinograd4;
  p.winograd_tile = packing == conv::ConvPacking::kWinograd4 ? 4 : 2;
  CGC_ASSERT(packing == conv::ConvPacking::kNone || p.packed_weights || p.winograd,
             "node '{}': unknown {} {}", n.name, conv::kPackedWeights, static_cast<int>(packing));
  CGC_ASSERT(!p.packed_weights || (p.groups == 1 && weights == rt::packedConvWeightCount(p)),
             "node '{}': packed weights need groups 1 and {} 32-bit elements", n.name,
             rt::packedConvWeightCount(p));
  CGC_ASSERT(
      !p.winograd || (rt::convTakesWinograd(p) && weights == rt::winogradWeightCount(p)),
      "node '{}': Winograd weights need a 3x3, 5x5, 2x2, 1x7, 7x1, 1x3 or 3x1 stride-1 Conv and "
      "{} floats",
      n.name, rt::winogradWeightCount(p));
  p.blocked_input = g.value(n.inputs[0]).layout == ir::Layout::kChannelBlocked;
  p.blocked_output = g.value(n.outputs[0]).layout == ir::Layout::kChannelBlocked;
  CGC_ASSERT(
      !(p.blocked_input || p.blocked_output) ||
          ((p.packed_weights || p.winograd) && (!p.blocked_input || rt::convTakesBlockedInput(p)) &&
           (!p.blocked_output || rt::convTakesBlockedOutput(p))),
      "node '{}': the runtime cannot run this Conv on channel-blocked activations", n.name);
}

/// The variant pack-conv-weights chose, checked against the runtime's
/// declaration of it (a mismatch is a pass's fault).
void setVariant(const Node& n, rt::ConvParams& p) {
  if (!n.has(conv::kConvVariant)) return;
  const std::string name = n.getString(conv::kConvVariant, "");
  p.variant = rt::convVariantNamed(name.c_str());
  p.depth_step = n.getInt(conv::kConvDepthStep, 0);
  CGC_ASSERT(p.variant != rt::ConvVariant::kNone, "node '{}': unknown {} '{}'", n.name,
             conv::kConvVariant, name);
  const rt::ConvVariantInfo& info = rt::variantInfo(p.variant);
  CGC_ASSERT(rt::convVariantTakes(p.variant, p) && info.weights == rt::convWeightsOf(p),
             "node '{}': the {} convolution does not take this layer on {} weights", n.name, name,
             rt::enumName(rt::convWeightsOf(p)));
}

/// The other variants pack-conv-weights packed for --dim's general code,
/// each checked against the runtime's declaration and its weights' extent.
void setAlternatives(const Graph& g, const Node& n, rt::ConvParams& p) {
  if (!n.has(conv::kConvAlternatives)) return;
  const std::vector<int64_t> starts = n.getInts(conv::kConvAlternativeWeights);
  const std::string text = n.getString(conv::kConvAlternatives, "");
  std::vector<std::string> choices;
  for (size_t begin = 0, end; begin <= text.size(); begin = end + 1) {
    end = std::min(text.find(',', begin), text.size());
    choices.push_back(text.substr(begin, end - begin));
  }
  CGC_ASSERT(choices.size() == starts.size() && choices.size() <= p.alternatives.size(),
             "node '{}': {} names {} variants for {} weights", n.name, conv::kConvAlternatives,
             choices.size(), starts.size());
  const int64_t total = g.value(n.inputs[1]).type.numElements();
  for (size_t i = 0; i < choices.size(); ++i) {
    const conv::ConvChoice choice = conv::parseConvChoice(choices[i]);
    rt::ConvAlternative& a = p.alternatives[i];
    a = {rt::convVariantNamed(choice.variant.c_str()), choice.setting, starts[i]};
    // A plain-weight alternative need not take every size: convChoiceAt
    // asks per call.
    CGC_ASSERT(a.variant != rt::ConvVariant::kNone &&
                   (rt::variantInfo(a.variant).weights == rt::ConvWeights::kPlain ||
                    rt::convVariantTakes(a.variant, p)) &&
                   a.weights >= 0 && a.weights < total,
               "node '{}': the alternative {} does not take this layer at offset {}", n.name,
               choices[i], a.weights);
  }
}

Lowered lowerConv(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const bool transpose = n.op == "ConvTranspose";
  // A Conv that stores a max pooling of its output keeps its own shape.
  const bool pooled = n.has(conv::kConvShape);
  const Shape y = pooled ? n.getInts(conv::kConvShape) : shapeOf(g, n.outputs[0]);
  auto spatial = spatialOf(n, x);
  if (auto* problem = std::get_if<Unsupported>(&spatial)) return *problem;
  const Spatial3d& s = std::get<Spatial3d>(spatial);
  auto in = rightAligned(x, 2, x.size() - 2, 1);
  auto out = rightAligned(y, 2, y.size() - 2, 1);
  rt::ConvParams p{
      x[0],           x[1],          in[0],         in[1],         in[2],
      y[1],           out[0],        out[1],        out[2],        n.getInt("group", 1),
      s.kernel[0],    s.kernel[1],   s.kernel[2],   s.strides[0],  s.strides[1],
      s.strides[2],   s.padBegin[0], s.padBegin[1], s.padBegin[2], s.dilations[0],
      s.dilations[1], s.dilations[2]};
  const int bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
  if (transpose)
    return KernelCall{
        Kernel::kConvTranspose, DType::kF32, p, {n.inputs[0], n.inputs[1], bias}, {n.outputs[0]}};
  setActivation(n, p);
  setPackingAndLayouts(g, n, p);
  const int residual = n.inputs.size() > conv::kConvResidual ? n.inputs[conv::kConvResidual] : -1;
  if (pooled) setPool(g, n, residual, p);
  setVariant(n, p);
  setAlternatives(g, n, p);
  return KernelCall{
      Kernel::kConv, DType::kF32, p, {n.inputs[0], n.inputs[1], bias, residual}, {n.outputs[0]}};
}

Lowered lowerPool(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  if (n.outputs.size() > 1 && n.outputs[1] >= 0)
    return unsupported("the Indices output of MaxPool is not supported");
  auto spatial = spatialOf(n, x);
  if (auto* problem = std::get_if<Unsupported>(&spatial)) return *problem;
  const Spatial3d& s = std::get<Spatial3d>(spatial);
  auto in = rightAligned(x, 2, x.size() - 2, 1);
  auto out = rightAligned(y, 2, y.size() - 2, 1);
  rt::PoolParams p{
      x[0] * x[1],    in[0],          in[1],          in[2],
      out[0],         out[1],         out[2],         s.kernel[0],
      s.kernel[1],    s.kernel[2],    s.strides[0],   s.strides[1],
      s.strides[2],   s.padBegin[0],  s.padBegin[1],  s.padBegin[2],
      s.dilations[0], s.dilations[1], s.dilations[2], n.getInt("count_include_pad", 0) != 0};
  return KernelCall{n.op == "MaxPool" ? Kernel::kMaxPool : Kernel::kAvgPool,
                    DType::kF32,
                    p,
                    {n.inputs[0]},
                    {n.outputs[0]}};
}

Lowered lowerGlobalAvgPool(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const bool blocked = g.value(n.inputs[0]).layout == ir::Layout::kChannelBlocked;
  return KernelCall{Kernel::kGlobalAvgPool,
                    DType::kF32,
                    rt::GlobalPoolParams{product(x, 0, 2), product(x, 2, x.size()), blocked},
                    {n.inputs[0]},
                    {n.outputs[0]}};
}

Lowered lowerGemm(const Graph& g, const Node& n) {
  const Shape& y = shapeOf(g, n.outputs[0]);
  const bool transA = n.getInt("transA", 0), transB = n.getInt("transB", 0);
  const Shape& a = shapeOf(g, n.inputs[0]);
  rt::GemmParams p{y[0],
                   y[1],
                   transA ? a[0] : a[1],
                   transA,
                   transB,
                   static_cast<float>(n.getFloat("alpha", 1.0)),
                   static_cast<float>(n.getFloat("beta", 1.0)),
                   0,
                   0};
  const int c = n.inputs.size() > 2 ? n.inputs[2] : -1;
  if (c >= 0) {
    auto strides = broadcastStrides(shapeOf(g, c), y);
    p.c_stride_m = strides[0];
    p.c_stride_n = strides[1];
  }
  setActivation(n, p);
  return KernelCall{Kernel::kGemm, DType::kF32, p, {n.inputs[0], n.inputs[1], c}, {n.outputs[0]}};
}

Lowered lowerMatMul(const Graph& g, const Node& n) {
  Shape a = shapeOf(g, n.inputs[0]);
  Shape b = shapeOf(g, n.inputs[1]);
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const size_t batchRank = std::max(a.size(), b.size()) - 2;
  if (auto problem = checkRank(batchRank)) return *problem;
  rt::MatMulParams p{};
  p.batch_rank = static_cast<int32_t>(batchRank);
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = b.back();
  Shape aBatch(a.begin(), a.end() - 2), bBatch(b.begin(), b.end() - 2);
  Shape batch(batchRank, 1);
  for (size_t d = 0; d < batchRank; ++d) {
    int64_t da = d + aBatch.size() >= batchRank ? aBatch[d + aBatch.size() - batchRank] : 1;
    int64_t db = d + bBatch.size() >= batchRank ? bBatch[d + bBatch.size() - batchRank] : 1;
    batch[d] = std::max(da, db);
  }
  auto as = broadcastStrides(aBatch, batch);
  auto bs = broadcastStrides(bBatch, batch);
  p.batch_shape = perDim<int64_t>(batch);
  for (size_t d = 0; d < batchRank; ++d) {
    p.a_batch_strides[d] = as[d] * p.m * p.k;
    p.b_batch_strides[d] = bs[d] * p.k * p.n;
  }
  setActivation(n, p);
  const int bias = n.inputs.size() > conv::kMatMulBias ? n.inputs[conv::kMatMulBias] : -1;
  return KernelCall{Kernel::kMatMul,
                    elementType(g, n.outputs[0]),
                    p,
                    {n.inputs[0], n.inputs[1], bias},
                    {n.outputs[0]}};
}

/// MatMulNarrow (a, w, scale, bias): narrow-weights' product; a's leading
/// dimensions are the rows.
Lowered lowerMatMulNarrow(const Graph& g, const Node& n) {
  const Shape& a = shapeOf(g, n.inputs[0]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  rt::NarrowMatMulParams p{};
  p.k = a.back();
  p.n = y.empty() ? 1 : y.back();
  p.m = product(a, 0, a.size() - 1);
  p.format = static_cast<rt::WeightFormat>(n.getInt(conv::kWeightFormat, 0));
  setActivation(n, p);
  const auto input = [&](size_t i) { return n.inputs.size() > i ? n.inputs[i] : -1; };
  return KernelCall{Kernel::kMatMulNarrow,
                    DType::kF32,
                    p,
                    {n.inputs[0], n.inputs[conv::kNarrowWeights], input(conv::kNarrowScale),
                     input(conv::kNarrowBias)},
                    {n.outputs[0]}};
}

/// FusedAttention (q, k, v, mask, condition): fuse-attention's node. The
/// leading axes (at most two) are batch and heads; K, V and the mask
/// broadcast into them, K and V dense here (cache pairing restrides them).
Lowered lowerFusedAttention(const Graph& g, const Node& n) {
  const auto padded = [](Shape s) {
    s.insert(s.begin(), 4 - s.size(), 1);
    return s;
  };
  const Shape q = padded(shapeOf(g, n.inputs[0])), y = padded(shapeOf(g, n.outputs[0]));
  const Shape k = padded(shapeOf(g, n.inputs[1])), v = padded(shapeOf(g, n.inputs[2]));
  rt::AttentionParams p{};
  p.batch = q[0];
  p.heads = q[1];
  p.rows = q[2];
  p.keys = k[2];
  p.depth = q[3];
  p.depth_v = y[3];
  p.scale = static_cast<float>(n.getFloat("scale", 1.0));
  const auto ks = broadcastStrides(k, {q[0], q[1], k[2], k[3]});
  const auto vs = broadcastStrides(v, {q[0], q[1], v[2], v[3]});
  p.k_batch_stride = ks[0];
  p.k_head_stride = ks[1];
  p.k_key_stride = p.depth;
  p.v_batch_stride = vs[0];
  p.v_head_stride = vs[1];
  p.v_key_stride = p.depth_v;
  const int add = n.inputs[3], condition = n.inputs[4];
  const int mask = add >= 0 ? add : condition;
  if (mask >= 0) {
    const auto ms = broadcastStrides(padded(shapeOf(g, mask)), {q[0], q[1], q[2], p.keys});
    p.mask_batch_stride = ms[0];
    p.mask_head_stride = ms[1];
    p.mask_row_stride = ms[2];
    p.mask_key_stride = ms[3];
  }
  p.fill = static_cast<float>(n.getFloat("fill", 0.0));
  p.fill_when = n.getInt("fill_when", 1) != 0;
  return KernelCall{Kernel::kAttention,
                    DType::kF32,
                    p,
                    {n.inputs[0], n.inputs[1], n.inputs[2], add, condition},
                    {n.outputs[0]}};
}

Lowered lowerBatchNorm(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  rt::BatchNormParams p{x[0], x.size() > 1 ? x[1] : 1, product(x, 2, x.size()),
                        static_cast<float>(n.getFloat("epsilon", 1e-5))};
  return KernelCall{Kernel::kBatchNorm,
                    DType::kF32,
                    p,
                    {n.inputs[0], n.inputs[1], n.inputs[2], n.inputs[3], n.inputs[4]},
                    {n.outputs[0]}};
}

Lowered lowerInstanceNorm(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  rt::InstanceNormParams p{x[0], x[1], product(x, 2, x.size()),
                           static_cast<float>(n.getFloat("epsilon", 1e-5))};
  return KernelCall{Kernel::kInstanceNorm,
                    DType::kF32,
                    p,
                    {n.inputs[0], n.inputs[1], n.inputs[2]},
                    {n.outputs[0]}};
}

/// Outputs Y, Mean, InvStdDev (the frontend always defines all three).
Lowered lowerLayerNorm(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const size_t axis = static_cast<size_t>(n.getInt("axis", -1));
  CGC_ASSERT(axis < x.size(), "node '{}': unresolved axis", n.name);
  rt::LayerNormParams p{product(x, 0, axis), product(x, axis, x.size()),
                        static_cast<float>(n.getFloat("epsilon", 1e-5))};
  const int bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
  return KernelCall{
      Kernel::kLayerNorm, DType::kF32, p, {n.inputs[0], n.inputs[1], bias}, n.outputs};
}

Lowered lowerSoftmax(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const size_t axis = static_cast<size_t>(n.getInt("axis", -1));
  CGC_ASSERT(axis < x.size() || x.empty(), "node '{}': unresolved axis", n.name);
  rt::SoftmaxParams p{};
  p.log = n.op == "LogSoftmax";
  p.outer = product(x, 0, axis);
  if (n.getInt("legacy", 0)) {
    p.axis = product(x, axis, x.size());
    p.inner = 1;
  } else {
    p.axis = x.empty() ? 1 : x[axis];
    p.inner = product(x, axis + 1, x.size());
  }
  return KernelCall{Kernel::kSoftmax, DType::kF32, p, {n.inputs[0]}, {n.outputs[0]}};
}

/// RNN, GRU and LSTM. The kernel takes LSTM's full argument list; the other
/// cells pass null for initial_c, P and Y_c.
Lowered lowerRecurrent(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const bool batchMajor = n.getInt("batch_major", 0) != 0;
  rt::RnnParams p{};
  p.cell = n.op == "LSTM"  ? rt::RnnCell::kLstm
           : n.op == "GRU" ? rt::RnnCell::kGru
                           : rt::RnnCell::kRnn;
  p.seq_length = batchMajor ? x[1] : x[0];
  p.batch = batchMajor ? x[0] : x[1];
  p.input_size = x[2];
  p.hidden_size = n.getInt("hidden_size", 0);
  p.num_directions = static_cast<int32_t>(n.getInt("num_directions", 1));
  p.reverse = n.getInt("reverse", 0) != 0;
  p.batch_major = batchMajor;
  p.linear_before_reset = p.cell == rt::RnnCell::kGru && n.getInt("linear_before_reset", 0) != 0;
  p.input_forget = p.cell == rt::RnnCell::kLstm && n.getInt("input_forget", 0) != 0;
  p.clip = static_cast<float>(n.getFloat("clip", 0.0));
  auto codes = n.getInts("activations");
  auto alphas = n.getFloats("activation_alpha");
  auto betas = n.getFloats("activation_beta");
  CGC_ASSERT(codes.size() == 3 * static_cast<size_t>(p.num_directions),
             "node '{}': unresolved activations", n.name);
  for (size_t i = 0; i < codes.size(); ++i)
    p.activations[i] = {static_cast<rt::RnnActivation>(codes[i]), static_cast<float>(alphas[i]),
                        static_cast<float>(betas[i])};
  p.packed_weights = n.getInt(conv::kPackedWeights, 0) != 0;
  CGC_ASSERT(!p.packed_weights ||
                 (g.value(n.inputs[1]).type.numElements() == rt::packedRnnWeightCount(p, false) &&
                  g.value(n.inputs[2]).type.numElements() == rt::packedRnnWeightCount(p, true)),
             "node '{}': packed weights need {} and {} floats", n.name,
             rt::packedRnnWeightCount(p, false), rt::packedRnnWeightCount(p, true));
  std::vector<int> inputs = n.inputs;
  inputs.resize(8, -1);
  std::vector<int> outputs = n.outputs;
  outputs.resize(3, -1);
  return KernelCall{Kernel::kRnn, DType::kF32, p, inputs, outputs};
}

}  // namespace

void registerNeuralNetLowerers(std::map<std::string, OpLowerer>& table) {
  table["Conv"] = lowerConv;
  table["ConvTranspose"] = lowerConv;
  table["MaxPool"] = lowerPool;
  table["AveragePool"] = lowerPool;
  table["GlobalAveragePool"] = lowerGlobalAvgPool;
  table["Gemm"] = lowerGemm;
  table["MatMul"] = lowerMatMul;
  table["MatMulNarrow"] = lowerMatMulNarrow;
  table["FusedAttention"] = lowerFusedAttention;
  table["BatchNormalization"] = lowerBatchNorm;
  table["InstanceNormalization"] = lowerInstanceNorm;
  table["LayerNormalization"] = lowerLayerNorm;
  table["Softmax"] = lowerSoftmax;
  table["LogSoftmax"] = lowerSoftmax;
  for (const char* op : {"RNN", "GRU", "LSTM"}) table[op] = lowerRecurrent;
}

}  // namespace cgc::lowering
