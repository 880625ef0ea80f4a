// Importers for elementwise ops: unary math and activations, binary
// arithmetic with numpy broadcasting, Cast, and the identity-like ops.
#include <limits>

#include "cgc/kernels.h"
#include "onnx_frontend/op_import.h"

namespace cgc::frontend {
namespace {

void importUnary(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  std::map<std::string, ir::Attribute> attrs;
  const std::string& op = ctx.proto.op_type();
  if (op == "LeakyRelu") attrs["alpha"] = double{ctx.attrFloat("alpha", 0.01f)};
  if (op == "Elu") attrs["alpha"] = double{ctx.attrFloat("alpha", 1.0f)};
  if (op == "Not" && ctx.inputType(0) != DType::kBool) ctx.fail("Not needs a bool input");
  if (op == "HardSigmoid") {
    attrs["alpha"] = double{ctx.attrFloat("alpha", 0.2f)};
    attrs["beta"] = double{ctx.attrFloat("beta", 0.5f)};
  }
  ctx.emit(op, {ctx.inputs[0]}, {ctx.input(0).type}, attrs);
}

/// Whether Dropout drops nothing: at inference (training_mode absent or a
/// constant false), or in training mode with a constant ratio of 0 (what
/// F.dropout exports without training=). The ratio input defaults to 0.5.
bool dropsNothing(const OpContext& ctx) {
  if (!ctx.hasInput(2) || ctx.constantScalar(2, "training_mode") == 0) return true;
  return ctx.hasInput(1) && ctx.input(1).isConstant() && ctx.constantScalar(1, "ratio") == 0;
}

/// Identity, and Dropout that drops nothing: the output is the input.
/// Dropout's optional mask output is all true (bool from opset 10, before
/// that ones of the input's type).
void importIdentity(OpContext& ctx) {
  ctx.requireInputs(1, 3);
  if (!dropsNothing(ctx))
    ctx.fail(
        "training mode with a ratio other than a constant 0 is not supported (inference only)");
  ctx.emit("Identity", {ctx.inputs[0]}, {ctx.input(0).type});
  if (ctx.proto.output_size() > 1 && !ctx.proto.output(1).empty()) {
    if (ctx.opset < 10) {
      ir::TensorType mask = ctx.input(0).type;
      std::vector<uint8_t> one(dtypeSize(mask.dtype));
      double value = 1.0;
      rt::cast({DType::kF64, mask.dtype, 1}, &value, one.data());
      ctx.defineFilled(1, mask, std::move(one));
      return;
    }
    ctx.defineFilled(1, {DType::kBool, ctx.inputShape(0)}, {1});
  }
}

/// Clip: constant bounds become attributes (a Clip with only those can fuse
/// into its producer); a bound computed at run time stays an input (inputs
/// x, min, max, -1 where absent or constant).
void importClip(OpContext& ctx) {
  ctx.requireInputs(1, 3);
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  std::vector<int> inputs = {ctx.inputs[0]};
  if (ctx.opset < 11) {
    lo = ctx.attrFloat("min", -std::numeric_limits<float>::infinity());
    hi = ctx.attrFloat("max", std::numeric_limits<float>::infinity());
  } else {
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.hasInput(i)) continue;
      if (ctx.inputType(i) != ctx.inputType(0) || ctx.input(i).type.numElements() != 1)
        ctx.fail(fmt::format("{} must be one {} value", i == 1 ? "min" : "max",
                             dtypeName(ctx.inputType(0))));
      if (!ctx.input(i).isConstant()) {
        inputs.resize(i + 1, -1);
        inputs[i] = ctx.inputs[i];
        continue;
      }
      (i == 1 ? lo : hi) = ctx.input(i).doubleValues().at(0);
    }
  }
  ctx.emit("Clip", inputs, {ctx.input(0).type}, {{"min", lo}, {"max", hi}});
}

void importBinary(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  const std::string& op = ctx.proto.op_type();
  if (ctx.opset < 7 && ctx.attrInt("broadcast", 0) && ctx.hasAttr("axis"))
    ctx.fail("legacy broadcasting with an explicit axis is not supported");
  int rhs = ctx.inputs[1];
  if (ctx.inputType(0) != ctx.inputType(1)) {
    if (op != "Pow")
      ctx.fail(fmt::format("operand types {} and {} differ", dtypeName(ctx.inputType(0)),
                           dtypeName(ctx.inputType(1))));
    // Pow allows an exponent of another type; compute in the base's type.
    ir::TensorType castType{ctx.inputType(0), ctx.inputShape(1)};
    rhs = ctx.graph.addValue(ctx.input(1).name + "_as_base", castType);
    ctx.graph.addNode("Cast", ctx.nodeName + "/cast_exponent", {ctx.inputs[1]}, {rhs},
                      {{"to", int64_t(castType.dtype)}});
  }
  ir::Shape shape = broadcastShapes(ctx, ctx.inputShape(0), ctx.inputShape(1));
  ctx.emit(op, {ctx.inputs[0], rhs}, {{ctx.inputType(0), shape}});
}

