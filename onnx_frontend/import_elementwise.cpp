// Importers for elementwise ops: unary math and activations, binary
// arithmetic with numpy broadcasting, Cast, and the identity-like ops.
#include <limits>

#include "onnx_frontend/op_import.h"

namespace cgc::frontend {
namespace {

void importUnary(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  std::map<std::string, ir::Attribute> attrs;
  const std::string& op = ctx.proto.op_type();
  if (op == "LeakyRelu") attrs["alpha"] = double{ctx.attrFloat("alpha", 0.01f)};
  if (op == "HardSigmoid") {
    attrs["alpha"] = double{ctx.attrFloat("alpha", 0.2f)};
    attrs["beta"] = double{ctx.attrFloat("beta", 0.5f)};
  }
  ctx.emit(op, {ctx.inputs[0]}, {ctx.input(0).type}, attrs);
}

/// Identity, and Dropout at inference: the output is the input. Dropout's
/// optional mask output is all true.
void importIdentity(OpContext& ctx) {
  ctx.requireInputs(1, 3);
  if (ctx.hasInput(2) && ctx.constantInts(2, "training_mode").at(0) != 0)
    ctx.fail("training mode is not supported (inference only)");
  ctx.emit("Identity", {ctx.inputs[0]}, {ctx.input(0).type});
  if (ctx.proto.output_size() > 1 && !ctx.proto.output(1).empty()) {
    ir::TensorType mask{DType::kBool, ctx.inputShape(0)};
    ctx.defineConstant(1, mask, std::vector<uint8_t>(mask.bytes(), 1));
  }
}

void importClip(OpContext& ctx) {
  ctx.requireInputs(1, 3);
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  if (ctx.opset < 11) {
    lo = ctx.attrFloat("min", -std::numeric_limits<float>::infinity());
    hi = ctx.attrFloat("max", std::numeric_limits<float>::infinity());
  } else {
    if (ctx.hasInput(1)) lo = ctx.constantDoubles(1, "min").at(0);
    if (ctx.hasInput(2)) hi = ctx.constantDoubles(2, "max").at(0);
  }
  ctx.emit("Clip", {ctx.inputs[0]}, {ctx.input(0).type},
           {{"min", lo}, {"max", hi}});
}

void importBinary(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  const std::string& op = ctx.proto.op_type();
  if (ctx.opset < 7 && ctx.attrInt("broadcast", 0) && ctx.hasAttr("axis"))
    ctx.fail("legacy broadcasting with an explicit axis is not supported");
  int rhs = ctx.inputs[1];
  if (ctx.inputType(0) != ctx.inputType(1)) {
    if (op != "Pow")
      ctx.fail(fmt::format("operand types {} and {} differ",
                           dtypeName(ctx.inputType(0)),
                           dtypeName(ctx.inputType(1))));
    // Pow allows an exponent of another type; compute in the base's type.
    ir::TensorType castType{ctx.inputType(0), ctx.inputShape(1)};
    rhs = ctx.graph.addValue(ctx.input(1).name + "_as_base", castType);
    ctx.graph.addNode("Cast", ctx.nodeName + "/cast_exponent", {ctx.inputs[1]},
                      {rhs}, {{"to", int64_t(castType.dtype)}});
  }
  ir::Shape shape =
      broadcastShapes(ctx, ctx.inputShape(0), ctx.inputShape(1));
  ctx.emit(op, {ctx.inputs[0], rhs}, {{ctx.inputType(0), shape}});
}

void importCast(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  auto to = static_cast<DType>(ctx.attrInt("to", 0));
  if (dtypeSize(to) == 0)
    ctx.fail(fmt::format("Cast to element type {} is not supported",
                         static_cast<int>(to)));
  ctx.emit("Cast", {ctx.inputs[0]}, {{to, ctx.inputShape(0)}},
           {{"to", int64_t(to)}});
}

}  // namespace

void registerElementwiseOps(std::map<std::string, OpImporter>& table) {
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
                         "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal",
                         "Floor", "Ceil"})
    table[op] = importUnary;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"})
    table[op] = importBinary;
  table["Clip"] = importClip;
  table["Identity"] = importIdentity;
  table["Dropout"] = importIdentity;
  table["Cast"] = importCast;
}

}  // namespace cgc::frontend
