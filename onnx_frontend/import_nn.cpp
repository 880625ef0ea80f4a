// Importers for the neural-network ops: convolution, transposed convolution,
// pooling, Gemm/MatMul, BatchNormalization, Softmax. Output sizes and
// auto_pad are resolved here into explicit pads.
#include "onnx_frontend/op_import.h"

namespace cgc::frontend {
namespace {

using ir::Shape;

struct Window {
  Shape kernel, strides, dilations, pads;  // pads: begins then ends
};

Window readWindow(const OpContext& ctx, const Shape& kernel) {
  size_t n = kernel.size();
  Window w{kernel, ctx.attrInts("strides", Shape(n, 1)), ctx.attrInts("dilations", Shape(n, 1)),
           ctx.attrInts("pads", Shape(2 * n, 0))};
  if (w.strides.size() != n || w.dilations.size() != n || w.pads.size() != 2 * n)
    ctx.fail("kernel_shape, strides, dilations and pads disagree in rank");
  for (size_t i = 0; i < n; ++i)
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0)
      ctx.fail("kernel sizes, strides and dilations must be positive");
  for (int64_t p : w.pads)
    if (p < 0) ctx.fail("pads must not be negative");
  return w;
}

/// The span of a dilated window, (kernel - 1) * dilation + 1.
int64_t windowExtent(const OpContext& ctx, const Window& w, size_t i) {
  return ctx.mulSizes(w.kernel[i] - 1, w.dilations[i]) + 1;
}

/// Output spatial sizes for Conv and pooling; rewrites pads for SAME.
Shape windowOutput(const OpContext& ctx, const Shape& in, Window& w, bool ceilMode) {
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  size_t n = in.size();
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t extent = windowExtent(ctx, w, i);
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      out[i] = in[i] == 0 ? 0 : (in[i] - 1) / w.strides[i] + 1;
      int64_t total = std::max<int64_t>(
          0, ctx.addSizes(ctx.mulSizes(out[i] - 1, w.strides[i]), extent) - in[i]);
      int64_t small = total / 2;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      w.pads[i + n] = total - w.pads[i];
      continue;
    }
    if (autoPad == "VALID")
      w.pads[i] = w.pads[i + n] = 0;
    else if (autoPad != "NOTSET")
      ctx.fail(fmt::format("unknown auto_pad '{}'", autoPad));
    int64_t span = ctx.addSizes(in[i], ctx.addSizes(w.pads[i], w.pads[i + n])) - extent;
    if (span < 0)
      ctx.fail(fmt::format("window of extent {} does not fit input size {}", extent, in[i]));
    out[i] = (ceilMode && span % w.strides[i] ? 1 : 0) + span / w.strides[i] + 1;
    // A window that would start inside the end padding is dropped.
    if (ceilMode && ctx.mulSizes(out[i] - 1, w.strides[i]) >= in[i] + w.pads[i]) --out[i];
  }
  return out;
}

std::map<std::string, ir::Attribute> windowAttrs(const Window& w) {
  return {{"kernel_shape", w.kernel},
          {"strides", w.strides},
          {"dilations", w.dilations},
          {"pads", w.pads}};
}

