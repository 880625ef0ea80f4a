// Node -> KernelCall for every op the runtime implements. The frontend has
// already resolved every shape-determining input and attribute (auto_pad,
// Slice starts, Softmax's legacy axis), so this file only translates.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "lowering/kernel_call.h"

namespace cgc::lowering {
namespace {

using ir::Graph;
using ir::Node;
using ir::Shape;

const Shape& shapeOf(const Graph& g, int value) {
  return g.value(value).type.shape;
}

/// Dense row-major strides in elements.
std::vector<int64_t> denseStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

void checkRank(const Graph& g, const Node& n, size_t rank) {
  if (rank > static_cast<size_t>(rt::kMaxRank))
    userError(g.where(n), "rank {} exceeds the supported maximum of {}", rank,
              rt::kMaxRank);
}

/// Strides of `in` (right-aligned against `out`) with 0 on broadcast dims.
std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  std::vector<int64_t> dense = denseStrides(in);
  size_t offset = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    strides[offset + d] = in[d] == 1 ? 0 : dense[d];
  return strides;
}

/// Element types the unary and binary kernels are instantiated for.
constexpr std::initializer_list<DType> kArithmeticTypes = {
    DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kI8, DType::kU8};

void requireType(const Graph& g, const Node& n, DType actual,
                 std::initializer_list<DType> allowed) {
  for (DType t : allowed)
    if (t == actual) return;
  userError(g.where(n), "element type {} is not supported", dtypeName(actual));
}

std::optional<rt::UnaryOp> unaryOpFor(const std::string& op) {
  static const std::map<std::string, rt::UnaryOp> table = {
      {"Relu", rt::UnaryOp::kRelu},
      {"LeakyRelu", rt::UnaryOp::kLeakyRelu},
      {"Clip", rt::UnaryOp::kClip},
      {"Sigmoid", rt::UnaryOp::kSigmoid},
      {"Tanh", rt::UnaryOp::kTanh},
      {"HardSigmoid", rt::UnaryOp::kHardSigmoid},
      {"Sqrt", rt::UnaryOp::kSqrt},
      {"Exp", rt::UnaryOp::kExp},
      {"Log", rt::UnaryOp::kLog},
      {"Neg", rt::UnaryOp::kNeg},
      {"Abs", rt::UnaryOp::kAbs},
      {"Reciprocal", rt::UnaryOp::kReciprocal},
      {"Floor", rt::UnaryOp::kFloor},
      {"Ceil", rt::UnaryOp::kCeil},
      {"Identity", rt::UnaryOp::kIdentity},
      {"Erf", rt::UnaryOp::kErf},
      {"Softplus", rt::UnaryOp::kSoftplus},
      {"Elu", rt::UnaryOp::kElu},
      {"Softsign", rt::UnaryOp::kSoftsign},
      {"Not", rt::UnaryOp::kNot},
  };
  auto it = table.find(op);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

std::optional<rt::BinaryOp> binaryOpFor(const std::string& op) {
  static const std::map<std::string, rt::BinaryOp> table = {
      {"Add", rt::BinaryOp::kAdd}, {"Sub", rt::BinaryOp::kSub},
      {"Mul", rt::BinaryOp::kMul}, {"Div", rt::BinaryOp::kDiv},
      {"Pow", rt::BinaryOp::kPow},
      {"Min", rt::BinaryOp::kMin}, {"Max", rt::BinaryOp::kMax},
      {"PRelu", rt::BinaryOp::kPRelu}, {"And", rt::BinaryOp::kAnd},
      {"Or", rt::BinaryOp::kOr}, {"Xor", rt::BinaryOp::kXor},
  };
  auto it = table.find(op);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

/// Bools are one byte: the uint8 kernels serve them.
DType kernelType(DType t) { return t == DType::kBool ? DType::kU8 : t; }

KernelCall lowerUnary(const Graph& g, const Node& n, rt::UnaryOp op) {
  const ir::TensorType& t = g.value(n.outputs[0]).type;
  DType type = kernelType(t.dtype);
  requireType(g, n, type, kArithmeticTypes);
  rt::UnaryParams p{op, t.numElements(), 0.f, 0.f};
  if (op == rt::UnaryOp::kLeakyRelu) p.alpha = n.getFloat("alpha", 0.01);
  if (op == rt::UnaryOp::kElu) p.alpha = n.getFloat("alpha", 1.0);
  if (op == rt::UnaryOp::kHardSigmoid) {
    p.alpha = n.getFloat("alpha", 0.2);
    p.beta = n.getFloat("beta", 0.5);
  }
  if (op == rt::UnaryOp::kClip) {
    p.alpha = n.getFloat("min", -std::numeric_limits<float>::infinity());
    p.beta = n.getFloat("max", std::numeric_limits<float>::infinity());
  }
  return {Kernel::kUnary, type, p, {n.inputs[0]}, {n.outputs[0]}};
}

rt::BroadcastParams broadcastOf(const Graph& g, const Node& n) {
  const Shape& out = shapeOf(g, n.outputs[0]);
  checkRank(g, n, out.size());
  rt::BroadcastParams bc{};
  bc.rank = static_cast<int32_t>(out.size());
  bc.count = ir::numElements(out);
  auto as = broadcastStrides(shapeOf(g, n.inputs[0]), out);
  auto bs = broadcastStrides(shapeOf(g, n.inputs[1]), out);
  for (size_t d = 0; d < out.size(); ++d) {
    bc.shape[d] = out[d];
    bc.a_strides[d] = as[d];
    bc.b_strides[d] = bs[d];
  }
  return bc;
}

KernelCall lowerBinary(const Graph& g, const Node& n, rt::BinaryOp op) {
  DType type = kernelType(g.value(n.outputs[0]).type.dtype);
  requireType(g, n, type, kArithmeticTypes);
  return {Kernel::kBinary, type, rt::BinaryParams{op, broadcastOf(g, n)},
          {n.inputs[0], n.inputs[1]}, {n.outputs[0]}};
}

std::optional<rt::CompareOp> compareOpFor(const std::string& op) {
  static const std::map<std::string, rt::CompareOp> table = {
      {"Equal", rt::CompareOp::kEqual}, {"Greater", rt::CompareOp::kGreater},
      {"Less", rt::CompareOp::kLess},
      {"GreaterOrEqual", rt::CompareOp::kGreaterOrEqual},
      {"LessOrEqual", rt::CompareOp::kLessOrEqual}};
  auto it = table.find(op);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

KernelCall lowerCompare(const Graph& g, const Node& n, rt::CompareOp op) {
  DType type = kernelType(g.value(n.inputs[0]).type.dtype);
  requireType(g, n, type, kArithmeticTypes);
  return {Kernel::kCompare, type, rt::CompareParams{op, broadcastOf(g, n)},
          {n.inputs[0], n.inputs[1]}, {n.outputs[0]}};
}

KernelCall lowerWhere(const Graph& g, const Node& n) {
  const ir::TensorType& out = g.value(n.outputs[0]).type;
  checkRank(g, n, out.shape.size());
  rt::WhereParams p{};
  p.rank = static_cast<int32_t>(out.shape.size());
  p.count = out.numElements();
  p.elem_bytes = dtypeSize(out.dtype);
  auto cs = broadcastStrides(shapeOf(g, n.inputs[0]), out.shape);
  auto as = broadcastStrides(shapeOf(g, n.inputs[1]), out.shape);
  auto bs = broadcastStrides(shapeOf(g, n.inputs[2]), out.shape);
  for (size_t d = 0; d < out.shape.size(); ++d) {
    p.shape[d] = out.shape[d];
    p.cond_strides[d] = cs[d];
    p.a_strides[d] = as[d];
    p.b_strides[d] = bs[d];
  }
  return {Kernel::kWhere, out.dtype, p, {n.inputs[0], n.inputs[1], n.inputs[2]},
          {n.outputs[0]}};
}

KernelCall lowerReduce(const Graph& g, const Node& n) {
  static const std::map<std::string, rt::ReduceOp> ops = {
      {"ReduceSum", rt::ReduceOp::kSum}, {"ReduceMean", rt::ReduceOp::kMean},
      {"ReduceMax", rt::ReduceOp::kMax}, {"ReduceMin", rt::ReduceOp::kMin},
      {"ReduceProd", rt::ReduceOp::kProd},
      {"ReduceSumSquare", rt::ReduceOp::kSumSquare},
      {"ReduceL1", rt::ReduceOp::kL1}, {"ReduceL2", rt::ReduceOp::kL2},
      {"ReduceLogSumExp", rt::ReduceOp::kLogSumExp}};
  const Shape& x = shapeOf(g, n.inputs[0]);
  DType type = g.value(n.outputs[0]).type.dtype;
  requireType(g, n, type, {DType::kF32, DType::kF64, DType::kI32, DType::kI64});
  checkRank(g, n, x.size());
  auto axes = n.getInts("axes");  // normalised, sorted, unique
  rt::ReduceParams p{};
  p.op = ops.at(n.op);
  p.rank = static_cast<int32_t>(x.size());
  p.count = ir::numElements(x);
  p.out_count = g.value(n.outputs[0]).type.numElements();
  p.reduced = p.out_count > 0 ? std::max<int64_t>(1, p.count / p.out_count) : 1;
  int64_t stride = 1;
  for (int d = static_cast<int>(x.size()) - 1; d >= 0; --d) {
    p.shape[d] = x[d];
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    p.out_strides[d] = reduced ? 0 : stride;
    if (!reduced) stride *= x[d];
  }
  return {Kernel::kReduce, type, p, {n.inputs[0]}, {n.outputs[0]}};
}

KernelCall lowerArgReduce(const Graph& g, const Node& n) {
  requireType(g, n, g.value(n.inputs[0]).type.dtype, {DType::kF32});
  const Shape& x = shapeOf(g, n.inputs[0]);
  size_t axis = static_cast<size_t>(n.getInt("axis", 0));
  rt::ArgParams p{product(x, 0, axis), x[axis], product(x, axis + 1, x.size()),
                  n.op == "ArgMax", n.getInt("select_last_index", 0) != 0};
  return {Kernel::kArgReduce, DType::kI64, p, {n.inputs[0]}, {n.outputs[0]}};
}

/// Pad (attrs mode, pads, value) and Tile as index maps.
KernelCall lowerIndexMap(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const ir::TensorType& out = g.value(n.outputs[0]).type;
  checkRank(g, n, x.size());
  rt::IndexMapParams p{};
  std::string mode = n.getString("mode", "constant");
  p.mode = n.op == "Tile"         ? rt::IndexMapMode::kTile
           : mode == "reflect"    ? rt::IndexMapMode::kReflect
           : mode == "edge"       ? rt::IndexMapMode::kEdge
                                  : rt::IndexMapMode::kConstant;
  p.rank = static_cast<int32_t>(x.size());
  p.elem_bytes = dtypeSize(out.dtype);
  p.out_count = out.numElements();
  auto pads = n.getInts("pads", Shape(2 * x.size(), 0));
  for (size_t d = 0; d < x.size(); ++d) {
    p.in_shape[d] = x[d];
    p.out_shape[d] = out.shape[d];
    p.pad_begin[d] = pads[d];
  }
  p.value = n.getFloat("value", 0.0);
  p.dtype = out.dtype;
  return {Kernel::kIndexMap, out.dtype, p, {n.inputs[0]}, {n.outputs[0]}};
}

/// Spatial attributes right-aligned into (depth, height, width); 1-D and
/// 2-D ops get unit sizes in front.
struct Spatial3d {
  std::array<int64_t, 3> kernel, strides, dilations, padBegin;
};

std::array<int64_t, 3> rightAligned(const std::vector<int64_t>& values,
                                    size_t from, size_t count, int64_t unit) {
  std::array<int64_t, 3> out = {unit, unit, unit};
  for (size_t i = 0; i < count; ++i) out[3 - count + i] = values.at(from + i);
  return out;
}

Spatial3d spatialOf(const Graph& g, const Node& n, const Shape& x) {
  size_t spatial = x.size() - 2;
  if (x.size() < 3 || spatial > 3)
    userError(g.where(n), "only 1-D, 2-D and 3-D {} is supported (input {})",
              n.op == "MaxPool" || n.op == "AveragePool" ? "pooling" : "convolution",
              ir::shapeString(x));
  return {rightAligned(n.getInts("kernel_shape"), 0, spatial, 1),
          rightAligned(n.getInts("strides", Shape(spatial, 1)), 0, spatial, 1),
          rightAligned(n.getInts("dilations", Shape(spatial, 1)), 0, spatial, 1),
          rightAligned(n.getInts("pads", Shape(2 * spatial, 0)), 0, spatial, 0)};
}

/// The activation the fuse-epilogues pass put on a Conv, Gemm or MatMul
/// (attribute cgc_activation: "Relu", or "Clip" with cgc_act_min/max).
template <typename P>
void setActivation(const Graph& g, const Node& n, P& p) {
  std::string act = n.getString("cgc_activation", "");
  p.activation = rt::Activation::kNone;
  if (act.empty()) return;
  if (act == "Relu") {
    p.activation = rt::Activation::kRelu;
  } else if (act == "Clip") {
    p.activation = rt::Activation::kClip;
    p.act_min = static_cast<float>(n.getFloat(
        "cgc_act_min", -std::numeric_limits<float>::infinity()));
    p.act_max = static_cast<float>(n.getFloat(
        "cgc_act_max", std::numeric_limits<float>::infinity()));
  } else {
    userError(g.where(n), "unknown fused activation '{}'", act);
  }
}

/// The max pooling that fuse-conv-maxpool put on a Conv (attribute
/// cgc_pool_pads: its top and left pads), checked against the runtime.
void setPool(const Graph& g, const Node& n, int residual, rt::ConvParams& p) {
  const Shape& pooled = shapeOf(g, n.outputs[0]);
  const auto pads = n.getInts("cgc_pool_pads");
  if (pooled.size() != 4 || pads.size() != 2 || residual >= 0)
    userError(g.where(n), "a fused max pooling needs a 2-D convolution without residual");
  p.pool_h_out = pooled[2];
  p.pool_w_out = pooled[3];
  p.pool_pad_top = pads[0];
  p.pool_pad_left = pads[1];
  const rt::PoolParams pool{p.n * p.c_out, 1, p.h_out, p.w_out, 1, p.pool_h_out, p.pool_w_out,
                            1, 3, 3, 1, 2, 2, 0, p.pool_pad_top, p.pool_pad_left, 1, 1, 1, false};
  if (!rt::convFusesMaxPool(p, pool))
    userError(g.where(n), "the runtime cannot fuse a 3x3, stride-2 max pooling into this Conv");
}

KernelCall lowerConv(const Graph& g, const Node& n, bool transpose) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  // A Conv that stores a max pooling of its output (fuse-conv-maxpool)
  // keeps its own output shape in cgc_conv_shape.
  const bool pooled = n.has("cgc_conv_shape");
  const Shape y = pooled ? n.getInts("cgc_conv_shape") : shapeOf(g, n.outputs[0]);
  requireType(g, n, g.value(n.outputs[0]).type.dtype, {DType::kF32});
  Spatial3d s = spatialOf(g, n, x);
  auto in = rightAligned(x, 2, x.size() - 2, 1);
  auto out = rightAligned(y, 2, y.size() - 2, 1);
  rt::ConvParams p{x[0], x[1], in[0], in[1], in[2], y[1], out[0], out[1], out[2],
                   n.getInt("group", 1),
                   s.kernel[0], s.kernel[1], s.kernel[2],
                   s.strides[0], s.strides[1], s.strides[2],
                   s.padBegin[0], s.padBegin[1], s.padBegin[2],
                   s.dilations[0], s.dilations[1], s.dilations[2]};
  int bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
  if (transpose)
    return {Kernel::kConvTranspose, DType::kF32, p,
            {n.inputs[0], n.inputs[1], bias}, {n.outputs[0]}};
  setActivation(g, n, p);
  // cgc_packed_weights (the pack-conv-weights pass): 1 panels, 2 Winograd.
  const int64_t packing = n.getInt("cgc_packed_weights", 0);
  if (packing < 0 || packing > 2)
    userError(g.where(n), "unknown cgc_packed_weights {}", packing);
  p.packed_weights = packing == 1;
  p.winograd = packing == 2;
  if (p.packed_weights &&
      (p.groups != 1 || g.value(n.inputs[1]).type.numElements() != rt::packedConvWeightCount(p)))
    userError(g.where(n), "packed weights need groups 1 and {} floats", rt::packedConvWeightCount(p));
  if (p.winograd && (!rt::convTakesWinograd(p) ||
                     g.value(n.inputs[1]).type.numElements() != rt::winogradWeightCount(p)))
    userError(g.where(n), "Winograd weights need a 3x3 stride-1 Conv with channels in 16s "
              "and {} floats", rt::winogradWeightCount(p));
  // Input 3, added by fuse-epilogues: a residual summed before the activation.
  int residual = n.inputs.size() > 3 ? n.inputs[3] : -1;
  if (pooled) setPool(g, n, residual, p);
  p.blocked_input = g.value(n.inputs[0]).layout == ir::Layout::kChannelBlocked;
  p.blocked_output = g.value(n.outputs[0]).layout == ir::Layout::kChannelBlocked;
  if ((p.blocked_input || p.blocked_output) &&
      (!(p.packed_weights || p.winograd) || (p.blocked_input && !rt::convTakesBlockedInput(p)) ||
       (p.blocked_output && !rt::convTakesBlockedOutput(p))))
    userError(g.where(n), "the runtime cannot run this Conv on channel-blocked activations");
  return {Kernel::kConv, DType::kF32, p,
          {n.inputs[0], n.inputs[1], bias, residual}, {n.outputs[0]}};
}

KernelCall lowerPool(const Graph& g, const Node& n, bool max) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  requireType(g, n, g.value(n.outputs[0]).type.dtype, {DType::kF32});
  if (n.outputs.size() > 1 && n.outputs[1] >= 0)
    userError(g.where(n), "the Indices output of MaxPool is not supported");
  Spatial3d s = spatialOf(g, n, x);
  auto in = rightAligned(x, 2, x.size() - 2, 1);
  auto out = rightAligned(y, 2, y.size() - 2, 1);
  rt::PoolParams p{x[0] * x[1], in[0], in[1], in[2], out[0], out[1], out[2],
                   s.kernel[0], s.kernel[1], s.kernel[2],
                   s.strides[0], s.strides[1], s.strides[2],
                   s.padBegin[0], s.padBegin[1], s.padBegin[2],
                   s.dilations[0], s.dilations[1], s.dilations[2],
                   n.getInt("count_include_pad", 0) != 0};
  return {max ? Kernel::kMaxPool : Kernel::kAvgPool, DType::kF32, p,
          {n.inputs[0]}, {n.outputs[0]}};
}

KernelCall lowerGemm(const Graph& g, const Node& n) {
  requireType(g, n, g.value(n.outputs[0]).type.dtype, {DType::kF32});
  const Shape& y = shapeOf(g, n.outputs[0]);
  bool transA = n.getInt("transA", 0), transB = n.getInt("transB", 0);
  const Shape& a = shapeOf(g, n.inputs[0]);
  rt::GemmParams p{y[0], y[1], transA ? a[0] : a[1], transA, transB,
                   static_cast<float>(n.getFloat("alpha", 1.0)),
                   static_cast<float>(n.getFloat("beta", 1.0)), 0, 0};
  int c = n.inputs.size() > 2 ? n.inputs[2] : -1;
  if (c >= 0) {
    auto strides = broadcastStrides(shapeOf(g, c), y);
    p.c_stride_m = strides[0];
    p.c_stride_n = strides[1];
  }
  setActivation(g, n, p);
  return {Kernel::kGemm, DType::kF32, p, {n.inputs[0], n.inputs[1], c},
          {n.outputs[0]}};
}

KernelCall lowerMatMul(const Graph& g, const Node& n) {
  DType type = g.value(n.outputs[0]).type.dtype;
  requireType(g, n, type, {DType::kF32, DType::kF64});
  Shape a = shapeOf(g, n.inputs[0]);
  Shape b = shapeOf(g, n.inputs[1]);
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  size_t batchRank = std::max(a.size(), b.size()) - 2;
  checkRank(g, n, batchRank);
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
  for (size_t d = 0; d < batchRank; ++d) {
    p.batch_shape[d] = batch[d];
    p.a_batch_strides[d] = as[d] * p.m * p.k;
    p.b_batch_strides[d] = bs[d] * p.k * p.n;
  }
  if (type == DType::kF64)
    return {Kernel::kMatMul, type, p, {n.inputs[0], n.inputs[1]},
            {n.outputs[0]}};
  setActivation(g, n, p);
  // Input 2, added by fuse-epilogues: a bias over the last dimension.
  int bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
  return {Kernel::kMatMul, type, p, {n.inputs[0], n.inputs[1], bias},
          {n.outputs[0]}};
}

KernelCall lowerBatchNorm(const Graph& g, const Node& n) {
  requireType(g, n, g.value(n.outputs[0]).type.dtype, {DType::kF32});
  const Shape& x = shapeOf(g, n.inputs[0]);
  rt::BatchNormParams p{x[0], x.size() > 1 ? x[1] : 1, product(x, 2, x.size()),
                        static_cast<float>(n.getFloat("epsilon", 1e-5))};
  return {Kernel::kBatchNorm, DType::kF32, p,
          {n.inputs[0], n.inputs[1], n.inputs[2], n.inputs[3], n.inputs[4]},
          {n.outputs[0]}};
}

KernelCall lowerInstanceNorm(const Graph& g, const Node& n) {
  requireType(g, n, g.value(n.outputs[0]).type.dtype, {DType::kF32});
  const Shape& x = shapeOf(g, n.inputs[0]);
  rt::InstanceNormParams p{x[0], x[1], product(x, 2, x.size()),
                           static_cast<float>(n.getFloat("epsilon", 1e-5))};
  return {Kernel::kInstanceNorm, DType::kF32, p,
          {n.inputs[0], n.inputs[1], n.inputs[2]}, {n.outputs[0]}};
}

/// Outputs Y, Mean, InvStdDev (the frontend always defines all three).
KernelCall lowerLayerNorm(const Graph& g, const Node& n) {
  requireType(g, n, g.value(n.outputs[0]).type.dtype, {DType::kF32});
  const Shape& x = shapeOf(g, n.inputs[0]);
  size_t axis = static_cast<size_t>(n.getInt("axis", -1));
  CGC_ASSERT(axis < x.size(), "node '{}': unresolved axis", n.name);
  rt::LayerNormParams p{product(x, 0, axis), product(x, axis, x.size()),
                        static_cast<float>(n.getFloat("epsilon", 1e-5))};
  int bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
  return {Kernel::kLayerNorm, DType::kF32, p, {n.inputs[0], n.inputs[1], bias},
          n.outputs};
}

/// Resize with attrs mode, nearest_mode, coordinate_transformation_mode,
/// scales (one per axis), roi (starts then ends, tf_crop_and_resize only),
/// cubic_coeff_a, exclude_outside and extrapolation_value, all resolved by
/// the frontend (Upsample arrives in this form too).
KernelCall lowerResize(const Graph& g, const Node& n) {
  requireType(g, n, g.value(n.outputs[0]).type.dtype, {DType::kF32});
  const Shape& x = shapeOf(g, n.inputs[0]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  checkRank(g, n, x.size());
  static const std::map<std::string, rt::ResizeMode> modes = {
      {"nearest", rt::ResizeMode::kNearest}, {"linear", rt::ResizeMode::kLinear},
      {"cubic", rt::ResizeMode::kCubic}};
  static const std::map<std::string, rt::NearestMode> nearestModes = {
      {"round_prefer_floor", rt::NearestMode::kRoundPreferFloor},
      {"round_prefer_ceil", rt::NearestMode::kRoundPreferCeil},
      {"floor", rt::NearestMode::kFloor}, {"ceil", rt::NearestMode::kCeil}};
  static const std::map<std::string, rt::ResizeCoordinates> coordinates = {
      {"half_pixel", rt::ResizeCoordinates::kHalfPixel},
      {"pytorch_half_pixel", rt::ResizeCoordinates::kPytorchHalfPixel},
      {"align_corners", rt::ResizeCoordinates::kAlignCorners},
      {"asymmetric", rt::ResizeCoordinates::kAsymmetric},
      {"tf_half_pixel_for_nn", rt::ResizeCoordinates::kTfHalfPixelForNn},
      {"tf_crop_and_resize", rt::ResizeCoordinates::kTfCropAndResize}};
  rt::ResizeParams p{};
  p.mode = modes.at(n.getString("mode", "nearest"));
  p.nearest_mode = nearestModes.at(n.getString("nearest_mode", "round_prefer_floor"));
  p.coordinates = coordinates.at(n.getString("coordinate_transformation_mode", "half_pixel"));
  p.rank = static_cast<int32_t>(x.size());
  auto scales = n.getFloats("scales");
  auto roi = n.getFloats("roi");
  CGC_ASSERT(scales.size() == x.size(), "node '{}': unresolved scales", n.name);
  for (size_t d = 0; d < x.size(); ++d) {
    p.in_shape[d] = x[d];
    p.out_shape[d] = y[d];
    p.scales[d] = scales[d];
    p.roi_start[d] = roi.size() == 2 * x.size() ? static_cast<float>(roi[d]) : 0.f;
    p.roi_end[d] = roi.size() == 2 * x.size() ? static_cast<float>(roi[d + x.size()]) : 1.f;
  }
  p.cubic_coeff_a = n.getFloat("cubic_coeff_a", -0.75);
  p.exclude_outside = n.getInt("exclude_outside", 0) != 0;
  p.extrapolation_value = static_cast<float>(n.getFloat("extrapolation_value", 0.0));
  return {Kernel::kResize, DType::kF32, p, {n.inputs[0]}, {n.outputs[0]}};
}

KernelCall lowerSoftmax(const Graph& g, const Node& n) {
  requireType(g, n, g.value(n.outputs[0]).type.dtype, {DType::kF32});
  const Shape& x = shapeOf(g, n.inputs[0]);
  size_t axis = static_cast<size_t>(n.getInt("axis", -1));
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
  return {Kernel::kSoftmax, DType::kF32, p, {n.inputs[0]}, {n.outputs[0]}};
}

KernelCall stridedCopy(const Graph& g, const Node& n, const Shape& outShape,
                       const std::vector<int64_t>& inStrides, int64_t offset) {
  checkRank(g, n, outShape.size());
  rt::StridedCopyParams p{};
  p.rank = static_cast<int32_t>(outShape.size());
  p.elem_bytes = dtypeSize(g.value(n.outputs[0]).type.dtype);
  p.offset = offset;
  for (size_t d = 0; d < outShape.size(); ++d) {
    p.shape[d] = outShape[d];
    p.in_strides[d] = inStrides[d];
  }
  return {Kernel::kStridedCopy, g.value(n.outputs[0]).type.dtype, p,
          {n.inputs[0]}, {n.outputs[0]}};
}

KernelCall lowerTranspose(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  auto dense = denseStrides(x);
  auto perm = n.getInts("perm");
  std::vector<int64_t> strides;
  for (int64_t axis : perm) strides.push_back(dense[axis]);
  return stridedCopy(g, n, shapeOf(g, n.outputs[0]), strides, 0);
}

KernelCall lowerSlice(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  auto dense = denseStrides(x);
  auto starts = n.getInts("starts");
  auto steps = n.getInts("steps");
  CGC_ASSERT(starts.size() == x.size() && steps.size() == x.size(),
             "node '{}': unresolved Slice attributes", n.name);
  std::vector<int64_t> strides(x.size());
  int64_t offset = 0;
  for (size_t d = 0; d < x.size(); ++d) {
    offset += starts[d] * dense[d];
    strides[d] = steps[d] * dense[d];
  }
  return stridedCopy(g, n, shapeOf(g, n.outputs[0]), strides, offset);
}

KernelCall lowerExpand(const Graph& g, const Node& n) {
  const Shape& y = shapeOf(g, n.outputs[0]);
  return stridedCopy(g, n, y, broadcastStrides(shapeOf(g, n.inputs[0]), y), 0);
}

KernelCall lowerConcat(const Graph& g, const Node& n) {
  const Shape& y = shapeOf(g, n.outputs[0]);
  size_t axis = static_cast<size_t>(n.getInt("axis", 0));
  int64_t elem = dtypeSize(g.value(n.outputs[0]).type.dtype);
  ConcatArgs args{product(y, 0, axis), {}};
  std::vector<int> inputs;
  for (int in : n.inputs) {
    const Shape& s = shapeOf(g, in);
    args.partBytes.push_back(product(s, axis, s.size()) * elem);
    inputs.push_back(in);
  }
  return {Kernel::kConcat, g.value(n.outputs[0]).type.dtype, args, inputs,
          {n.outputs[0]}};
}

KernelCall lowerGather(const Graph& g, const Node& n) {
  const Shape& data = shapeOf(g, n.inputs[0]);
  DType indexType = g.value(n.inputs[1]).type.dtype;
  requireType(g, n, indexType, {DType::kI64, DType::kI32});
  size_t axis = static_cast<size_t>(n.getInt("axis", 0));
  rt::GatherParams p{product(data, 0, axis), data[axis],
                     product(data, axis + 1, data.size()) *
                         dtypeSize(g.value(n.inputs[0]).type.dtype),
                     g.value(n.inputs[1]).type.numElements()};
  return {Kernel::kGather, indexType, p, {n.inputs[0], n.inputs[1]},
          {n.outputs[0]}};
}

KernelCall lowerCast(const Graph& g, const Node& n) {
  DType from = g.value(n.inputs[0]).type.dtype;
  DType to = g.value(n.outputs[0]).type.dtype;
  for (DType t : {from, to})
    if (t == DType::kUndefined)
      userError(g.where(n), "casts involving {} are not supported",
                dtypeName(t));
  return {Kernel::kCast, to, CastArgs{from, to, g.value(n.outputs[0]).type.numElements()},
          {n.inputs[0]}, {n.outputs[0]}};
}

/// RNN, GRU and LSTM. The kernel takes LSTM's full argument list; the other
/// cells pass null for initial_c, P and Y_c.
KernelCall lowerRecurrent(const Graph& g, const Node& n) {
  requireType(g, n, g.value(n.outputs[0]).type.dtype, {DType::kF32});
  const Shape& x = shapeOf(g, n.inputs[0]);
  bool batchMajor = n.getInt("batch_major", 0) != 0;
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
  p.linear_before_reset =
      p.cell == rt::RnnCell::kGru && n.getInt("linear_before_reset", 0) != 0;
  p.input_forget =
      p.cell == rt::RnnCell::kLstm && n.getInt("input_forget", 0) != 0;
  p.clip = static_cast<float>(n.getFloat("clip", 0.0));
  auto codes = n.getInts("activations");
  auto alphas = n.getFloats("activation_alpha");
  auto betas = n.getFloats("activation_beta");
  CGC_ASSERT(codes.size() == 3 * static_cast<size_t>(p.num_directions),
             "node '{}': unresolved activations", n.name);
  for (size_t i = 0; i < codes.size(); ++i)
    p.activations[i] = {static_cast<rt::RnnActivation>(codes[i]),
                        static_cast<float>(alphas[i]),
                        static_cast<float>(betas[i])};
  p.packed_weights = n.getInt("cgc_packed_weights", 0) != 0;
  if (p.packed_weights &&
      (g.value(n.inputs[1]).type.numElements() != rt::packedRnnWeightCount(p, false) ||
       g.value(n.inputs[2]).type.numElements() != rt::packedRnnWeightCount(p, true)))
    userError(g.where(n), "packed weights need {} and {} floats", rt::packedRnnWeightCount(p, false),
              rt::packedRnnWeightCount(p, true));
  std::vector<int> inputs = n.inputs;
  inputs.resize(8, -1);
  std::vector<int> outputs = n.outputs;
  outputs.resize(3, -1);
  return {Kernel::kRnn, DType::kF32, p, inputs, outputs};
}

}  // namespace

KernelCall lowerNode(const Graph& g, const Node& n) {
  if (auto op = unaryOpFor(n.op)) return lowerUnary(g, n, *op);
  if (auto op = binaryOpFor(n.op)) return lowerBinary(g, n, *op);
  if (n.op == "Reshape")
    return {Kernel::kView, g.value(n.outputs[0]).type.dtype, ViewArgs{},
            {n.inputs[0]}, {n.outputs[0]}};
  if (n.op == "Conv") return lowerConv(g, n, false);
  if (n.op == "ConvTranspose") return lowerConv(g, n, true);
  if (n.op == "MaxPool") return lowerPool(g, n, true);
  if (n.op == "AveragePool") return lowerPool(g, n, false);
  if (n.op == "GlobalAveragePool") {
    requireType(g, n, g.value(n.outputs[0]).type.dtype, {DType::kF32});
    const Shape& x = shapeOf(g, n.inputs[0]);
    const bool blocked = g.value(n.inputs[0]).layout == ir::Layout::kChannelBlocked;
    return {Kernel::kGlobalAvgPool, DType::kF32,
            GlobalPoolArgs{product(x, 0, 2), product(x, 2, x.size()), blocked},
            {n.inputs[0]}, {n.outputs[0]}};
  }
  if (n.op == "Gemm") return lowerGemm(g, n);
  if (n.op == "MatMul") return lowerMatMul(g, n);
  if (n.op == "BatchNormalization") return lowerBatchNorm(g, n);
  if (n.op == "InstanceNormalization") return lowerInstanceNorm(g, n);
  if (n.op == "LayerNormalization") return lowerLayerNorm(g, n);
  if (n.op == "Resize") return lowerResize(g, n);
  if (n.op == "Softmax" || n.op == "LogSoftmax") return lowerSoftmax(g, n);
  if (n.op == "Transpose") return lowerTranspose(g, n);
  if (n.op == "Slice") return lowerSlice(g, n);
  if (n.op == "Expand") return lowerExpand(g, n);
  if (n.op == "Concat") return lowerConcat(g, n);
  if (n.op == "Gather") return lowerGather(g, n);
  if (n.op == "Cast") return lowerCast(g, n);
  if (auto op = compareOpFor(n.op)) return lowerCompare(g, n, *op);
  if (n.op == "Where") return lowerWhere(g, n);
  if (n.op.rfind("Reduce", 0) == 0) return lowerReduce(g, n);
  if (n.op == "ArgMax" || n.op == "ArgMin") return lowerArgReduce(g, n);
  if (n.op == "Pad" || n.op == "Tile") return lowerIndexMap(g, n);
  if (n.op == "RNN" || n.op == "GRU" || n.op == "LSTM")
    return lowerRecurrent(g, n);
  userError(g.where(n), "no kernel implements this op");
}

bool isLowerable(const Graph& g, const Node& n) {
  try {
    lowerNode(g, n);
    return true;
  } catch (const CompileError&) {
    return false;
  }
}

bool mayRunInPlace(const KernelCall& call) {
  return call.kernel == Kernel::kUnary || call.kernel == Kernel::kBinary ||
         call.kernel == Kernel::kBatchNorm;
}

bool takesTeam(const KernelCall& call) {
  switch (call.kernel) {
    case Kernel::kConv:
    case Kernel::kConvTranspose:
    case Kernel::kGemm:
    case Kernel::kRnn:
    case Kernel::kUnary:
    case Kernel::kBinary:
    case Kernel::kMaxPool:
    case Kernel::kAvgPool:
    case Kernel::kGlobalAvgPool:
    case Kernel::kBatchNorm:
    case Kernel::kSoftmax:
    case Kernel::kLayerNorm:
    case Kernel::kStridedCopy:
      return true;
    case Kernel::kMatMul:
      return call.dtype == DType::kF32;
    default:
      return false;
  }
}

std::string kernelFunction(const KernelCall& call) {
  auto typeName = [](DType t) -> std::string {
    switch (t) {
      case DType::kF32: return "float";
      case DType::kF64: return "double";
      case DType::kI32: return "int32_t";
      case DType::kI64: return "int64_t";
      case DType::kI8: return "int8_t";
      case DType::kU8: return "uint8_t";
      default: return "void";
    }
  };
  switch (call.kernel) {
    case Kernel::kView: return "";
    case Kernel::kUnary: return "unary<" + typeName(call.dtype) + ">";
    case Kernel::kBinary: return "binary<" + typeName(call.dtype) + ">";
    case Kernel::kConv: return "conv";
    case Kernel::kConvTranspose: return "conv_transpose";
    case Kernel::kMaxPool: return "max_pool";
    case Kernel::kAvgPool: return "avg_pool";
    case Kernel::kGlobalAvgPool:
      return std::get<GlobalPoolArgs>(call.params).blocked ? "global_avg_pool_blocked"
                                                           : "global_avg_pool";
    case Kernel::kGemm: return "gemm";
    case Kernel::kMatMul: return "matmul";
    case Kernel::kBatchNorm: return "batch_norm";
    case Kernel::kSoftmax: return "softmax";
    case Kernel::kStridedCopy: return "strided_copy";
    case Kernel::kConcat: return "concat";
    case Kernel::kGather: return "gather";
    case Kernel::kCast: return "cast";
    case Kernel::kCompare: return "compare<" + typeName(call.dtype) + ">";
    case Kernel::kWhere: return "where";
    case Kernel::kReduce: return "reduce<" + typeName(call.dtype) + ">";
    case Kernel::kArgReduce: return "arg_reduce";
    case Kernel::kIndexMap: return "index_map";
    case Kernel::kRnn: return "rnn";
    case Kernel::kInstanceNorm: return "instance_norm";
    case Kernel::kLayerNorm: return "layer_norm";
    case Kernel::kResize: return "resize";
  }
  return "";
}

}  // namespace cgc::lowering
