// Importers for the indexing ops: GatherElements,
// ScatterElements and the deprecated Scatter, GatherND, ScatterND, OneHot,
// Trilu, EyeLike, ReverseSequence, MaxUnpool, and DepthToSpace/SpaceToDepth
// (Reshape-Transpose-Reshape chains of existing IR ops). Shapes are checked
// here so that the kernels can trust them; indices are data, checked by the
// kernels (and, when constant, by the constant folder or here).
#include <cstring>

#include "cgc/kernels.h"
#include "onnx_frontend/op_import.h"

namespace cgc::frontend {
namespace {

using ir::Shape;

void requireInt64Indices(const OpContext& ctx, size_t i) {
  if (ctx.inputType(i) != DType::kI64 && ctx.inputType(i) != DType::kI32)
    ctx.fail(fmt::format("indices must be int32 or int64, are {}", dtypeName(ctx.inputType(i))));
}

/// Indices of an elements op (GatherElements, ScatterElements): the data's
/// rank, and no larger than the data along the other axes.
int64_t checkElementIndices(const OpContext& ctx, const Shape& data, const Shape& indices) {
  if (data.empty()) ctx.fail("needs data of rank >= 1");
  if (indices.size() != data.size())
    ctx.fail(fmt::format("indices {} and data {} differ in rank", ir::shapeString(indices),
                         ir::shapeString(data)));
  const int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), static_cast<int64_t>(data.size()));
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d])
      ctx.fail(fmt::format("indices {} exceed data {} along axis {}", ir::shapeString(indices),
                           ir::shapeString(data), d));
  return axis;
}

/// A constant index outside [-dim, dim) along `axis`: the node's error now.
void checkConstantIndices(const OpContext& ctx, size_t input, int64_t dim) {
  if (!ctx.input(input).isConstant()) return;
  for (int64_t i : ctx.input(input).intValues())
    if (i < -dim || i >= dim)
      ctx.fail(fmt::format("index {} is out of range for an axis of size {}", i, dim));
}

void importGatherElements(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  requireInt64Indices(ctx, 1);
  const Shape& data = ctx.inputShape(0);
  const int64_t axis = checkElementIndices(ctx, data, ctx.inputShape(1));
  checkConstantIndices(ctx, 1, data[axis]);
  ctx.emit("GatherElements", {ctx.inputs[0], ctx.inputs[1]},
           {{ctx.inputType(0), ctx.inputShape(1)}}, {{"axis", axis}});
}

/// ScatterElements (reduction none/add/mul) and Scatter (opset 9-10).
void importScatterElements(OpContext& ctx) {
  ctx.requireInputs(3, 3);
  requireInt64Indices(ctx, 1);
  const Shape& data = ctx.inputShape(0);
  const int64_t axis = checkElementIndices(ctx, data, ctx.inputShape(1));
  if (ctx.inputShape(2) != ctx.inputShape(1) || ctx.inputType(2) != ctx.inputType(0))
    ctx.fail("updates must have the indices' shape and the data's type");
  const std::string reduction = ctx.attrString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    ctx.fail(fmt::format("reduction '{}' is not supported (none, add, mul)", reduction));
  checkConstantIndices(ctx, 1, data[axis]);
  ctx.emit("ScatterElements", {ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]}, {ctx.input(0).type},
           {{"axis", axis}, {"reduction", reduction}});
}

void importGatherND(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  if (ctx.inputType(1) != DType::kI64) ctx.fail("indices must be int64");
  const Shape& data = ctx.inputShape(0);
  const Shape& indices = ctx.inputShape(1);
  const int64_t b = ctx.attrInt("batch_dims", 0);
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (q < 1 || b < 0 || b >= std::min(r, q))
    ctx.fail(fmt::format("batch_dims {} does not fit data {} and indices {}", b,
                         ir::shapeString(data), ir::shapeString(indices)));
  const int64_t k = indices.back();
  if (k < 1 || k > r - b)
    ctx.fail(fmt::format("index tuples of {} do not fit data {}", k, ir::shapeString(data)));
  for (int64_t d = 0; d < b; ++d)
    if (indices[d] != data[d]) ctx.fail("the batch dimensions of data and indices differ");
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  ctx.emit("GatherND", {ctx.inputs[0], ctx.inputs[1]}, {{ctx.inputType(0), out}},
           {{"batch_dims", b}});
}

