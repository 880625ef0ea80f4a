// Importers for the tensor-plumbing ops. Shape and Size become constants
// (every shape is static; where --dim makes one follow variable dimensions,
// a Sizes node computes it at run time, and so does a Range whose start
// follows them); Reshape, Flatten, Squeeze and Unsqueeze become
// Reshape views whose target shape is the output type; Slice and Transpose
// get fully resolved per-axis attributes.
#include <cmath>
#include <cstring>

#include "cgc/kernels.h"
#include "onnx_frontend/op_import.h"
#include "onnx_frontend/tensor_proto.h"

namespace cgc::frontend {
namespace {

using ir::Shape;

std::vector<uint8_t> int64Bytes(const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

void importConstant(OpContext& ctx) {
  ir::TensorType type;
  std::vector<uint8_t> bytes;
  if (const onnx::TensorProto* t = ctx.attrTensor("value")) {
    HostTensor host = tensorFromProto(*t, ctx.where());
    type = host.type;
    bytes = std::move(host.bytes);
  } else if (ctx.hasAttr("value_float") || ctx.hasAttr("value_floats")) {
    std::vector<float> values;
    if (ctx.hasAttr("value_float")) {
      values = {ctx.attrFloat("value_float", 0.f)};
      type = {DType::kF32, {}};
    } else {
      for (const auto& a : ctx.proto.attribute())
        if (a.name() == "value_floats") values.assign(a.floats().begin(), a.floats().end());
      type = {DType::kF32, {static_cast<int64_t>(values.size())}};
    }
    bytes.resize(values.size() * sizeof(float));
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  } else if (ctx.hasAttr("value_int")) {
    type = {DType::kI64, {}};
    bytes = int64Bytes({ctx.attrInt("value_int", 0)});
  } else if (ctx.hasAttr("value_ints")) {
    auto values = ctx.attrInts("value_ints");
    type = {DType::kI64, {static_cast<int64_t>(values.size())}};
    bytes = int64Bytes(values);
  } else {
    ctx.fail("only tensor, float(s) and int(s) Constant values are supported");
  }
  ctx.defineConstant(0, type, std::move(bytes));
}

void importShape(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const Shape& x = ctx.inputShape(0);
  int64_t rank = static_cast<int64_t>(x.size());
  auto clampAxis = [&](int64_t a) {
    if (a < 0) a += rank;
    return std::clamp<int64_t>(a, 0, rank);
  };
  int64_t start = clampAxis(ctx.attrInt("start", 0));
  int64_t end = clampAxis(ctx.attrInt("end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(x[i]);
  ctx.defineComputed(0, {DType::kI64, {static_cast<int64_t>(dims.size())}}, int64Bytes(dims),
                     "Sizes", {}, {{"values", dims}});
}

void importSize(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const int64_t count = ctx.input(0).type.numElements();
  ctx.defineComputed(0, {DType::kI64, {}}, int64Bytes({count}), "Sizes", {},
                     {{"values", std::vector<int64_t>{count}}});
}

void emitView(OpContext& ctx, Shape shape) {
  ctx.checkType({ctx.inputType(0), shape}, "the target shape");
  if (ir::numElements(shape) != ctx.input(0).type.numElements())
    ctx.fail(fmt::format("cannot reshape {} to {}", ir::shapeString(ctx.inputShape(0)),
                         ir::shapeString(shape)));
  ctx.emit("Reshape", {ctx.inputs[0]}, {{ctx.inputType(0), std::move(shape)}});
}

void importReshape(OpContext& ctx) {
  std::vector<int64_t> target;
  if (ctx.opset < 5) {
    ctx.requireInputs(1, 1);
    target = ctx.attrInts("shape");
  } else {
    ctx.requireInputs(2, 2);
    target = ctx.constantInts(1, "shape");
  }
  const Shape& x = ctx.inputShape(0);
  bool allowZero = ctx.attrInt("allowzero", 0) != 0;
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= x.size()) ctx.fail("shape copies a dimension the input lacks");
      target[i] = x[i];
    }
    if (target[i] == -1) {
      if (inferred >= 0) ctx.fail("shape has more than one -1");
      inferred = static_cast<int>(i);
    } else if (target[i] < 0) {
      ctx.fail(fmt::format("shape has invalid dimension {}", target[i]));
    } else {
      known = ctx.mulSizes(known, target[i]);
    }
  }
  if (inferred >= 0) {
    int64_t total = ctx.input(0).type.numElements();
    if (known == 0 || total % known != 0)
      ctx.fail(fmt::format("cannot reshape {} to {}", ir::shapeString(x), ir::shapeString(target)));
    target[inferred] = total / known;
  }
  emitView(ctx, target);
}

void importFlatten(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const Shape& x = ctx.inputShape(0);
  int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) ctx.fail("axis is out of range");
  emitView(ctx, {ir::numElements(Shape(x.begin(), x.begin() + axis)),
                 ir::numElements(Shape(x.begin() + axis, x.end()))});
}

std::vector<int64_t> axesOf(OpContext& ctx) {
  if (ctx.opset < 13) return ctx.attrInts("axes");
  return ctx.hasInput(1) ? ctx.constantInts(1, "axes") : std::vector<int64_t>{};
}

void importSqueeze(OpContext& ctx) {
  ctx.requireInputs(1, 2);
  const Shape& x = ctx.inputShape(0);
  std::vector<bool> drop(x.size(), false);
  auto axes = axesOf(ctx);
  for (int64_t a : axes) {
    int64_t axis = ctx.normalizeAxis(a, static_cast<int64_t>(x.size()));
    if (x[axis] != 1) ctx.fail(fmt::format("cannot squeeze axis {} of size {}", a, x[axis]));
    drop[axis] = true;
  }
  Shape out;
  for (size_t i = 0; i < x.size(); ++i)
    if (!(axes.empty() ? x[i] == 1 : drop[i])) out.push_back(x[i]);
  emitView(ctx, out);
}

void importUnsqueeze(OpContext& ctx) {
  ctx.requireInputs(1, 2);
  const Shape& x = ctx.inputShape(0);
  auto axes = axesOf(ctx);
  int64_t rank = static_cast<int64_t>(x.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    int64_t axis = ctx.normalizeAxis(a, rank);
    if (inserted[axis]) ctx.fail("axes has a repeated axis");
    inserted[axis] = true;
  }
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? 1 : x.at(next++));
  emitView(ctx, out);
}

