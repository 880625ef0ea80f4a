// Lowering of the math ops of issue 19 (onnx_frontend/import_math.cpp):
// the new unary functions onto the unary kernel, IsNaN/IsInf, Mod,
// BitShift, Hardmax, CumSum, Det, and LRN onto their kernels
// (cgc/kernels/math.h, indexing.h).
#include <limits>

#include "lowering/lower_support.h"

namespace cgc::lowering {
namespace {

const std::map<std::string, rt::UnaryOp>& mathUnaryOps() {
  static const std::map<std::string, rt::UnaryOp> table = {
      {"Cos", rt::UnaryOp::kCos},
      {"Sin", rt::UnaryOp::kSin},
      {"Tan", rt::UnaryOp::kTan},
      {"Acos", rt::UnaryOp::kAcos},
      {"Asin", rt::UnaryOp::kAsin},
      {"Atan", rt::UnaryOp::kAtan},
      {"Cosh", rt::UnaryOp::kCosh},
      {"Sinh", rt::UnaryOp::kSinh},
      {"Acosh", rt::UnaryOp::kAcosh},
      {"Asinh", rt::UnaryOp::kAsinh},
      {"Atanh", rt::UnaryOp::kAtanh},
      {"Sign", rt::UnaryOp::kSign},
      {"Round", rt::UnaryOp::kRound},
      {"Selu", rt::UnaryOp::kSelu},
      {"ThresholdedRelu", rt::UnaryOp::kThresholdedRelu},
      {"Shrink", rt::UnaryOp::kShrink}};
  return table;
}

bool isFloatingPoint(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kF16 || t == DType::kBF16;
}

Lowered lowerUnaryMath(const Graph& g, const Node& n) {
  const rt::UnaryOp op = mathUnaryOps().at(n.op);
  const ir::TensorType& t = g.value(n.outputs[0]).type;
  rt::UnaryParams p{op, t.numElements(), 0.f, 0.f};
  if (op == rt::UnaryOp::kSelu) {
    p.alpha = static_cast<float>(n.getFloat("alpha", 1.67326319217681884765625));
    p.beta = static_cast<float>(n.getFloat("gamma", 1.05070102214813232421875));
  } else if (op == rt::UnaryOp::kThresholdedRelu) {
    p.alpha = static_cast<float>(n.getFloat("alpha", 1.0));
  } else if (op == rt::UnaryOp::kShrink) {
    p.alpha = static_cast<float>(n.getFloat("lambd", 0.5));
    p.beta = static_cast<float>(n.getFloat("bias", 0.0));
  }
  return KernelCall{Kernel::kUnary, kernelType(t.dtype), p, {n.inputs[0]}, {n.outputs[0]}};
}

Lowered lowerClassify(const Graph& g, const Node& n) {
  const ir::TensorType& x = g.value(n.inputs[0]).type;
  if (!isFloatingPoint(x.dtype))
    return unsupported("element type {} is not supported", dtypeName(x.dtype));
  rt::ClassifyParams p{n.op == "IsNaN" ? rt::ClassifyOp::kIsNaN : rt::ClassifyOp::kIsInf, x.dtype,
                       x.numElements(), n.getInt("detect_positive", 1) != 0,
                       n.getInt("detect_negative", 1) != 0};
  return KernelCall{Kernel::kClassify, x.dtype, p, {n.inputs[0]}, {n.outputs[0]}};
}

/// Mod and BitShift: untyped kernels that dispatch on the element type.
Lowered lowerIntegerBinary(const Graph& g, const Node& n) {
  auto bc = broadcastOf(g, n);
  if (auto* problem = std::get_if<Unsupported>(&bc)) return *problem;
  const DType t = elementType(g, n.outputs[0]);
  if (t == DType::kBool || dtypeSize(t) == 0)
    return unsupported("element type {} is not supported", dtypeName(t));
  const auto& b = std::get<rt::BroadcastParams>(bc);
  if (n.op == "Mod")
    return KernelCall{Kernel::kMod,
                      t,
                      rt::ModParams{b, t, n.getInt("fmod", 0) != 0},
                      {n.inputs[0], n.inputs[1]},
                      {n.outputs[0]}};
  return KernelCall{Kernel::kBitShift,
                    t,
                    rt::BitShiftParams{b, t, n.getInt("left", 1) != 0},
                    {n.inputs[0], n.inputs[1]},
                    {n.outputs[0]}};
}

Lowered lowerHardmax(const Graph& g, const Node& n) {
  rt::HardmaxParams p{n.getInt("outer", 1), n.getInt("middle", 1), n.getInt("inner", 1)};
  return KernelCall{
      Kernel::kHardmax, elementType(g, n.outputs[0]), p, {n.inputs[0]}, {n.outputs[0]}};
}

Lowered lowerCumSum(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  if (auto problem = checkRank(x.size())) return *problem;
  rt::CumSumParams p{};
  p.rank = static_cast<int32_t>(x.size());
  p.shape = perDim<int64_t>(x);
  p.axis_type = elementType(g, n.inputs[1]);
  p.exclusive = n.getInt("exclusive", 0) != 0;
  p.reverse = n.getInt("reverse", 0) != 0;
  return KernelCall{Kernel::kCumSum,
                    kernelType(elementType(g, n.outputs[0])),
                    p,
                    {n.inputs[0], n.inputs[1]},
                    {n.outputs[0]}};
}

Lowered lowerDet(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const int64_t m = x.back();
  rt::DetParams p{product(x, 0, x.size() - 2), m};
  return KernelCall{Kernel::kDet, elementType(g, n.outputs[0]), p, {n.inputs[0]}, {n.outputs[0]}};
}

Lowered lowerLrn(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  rt::LrnParams p{x[0],
                  x[1],
                  product(x, 2, x.size()),
                  n.getInt("size", 1),
                  static_cast<float>(n.getFloat("alpha", 1e-4)),
                  static_cast<float>(n.getFloat("beta", 0.75)),
                  static_cast<float>(n.getFloat("bias", 1.0))};
  return KernelCall{Kernel::kLrn, elementType(g, n.outputs[0]), p, {n.inputs[0]}, {n.outputs[0]}};
}

}  // namespace

void registerMathLowerers(std::map<std::string, OpLowerer>& table) {
  for (const auto& [op, unused] : mathUnaryOps()) table[op] = lowerUnaryMath;
  table["IsNaN"] = lowerClassify;
  table["IsInf"] = lowerClassify;
  table["Mod"] = lowerIntegerBinary;
  table["BitShift"] = lowerIntegerBinary;
  table["Hardmax"] = lowerHardmax;
  table["CumSum"] = lowerCumSum;
  table["Det"] = lowerDet;
  table["LRN"] = lowerLrn;
}

}  // namespace cgc::lowering