Shape spatialDims(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

void importConv(OpContext& ctx) {
  ctx.requireInputs(2, 3);
  ctx.requireFloat(0);
  const Shape& x = ctx.inputShape(0);
  const Shape& wShape = ctx.inputShape(1);
  if (x.size() < 3 || wShape.size() != x.size())
    ctx.fail(fmt::format("input {} and weights {} do not form a convolution", ir::shapeString(x),
                         ir::shapeString(wShape)));
  int64_t group = ctx.attrInt("group", 1);
  if (group <= 0) ctx.fail(fmt::format("group {} is not positive", group));
  if (x[1] != ctx.mulSizes(wShape[1], group) || wShape[0] % group != 0)
    ctx.fail(
        fmt::format("input has {} channels but weights {} with group {} "
                    "expect {}",
                    x[1], ir::shapeString(wShape), group, wShape[1] * group));
  if (ctx.hasInput(2) && ctx.inputShape(2) != Shape{wShape[0]})
    ctx.fail("bias must have one value per output channel");
  Window w = readWindow(ctx, ctx.attrInts("kernel_shape", spatialDims(wShape)));
  if (w.kernel != spatialDims(wShape)) ctx.fail("kernel_shape disagrees with the weights");
  Shape out = windowOutput(ctx, spatialDims(x), w, false);
  out.insert(out.begin(), {x[0], wShape[0]});
  auto attrs = windowAttrs(w);
  attrs["group"] = group;
  std::vector<int> inputs = {ctx.inputs[0], ctx.inputs[1]};
  if (ctx.hasInput(2)) inputs.push_back(ctx.inputs[2]);
  ctx.emit("Conv", inputs, {{DType::kF32, out}}, attrs);
}

void importConvTranspose(OpContext& ctx) {
  ctx.requireInputs(2, 3);
  ctx.requireFloat(0);
  const Shape& x = ctx.inputShape(0);
  const Shape& wShape = ctx.inputShape(1);
  int64_t group = ctx.attrInt("group", 1);
  if (x.size() < 3 || wShape.size() != x.size() || group <= 0 || wShape[0] != x[1] ||
      x[1] % group != 0)
    ctx.fail(
        fmt::format("input {} and weights {} do not form a transposed "
                    "convolution",
                    ir::shapeString(x), ir::shapeString(wShape)));
  size_t n = x.size() - 2;
  Window w = readWindow(ctx, ctx.attrInts("kernel_shape", spatialDims(wShape)));
  if (w.kernel != spatialDims(wShape)) ctx.fail("kernel_shape disagrees with the weights");
  Shape outputPadding = ctx.attrInts("output_padding", Shape(n, 0));
  Shape outputShape = ctx.attrInts("output_shape");
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  if (outputShape.size() == n + 2) outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  if (outputPadding.size() != n || (!outputShape.empty() && outputShape.size() != n))
    ctx.fail("output_padding and output_shape must have one value per spatial axis");
  for (int64_t p : outputPadding)
    if (p < 0) ctx.fail("output_padding must not be negative");
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t extent = windowExtent(ctx, w, i);
    int64_t full = ctx.addSizes(ctx.mulSizes(w.strides[i], x[i + 2] - 1),
                                ctx.addSizes(outputPadding[i], extent));
    if (!outputShape.empty() || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      out[i] = outputShape.empty() ? ctx.mulSizes(x[i + 2], w.strides[i]) : outputShape[i];
      // A negative total (output_shape beyond `full`) pads the end.
      int64_t total = ctx.addSizes(full, -std::max<int64_t>(out[i], 0));
      bool upper = autoPad != "SAME_LOWER";
      w.pads[i] = upper ? total / 2 : total - total / 2;
      w.pads[i + n] = total - w.pads[i];
    } else {
      if (autoPad == "VALID") w.pads[i] = w.pads[i + n] = 0;
      out[i] = ctx.addSizes(full, -ctx.addSizes(w.pads[i], w.pads[i + n]));
    }
    if (out[i] <= 0) ctx.fail("transposed convolution has an empty output");
  }
  out.insert(out.begin(), {x[0], ctx.mulSizes(wShape[1], group)});
  if (ctx.hasInput(2) && ctx.inputShape(2) != Shape{out[1]})
    ctx.fail("bias must have one value per output channel");
  auto attrs = windowAttrs(w);
  attrs["group"] = group;
  std::vector<int> inputs = {ctx.inputs[0], ctx.inputs[1]};
  if (ctx.hasInput(2)) inputs.push_back(ctx.inputs[2]);
  ctx.emit("ConvTranspose", inputs, {{DType::kF32, out}}, attrs);
}