void importTranspose(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  const Shape& x = ctx.inputShape(0);
  std::vector<int64_t> perm = ctx.attrInts("perm");
  if (perm.empty())
    for (int64_t i = static_cast<int64_t>(x.size()) - 1; i >= 0; --i) perm.push_back(i);
  if (perm.size() != x.size()) ctx.fail("perm does not match the input rank");
  Shape out;
  std::vector<bool> seen(x.size(), false);
  for (int64_t& p : perm) {
    p = ctx.normalizeAxis(p, static_cast<int64_t>(x.size()));
    if (seen[p]) ctx.fail("perm is not a permutation");
    seen[p] = true;
    out.push_back(x[p]);
  }
  ctx.emit("Transpose", {ctx.inputs[0]}, {{ctx.inputType(0), out}}, {{"perm", perm}});
}

void importConcat(OpContext& ctx) {
  if (ctx.inputs.empty()) ctx.fail("Concat needs at least one input");
  Shape out = ctx.inputShape(0);
  int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), static_cast<int64_t>(out.size()));
  std::vector<int> inputs;
  out[axis] = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Shape& s = ctx.inputShape(i);
    if (ctx.inputType(i) != ctx.inputType(0)) ctx.fail("input types differ");
    bool compatible = s.size() == out.size();
    for (size_t d = 0; compatible && d < s.size(); ++d)
      compatible = d == static_cast<size_t>(axis) || s[d] == out[d];
    if (!compatible)
      ctx.fail(fmt::format("input {} has shape {}, incompatible with {}", i, ir::shapeString(s),
                           ir::shapeString(ctx.inputShape(0))));
    out[axis] = ctx.addSizes(out[axis], s[axis]);
    inputs.push_back(ctx.inputs[i]);
  }
  ctx.emit("Concat", inputs, {{ctx.inputType(0), out}}, {{"axis", axis}});
}

