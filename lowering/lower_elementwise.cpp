// Lowering of elementwise ops: unary and binary arithmetic (numpy
// broadcasting resolved into strides; Pow by a constant exponent as a unary
// op), comparisons, Where and Cast.
#include <algorithm>
#include <limits>

#include "lowering/lower_support.h"

namespace cgc::lowering {
namespace {

const std::map<std::string, rt::UnaryOp>& unaryOps() {
  static const std::map<std::string, rt::UnaryOp> table = {
      {"Relu", rt::UnaryOp::kRelu},         {"LeakyRelu", rt::UnaryOp::kLeakyRelu},
      {"Clip", rt::UnaryOp::kClip},         {"Sigmoid", rt::UnaryOp::kSigmoid},
      {"Tanh", rt::UnaryOp::kTanh},         {"HardSigmoid", rt::UnaryOp::kHardSigmoid},
      {"Sqrt", rt::UnaryOp::kSqrt},         {"Exp", rt::UnaryOp::kExp},
      {"Log", rt::UnaryOp::kLog},           {"Neg", rt::UnaryOp::kNeg},
      {"Abs", rt::UnaryOp::kAbs},           {"Reciprocal", rt::UnaryOp::kReciprocal},
      {"Floor", rt::UnaryOp::kFloor},       {"Ceil", rt::UnaryOp::kCeil},
      {"Identity", rt::UnaryOp::kIdentity}, {"Erf", rt::UnaryOp::kErf},
      {"Softplus", rt::UnaryOp::kSoftplus}, {"Elu", rt::UnaryOp::kElu},
      {"Softsign", rt::UnaryOp::kSoftsign}, {"Not", rt::UnaryOp::kNot},
  };
  return table;
}

const std::map<std::string, rt::BinaryOp>& binaryOps() {
  static const std::map<std::string, rt::BinaryOp> table = {
      {"Add", rt::BinaryOp::kAdd}, {"Sub", rt::BinaryOp::kSub},     {"Mul", rt::BinaryOp::kMul},
      {"Div", rt::BinaryOp::kDiv}, {"Pow", rt::BinaryOp::kPow},     {"Min", rt::BinaryOp::kMin},
      {"Max", rt::BinaryOp::kMax}, {"PRelu", rt::BinaryOp::kPRelu}, {"And", rt::BinaryOp::kAnd},
      {"Or", rt::BinaryOp::kOr},   {"Xor", rt::BinaryOp::kXor},
  };
  return table;
}

const std::map<std::string, rt::CompareOp>& compareOps() {
  static const std::map<std::string, rt::CompareOp> table = {
      {"Equal", rt::CompareOp::kEqual},
      {"Greater", rt::CompareOp::kGreater},
      {"Less", rt::CompareOp::kLess},
      {"GreaterOrEqual", rt::CompareOp::kGreaterOrEqual},
      {"LessOrEqual", rt::CompareOp::kLessOrEqual}};
  return table;
}

/// Clip with a bound computed at run time (inputs x, min, max; -1 where the
/// bound is the attribute).
Lowered lowerClipTensor(const Graph& g, const Node& n) {
  const ir::TensorType& t = g.value(n.outputs[0]).type;
  rt::ClipParams p{t.numElements(), n.getFloat("min", -std::numeric_limits<double>::infinity()),
                   n.getFloat("max", std::numeric_limits<double>::infinity())};
  auto input = [&](size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
  return KernelCall{
      Kernel::kClip, kernelType(t.dtype), p, {n.inputs[0], input(1), input(2)}, {n.outputs[0]}};
}

Lowered lowerUnary(const Graph& g, const Node& n) {
  if (n.op == "Clip" && n.numPresentInputs() > 1) return lowerClipTensor(g, n);
  const rt::UnaryOp op = unaryOps().at(n.op);
  const ir::TensorType& t = g.value(n.outputs[0]).type;
  rt::UnaryParams p{op, t.numElements(), 0.f, 0.f};
  if (op == rt::UnaryOp::kLeakyRelu) p.alpha = static_cast<float>(n.getFloat("alpha", 0.01));
  if (op == rt::UnaryOp::kElu) p.alpha = static_cast<float>(n.getFloat("alpha", 1.0));
  if (op == rt::UnaryOp::kHardSigmoid) {
    p.alpha = static_cast<float>(n.getFloat("alpha", 0.2));
    p.beta = static_cast<float>(n.getFloat("beta", 0.5));
  }
  if (op == rt::UnaryOp::kClip) {
    p.alpha = static_cast<float>(n.getFloat("min", -std::numeric_limits<float>::infinity()));
    p.beta = static_cast<float>(n.getFloat("max", std::numeric_limits<float>::infinity()));
  }
  return KernelCall{Kernel::kUnary, kernelType(t.dtype), p, {n.inputs[0]}, {n.outputs[0]}};
}

/// Pow whose exponent is one constant value (a scalar, or a tensor of equal
/// elements) on floats, when the output has the base's elements: the unary
/// kPowConstant, whose kernel computes the common exponents without
/// std::pow. Integer Pow, a run-time exponent, one that broadcasts the base
/// to more elements or that float does not hold exactly stay binary.
std::optional<KernelCall> lowerPowConstant(const Graph& g, const Node& n) {
  const ir::TensorType& t = g.value(n.outputs[0]).type;
  const ir::Value& exponent = g.value(n.inputs[1]);
  if ((t.dtype != DType::kF32 && t.dtype != DType::kF64) || !exponent.isConstant() ||
      exponent.type.numElements() == 0 ||
      t.numElements() != g.value(n.inputs[0]).type.numElements())
    return std::nullopt;
  const std::vector<double> values = exponent.doubleValues();
  const double e = values[0];
  if (static_cast<double>(static_cast<float>(e)) != e ||
      std::any_of(values.begin(), values.end(), [e](double v) { return v != e; }))
    return std::nullopt;
  rt::UnaryParams p{rt::UnaryOp::kPowConstant, t.numElements(), static_cast<float>(e), 0.f};
  return KernelCall{Kernel::kUnary, t.dtype, p, {n.inputs[0]}, {n.outputs[0]}};
}

Lowered lowerBinary(const Graph& g, const Node& n) {
  if (n.op == "Pow")
    if (auto call = lowerPowConstant(g, n)) return *call;
  auto bc = broadcastOf(g, n);
  if (auto* problem = std::get_if<Unsupported>(&bc)) return *problem;
  return KernelCall{Kernel::kBinary,
                    kernelType(elementType(g, n.outputs[0])),
                    rt::BinaryParams{binaryOps().at(n.op), std::get<rt::BroadcastParams>(bc)},
                    {n.inputs[0], n.inputs[1]},
                    {n.outputs[0]}};
}

Lowered lowerCompare(const Graph& g, const Node& n) {
  auto bc = broadcastOf(g, n);
  if (auto* problem = std::get_if<Unsupported>(&bc)) return *problem;
  return KernelCall{Kernel::kCompare,
                    kernelType(elementType(g, n.inputs[0])),
                    rt::CompareParams{compareOps().at(n.op), std::get<rt::BroadcastParams>(bc)},
                    {n.inputs[0], n.inputs[1]},
                    {n.outputs[0]}};
}

Lowered lowerWhere(const Graph& g, const Node& n) {
  const ir::TensorType& out = g.value(n.outputs[0]).type;
  if (auto problem = checkRank(out.shape.size())) return *problem;
  rt::WhereParams p{};
  p.rank = static_cast<int32_t>(out.shape.size());
  p.count = out.numElements();
  p.elem_bytes = dtypeSize(out.dtype);
  p.shape = perDim<int64_t>(out.shape);
  p.cond_strides = perDim<int64_t>(broadcastStrides(shapeOf(g, n.inputs[0]), out.shape));
  p.a_strides = perDim<int64_t>(broadcastStrides(shapeOf(g, n.inputs[1]), out.shape));
  p.b_strides = perDim<int64_t>(broadcastStrides(shapeOf(g, n.inputs[2]), out.shape));
  return KernelCall{
      Kernel::kWhere, out.dtype, p, {n.inputs[0], n.inputs[1], n.inputs[2]}, {n.outputs[0]}};
}

Lowered lowerCast(const Graph& g, const Node& n) {
  const DType from = elementType(g, n.inputs[0]), to = elementType(g, n.outputs[0]);
  for (DType t : {from, to})
    if (t == DType::kUndefined || dtypeSize(t) == 0)
      return unsupported("casts involving {} are not supported", dtypeName(t));
  return KernelCall{Kernel::kCast,
                    to,
                    rt::CastParams{from, to, g.value(n.outputs[0]).type.numElements()},
                    {n.inputs[0]},
                    {n.outputs[0]}};
}

}  // namespace

std::variant<rt::BroadcastParams, Unsupported> broadcastOf(const Graph& g, const Node& n) {
  const Shape& out = shapeOf(g, n.outputs[0]);
  if (auto problem = checkRank(out.size())) return *problem;
  rt::BroadcastParams bc{};
  bc.rank = static_cast<int32_t>(out.size());
  bc.count = ir::numElements(out);
  bc.shape = perDim<int64_t>(out);
  bc.a_strides = perDim<int64_t>(broadcastStrides(shapeOf(g, n.inputs[0]), out));
  bc.b_strides = perDim<int64_t>(broadcastStrides(shapeOf(g, n.inputs[1]), out));
  return bc;
}

void registerElementwiseLowerers(std::map<std::string, OpLowerer>& table) {
  for (const auto& [op, unused] : unaryOps()) table[op] = lowerUnary;
  for (const auto& [op, unused] : binaryOps()) table[op] = lowerBinary;
  for (const auto& [op, unused] : compareOps()) table[op] = lowerCompare;
  table["Where"] = lowerWhere;
  table["Cast"] = lowerCast;
}

}  // namespace cgc::lowering