void importPool(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  // MaxPool on int8 and uint8 (opset 12) is the int8 kernel that fusion
  // makes of DQ -> MaxPool -> Q: exact, the maximum commutes with both.
  const DType type = ctx.inputType(0);
  const bool quantised =
      ctx.proto.op_type() == "MaxPool" && (type == DType::kU8 || type == DType::kI8);
  if (!quantised) ctx.requireFloat(0);
  const Shape& x = ctx.inputShape(0);
  if (x.size() < 3) ctx.fail("pooling needs an N x C x spatial input");
  if (!ctx.hasAttr("kernel_shape")) ctx.fail("kernel_shape is required");
  if (ctx.attrInt("storage_order", 0) != 0) ctx.fail("storage_order 1 is not supported");
  Window w = readWindow(ctx, ctx.attrInts("kernel_shape"));
  if (w.kernel.size() != x.size() - 2) ctx.fail("kernel_shape rank does not match the input");
  Shape out = windowOutput(ctx, spatialDims(x), w, ctx.attrInt("ceil_mode", 0));
  out.insert(out.begin(), {x[0], x[1]});
  auto attrs = windowAttrs(w);
  attrs["count_include_pad"] = ctx.attrInt("count_include_pad", 0);
  if (quantised && x.size() > 4) ctx.fail("int8 max pooling is 1-D and 2-D only");
  ctx.emit(quantised ? "MaxPoolInt8" : ctx.proto.op_type(), {ctx.inputs[0]}, {{type, out}}, attrs);
  if (ctx.proto.output_size() > 1 && !ctx.proto.output(1).empty())
    ctx.fail("the Indices output of MaxPool is not supported");
}

void importGlobalAveragePool(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  ctx.requireFloat(0);
  Shape out = ctx.inputShape(0);
  if (out.size() < 3) ctx.fail("GlobalAveragePool needs an N x C x spatial input");
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  ctx.emit("GlobalAveragePool", {ctx.inputs[0]}, {{DType::kF32, out}});
}

void importGemm(OpContext& ctx) {
  ctx.requireInputs(2, 3);
  ctx.requireFloat(0);
  const Shape& a = ctx.inputShape(0);
  const Shape& b = ctx.inputShape(1);
  if (a.size() != 2 || b.size() != 2)
    ctx.fail(fmt::format("Gemm needs 2-D operands, has {} and {}", ir::shapeString(a),
                         ir::shapeString(b)));
  bool transA = ctx.attrInt("transA", 0), transB = ctx.attrInt("transB", 0);
  int64_t m = transA ? a[1] : a[0], k = transA ? a[0] : a[1];
  int64_t kb = transB ? b[1] : b[0], n = transB ? b[0] : b[1];
  if (k != kb) ctx.fail(fmt::format("inner dimensions {} and {} differ", k, kb));
  Shape out = {m, n};
  if (ctx.hasInput(2) && broadcastShapes(ctx, ctx.inputShape(2), out) != out)
    ctx.fail("C does not broadcast to the output");
  std::vector<int> inputs = {ctx.inputs[0], ctx.inputs[1]};
  if (ctx.hasInput(2)) inputs.push_back(ctx.inputs[2]);
  ctx.emit("Gemm", inputs, {{DType::kF32, out}},
           {{"transA", int64_t{transA}},
            {"transB", int64_t{transB}},
            {"alpha", double{ctx.attrFloat("alpha", 1.f)}},
            {"beta", double{ctx.attrFloat("beta", 1.f)}}});
}

void importMatMul(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  DType type = ctx.inputType(0);
  if ((type != DType::kF32 && type != DType::kF64) || ctx.inputType(1) != type)
    ctx.fail(
        fmt::format("operand types {} and {} are not supported (float32 or "
                    "float64, both the same)",
                    dtypeName(type), dtypeName(ctx.inputType(1))));
  Shape a = ctx.inputShape(0), b = ctx.inputShape(1);
  if (a.empty() || b.empty()) ctx.fail("MatMul operands must have rank >= 1");
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA) a.insert(a.begin(), 1);
  if (vecB) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    ctx.fail(fmt::format("inner dimensions {} and {} differ", a.back(), b[b.size() - 2]));
  Shape out = broadcastShapes(ctx, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!vecA) out.push_back(a[a.size() - 2]);
  if (!vecB) out.push_back(b.back());
  ctx.emit("MatMul", {ctx.inputs[0], ctx.inputs[1]}, {{type, out}});
}

