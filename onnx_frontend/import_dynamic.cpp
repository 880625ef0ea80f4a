// Importers of the ops whose output size depends on their data: NonZero,
// Compress, Unique, TopK with a run-time k and NonMaxSuppression (and TopK
// with a constant k, which has static shapes).
//
// Each output is planned at a compile-time bound: the largest size the
// inputs' shapes allow, or the user's --bound NAME=N (by node or first
// output name) where that is smaller. The dimension whose size the data
// decides is marked dynamic (ir::DynamicExtent), every output of the node
// sharing one size slot; the kernel writes the actual size there, and a
// size beyond the bound is a run-time error naming the node. Where the
// inputs are constants the import folds the node (lowering::foldNode) into
// a constant of the actual size, so nothing downstream sees a dynamic
// size.
#include <algorithm>

#include "onnx_frontend/op_import.h"

namespace cgc::frontend {
namespace {

using ir::Shape;

/// The bound of the node's data-dependent size: `largest`, or the user's
/// --bound where smaller.
int64_t sizeBound(const OpContext& ctx, int64_t largest) {
  if (ctx.bounds) {
    const std::string first = ctx.proto.output_size() > 0 ? ctx.proto.output(0) : "";
    for (const std::string& name : {ctx.nodeName, first})
      if (auto it = ctx.bounds->find(name); !name.empty() && it != ctx.bounds->end())
        return std::min(largest, it->second);
  }
  return largest;
}

/// Marks dimension `dim` of output `output` of the node just emitted as of
/// data-dependent size, for each (output, dim); they share one size slot.
void markDynamic(OpContext& ctx, std::initializer_list<std::pair<size_t, int>> outputDims) {
  const ir::Node& node = ctx.graph.node(ctx.graph.numNodeSlots() - 1);
  const int slot = ctx.graph.newSizeSlots(1);
  for (const auto& [output, dim] : outputDims)
    ctx.graph.value(node.outputs.at(output)).dynamic = {{dim}, slot};
}

/// Inputs of data-dependent size are an error, except those listed (whose
/// zero tails the kernel reads correctly).
void rejectDynamicInputs(const OpContext& ctx, std::initializer_list<size_t> allowed) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (ctx.hasInput(i) && !ctx.input(i).dynamic.empty() &&
        std::find(allowed.begin(), allowed.end(), i) == allowed.end())
      ctx.fail(fmt::format("input '{}' has a size known only at run time; {} needs it static",
                           ctx.input(i).name, ctx.proto.op_type()));
}

/// A one-element input of `type` (max_output_boxes_per_class, thresholds, K).
void requireScalar(const OpContext& ctx, size_t i, DType type, const char* role) {
  const ir::TensorType& t = ctx.input(i).type;
  if (t.dtype != type || t.numElements() != 1 || t.rank() > 1)
    ctx.fail(
        fmt::format("{} must be one {} (a scalar or [1]), is {}", role, dtypeName(type), t.str()));
}

void importNonZero(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  // An input of run-time size reads right: its tails are zeros, and the
  // coordinates of its nonzeros are the same in the bound shape.
  const ir::TensorType x = ctx.input(0).type;
  const int64_t bound = sizeBound(ctx, x.numElements());
  ctx.emit("NonZero", {ctx.inputs[0]}, {{DType::kI64, {std::max(x.rank(), 1), bound}}});
  markDynamic(ctx, {{0, 1}});
}

void importCompress(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  // The condition may be of run-time length: its tails are false.
  rejectDynamicInputs(ctx, {1});
  const ir::TensorType x = ctx.input(0).type;
  const ir::TensorType& cond = ctx.input(1).type;
  if (cond.dtype != DType::kBool || cond.rank() != 1)
    ctx.fail(fmt::format("the condition must be a 1-D bool tensor, is {}", cond.str()));
  const int64_t condLen = cond.shape[0];
  if (!ctx.hasAttr("axis")) {
    const int64_t bound = sizeBound(ctx, std::min(condLen, x.numElements()));
    ctx.emit("Compress", {ctx.inputs[0], ctx.inputs[1]}, {{x.dtype, {bound}}},
             {{"axis", int64_t{-1}}});
    return markDynamic(ctx, {{0, 0}});
  }
  const int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), x.rank());
  Shape out = x.shape;
  out[axis] = sizeBound(ctx, std::min(condLen, x.shape[axis]));
  ctx.emit("Compress", {ctx.inputs[0], ctx.inputs[1]}, {{x.dtype, out}}, {{"axis", axis}});
  markDynamic(ctx, {{0, static_cast<int>(axis)}});
}