void importGather(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  const Shape& data = ctx.inputShape(0);
  if (data.empty()) ctx.fail("Gather needs data of rank >= 1");
  int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), static_cast<int64_t>(data.size()));
  if (ctx.inputType(1) != DType::kI32 && ctx.inputType(1) != DType::kI64)
    ctx.fail(fmt::format("indices must be int32 or int64, are {}", dtypeName(ctx.inputType(1))));
  if (ctx.input(1).isConstant())
    for (int64_t i : ctx.input(1).intValues())
      if (i < -data[axis] || i >= data[axis])
        ctx.fail(
            fmt::format("index {} is out of range for axis {} of size {}", i, axis, data[axis]));
  Shape out(data.begin(), data.begin() + axis);
  for (int64_t d : ctx.inputShape(1)) out.push_back(d);
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  ctx.emit("Gather", {ctx.inputs[0], ctx.inputs[1]}, {{ctx.inputType(0), out}}, {{"axis", axis}});
}

void importSlice(OpContext& ctx) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    ctx.requireInputs(1, 1);
    starts = ctx.attrInts("starts");
    ends = ctx.attrInts("ends");
    axes = ctx.attrInts("axes");
  } else {
    ctx.requireInputs(3, 5);
    starts = ctx.constantInts(1, "starts");
    ends = ctx.constantInts(2, "ends");
    if (ctx.hasInput(3)) axes = ctx.constantInts(3, "axes");
    if (ctx.hasInput(4)) steps = ctx.constantInts(4, "steps");
  }
  const Shape& x = ctx.inputShape(0);
  int64_t rank = static_cast<int64_t>(x.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps differ in length");
  std::vector<int64_t> allStarts(rank, 0), allSteps(rank, 1);
  Shape out = x;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = ctx.normalizeAxis(axes[i], rank);
    if (seen[axis]) ctx.fail("axes has a repeated axis");
    seen[axis] = true;
    int64_t dim = x[axis], step = steps[i];
    if (step == 0) ctx.fail("steps must not be zero");
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    // start, end and dim are within [-1, 2^40]; a step of any size divides
    // their distance without overflow.
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      out[axis] = end > start ? (end - start - 1) / step + 1 : 0;
    } else if (dim == 0) {
      out[axis] = 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      int64_t distance = start - end - 1;  // -step overflows for INT64_MIN
      out[axis] = start <= end ? 0 : step < -distance ? 1 : distance / -step + 1;
    }
    allStarts[axis] = out[axis] > 0 ? start : 0;
    // With one element or none the step is never taken: 1 keeps the
    // kernel's stride arithmetic small.
    allSteps[axis] = out[axis] > 1 ? step : 1;
  }
  ctx.emit("Slice", {ctx.inputs[0]}, {{ctx.inputType(0), out}},
           {{"starts", allStarts}, {"steps", allSteps}});
}

void importExpand(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  Shape target = ctx.constantInts(1, "shape");
  Shape out = broadcastShapes(ctx, ctx.inputShape(0), target);
  ctx.emit("Expand", {ctx.inputs[0]}, {{ctx.inputType(0), out}});
}

void importConstantOfShape(OpContext& ctx) {
  ctx.requireInputs(1, 1);
  Shape shape = ctx.constantInts(0, "shape");
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape has a negative dimension");
  const onnx::TensorProto* given = ctx.attrTensor("value");
  onnx::TensorProto zero;  // the default: one float32 zero
  zero.set_data_type(onnx::TensorProto::FLOAT);
  zero.add_dims(1);
  zero.add_float_data(0.0f);
  HostTensor value = tensorFromProto(given ? *given : zero, ctx.where());
  if (value.type.numElements() != 1) ctx.fail("value must hold one element");
  ctx.defineFilled(0, {value.type.dtype, shape}, std::move(value.bytes));
}

/// Range's output: a constant, or a node where its start follows the sizes of
/// variable dimensions (--dim).
void defineRange(OpContext& ctx, const ir::TensorType& out, std::vector<uint8_t> bytes) {
  ctx.defineComputed(0, out, std::move(bytes), "Range",
                     {ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]});
}