void importBatchNorm(OpContext& ctx) {
  ctx.requireInputs(5, 5);
  ctx.requireFloat(0);
  if (ctx.attrInt("training_mode", 0) != 0)
    ctx.fail("training_mode is not supported (inference only)");
  for (int i = 1; i < ctx.proto.output_size(); ++i)
    if (!ctx.proto.output(i).empty())
      ctx.fail("the running statistics outputs (training) are not supported");
  const Shape& x = ctx.inputShape(0);
  int64_t channels = x.size() > 1 ? x[1] : 1;
  for (size_t i = 1; i < 5; ++i)
    if (ctx.input(i).type.numElements() != channels)
      ctx.fail(fmt::format("input {} must hold {} values", i, channels));
  ctx.emit("BatchNormalization", ctx.inputs, {ctx.input(0).type},
           {{"epsilon", double{ctx.attrFloat("epsilon", 1e-5f)}}});
}

void importSoftmax(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  ctx.requireFloat(0);
  int64_t rank = static_cast<int64_t>(ctx.inputShape(0).size());
  bool legacy = ctx.opset < 13;
  int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", legacy ? 1 : -1), rank);
  ctx.emit(ctx.proto.op_type(), {ctx.inputs[0]}, {ctx.input(0).type},
           {{"axis", axis}, {"legacy", int64_t{legacy}}});
}

void importReduce(OpContext& ctx) {
  ctx.requireInputs(1, 2);
  const Shape& x = ctx.inputShape(0);
  int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes = ctx.attrInts("axes");
  if (ctx.hasInput(1)) axes = ctx.constantInts(1, "axes");
  if (axes.empty() && ctx.attrInt("noop_with_empty_axes", 0)) {
    ctx.emit("Identity", {ctx.inputs[0]}, {ctx.input(0).type});
    return;
  }
  std::vector<bool> reduced(x.size(), axes.empty());
  for (int64_t a : axes) reduced[ctx.normalizeAxis(a, rank)] = true;
  bool keepDims = ctx.attrInt("keepdims", 1) != 0;
  Shape out;
  std::vector<int64_t> normalized;
  for (size_t d = 0; d < x.size(); ++d) {
    if (reduced[d]) normalized.push_back(static_cast<int64_t>(d));
    if (!reduced[d])
      out.push_back(x[d]);
    else if (keepDims)
      out.push_back(1);
  }
  ctx.emit(ctx.proto.op_type(), {ctx.inputs[0]}, {{ctx.inputType(0), out}}, {{"axes", normalized}});
}

void importArgReduce(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  ctx.requireFloat(0);
  Shape out = ctx.inputShape(0);
  int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), static_cast<int64_t>(out.size()));
  if (ctx.attrInt("keepdims", 1))
    out[axis] = 1;
  else
    out.erase(out.begin() + axis);
  ctx.emit(ctx.proto.op_type(), {ctx.inputs[0]}, {{DType::kI64, out}},
           {{"axis", axis}, {"select_last_index", ctx.attrInt("select_last_index", 0)}});
}

}  // namespace

ir::Shape convWindow(const OpContext& ctx, const ir::Shape& x, const ir::Shape& w,
                     std::map<std::string, ir::Attribute>& attrs) {
  Window window = readWindow(ctx, ctx.attrInts("kernel_shape", spatialDims(w)));
  if (window.kernel != spatialDims(w)) ctx.fail("kernel_shape disagrees with the weights");
  Shape out = windowOutput(ctx, spatialDims(x), window, false);
  attrs = windowAttrs(window);
  return out;
}

void registerNeuralNetOps(std::map<std::string, OpImporter>& table) {
  table["Conv"] = importConv;
  table["ConvTranspose"] = importConvTranspose;
  table["MaxPool"] = importPool;
  table["AveragePool"] = importPool;
  table["GlobalAveragePool"] = importGlobalAveragePool;
  table["Gemm"] = importGemm;
  table["MatMul"] = importMatMul;
  table["BatchNormalization"] = importBatchNorm;
  table["Softmax"] = importSoftmax;
  table["LogSoftmax"] = importSoftmax;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                         "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp"})
    table[op] = importReduce;
  table["ArgMax"] = importArgReduce;
  table["ArgMin"] = importArgReduce;
}

}  // namespace cgc::frontend
