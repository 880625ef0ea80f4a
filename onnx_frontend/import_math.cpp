// Importers for the math ops: trigonometric and hyperbolic
// functions, Sign, Round, Selu, ThresholdedRelu, Shrink, IsNaN, IsInf, Mod,
// BitShift, Hardmax, CumSum, Det, LRN, and the ops
// that are compositions of existing IR ops (ReduceLogSum is ReduceSum then
// Log, GlobalMaxPool is ReduceMax over the spatial axes).
#include "onnx_frontend/op_import.h"

namespace cgc::frontend {
namespace {

using ir::Shape;

void requireFloatingPoint(const OpContext& ctx, size_t i) {
  const DType t = ctx.inputType(i);
  if (t != DType::kF32 && t != DType::kF64 && t != DType::kF16 && t != DType::kBF16)
    ctx.fail(fmt::format("needs a floating-point input, has {}", dtypeName(t)));
}

/// The unary ops; the activations keep their attributes with ONNX's
/// defaults.
void importUnaryMath(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const std::string& op = ctx.proto.op_type();
  std::map<std::string, ir::Attribute> attrs;
  if (op == "Selu") {
    attrs["alpha"] = double{ctx.attrFloat("alpha", 1.67326319217681884765625f)};
    attrs["gamma"] = double{ctx.attrFloat("gamma", 1.05070102214813232421875f)};
  } else if (op == "ThresholdedRelu") {
    attrs["alpha"] = double{ctx.attrFloat("alpha", 1.0f)};
  } else if (op == "Shrink") {
    attrs["lambd"] = double{ctx.attrFloat("lambd", 0.5f)};
    attrs["bias"] = double{ctx.attrFloat("bias", 0.0f)};
  } else if (op != "Sign") {
    requireFloatingPoint(ctx, 0);
  }
  ctx.emit(op, {ctx.inputs[0]}, {ctx.input(0).type}, attrs);
}

void importIsNaNInf(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  requireFloatingPoint(ctx, 0);
  std::map<std::string, ir::Attribute> attrs;
  if (ctx.proto.op_type() == "IsInf") {
    attrs["detect_positive"] = ctx.attrInt("detect_positive", 1);
    attrs["detect_negative"] = ctx.attrInt("detect_negative", 1);
  }
  ctx.emit(ctx.proto.op_type(), {ctx.inputs[0]}, {{DType::kBool, ctx.inputShape(0)}}, attrs);
}

/// Mod and BitShift: broadcasting binary ops on one element type.
void importIntegerBinary(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  if (ctx.inputType(0) != ctx.inputType(1))
    ctx.fail(fmt::format("operand types {} and {} differ", dtypeName(ctx.inputType(0)),
                         dtypeName(ctx.inputType(1))));
  const DType t = ctx.inputType(0);
  std::map<std::string, ir::Attribute> attrs;
  if (ctx.proto.op_type() == "Mod") {
    const int64_t fmod = ctx.attrInt("fmod", 0);
    const bool floating =
        t == DType::kF32 || t == DType::kF64 || t == DType::kF16 || t == DType::kBF16;
    if (floating && fmod == 0) ctx.fail("Mod of floating-point values needs fmod=1");
    attrs["fmod"] = fmod;
  } else {
    const std::string direction = ctx.attrString("direction", "");
    if (direction != "LEFT" && direction != "RIGHT")
      ctx.fail(fmt::format("direction must be LEFT or RIGHT, is '{}'", direction));
    if (t != DType::kU8 && t != DType::kU16 && t != DType::kU32 && t != DType::kU64)
      ctx.fail(fmt::format("BitShift needs unsigned integers, has {}", dtypeName(t)));
    attrs["left"] = int64_t{direction == "LEFT"};
  }
  Shape shape = broadcastShapes(ctx, ctx.inputShape(0), ctx.inputShape(1));
  ctx.emit(ctx.proto.op_type(), {ctx.inputs[0], ctx.inputs[1]}, {{t, shape}}, attrs);
}

/// Hardmax along one axis (opset 13), or over the input coerced to 2-D at
/// the axis (before): outer, axis and inner extents as attributes.
void importHardmax(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const Shape& x = ctx.inputShape(0);
  const int64_t rank = static_cast<int64_t>(x.size());
  const bool legacy = ctx.opset < 13;
  const int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", legacy ? 1 : -1), rank);
  const int64_t outer = ir::numElements(Shape(x.begin(), x.begin() + axis));
  const int64_t rest = ir::numElements(Shape(x.begin() + axis, x.end()));
  const int64_t middle = legacy ? rest : (rank == 0 ? 1 : x[axis]);
  ctx.emit("Hardmax", {ctx.inputs[0]}, {ctx.input(0).type},
           {{"outer", outer}, {"middle", middle}, {"inner", middle ? rest / middle : 0}});
}

/// CumSum: the axis stays a tensor input (it decides no shape); a constant
/// one is checked here.
void importCumSum(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  const int64_t rank = static_cast<int64_t>(ctx.inputShape(0).size());
  if (ctx.input(1).type.numElements() != 1 ||
      (ctx.inputType(1) != DType::kI32 && ctx.inputType(1) != DType::kI64))
    ctx.fail("axis must be one int32 or int64 value");
  if (rank == 0) ctx.fail("CumSum needs an input of rank >= 1");
  if (ctx.input(1).isConstant()) ctx.normalizeAxis(ctx.input(1).intValues()[0], rank);
  ctx.emit("CumSum", {ctx.inputs[0], ctx.inputs[1]}, {ctx.input(0).type},
           {{"exclusive", ctx.attrInt("exclusive", 0)}, {"reverse", ctx.attrInt("reverse", 0)}});
}

void importDet(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const Shape& x = ctx.inputShape(0);
  if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2])
    ctx.fail(fmt::format("needs square matrices [..., M, M], has {}", ir::shapeString(x)));
  ctx.emit("Det", {ctx.inputs[0]}, {{ctx.inputType(0), Shape(x.begin(), x.end() - 2)}});
}