/// Range over an integer type, exactly: through doubles, integers beyond
/// 2^53 would be rounded, and one rounded up to 2^63 would not convert back.
void integerRange(OpContext& ctx, DType type) {
  int64_t bounds[3];
  const char* roles[3] = {"start", "limit", "delta"};
  for (size_t i = 0; i < 3; ++i) {
    std::vector<int64_t> values = ctx.constantInts(i, roles[i]);
    if (values.empty())
      ctx.fail(fmt::format("input '{}' ({}) is empty; it must hold a value", ctx.input(i).name,
                           roles[i]));
    bounds[i] = values[0];
  }
  auto [start, limit, delta] = bounds;
  if (delta == 0) ctx.fail("delta must not be zero");
  // ceil((limit - start) / delta) in 128 bits, where nothing overflows.
  __int128 span = static_cast<__int128>(limit) - start;
  __int128 count = span / delta;
  if (span % delta != 0 && (span < 0) == (delta < 0)) ++count;
  if (count > ctx.generateBudget)
    ctx.fail(fmt::format("Range of {} to {} by {} has too many elements", start, limit, delta));
  int64_t n = static_cast<int64_t>(std::max<__int128>(count, 0));
  ir::TensorType out{type, {n}};
  // The int64 values below are the largest copy.
  ctx.checkType({DType::kI64, {n}}, "the output", ctx.generateBudget);
  ctx.generateBudget -= out.bytes();
  // Every value lies between start and limit, so fits in int64 and `type`.
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = static_cast<int64_t>(start + static_cast<__int128>(i) * delta);
  std::vector<uint8_t> bytes(out.bytes());
  rt::cast({DType::kI64, type, n}, values.data(), bytes.data());
  defineRange(ctx, out, std::move(bytes));
}

void importRange(OpContext& ctx) {
  ctx.requireInputs(3, 3);
  DType type = ctx.inputType(0);
  if (type != DType::kF32 && type != DType::kF64) {
    if (type != DType::kI64 && type != DType::kI32 && type != DType::kI16)
      ctx.fail(fmt::format("element type {} is not supported", dtypeName(type)));
    return integerRange(ctx, type);
  }
  double start = ctx.constantScalar(0, "start");
  double limit = ctx.constantScalar(1, "limit");
  double delta = ctx.constantScalar(2, "delta");
  if (delta == 0) ctx.fail("delta must not be zero");
  double count = std::ceil((limit - start) / delta);
  // NaN and counts beyond the limit fail here, negative ones are empty, all
  // before the cast to int64.
  if (!(count <= static_cast<double>(ctx.generateBudget)))
    ctx.fail(fmt::format("Range of {} to {} by {} has too many elements", start, limit, delta));
  int64_t n = static_cast<int64_t>(std::max(0.0, count));
  ir::TensorType out{type, {n}};
  // The doubles below are the largest copy.
  ctx.checkType({DType::kF64, {n}}, "the output", ctx.generateBudget);
  ctx.generateBudget -= out.bytes();
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * delta;
  std::vector<uint8_t> bytes(out.bytes());
  rt::cast({DType::kF64, type, n}, values.data(), bytes.data());
  defineRange(ctx, out, std::move(bytes));
}

/// Split becomes one Slice per output.
void importSplit(OpContext& ctx) {
  ctx.requireInputs(1, 2);
  const Shape x = ctx.inputShape(0);  // a copy: addValue below moves values
  int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), static_cast<int64_t>(x.size()));
  int64_t parts = ctx.proto.output_size();
  if (parts < 1) ctx.fail("Split needs at least one output");
  std::vector<int64_t> sizes = ctx.attrInts("split");
  if (ctx.hasInput(1)) sizes = ctx.constantInts(1, "split");
  if (sizes.empty()) {
    int64_t chunk = (x[axis] + parts - 1) / parts;
    for (int64_t i = 0, left = x[axis]; i < parts; ++i, left -= chunk)
      sizes.push_back(std::min(chunk, left));
  }
  int64_t total = 0;
  bool negative = false;
  for (int64_t s : sizes) {
    negative |= s < 0;
    if (!negative) total = ctx.addSizes(total, s);
  }
  if (negative || static_cast<int64_t>(sizes.size()) != parts || total != x[axis])
    ctx.fail(fmt::format("split sizes {} do not divide axis {} of size {} into {} outputs",
                         ir::shapeString(sizes), axis, x[axis], parts));
  int64_t offset = 0;
  for (int64_t i = 0; i < parts; ++i) {
    Shape out = x;
    out[axis] = sizes[i];
    std::vector<int64_t> starts(x.size(), 0), steps(x.size(), 1);
    starts[axis] = offset;
    offset += sizes[i];
    if (ctx.proto.output(static_cast<int>(i)).empty()) continue;
    int value = ctx.graph.addValue(ctx.proto.output(static_cast<int>(i)), {ctx.inputType(0), out});
    ctx.graph.addNode("Slice", fmt::format("{}/{}", ctx.nodeName, i), {ctx.inputs[0]}, {value},
                      {{"starts", starts}, {"steps", steps}});
    ctx.results[i] = value;
  }
}

