// Lowering of the signal, sampling and random ops of issue 19
// (onnx_frontend/import_signal.cpp) onto cgc/kernels/signal.h, sampling.h
// and random.h.
#include "lowering/lower_support.h"

namespace cgc::lowering {
namespace {

Lowered lowerDft(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  const size_t axis = axisOf(n, x.size(), 1);
  rt::DftParams p{product(x, 0, axis),        x[axis], product(x, axis + 1, x.size() - 1),
                  n.getInt("n", x[axis]),     y[axis], x.back() == 2,
                  n.getInt("inverse", 0) != 0};
  return KernelCall{Kernel::kDft, elementType(g, n.outputs[0]), p, {n.inputs[0]}, {n.outputs[0]}};
}

Lowered lowerStft(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  rt::StftParams p{x[0], x[1],     y[1], n.getInt("frame_length", 1), n.getInt("step", 1),
                   y[2], x[2] == 2};
  const int window = n.inputs.size() > 1 ? n.inputs[1] : -1;
  return KernelCall{
      Kernel::kStft, elementType(g, n.outputs[0]), p, {n.inputs[0], window}, {n.outputs[0]}};
}

Lowered lowerMelWeightMatrix(const Graph& g, const Node& n) {
  const DType rate = elementType(g, n.inputs[0]), edge = elementType(g, n.inputs[1]);
  const DType out = elementType(g, n.outputs[0]);
  for (DType t : {rate, edge, out})
    if (t == DType::kBool || dtypeSize(t) == 0)
      return unsupported("element type {} is not supported", dtypeName(t));
  rt::MelWeightMatrixParams p{n.getInt("num_mel_bins", 1), n.getInt("dft_length", 1), rate, edge,
                              out};
  return KernelCall{
      Kernel::kMelWeightMatrix, out, p, {n.inputs[0], n.inputs[1], n.inputs[2]}, {n.outputs[0]}};
}

Lowered lowerGridSample(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const Shape& y = shapeOf(g, n.outputs[0]);
  const std::string mode = n.getString("mode", "bilinear");
  const std::string padding = n.getString("padding_mode", "zeros");
  rt::GridSampleParams p{};
  p.mode = mode == "nearest"   ? rt::GridSampleMode::kNearest
           : mode == "bicubic" ? rt::GridSampleMode::kBicubic
                               : rt::GridSampleMode::kBilinear;
  p.padding = padding == "border"       ? rt::GridSamplePadding::kBorder
              : padding == "reflection" ? rt::GridSamplePadding::kReflection
                                        : rt::GridSamplePadding::kZeros;
  p.align_corners = n.getInt("align_corners", 0) != 0;
  p.n = x[0];
  p.c = x[1];
  p.in_h = x[2];
  p.in_w = x[3];
  p.out_h = y[2];
  p.out_w = y[3];
  return KernelCall{
      Kernel::kGridSample, DType::kF32, p, {n.inputs[0], n.inputs[1]}, {n.outputs[0]}};
}

Lowered lowerRoiAlign(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  rt::RoiAlignParams p{};
  p.mode = n.getString("mode", "avg") == "max" ? rt::RoiPoolMode::kMax : rt::RoiPoolMode::kAvg;
  p.half_pixel = n.getInt("half_pixel", 1) != 0;
  p.n = x[0];
  p.c = x[1];
  p.h = x[2];
  p.w = x[3];
  p.num_rois = shapeOf(g, n.inputs[1])[0];
  p.out_h = n.getInt("output_height", 1);
  p.out_w = n.getInt("output_width", 1);
  p.sampling_ratio = n.getInt("sampling_ratio", 0);
  p.spatial_scale = static_cast<float>(n.getFloat("spatial_scale", 1.0));
  return KernelCall{
      Kernel::kRoiAlign, DType::kF32, p, {n.inputs[0], n.inputs[1], n.inputs[2]}, {n.outputs[0]}};
}

Lowered lowerRandom(const Graph& g, const Node& n) {
  const ir::TensorType& out = g.value(n.outputs[0]).type;
  const std::string distribution = n.getString("distribution", "uniform");
  rt::RandomParams p{};
  p.distribution = distribution == "normal"      ? rt::RandomDistribution::kNormal
                   : distribution == "bernoulli" ? rt::RandomDistribution::kBernoulli
                                                 : rt::RandomDistribution::kUniform;
  p.dtype = out.dtype;
  p.input_dtype = n.inputs.empty() ? DType::kUndefined : elementType(g, n.inputs[0]);
  p.count = out.numElements();
  p.a = n.getFloat("a", 0.0);
  p.b = n.getFloat("b", 1.0);
  p.seed = n.getInt("seed", 0);
  const int probabilities = n.inputs.empty() ? -1 : n.inputs[0];
  return KernelCall{Kernel::kRandom, out.dtype, p, {probabilities}, {n.outputs[0]}};
}

}  // namespace

void registerSignalLowerers(std::map<std::string, OpLowerer>& table) {
  table["DFT"] = lowerDft;
  table["STFT"] = lowerStft;
  table["MelWeightMatrix"] = lowerMelWeightMatrix;
  table["GridSample"] = lowerGridSample;
  table["RoiAlign"] = lowerRoiAlign;
  table["Random"] = lowerRandom;
}

}  // namespace cgc::lowering