void importUnique(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const ir::TensorType x = ctx.input(0).type;
  const ir::DynamicExtent inputExtent = ctx.input(0).dynamic;
  // An input of run-time size: a 1-D one, whose extent the kernel reads
  // (its zero tails would count as values); its inverse indices have that
  // extent.
  if (!inputExtent.empty() && x.rank() != 1)
    ctx.fail(
        fmt::format("input '{}' has a size known only at run time; Unique reads such an "
                    "input only when it is 1-D",
                    ctx.input(0).name));
  const int64_t sorted = ctx.attrInt("sorted", 1);
  if (!ctx.hasAttr("axis") || !inputExtent.empty()) {
    const int64_t n = x.numElements(), bound = sizeBound(ctx, n);
    ctx.emit(
        "Unique", {ctx.inputs[0]},
        {{x.dtype, {bound}}, {DType::kI64, {bound}}, {DType::kI64, {n}}, {DType::kI64, {bound}}},
        {{"axis", int64_t{-1}}, {"sorted", sorted}});
    markDynamic(ctx, {{0, 0}, {1, 0}, {3, 0}});
    const ir::Node& node = ctx.graph.node(ctx.graph.numNodeSlots() - 1);
    ctx.graph.value(node.outputs[2]).dynamic = inputExtent;
    return;
  }
  const int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), x.rank());
  const int64_t slices = x.shape[axis], bound = sizeBound(ctx, slices);
  Shape y = x.shape;
  y[axis] = bound;
  ctx.emit("Unique", {ctx.inputs[0]},
           {{x.dtype, y}, {DType::kI64, {bound}}, {DType::kI64, {slices}}, {DType::kI64, {bound}}},
           {{"axis", axis}, {"sorted", sorted}});
  markDynamic(ctx, {{0, static_cast<int>(axis)}, {1, 0}, {3, 0}});
}

/// TopK. Its k is the attribute (before opset 10) or the input K: a
/// constant k gives static shapes (the k attribute, x the only input); a k
/// known only at run time stays the second input and gives values and
/// indices bound by the axis's size (or the user's --bound), their length
/// along it data-dependent. Both are IR op TopK, so that errors and
/// profiles name the op as the model does.
void importTopK(OpContext& ctx) {
  const size_t inputs = ctx.opset < 10 ? 1 : 2;
  ctx.requireInputs(inputs, inputs);
  const ir::TensorType x = ctx.input(0).type;
  if (x.rank() == 0) ctx.fail("cannot take the top k of a scalar");
  const int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", -1), x.rank());
  const int64_t largest = ctx.opset >= 11 ? ctx.attrInt("largest", 1) : 1;
  Shape out = x.shape;
  if (ctx.opset < 10 || ctx.input(1).isConstant()) {
    int64_t k = 0;
    if (ctx.opset < 10) {
      if (!ctx.hasAttr("k")) ctx.fail("needs its k attribute");
      k = ctx.attrInt("k", 0);
    } else {
      requireScalar(ctx, 1, DType::kI64, "K");
      k = ctx.input(1).intValues()[0];
    }
    if (k < 0 || k > x.shape[axis])
      ctx.fail(
          fmt::format("k {} is outside [0, {}] (the size of axis {})", k, x.shape[axis], axis));
    out[axis] = k;
    ctx.emit("TopK", {ctx.inputs[0]}, {{x.dtype, out}, {DType::kI64, out}},
             {{"axis", axis}, {"largest", largest}, {"k", k}});
    return;
  }
  rejectDynamicInputs(ctx, {});
  requireScalar(ctx, 1, DType::kI64, "K");
  out[axis] = sizeBound(ctx, x.shape[axis]);
  ctx.emit("TopK", {ctx.inputs[0], ctx.inputs[1]}, {{x.dtype, out}, {DType::kI64, out}},
           {{"axis", axis}, {"largest", largest}});
  markDynamic(ctx, {{0, static_cast<int>(axis)}, {1, static_cast<int>(axis)}});
}

