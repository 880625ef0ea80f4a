// Lowering of the quantisation ops: QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear to their elementwise kernels; QLinearConv and
// ConvInteger to qconv, QLinearMatMul and MatMulInteger to qgemm (with
// what fuse-quantized and pack-quantized-weights put on them: a clamp, a
// folded quantised Add, a Gemm's bias and transB, packed weights); and
// the int8 forms fuse-quantized leaves between them (QLinearAdd,
// MaxPoolInt8, QLinearGlobalAveragePool). The scales and zero points that
// become parameters are constants (the importers and the pass see to it).
#include "ir/conventions.h"
#include "lowering/lower_support.h"

namespace cgc::lowering {
namespace {

namespace conv = ir::conventions;

bool present(const Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i] >= 0; }
int inputOr(const Node& n, size_t i) { return present(n, i) ? n.inputs[i] : -1; }

/// The first value of a constant input (fallback where absent).
double constantAt(const Graph& g, const Node& n, size_t i, double fallback) {
  if (!present(n, i)) return fallback;
  const ir::Value& v = g.value(n.inputs[i]);
  CGC_ASSERT(v.isConstant(), "node '{}': input {} must be constant", n.name, i);
  return v.doubleValues().at(0);
}
float scaleAt(const Graph& g, const Node& n, size_t i) {
  return static_cast<float>(constantAt(g, n, i, 1.0));
}
int32_t zeroAt(const Graph& g, const Node& n, size_t i) {
  return static_cast<int32_t>(constantAt(g, n, i, 0.0));
}

int64_t count(const Graph& g, const Node& n, size_t i) {
  return present(n, i) ? g.value(n.inputs[i]).type.numElements() : 1;
}

using conv::quantMax;
using conv::quantMin;

/// The requantising epilogue of a QLinearConv or QLinearMatMul: scales and
/// zero points at inputs 1/2 (x) and 6/7 (y), the clamp and a folded Add;
/// with an int32 y (fuse-quantized's float-output products), the sums.
rt::QEpilogue epilogueOf(const Graph& g, const Node& n, int residual) {
  rt::QEpilogue e;
  const DType y = elementType(g, n.outputs[0]);
  e.y_type = y;
  if (y == DType::kI32) {
    e.kind = rt::QOutput::kInt32;
    return e;
  }
  e.x_scale = scaleAt(g, n, 1);
  e.y_scale = scaleAt(g, n, 6);
  e.y_zero = zeroAt(g, n, 7);
  e.y_min = static_cast<int32_t>(n.getInt(conv::kQMin, quantMin(y)));
  e.y_max = static_cast<int32_t>(n.getInt(conv::kQMax, quantMax(y)));
  if (residual < 0) return e;
  e.kind = rt::QOutput::kRequantAdd;
  const auto mid = static_cast<DType>(n.getInt(conv::kQMidType, static_cast<int64_t>(DType::kU8)));
  e.mid_scale = static_cast<float>(n.getFloat(conv::kQMidScale, 1.0));
  e.mid_zero = static_cast<int32_t>(n.getInt(conv::kQMidZero, 0));
  e.mid_min = static_cast<int32_t>(n.getInt(conv::kQMidMin, quantMin(mid)));
  e.mid_max = static_cast<int32_t>(n.getInt(conv::kQMidMax, quantMax(mid)));
  e.r_signed = elementType(g, residual) == DType::kI8;
  e.r_scale = static_cast<float>(n.getFloat(conv::kQResidualScale, 1.0));
  e.r_zero = static_cast<int32_t>(n.getInt(conv::kQResidualZero, 0));
  return e;
}

/// What pack-quantized-weights decided (kNone: ONNX's layout); the
/// weights' signedness from the attribute, or their type when unpacked.
void setPacking(const Graph& g, const Node& n, int weights, rt::QPacking& packing, int64_t& nb,
                bool& wSigned) {
  packing = static_cast<rt::QPacking>(n.getInt(conv::kPackedWeights, 0));
  nb = n.getInt(conv::kQPackBlock, 0);
  wSigned = packing == rt::QPacking::kNone ? elementType(g, weights) == DType::kI8
                                           : n.getInt(conv::kQWeightsSigned, 1) != 0;
}

Lowered lowerQuantize(const Graph& g, const Node& n) {
  const bool quantize = n.op == "QuantizeLinear";
  const Shape& x = shapeOf(g, n.inputs[0]);
  rt::QuantizeParams p{};
  p.type = elementType(g, quantize ? n.outputs[0] : n.inputs[0]);
  p.per_axis = n.getInt("per_axis", 0) != 0;
  if (p.per_axis) {
    const size_t axis = axisOf(n, x.size());
    p.outer = product(x, 0, axis);
    p.axis_size = x[axis];
    p.inner = product(x, axis + 1, x.size());
  } else {
    p.inner = product(x, 0, x.size());
  }
  return KernelCall{quantize ? Kernel::kQuantizeLinear : Kernel::kDequantizeLinear,
                    DType::kF32,
                    p,
                    {n.inputs[0], n.inputs[1], inputOr(n, 2)},
                    {n.outputs[0]}};
}

Lowered lowerDynamicQuantize(const Graph& g, const Node& n) {
  return KernelCall{Kernel::kDynamicQuantizeLinear,
                    DType::kF32,
                    rt::DynamicQuantizeParams{g.value(n.inputs[0]).type.numElements()},
                    {n.inputs[0]},
                    n.outputs};
}

/// The variant pack-quantized-weights chose, checked against the
/// runtime's declaration of it (a mismatch is a pass's fault).
void setVariant(const Node& n, rt::QConvParams& p) {
  if (!n.has(conv::kQConvVariant)) return;
  const std::string name = n.getString(conv::kQConvVariant, "");
  p.variant = rt::qconvVariantNamed(name.c_str());
  CGC_ASSERT(p.variant != rt::QConvVariant::kNone, "node '{}': unknown {} '{}'", n.name,
             conv::kQConvVariant, name);
  const rt::QConvVariantInfo& info = rt::variantInfo(p.variant);
  CGC_ASSERT(p.packing == info.packing && rt::qconvVariantRuns(p.variant, p, info.tier),
             "node '{}': the {} int8 convolution does not take this layer on {} weights", n.name,
             name, rt::enumName(p.packing));
}

/// QLinearConv (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B[,
/// residual]) and ConvInteger (x, w, x_zp, w_zp).
Lowered lowerQuantizedConv(const Graph& g, const Node& n) {
  const bool integer = n.op == "ConvInteger";
  const size_t xIn = 0, wIn = integer ? 1 : 3, wScale = 4, wZero = integer ? 3 : 5;
  const Shape& x = shapeOf(g, n.inputs[xIn]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  if (x.size() != 3 && x.size() != 4)
    return unsupported("only 1-D and 2-D int8 convolutions are supported (input {})",
                       ir::shapeString(x));
  const size_t spatial = x.size() - 2;
  const auto kernel = n.getInts("kernel_shape"), strides = n.getInts("strides"),
             pads = n.getInts("pads"), dilations = n.getInts("dilations");
  auto last = [&](const std::vector<int64_t>& v, size_t i) { return i < spatial ? v.at(i) : 1; };
  rt::QConvParams p{};
  p.n = x[0], p.c_in = x[1], p.c_out = y[1], p.groups = n.getInt("group", 1);
  p.h_in = spatial == 2 ? x[2] : 1, p.w_in = x.back();
  p.h_out = spatial == 2 ? y[2] : 1, p.w_out = y.back();
  p.k_h = spatial == 2 ? kernel[0] : 1, p.k_w = kernel.back();
  p.stride_h = spatial == 2 ? strides[0] : 1, p.stride_w = strides.back();
  p.dilation_h = spatial == 2 ? dilations[0] : 1, p.dilation_w = dilations.back();
  p.pad_top = spatial == 2 ? pads[0] : 0, p.pad_left = last(pads, spatial - 1);
  p.x_signed = elementType(g, n.inputs[xIn]) == DType::kI8;
  p.x_zero = zeroAt(g, n, 2);
  setPacking(g, n, n.inputs[wIn], p.packing, p.pack_nb, p.w_signed);
  p.split_entries = n.getInt(conv::kQSplitEntries, 0);
  p.per_channel = count(g, n, integer ? wZero : wScale) > 1;
  const int residual = integer ? -1 : inputOr(n, conv::kQLinearConvResidual);
  if (integer) {
    p.out.kind = rt::QOutput::kInt32;
    p.out.y_type = DType::kI32;
  } else {
    p.out = epilogueOf(g, n, residual);
  }
  setVariant(n, p);
  return KernelCall{Kernel::kQConv,
                    DType::kF32,
                    p,
                    {n.inputs[xIn], n.inputs[wIn], integer ? -1 : n.inputs[wScale],
                     inputOr(n, wZero), integer ? -1 : inputOr(n, 8), residual},
                    {n.outputs[0]}};
}

/// QLinearMatMul (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp[,
/// bias, residual]) and MatMulInteger (A, B, a_zp, b_zp).
Lowered lowerQuantizedMatMul(const Graph& g, const Node& n) {
  const bool integer = n.op == "MatMulInteger";
  const size_t aIn = 0, bIn = integer ? 1 : 3, aZero = 2, bZero = integer ? 3 : 5;
  Shape a = shapeOf(g, n.inputs[aIn]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  rt::QGemmParams p{};
  setPacking(g, n, n.inputs[bIn], p.packing, p.pack_nb, p.b_signed);
  const bool packed = p.packing != rt::QPacking::kNone;
  Shape b = packed ? Shape{a.back(), y.empty() ? 1 : y.back()} : shapeOf(g, n.inputs[bIn]);
  p.trans_b = n.getInt(conv::kQTransB, 0) != 0;
  if (p.trans_b && !packed) std::swap(b[b.size() - 1], b[b.size() - 2]);  // stored [n, k]
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const size_t batchRank = std::max(a.size(), b.size()) - 2;
  if (auto problem = checkRank(batchRank)) return *problem;
  if (count(g, n, aZero) != 1) return unsupported("a zero point per row of A is not supported");
  p.m = a[a.size() - 2], p.k = a.back(), p.n = b.back();
  Shape aBatch(a.begin(), a.end() - 2), bBatch(b.begin(), b.end() - 2), batch(batchRank, 1);
  for (size_t d = 0; d < batchRank; ++d) {
    const int64_t da = d + aBatch.size() >= batchRank ? aBatch[d + aBatch.size() - batchRank] : 1;
    const int64_t db = d + bBatch.size() >= batchRank ? bBatch[d + bBatch.size() - batchRank] : 1;
    batch[d] = std::max(da, db);
  }
  const auto as = broadcastStrides(aBatch, batch), bs = broadcastStrides(bBatch, batch);
  p.batch_rank = static_cast<int32_t>(batchRank);
  p.batch_shape = perDim<int64_t>(batch);
  for (size_t d = 0; d < batchRank; ++d) {
    p.a_batch_strides[d] = as[d] * p.m * p.k;
    p.b_batch_strides[d] = bs[d] * p.k * p.n;
  }
  CGC_ASSERT(!packed || bBatch.empty(), "node '{}': packed B with batch dimensions", n.name);
  p.a_signed = elementType(g, n.inputs[aIn]) == DType::kI8;
  p.per_column = count(g, n, integer ? bZero : 4) > 1;
  int aZeroInput = -1;
  if (present(n, aZero) && !g.value(n.inputs[aZero]).isConstant())
    aZeroInput = n.inputs[aZero];
  else
    p.a_zero = zeroAt(g, n, aZero);
  const int residual = integer ? -1 : inputOr(n, conv::kQLinearMatMulResidual);
  if (integer) {
    p.out.kind = rt::QOutput::kInt32;
    p.out.y_type = DType::kI32;
  } else {
    p.out = epilogueOf(g, n, residual);
  }
  return KernelCall{
      Kernel::kQGemm,
      DType::kF32,
      p,
      {n.inputs[aIn], aZeroInput, n.inputs[bIn], integer ? -1 : n.inputs[4], inputOr(n, bZero),
       integer ? -1 : inputOr(n, conv::kQLinearMatMulBias), residual},
      {n.outputs[0]}};
}

/// QLinearAdd (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp), same
/// shapes.
Lowered lowerQLinearAdd(const Graph& g, const Node& n) {
  const DType y = elementType(g, n.outputs[0]);
  rt::QAddParams p{};
  p.count = g.value(n.outputs[0]).type.numElements();
  p.a_signed = elementType(g, n.inputs[0]) == DType::kI8;
  p.b_signed = elementType(g, n.inputs[3]) == DType::kI8;
  p.y_type = y;
  p.a_scale = scaleAt(g, n, 1), p.b_scale = scaleAt(g, n, 4), p.y_scale = scaleAt(g, n, 6);
  p.a_zero = zeroAt(g, n, 2), p.b_zero = zeroAt(g, n, 5), p.y_zero = zeroAt(g, n, 7);
  p.y_min = static_cast<int32_t>(n.getInt(conv::kQMin, quantMin(y)));
  p.y_max = static_cast<int32_t>(n.getInt(conv::kQMax, quantMax(y)));
  return KernelCall{Kernel::kQAdd, DType::kF32, p, {n.inputs[0], n.inputs[3]}, {n.outputs[0]}};
}

/// QLinearLookup (x, table): y = table[x], the table 256 uint8 values.
Lowered lowerQLinearLookup(const Graph& g, const Node& n) {
  const ir::Value& table = g.value(n.inputs[1]);
  if (table.type != ir::TensorType{DType::kU8, {256}}) return unsupported("a table of 256 bytes");
  rt::QLookupParams p{g.value(n.outputs[0]).type.numElements()};
  return KernelCall{Kernel::kQLookup, DType::kF32, p, {n.inputs[0], n.inputs[1]}, {n.outputs[0]}};
}

/// MaxPoolInt8: a MaxPool on uint8 or int8 (1-D or 2-D).
Lowered lowerMaxPoolInt8(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  if (x.size() != 3 && x.size() != 4) return unsupported("only 1-D and 2-D int8 max pooling");
  const bool two = x.size() == 4;
  const auto kernel = n.getInts("kernel_shape"), strides = n.getInts("strides"),
             pads = n.getInts("pads"), dilations = n.getInts("dilations");
  rt::PoolParams p{};
  p.n_c = x[0] * x[1];
  p.h_in = two ? x[2] : 1, p.w_in = x.back(), p.h_out = two ? y[2] : 1, p.w_out = y.back();
  p.k_h = two ? kernel[0] : 1, p.k_w = kernel.back();
  p.stride_h = two ? strides[0] : 1, p.stride_w = strides.back();
  p.dilation_h = two ? dilations[0] : 1, p.dilation_w = dilations.back();
  p.pad_top = two ? pads[0] : 0, p.pad_left = pads[two ? 1 : 0];
  return KernelCall{
      Kernel::kMaxPoolInt8, elementType(g, n.inputs[0]), p, {n.inputs[0]}, {n.outputs[0]}};
}

/// QLinearGlobalAveragePool (x, x_scale, x_zp, y_scale, y_zp).
Lowered lowerQGlobalAvgPool(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  rt::QGlobalPoolParams p{};
  p.n_c = product(x, 0, 2), p.spatial = product(x, 2, x.size());
  p.x_signed = elementType(g, n.inputs[0]) == DType::kI8;
  p.y_type = elementType(g, n.outputs[0]);
  p.x_scale = scaleAt(g, n, 1), p.y_scale = scaleAt(g, n, 3);
  p.x_zero = zeroAt(g, n, 2), p.y_zero = zeroAt(g, n, 4);
  return KernelCall{Kernel::kQGlobalAvgPool, DType::kF32, p, {n.inputs[0]}, {n.outputs[0]}};
}

}  // namespace

void registerQuantizationLowerers(std::map<std::string, OpLowerer>& table) {
  table["QuantizeLinear"] = lowerQuantize;
  table["DequantizeLinear"] = lowerQuantize;
  table["DynamicQuantizeLinear"] = lowerDynamicQuantize;
  table["QLinearConv"] = lowerQuantizedConv;
  table["ConvInteger"] = lowerQuantizedConv;
  table["QLinearMatMul"] = lowerQuantizedMatMul;
  table["MatMulInteger"] = lowerQuantizedMatMul;
  table["QLinearAdd"] = lowerQLinearAdd;
  table["QLinearLookup"] = lowerQLinearLookup;
  table["MaxPoolInt8"] = lowerMaxPoolInt8;
  table["QLinearGlobalAveragePool"] = lowerQGlobalAvgPool;
}

}  // namespace cgc::lowering