void importScatterND(OpContext& ctx) {
  ctx.requireInputs(3, 3);
  if (ctx.inputType(1) != DType::kI64) ctx.fail("indices must be int64");
  const Shape& data = ctx.inputShape(0);
  const Shape& indices = ctx.inputShape(1);
  if (indices.empty() || indices.back() < 1 || indices.back() > static_cast<int64_t>(data.size()))
    ctx.fail(fmt::format("indices {} do not fit data {}", ir::shapeString(indices),
                         ir::shapeString(data)));
  Shape updates(indices.begin(), indices.end() - 1);
  updates.insert(updates.end(), data.begin() + indices.back(), data.end());
  if (ctx.inputShape(2) != updates || ctx.inputType(2) != ctx.inputType(0))
    ctx.fail(fmt::format("updates must be {} of the data's type, are {}", ir::shapeString(updates),
                         ctx.input(2).type.str()));
  const std::string reduction = ctx.attrString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    ctx.fail(fmt::format("reduction '{}' is not supported (none, add, mul)", reduction));
  ctx.emit("ScatterND", {ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]}, {ctx.input(0).type},
           {{"reduction", reduction}});
}

/// OneHot: depth decides the shape (a constant); the values stay a tensor.
void importOneHot(OpContext& ctx) {
  ctx.requireInputs(3, 3);
  const auto depthValues = ctx.constantDoubles(1, "depth");
  if (depthValues.size() != 1 || !(depthValues[0] >= 1) || depthValues[0] > 1e12)
    ctx.fail("depth must be one positive value");
  const int64_t depth = static_cast<int64_t>(depthValues[0]);
  if (ctx.input(2).type.numElements() != 2) ctx.fail("values must hold [off, on]");
  Shape out = ctx.inputShape(0);
  const int64_t axis =
      ctx.normalizeAxis(ctx.attrInt("axis", -1), static_cast<int64_t>(out.size()) + 1);
  out.insert(out.begin() + axis, depth);
  ctx.emit("OneHot", {ctx.inputs[0], ctx.inputs[2]}, {{ctx.inputType(2), out}},
           {{"axis", axis}, {"depth", depth}});
}

/// Trilu: k decides no shape; it stays a tensor input when given.
void importTrilu(OpContext& ctx) {
  ctx.requireInputs(1, 2);
  if (ctx.inputShape(0).size() < 2) ctx.fail("Trilu needs an input of rank >= 2");
  std::vector<int> inputs = {ctx.inputs[0]};
  if (ctx.hasInput(1)) {
    if (ctx.inputType(1) != DType::kI64 || ctx.input(1).type.numElements() != 1)
      ctx.fail("k must be one int64 value");
    inputs.push_back(ctx.inputs[1]);
  }
  ctx.emit("Trilu", inputs, {ctx.input(0).type}, {{"upper", ctx.attrInt("upper", 1)}});
}

/// EyeLike: only the input's shape matters, so the result is a constant.
void importEyeLike(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const Shape& x = ctx.inputShape(0);
  if (x.size() != 2) ctx.fail("EyeLike needs a 2-D input");
  const DType type =
      ctx.hasAttr("dtype") ? static_cast<DType>(ctx.attrInt("dtype", 1)) : ctx.inputType(0);
  if (dtypeSize(type) == 0) ctx.fail("dtype is not supported");
  const int64_t k = ctx.attrInt("k", 0);
  ir::TensorType out{type, x};
  // Generated at compile time: within what the importer may generate.
  ctx.checkType(out, "output", ctx.generateBudget);
  std::vector<uint8_t> bytes(out.bytes(), 0);
  std::vector<uint8_t> one(dtypeSize(type));
  const double value = 1.0;
  rt::cast({DType::kF64, type, 1}, &value, one.data());
  for (int64_t i = 0; i < x[0]; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < x[1])
      std::memcpy(bytes.data() + (i * x[1] + j) * one.size(), one.data(), one.size());
  }
  ctx.defineConstant(0, out, std::move(bytes));
}

void importReverseSequence(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  const Shape& x = ctx.inputShape(0);
  const int64_t batchAxis = ctx.attrInt("batch_axis", 1), timeAxis = ctx.attrInt("time_axis", 0);
  if (x.size() < 2 || batchAxis + timeAxis != 1 || batchAxis < 0 || timeAxis < 0)
    ctx.fail("needs rank >= 2 and batch_axis, time_axis 0 and 1");
  if (ctx.inputType(1) != DType::kI64 || ctx.inputShape(1) != Shape{x[batchAxis]})
    ctx.fail(fmt::format("sequence_lens must be int64[{}]", x[batchAxis]));
  ctx.emit("ReverseSequence", {ctx.inputs[0], ctx.inputs[1]}, {ctx.input(0).type},
           {{"time_axis", timeAxis}});
}