void importLrn(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  if (ctx.inputShape(0).size() < 2) ctx.fail("LRN needs an N x C x ... input");
  const int64_t size = ctx.attrInt("size", 0);
  if (size <= 0) ctx.fail("size must be positive");
  ctx.emit("LRN", {ctx.inputs[0]}, {ctx.input(0).type},
           {{"size", size},
            {"alpha", double{ctx.attrFloat("alpha", 1e-4f)}},
            {"beta", double{ctx.attrFloat("beta", 0.75f)}},
            {"bias", double{ctx.attrFloat("bias", 1.0f)}}});
}

/// Reduced axes (normalised, sorted) and the output shape of a reduction
/// with the axes attribute (every axis when empty) and keepdims.
std::pair<std::vector<int64_t>, Shape> reduction(const OpContext& ctx, const Shape& x,
                                                 std::vector<int64_t> axes, bool keepDims) {
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<bool> reduced(x.size(), axes.empty());
  for (int64_t a : axes) reduced[ctx.normalizeAxis(a, rank)] = true;
  std::vector<int64_t> normalized;
  Shape out;
  for (size_t d = 0; d < x.size(); ++d) {
    if (reduced[d]) normalized.push_back(static_cast<int64_t>(d));
    if (!reduced[d])
      out.push_back(x[d]);
    else if (keepDims)
      out.push_back(1);
  }
  return {normalized, out};
}

/// ReduceLogSum: log(ReduceSum(x)).
void importReduceLogSum(OpContext& ctx) {
  ctx.requireInputs(1, 2);
  std::vector<int64_t> axes = ctx.attrInts("axes");
  if (ctx.hasInput(1)) axes = ctx.constantInts(1, "axes");
  const auto [normalized, out] =
      reduction(ctx, ctx.inputShape(0), axes, ctx.attrInt("keepdims", 1) != 0);
  const DType type = ctx.inputType(0);
  const int sum = ctx.graph.addValue(ctx.graph.uniqueValueName(ctx.nodeName + "_sum"), {type, out});
  ctx.graph.addNode("ReduceSum", ctx.nodeName + "/sum", {ctx.inputs[0]}, {sum},
                    {{"axes", normalized}});
  ctx.emit("Log", {sum}, {{type, out}});
}

/// GlobalMaxPool: the maximum over every spatial axis, kept as size 1.
void importGlobalMaxPool(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const Shape& x = ctx.inputShape(0);
  if (x.size() < 3) ctx.fail("GlobalMaxPool needs an N x C x spatial input");
  std::vector<int64_t> axes;
  for (size_t d = 2; d < x.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  const auto [normalized, out] = reduction(ctx, x, axes, true);
  ctx.emit("ReduceMax", {ctx.inputs[0]}, {{ctx.inputType(0), out}}, {{"axes", normalized}});
}

}  // namespace

void registerMathOps(std::map<std::string, OpImporter>& table) {
  for (const char* op : {"Cos", "Sin", "Tan", "Acos", "Asin", "Atan", "Cosh", "Sinh", "Acosh",
                         "Asinh", "Atanh", "Sign", "Round", "Selu", "ThresholdedRelu", "Shrink"})
    table[op] = importUnaryMath;
  table["IsNaN"] = importIsNaNInf;
  table["IsInf"] = importIsNaNInf;
  table["Mod"] = importIntegerBinary;
  table["BitShift"] = importIntegerBinary;
  table["Hardmax"] = importHardmax;
  table["CumSum"] = importCumSum;
  table["Det"] = importDet;
  table["LRN"] = importLrn;
  table["ReduceLogSum"] = importReduceLogSum;
  table["GlobalMaxPool"] = importGlobalMaxPool;
}

}  // namespace cgc::frontend