/// Min, Max, Sum, Mean: any number of inputs, folded left to right into
/// binary nodes (Mean divides the sum by the count).
void importVariadic(OpContext& ctx) {
  const std::string& op = ctx.proto.op_type();
  if (ctx.inputs.empty()) ctx.fail("needs at least one input");
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    ctx.input(i);
    if (ctx.inputType(i) != ctx.inputType(0)) ctx.fail("input types differ");
  }
  std::string binaryOp = op == "Sum" || op == "Mean" ? "Add" : op;
  DType type = ctx.inputType(0);
  int acc = ctx.inputs[0];
  ir::Shape shape = ctx.inputShape(0);
  bool divide = op == "Mean" && ctx.inputs.size() > 1;
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    shape = broadcastShapes(ctx, shape, ctx.inputShape(i));
    if (i + 1 == ctx.inputs.size() && !divide) {
      ctx.emit(binaryOp, {acc, ctx.inputs[i]}, {{type, shape}});
      return;
    }
    int next = ctx.graph.addValue(fmt::format("{}_partial{}", ctx.nodeName, i), {type, shape});
    ctx.graph.addNode(binaryOp, fmt::format("{}/{}", ctx.nodeName, i), {acc, ctx.inputs[i]},
                      {next});
    acc = next;
  }
  if (divide) {
    std::vector<uint8_t> count(dtypeSize(type));
    double n = static_cast<double>(ctx.inputs.size());
    rt::cast({DType::kF64, type, 1}, &n, count.data());
    int divisor = ctx.graph.addConstant(ctx.nodeName + "_count", {type, {}}, std::move(count));
    ctx.emit("Div", {acc, divisor}, {{type, shape}});
    return;
  }
  ctx.emit("Identity", {acc}, {{type, shape}});
}

void importLogical(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  if (ctx.inputType(0) != DType::kBool || ctx.inputType(1) != DType::kBool)
    ctx.fail("needs bool inputs");
  ctx.emit(ctx.proto.op_type(), {ctx.inputs[0], ctx.inputs[1]},
           {{DType::kBool, broadcastShapes(ctx, ctx.inputShape(0), ctx.inputShape(1))}});
}

void importCompare(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  if (ctx.inputType(0) != ctx.inputType(1))
    ctx.fail(fmt::format("operand types {} and {} differ", dtypeName(ctx.inputType(0)),
                         dtypeName(ctx.inputType(1))));
  ctx.emit(ctx.proto.op_type(), {ctx.inputs[0], ctx.inputs[1]},
           {{DType::kBool, broadcastShapes(ctx, ctx.inputShape(0), ctx.inputShape(1))}});
}

void importPRelu(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  if (ctx.inputType(0) != ctx.inputType(1)) ctx.fail("slope type differs from input");
  ir::Shape shape = broadcastShapes(ctx, ctx.inputShape(0), ctx.inputShape(1));
  if (shape != ctx.inputShape(0)) ctx.fail("slope does not broadcast to the input");
  ctx.emit("PRelu", {ctx.inputs[0], ctx.inputs[1]}, {ctx.input(0).type});
}

void importWhere(OpContext& ctx) {
  ctx.requireInputs(3, 3);
  if (ctx.inputType(0) != DType::kBool) ctx.fail("condition must be bool");
  if (ctx.inputType(1) != ctx.inputType(2)) ctx.fail("X and Y types differ");
  ir::Shape shape = broadcastShapes(ctx, broadcastShapes(ctx, ctx.inputShape(0), ctx.inputShape(1)),
                                    ctx.inputShape(2));
  ctx.emit("Where", ctx.inputs, {{ctx.inputType(1), shape}});
}

void importCast(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  auto to = static_cast<DType>(ctx.attrInt("to", 0));
  if (dtypeSize(to) == 0)
    ctx.fail(fmt::format("Cast to element type {} is not supported", static_cast<int>(to)));
  ctx.emit("Cast", {ctx.inputs[0]}, {{to, ctx.inputShape(0)}}, {{"to", int64_t(to)}});
}

}  // namespace

void registerElementwiseOps(std::map<std::string, OpImporter>& table) {
  for (const char* op :
       {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Sqrt", "Exp", "Log", "Neg", "Abs",
        "Reciprocal", "Floor", "Ceil", "Erf", "Softplus", "Softsign", "Elu", "Not"})
    table[op] = importUnary;
  for (const char* op : {"Min", "Max", "Sum", "Mean"}) table[op] = importVariadic;
  for (const char* op : {"And", "Or", "Xor"}) table[op] = importLogical;
  for (const char* op : {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"})
    table[op] = importCompare;
  table["PRelu"] = importPRelu;
  table["Where"] = importWhere;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"}) table[op] = importBinary;
  table["Clip"] = importClip;
  table["Identity"] = importIdentity;
  table["Dropout"] = importIdentity;
  table["Cast"] = importCast;
}

}  // namespace cgc::frontend