void importNonMaxSuppression(OpContext& ctx) {
  ctx.requireInputs(2, 5);
  // Boxes of run-time number (filtered before NMS): the kernel reads their
  // count, so the padding never becomes a candidate.
  rejectDynamicInputs(ctx, {0, 1});
  const ir::TensorType& boxes = ctx.input(0).type;
  const ir::TensorType& scores = ctx.input(1).type;
  const ir::DynamicExtent& boxesExtent = ctx.input(0).dynamic;
  const ir::DynamicExtent& scoresExtent = ctx.input(1).dynamic;
  if (!boxesExtent.empty() || !scoresExtent.empty()) {
    const bool counted = boxesExtent.dims == std::vector<int>{1} &&
                         scoresExtent.dims == std::vector<int>{2} &&
                         boxesExtent.sizeSlot == scoresExtent.sizeSlot;
    if (!counted)
      ctx.fail(
          fmt::format("boxes '{}' and scores '{}' have sizes known only at run time; "
                      "NonMaxSuppression reads them only when their number of boxes is "
                      "that one run-time size",
                      ctx.input(0).name, ctx.input(1).name));
  }
  if (boxes.dtype != DType::kF32 || scores.dtype != DType::kF32)
    ctx.fail("boxes and scores must be float32");
  if (boxes.rank() != 3 || boxes.shape[2] != 4 || scores.rank() != 3 ||
      scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1])
    ctx.fail(
        fmt::format("boxes must be [batches, boxes, 4] and scores [batches, classes, boxes], "
                    "are {} and {}",
                    boxes.str(), scores.str()));
  const int64_t centerPointBox = ctx.attrInt("center_point_box", 0);
  if (centerPointBox != 0 && centerPointBox != 1) ctx.fail("center_point_box must be 0 or 1");
  // Boxes per class: at most max_output_boxes_per_class where it is a
  // constant (absent: 0, nothing selected); read at run time otherwise.
  int64_t perClass = boxes.shape[1];
  if (!ctx.hasInput(2)) perClass = 0;
  if (ctx.hasInput(2)) {
    requireScalar(ctx, 2, DType::kI64, "max_output_boxes_per_class");
    if (ctx.input(2).isConstant())
      perClass = std::clamp<int64_t>(ctx.input(2).intValues()[0], 0, perClass);
  }
  if (ctx.hasInput(3)) requireScalar(ctx, 3, DType::kF32, "iou_threshold");
  if (ctx.hasInput(4)) requireScalar(ctx, 4, DType::kF32, "score_threshold");
  if (perClass == 0) return ctx.defineConstant(0, {DType::kI64, {0, 3}}, {});
  const int64_t bound =
      sizeBound(ctx, ctx.mulSizes(ctx.mulSizes(boxes.shape[0], scores.shape[1]), perClass));
  std::vector<int> inputs(5, -1);
  for (size_t i = 0; i < 5; ++i)
    if (ctx.hasInput(i)) inputs[i] = ctx.inputs[i];
  ctx.emit("NonMaxSuppression", inputs, {{DType::kI64, {bound, 3}}},
           {{"center_point_box", centerPointBox}});
  markDynamic(ctx, {{0, 0}});
}

}  // namespace

void registerDynamicOps(std::map<std::string, OpImporter>& table) {
  table["NonZero"] = importNonZero;
  table["Compress"] = importCompress;
  table["Unique"] = importUnique;
  table["NonMaxSuppression"] = importNonMaxSuppression;
  table["TopK"] = importTopK;
}

}  // namespace cgc::frontend
