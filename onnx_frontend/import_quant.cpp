// Importers for the quantisation ops, opsets 10 to 17: QuantizeLinear and
// DequantizeLinear (per tensor, and per axis from opset 13), DynamicQuantizeLinear,
// QLinearConv, ConvInteger, QLinearMatMul and MatMulInteger. Each checks
// what the kernels rely on and what a broken model gets wrong: zero points
// of the quantised tensor's own type, scales that are float32, of one
// value or one per index of the axis, and (where known at compile time)
// neither 0 nor NaN nor infinite. The scales and zero points of the
// products must be compile-time constants (they become the kernel's
// requantisation parameters); their weights need not be.
#include <cmath>

#include "onnx_frontend/op_import.h"

namespace cgc::frontend {
namespace {

using ir::Shape;

bool isQuantType(DType t) { return t == DType::kU8 || t == DType::kI8; }

/// A quantised data input: uint8 or int8.
void requireQuantized(const OpContext& ctx, size_t i, const char* role) {
  if (!isQuantType(ctx.inputType(i)))
    ctx.fail(fmt::format("{} must be uint8 or int8, is {}", role, dtypeName(ctx.inputType(i))));
}

/// A scale: float32 with one value, or `count` values (count 0: one only);
/// constant values neither 0 nor NaN nor infinite.
void checkScale(const OpContext& ctx, size_t i, const char* role, int64_t count) {
  const ir::Value& v = ctx.input(i);
  if (v.type.dtype != DType::kF32)
    ctx.fail(fmt::format("{} must be float32, is {}", role, dtypeName(v.type.dtype)));
  const int64_t n = v.type.numElements();
  if (v.type.rank() > 1 || (n != 1 && n != count))
    ctx.fail(count > 0 ? fmt::format("{} has {} values; it needs 1 or {} (one per index of the "
                                     "quantisation axis)",
                                     role, n, count)
                       : fmt::format("{} must be a single value, has shape {}", role,
                                     ir::shapeString(v.type.shape)));
  if (!v.isConstant()) return;
  for (double s : v.doubleValues()) {
    if (std::isnan(s)) ctx.fail(fmt::format("{} is NaN", role));
    if (s == 0.0) ctx.fail(fmt::format("{} is 0", role));
    if (std::isinf(s)) ctx.fail(fmt::format("{} is infinite", role));
  }
}

/// A zero point of type `type` (kUndefined: uint8 or int8) with as many
/// values as its scale (input `scale`).
void checkZeroPoint(const OpContext& ctx, size_t i, const char* role, DType type, size_t scale,
                    const char* dataRole) {
  if (!ctx.hasInput(i)) return;
  const ir::Value& v = ctx.input(i);
  if (type != DType::kUndefined && v.type.dtype != type)
    ctx.fail(fmt::format("{} is {} but {} is {}", role, dtypeName(v.type.dtype), dataRole,
                         dtypeName(type)));
  if (type == DType::kUndefined && !isQuantType(v.type.dtype))
    ctx.fail(fmt::format("{} must be uint8 or int8, is {}", role, dtypeName(v.type.dtype)));
  if (v.type.numElements() != ctx.input(scale).type.numElements())
    ctx.fail(fmt::format("{} has {} values but its scale has {}", role, v.type.numElements(),
                         ctx.input(scale).type.numElements()));
}

/// Forces input i to be a compile-time constant (the runner's and the
/// user's remedy is --constant).
void requireConstant(const OpContext& ctx, size_t i, const char* role) {
  if (ctx.hasInput(i)) ctx.constantDoubles(i, role);
}

/// The per-axis attributes of QuantizeLinear and DequantizeLinear.
std::map<std::string, ir::Attribute> axisAttrs(const OpContext& ctx, const Shape& x,
                                               int64_t& count) {
  const int64_t rank = static_cast<int64_t>(x.size());
  // One value is per tensor, as ONNX Runtime reads it, even as a 1-D tensor.
  const bool perAxis = ctx.input(1).type.numElements() != 1;
  int64_t axis = 0;
  count = 0;
  if (ctx.opset >= 13 && perAxis && rank > 0) {
    axis = ctx.normalizeAxis(ctx.attrInt("axis", 1), rank);
    count = x[axis];
  }
  return {{"axis", axis}, {"per_axis", int64_t{count > 0}}};
}

void importQuantizeLinear(OpContext& ctx) {
  ctx.requireInputs(2, 3);
  if (ctx.inputType(0) != DType::kF32)
    ctx.fail(fmt::format("x must be float32, is {}", dtypeName(ctx.inputType(0))));
  int64_t count = 0;
  auto attrs = axisAttrs(ctx, ctx.inputShape(0), count);
  checkScale(ctx, 1, "y_scale", count);
  checkZeroPoint(ctx, 2, "y_zero_point", DType::kUndefined, 1, "y");
  const DType out = ctx.hasInput(2) ? ctx.inputType(2) : DType::kU8;
  ctx.emit("QuantizeLinear", {ctx.inputs[0], ctx.inputs[1], ctx.hasInput(2) ? ctx.inputs[2] : -1},
           {{out, ctx.inputShape(0)}}, attrs);
}

void importDequantizeLinear(OpContext& ctx) {
  ctx.requireInputs(2, 3);
  const DType type = ctx.inputType(0);
  if (!isQuantType(type) && type != DType::kI32)
    ctx.fail(fmt::format("x must be uint8, int8 or int32, is {}", dtypeName(type)));
  int64_t count = 0;
  auto attrs = axisAttrs(ctx, ctx.inputShape(0), count);
  checkScale(ctx, 1, "x_scale", count);
  checkZeroPoint(ctx, 2, "x_zero_point", type, 1, "x");
  if (type == DType::kI32 && ctx.hasInput(2) && ctx.input(2).isConstant())
    for (int64_t z : ctx.input(2).intValues())
      if (z != 0) ctx.fail("x_zero_point of an int32 x must be 0");
  ctx.emit("DequantizeLinear", {ctx.inputs[0], ctx.inputs[1], ctx.hasInput(2) ? ctx.inputs[2] : -1},
           {{DType::kF32, ctx.inputShape(0)}}, attrs);
}

void importDynamicQuantizeLinear(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  if (ctx.inputType(0) != DType::kF32)
    ctx.fail(fmt::format("x must be float32, is {}", dtypeName(ctx.inputType(0))));
  ctx.emit("DynamicQuantizeLinear", {ctx.inputs[0]},
           {{DType::kU8, ctx.inputShape(0)}, {DType::kF32, {}}, {DType::kU8, {}}});
}

/// QLinearConv (9 inputs) and ConvInteger (4): the data, weights and
/// window; `integer` for ConvInteger.
void importQuantizedConv(OpContext& ctx) {
  const bool integer = ctx.proto.op_type() == "ConvInteger";
  integer ? ctx.requireInputs(2, 4) : ctx.requireInputs(8, 9);
  const size_t xIn = 0, wIn = integer ? 1 : 3;
  requireQuantized(ctx, xIn, "x");
  requireQuantized(ctx, wIn, "w");
  const Shape& x = ctx.inputShape(xIn);
  const Shape& w = ctx.inputShape(wIn);
  if (x.size() < 3 || w.size() != x.size())
    ctx.fail(fmt::format("input {} and weights {} do not form a convolution", ir::shapeString(x),
                         ir::shapeString(w)));
  const int64_t group = ctx.attrInt("group", 1);
  if (group <= 0 || x[1] != w[1] * group || w[0] % group != 0)
    ctx.fail(fmt::format("input has {} channels but weights {} with group {} expect {}", x[1],
                         ir::shapeString(w), group, w[1] * group));
  std::map<std::string, ir::Attribute> attrs;
  Shape out = convWindow(ctx, x, w, attrs);
  out.insert(out.begin(), {x[0], w[0]});
  attrs["group"] = group;
  if (integer) {
    if (ctx.hasInput(2)) {
      checkZeroPoint(ctx, 2, "x_zero_point", ctx.inputType(0), 2, "x");
      if (ctx.input(2).type.numElements() != 1) ctx.fail("x_zero_point must be a single value");
      requireConstant(ctx, 2, "x_zero_point");
    }
    if (ctx.hasInput(3)) {
      if (ctx.inputType(3) != ctx.inputType(1))
        ctx.fail(fmt::format("w_zero_point is {} but w is {}", dtypeName(ctx.inputType(3)),
                             dtypeName(ctx.inputType(1))));
      const int64_t n = ctx.input(3).type.numElements();
      if (n != 1 && n != w[0])
        ctx.fail(fmt::format("w_zero_point has {} values; it needs 1 or {}", n, w[0]));
    }
    std::vector<int> inputs = ctx.inputs;
    inputs.resize(4, -1);
    return ctx.emit("ConvInteger", inputs, {{DType::kI32, out}}, attrs);
  }
  checkScale(ctx, 1, "x_scale", 0);
  checkZeroPoint(ctx, 2, "x_zero_point", ctx.inputType(0), 1, "x");
  checkScale(ctx, 4, "w_scale", w[0]);
  checkZeroPoint(ctx, 5, "w_zero_point", ctx.inputType(3), 4, "w");
  checkScale(ctx, 6, "y_scale", 0);
  checkZeroPoint(ctx, 7, "y_zero_point", DType::kUndefined, 6, "y");
  for (auto [i, role] : {std::pair{1, "x_scale"},
                         {2, "x_zero_point"},
                         {4, "w_scale"},
                         {5, "w_zero_point"},
                         {6, "y_scale"},
                         {7, "y_zero_point"}})
    requireConstant(ctx, static_cast<size_t>(i), role);
  if (ctx.hasInput(8) && (ctx.inputType(8) != DType::kI32 || ctx.inputShape(8) != Shape{w[0]}))
    ctx.fail(fmt::format("B must be int32 with {} values (one per output channel), is {}", w[0],
                         ctx.input(8).type.str()));
  std::vector<int> inputs = ctx.inputs;
  inputs.resize(9, -1);
  ctx.emit("QLinearConv", inputs, {{ctx.inputType(7), out}}, attrs);
}

/// MatMul's output shape for quantised operands.
Shape matMulShape(const OpContext& ctx, Shape a, Shape b) {
  if (a.empty() || b.empty()) ctx.fail("operands must have rank >= 1");
  const bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA) a.insert(a.begin(), 1);
  if (vecB) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    ctx.fail(fmt::format("inner dimensions {} and {} differ", a.back(), b[b.size() - 2]));
  Shape out = broadcastShapes(ctx, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!vecA) out.push_back(a[a.size() - 2]);
  if (!vecB) out.push_back(b.back());
  return out;
}

void importQLinearMatMul(OpContext& ctx) {
  ctx.requireInputs(8, 8);
  requireQuantized(ctx, 0, "a");
  requireQuantized(ctx, 3, "b");
  const Shape out = matMulShape(ctx, ctx.inputShape(0), ctx.inputShape(3));
  const int64_t n = ctx.inputShape(3).size() > 1 ? ctx.inputShape(3).back() : 1;
  checkScale(ctx, 1, "a_scale", 0);
  checkZeroPoint(ctx, 2, "a_zero_point", ctx.inputType(0), 1, "a");
  checkScale(ctx, 4, "b_scale", n);
  checkZeroPoint(ctx, 5, "b_zero_point", ctx.inputType(3), 4, "b");
  checkScale(ctx, 6, "y_scale", 0);
  checkZeroPoint(ctx, 7, "y_zero_point", DType::kUndefined, 6, "y");
  for (auto [i, role] : {std::pair{1, "a_scale"},
                         {2, "a_zero_point"},
                         {4, "b_scale"},
                         {5, "b_zero_point"},
                         {6, "y_scale"},
                         {7, "y_zero_point"}})
    requireConstant(ctx, static_cast<size_t>(i), role);
  ctx.emit("QLinearMatMul", ctx.inputs, {{ctx.inputType(7), out}});
}

void importMatMulInteger(OpContext& ctx) {
  ctx.requireInputs(2, 4);
  requireQuantized(ctx, 0, "A");
  requireQuantized(ctx, 1, "B");
  const Shape out = matMulShape(ctx, ctx.inputShape(0), ctx.inputShape(1));
  for (auto [i, role, data] : {std::tuple{2, "a_zero_point", 0}, {3, "b_zero_point", 1}}) {
    if (!ctx.hasInput(i)) continue;
    if (ctx.inputType(i) != ctx.inputType(data))
      ctx.fail(fmt::format("{} is {} but {} is {}", role, dtypeName(ctx.inputType(i)),
                           data ? "B" : "A", dtypeName(ctx.inputType(data))));
    if (ctx.input(i).type.rank() > 1)
      ctx.fail(fmt::format("{} must be a scalar or 1-D, has shape {}", role,
                           ir::shapeString(ctx.inputShape(i))));
  }
  std::vector<int> inputs = ctx.inputs;
  inputs.resize(4, -1);
  ctx.emit("MatMulInteger", inputs, {{DType::kI32, out}});
}

}  // namespace

void registerQuantizationOps(std::map<std::string, OpImporter>& table) {
  table["QuantizeLinear"] = importQuantizeLinear;
  table["DequantizeLinear"] = importDequantizeLinear;
  table["DynamicQuantizeLinear"] = importDynamicQuantizeLinear;
  table["QLinearConv"] = importQuantizedConv;
  table["ConvInteger"] = importQuantizedConv;
  table["QLinearMatMul"] = importQLinearMatMul;
  table["MatMulInteger"] = importMatMulInteger;
}

}  // namespace cgc::frontend