/// MaxUnpool: the output's shape from output_shape (a constant) or from
/// kernel_shape, strides and pads.
void importMaxUnpool(OpContext& ctx) {
  ctx.requireInputs(2, 3);
  const Shape& x = ctx.inputShape(0);
  if (x.size() < 3) ctx.fail("MaxUnpool needs an N x C x spatial input");
  if (ctx.inputShape(1) != x || ctx.inputType(1) != DType::kI64)
    ctx.fail("indices must be int64 of the input's shape");
  const size_t n = x.size() - 2;
  const Shape kernel = ctx.attrInts("kernel_shape");
  const Shape strides = ctx.attrInts("strides", Shape(n, 1));
  const Shape pads = ctx.attrInts("pads", Shape(2 * n, 0));
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n)
    ctx.fail("kernel_shape, strides and pads disagree with the input's rank");
  Shape out = {x[0], x[1]};
  for (size_t i = 0; i < n; ++i)
    out.push_back((x[i + 2] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + n]);
  const Shape indexShape = out;  // the indices are flat over this shape
  if (ctx.hasInput(2)) {
    const Shape given = ctx.constantInts(2, "output_shape");
    if (given.size() != x.size()) ctx.fail("output_shape must have one value per axis");
    out = given;
  }
  for (int64_t d : out)
    if (d < 0) ctx.fail(fmt::format("output shape {} is negative", ir::shapeString(out)));
  ctx.emit("MaxUnpool", {ctx.inputs[0], ctx.inputs[1]}, {{ctx.inputType(0), out}},
           {{"index_shape", indexShape}});
}

/// DepthToSpace and SpaceToDepth: Reshape, Transpose, Reshape.
void importBlockRearrange(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const Shape& x = ctx.inputShape(0);
  const int64_t b = ctx.attrInt("blocksize", 0);
  if (x.size() != 4 || b <= 0) ctx.fail("needs an N x C x H x W input and a positive blocksize");
  const int64_t n = x[0], c = x[1], h = x[2], w = x[3];
  const bool toSpace = ctx.proto.op_type() == "DepthToSpace";
  Shape split, out;
  std::vector<int64_t> perm;
  if (toSpace) {
    if (c % (b * b) != 0) ctx.fail("channels are not a multiple of blocksize^2");
    const std::string mode = ctx.attrString("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") ctx.fail(fmt::format("unknown mode '{}'", mode));
    split = mode == "DCR" ? Shape{n, b, b, c / (b * b), h, w} : Shape{n, c / (b * b), b, b, h, w};
    perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 4, 1, 5, 2}
                         : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
    out = {n, c / (b * b), h * b, w * b};
  } else {
    if (h % b != 0 || w % b != 0) ctx.fail("height and width are not multiples of blocksize");
    split = {n, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * b * b, h / b, w / b};
  }
  const DType type = ctx.inputType(0);
  Shape moved;
  for (int64_t p : perm) moved.push_back(split[p]);
  const int a =
      ctx.graph.addValue(ctx.graph.uniqueValueName(ctx.nodeName + "_blocks"), {type, split});
  ctx.graph.addNode("Reshape", ctx.nodeName + "/split", {ctx.inputs[0]}, {a});
  const int t =
      ctx.graph.addValue(ctx.graph.uniqueValueName(ctx.nodeName + "_moved"), {type, moved});
  ctx.graph.addNode("Transpose", ctx.nodeName + "/move", {a}, {t}, {{"perm", perm}});
  ctx.emit("Reshape", {t}, {{type, out}});
}

}  // namespace

void registerIndexingOps(std::map<std::string, OpImporter>& table) {
  table["GatherElements"] = importGatherElements;
  table["ScatterElements"] = importScatterElements;
  table["Scatter"] = importScatterElements;
  table["GatherND"] = importGatherND;
  table["ScatterND"] = importScatterND;
  table["OneHot"] = importOneHot;
  table["Trilu"] = importTrilu;
  table["EyeLike"] = importEyeLike;
  table["ReverseSequence"] = importReverseSequence;
  table["MaxUnpool"] = importMaxUnpool;
  table["DepthToSpace"] = importBlockRearrange;
  table["SpaceToDepth"] = importBlockRearrange;
}

}  // namespace cgc::frontend
