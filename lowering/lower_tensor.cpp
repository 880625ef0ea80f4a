// Lowering of the tensor ops: views (Reshape), strided copies (Transpose,
// Slice, Expand), Concat, Gather, Pad and Tile index maps, Resize,
// reductions and ArgMax/ArgMin; the sizes and Range a --dim model computes
// at run time.
#include <algorithm>

#include "lowering/lower_support.h"

namespace cgc::lowering {
namespace {

Lowered lowerView(const Graph& g, const Node& n) {
  return KernelCall{
      Kernel::kView, elementType(g, n.outputs[0]), ViewParams{}, {n.inputs[0]}, {n.outputs[0]}};
}

Lowered lowerReduce(const Graph& g, const Node& n) {
  static const std::map<std::string, rt::ReduceOp> ops = {
      {"ReduceSum", rt::ReduceOp::kSum},
      {"ReduceMean", rt::ReduceOp::kMean},
      {"ReduceMax", rt::ReduceOp::kMax},
      {"ReduceMin", rt::ReduceOp::kMin},
      {"ReduceProd", rt::ReduceOp::kProd},
      {"ReduceSumSquare", rt::ReduceOp::kSumSquare},
      {"ReduceL1", rt::ReduceOp::kL1},
      {"ReduceL2", rt::ReduceOp::kL2},
      {"ReduceLogSumExp", rt::ReduceOp::kLogSumExp}};
  const Shape& x = shapeOf(g, n.inputs[0]);
  if (auto problem = checkRank(x.size())) return *problem;
  const auto axes = n.getInts("axes");  // normalised, sorted, unique
  rt::ReduceParams p{};
  p.op = ops.at(n.op);
  p.rank = static_cast<int32_t>(x.size());
  p.count = ir::numElements(x);
  p.out_count = g.value(n.outputs[0]).type.numElements();
  p.reduced = p.out_count > 0 ? std::max<int64_t>(1, p.count / p.out_count) : 1;
  p.shape = perDim<int64_t>(x);
  int64_t stride = 1;
  for (int d = static_cast<int>(x.size()) - 1; d >= 0; --d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    p.out_strides[d] = reduced ? 0 : stride;
    if (!reduced) stride *= x[d];
  }
  return KernelCall{
      Kernel::kReduce, elementType(g, n.outputs[0]), p, {n.inputs[0]}, {n.outputs[0]}};
}

Lowered lowerArgReduce(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const size_t axis = axisOf(n, x.size());
  rt::ArgParams p{product(x, 0, axis), x[axis], product(x, axis + 1, x.size()), n.op == "ArgMax",
                  n.getInt("select_last_index", 0) != 0};
  return KernelCall{Kernel::kArgReduce, DType::kI64, p, {n.inputs[0]}, {n.outputs[0]}};
}

/// Pad (attrs mode, pads, value) and Tile as index maps.
Lowered lowerIndexMap(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const ir::TensorType& out = g.value(n.outputs[0]).type;
  if (auto problem = checkRank(x.size())) return *problem;
  rt::IndexMapParams p{};
  const std::string mode = n.getString("mode", "constant");
  p.mode = n.op == "Tile"      ? rt::IndexMapMode::kTile
           : mode == "reflect" ? rt::IndexMapMode::kReflect
           : mode == "edge"    ? rt::IndexMapMode::kEdge
                               : rt::IndexMapMode::kConstant;
  p.rank = static_cast<int32_t>(x.size());
  p.elem_bytes = dtypeSize(out.dtype);
  p.out_count = out.numElements();
  p.in_shape = perDim<int64_t>(x);
  p.out_shape = perDim<int64_t>(out.shape);
  p.pad_begin = perDim<int64_t>(n.getInts("pads", Shape(2 * x.size(), 0)));
  p.value = n.getFloat("value", 0.0);
  p.dtype = out.dtype;
  // Pad's constant value computed at run time is input 1.
  const int value = n.op == "Pad" && n.inputs.size() > 1 ? n.inputs[1] : -1;
  return KernelCall{Kernel::kIndexMap, out.dtype, p, {n.inputs[0], value}, {n.outputs[0]}};
}

/// Resize with attrs mode, nearest_mode, coordinate_transformation_mode,
/// scales (one per axis), roi (starts then ends, tf_crop_and_resize only),
/// cubic_coeff_a, exclude_outside and extrapolation_value, all resolved by
/// the frontend (Upsample arrives in this form too).
Lowered lowerResize(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  if (auto problem = checkRank(x.size())) return *problem;
  static const std::map<std::string, rt::ResizeMode> modes = {{"nearest", rt::ResizeMode::kNearest},
                                                              {"linear", rt::ResizeMode::kLinear},
                                                              {"cubic", rt::ResizeMode::kCubic}};
  static const std::map<std::string, rt::NearestMode> nearestModes = {
      {"round_prefer_floor", rt::NearestMode::kRoundPreferFloor},
      {"round_prefer_ceil", rt::NearestMode::kRoundPreferCeil},
      {"floor", rt::NearestMode::kFloor},
      {"ceil", rt::NearestMode::kCeil}};
  static const std::map<std::string, rt::ResizeCoordinates> coordinates = {
      {"half_pixel", rt::ResizeCoordinates::kHalfPixel},
      {"pytorch_half_pixel", rt::ResizeCoordinates::kPytorchHalfPixel},
      {"align_corners", rt::ResizeCoordinates::kAlignCorners},
      {"asymmetric", rt::ResizeCoordinates::kAsymmetric},
      {"tf_half_pixel_for_nn", rt::ResizeCoordinates::kTfHalfPixelForNn},
      {"tf_crop_and_resize", rt::ResizeCoordinates::kTfCropAndResize}};
  rt::ResizeParams p{};
  p.mode = modes.at(n.getString("mode", "nearest"));
  p.nearest_mode = nearestModes.at(n.getString("nearest_mode", "round_prefer_floor"));
  p.coordinates = coordinates.at(n.getString("coordinate_transformation_mode", "half_pixel"));
  p.rank = static_cast<int32_t>(x.size());
  const auto scales = n.getFloats("scales");
  const auto roi = n.getFloats("roi");
  CGC_ASSERT(scales.size() == x.size(), "node '{}': unresolved scales", n.name);
  p.in_shape = perDim<int64_t>(x);
  p.out_shape = perDim<int64_t>(y);
  p.scales = perDim<double>(scales);
  for (size_t d = 0; d < x.size(); ++d) {
    const bool given = roi.size() == 2 * x.size();
    p.roi_start[d] = given ? static_cast<float>(roi[d]) : 0.f;
    p.roi_end[d] = given ? static_cast<float>(roi[d + x.size()]) : 1.f;
  }
  p.cubic_coeff_a = n.getFloat("cubic_coeff_a", -0.75);
  p.exclude_outside = n.getInt("exclude_outside", 0) != 0;
  p.extrapolation_value = static_cast<float>(n.getFloat("extrapolation_value", 0.0));
  return KernelCall{Kernel::kResize, DType::kF32, p, {n.inputs[0]}, {n.outputs[0]}};
}

Lowered stridedCopy(const Graph& g, const Node& n, const Shape& outShape,
                    const std::vector<int64_t>& inStrides, int64_t offset) {
  if (auto problem = checkRank(outShape.size())) return *problem;
  rt::StridedCopyParams p{};
  p.rank = static_cast<int32_t>(outShape.size());
  p.elem_bytes = dtypeSize(elementType(g, n.outputs[0]));
  p.offset = offset;
  p.shape = perDim<int64_t>(outShape);
  p.in_strides = perDim<int64_t>(inStrides);
  return KernelCall{
      Kernel::kStridedCopy, elementType(g, n.outputs[0]), p, {n.inputs[0]}, {n.outputs[0]}};
}

Lowered lowerTranspose(const Graph& g, const Node& n) {
  const auto dense = denseStrides(shapeOf(g, n.inputs[0]));
  std::vector<int64_t> strides;
  for (int64_t axis : n.getInts("perm")) strides.push_back(dense[axis]);
  return stridedCopy(g, n, shapeOf(g, n.outputs[0]), strides, 0);
}

Lowered lowerSlice(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const auto dense = denseStrides(x);
  const auto starts = n.getInts("starts");
  const auto steps = n.getInts("steps");
  CGC_ASSERT(starts.size() == x.size() && steps.size() == x.size(),
             "node '{}': unresolved Slice attributes", n.name);
  std::vector<int64_t> strides(x.size());
  int64_t offset = 0;
  for (size_t d = 0; d < x.size(); ++d) {
    offset += starts[d] * dense[d];
    strides[d] = steps[d] * dense[d];
  }
  return stridedCopy(g, n, shapeOf(g, n.outputs[0]), strides, offset);
}

Lowered lowerExpand(const Graph& g, const Node& n) {
  const Shape& y = shapeOf(g, n.outputs[0]);
  return stridedCopy(g, n, y, broadcastStrides(shapeOf(g, n.inputs[0]), y), 0);
}

Lowered lowerConcat(const Graph& g, const Node& n) {
  const Shape& y = shapeOf(g, n.outputs[0]);
  const size_t axis = axisOf(n, y.size());
  const int64_t elem = dtypeSize(elementType(g, n.outputs[0]));
  std::vector<int64_t> partBytes;
  for (int in : n.inputs) {
    const Shape& s = shapeOf(g, in);
    partBytes.push_back(product(s, axis, s.size()) * elem);
  }
  KernelCall call{
      Kernel::kConcat,
      elementType(g, n.outputs[0]),
      rt::ConcatParams{product(y, 0, axis), static_cast<int32_t>(n.inputs.size()), nullptr},
      n.inputs,
      {n.outputs[0]}};
  call.arrays["part_bytes"] = std::move(partBytes);
  return call;
}

Lowered lowerGather(const Graph& g, const Node& n) {
  const Shape& data = shapeOf(g, n.inputs[0]);
  const size_t axis = axisOf(n, data.size());
  rt::GatherParams p{product(data, 0, axis), data[axis],
                     product(data, axis + 1, data.size()) * dtypeSize(elementType(g, n.inputs[0])),
                     g.value(n.inputs[1]).type.numElements()};
  return KernelCall{
      Kernel::kGather, elementType(g, n.inputs[1]), p, {n.inputs[0], n.inputs[1]}, {n.outputs[0]}};
}

/// The sizes a Shape or Size node read at this compile's sizes (attr
/// values), which --dim's fit makes follow the dimensions.
Lowered lowerSizes(const Graph&, const Node& n) {
  const auto values = n.getInts("values");
  if (auto problem = checkRank(values.size())) return *problem;
  rt::SizesParams p{static_cast<int32_t>(values.size()), perDim<int64_t>(values)};
  return KernelCall{Kernel::kSizes, DType::kI64, p, {}, {n.outputs[0]}};
}

Lowered lowerRange(const Graph& g, const Node& n) {
  rt::RangeParams p{g.value(n.outputs[0]).type.numElements()};
  return KernelCall{
      Kernel::kRange, elementType(g, n.outputs[0]), p, {n.inputs[0], n.inputs[2]}, {n.outputs[0]}};
}

}  // namespace

void registerTensorLowerers(std::map<std::string, OpLowerer>& table) {
  table["Reshape"] = lowerView;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                         "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp"})
    table[op] = lowerReduce;
  table["ArgMax"] = lowerArgReduce;
  table["ArgMin"] = lowerArgReduce;
  table["Pad"] = lowerIndexMap;
  table["Tile"] = lowerIndexMap;
  table["Resize"] = lowerResize;
  table["Transpose"] = lowerTranspose;
  table["Slice"] = lowerSlice;
  table["Expand"] = lowerExpand;
  table["Concat"] = lowerConcat;
  table["Gather"] = lowerGather;
  table["Sizes"] = lowerSizes;
  table["Range"] = lowerRange;
}

}  // namespace cgc::lowering