void importTile(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  Shape out = ctx.inputShape(0);
  auto repeats = ctx.constantInts(1, "repeats");
  if (repeats.size() != out.size()) ctx.fail("repeats must have one value per axis");
  for (size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0) ctx.fail("repeats must not be negative");
    out[d] = ctx.mulSizes(out[d], repeats[d]);
  }
  ctx.emit("Tile", {ctx.inputs[0]}, {{ctx.inputType(0), out}});
}

void importPad(OpContext& ctx) {
  const Shape& x = ctx.inputShape(0);
  std::vector<int64_t> pads;
  double value = 0.0;
  std::vector<int> inputs = {ctx.inputs[0]};
  if (ctx.opset < 11) {
    ctx.requireInputs(1, 1);
    pads = ctx.attrInts("pads", ctx.attrInts("paddings"));
    value = ctx.attrFloat("value", 0.0f);
  } else {
    ctx.requireInputs(2, 4);
    pads = ctx.constantInts(1, "pads");
    if (ctx.hasInput(2)) {
      // The value decides no shape: a run-time one stays an input.
      if (ctx.inputType(2) != ctx.inputType(0) || ctx.input(2).type.numElements() != 1)
        ctx.fail(fmt::format("constant_value must be one {} value", dtypeName(ctx.inputType(0))));
      if (ctx.input(2).isConstant())
        value = ctx.input(2).doubleValues().at(0);
      else
        inputs.push_back(ctx.inputs[2]);
    }
    if (ctx.hasInput(3)) ctx.fail("the axes input of Pad is not supported");
  }
  std::string mode = ctx.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    ctx.fail(fmt::format("unknown mode '{}'", mode));
  if (pads.size() != 2 * x.size()) ctx.fail("pads must have two values per axis");
  Shape out = x;
  for (size_t d = 0; d < x.size(); ++d) {
    if (pads[d] < 0 || pads[d + x.size()] < 0)
      ctx.fail("negative pads (cropping) are not supported");
    out[d] = ctx.addSizes(out[d], ctx.addSizes(pads[d], pads[d + x.size()]));
    if (mode != "constant" && x[d] == 0 && out[d] > 0)
      ctx.fail("cannot reflect or extend an empty axis");
  }
  ctx.emit("Pad", inputs, {{ctx.inputType(0), out}},
           {{"pads", pads}, {"mode", mode}, {"value", value}});
}

}  // namespace

void registerTensorOps(std::map<std::string, OpImporter>& table) {
  table["Constant"] = importConstant;
  table["Shape"] = importShape;
  table["Size"] = importSize;
  table["Reshape"] = importReshape;
  table["Flatten"] = importFlatten;
  table["Squeeze"] = importSqueeze;
  table["Unsqueeze"] = importUnsqueeze;
  table["Transpose"] = importTranspose;
  table["Concat"] = importConcat;
  table["Gather"] = importGather;
  table["Slice"] = importSlice;
  table["Expand"] = importExpand;
  table["ConstantOfShape"] = importConstantOfShape;
  table["Range"] = importRange;
  table["Split"] = importSplit;
  table["Tile"] = importTile;
  table["Pad"] = importPad;
}

}  // namespace cgc::frontend
