// Importers for the signal, sampling and random ops: DFT, STFT,
// MelWeightMatrix, GridSample, RoiAlign, RandomUniform(Like),
// RandomNormal(Like) and Bernoulli. Inputs that decide the output's shape
// (DFT's dft_length, STFT's frame_step and frame_length, MelWeightMatrix's
// num_mel_bins and dft_length) must be constants; the others stay tensors.
//
// Random ops are deterministic: the seed is the `seed` attribute, or, when
// the model gives none, a fixed default derived from the node's name (FNV-1a
// of the name), so two unseeded nodes differ and every compile of the model
// gives the same values (cgc/kernels/random.h).
#include "cgc/kernels.h"
#include "onnx_frontend/op_import.h"

namespace cgc::frontend {
namespace {

using ir::Shape;

int64_t constantScalar(const OpContext& ctx, size_t i, const char* role) {
  const auto values = ctx.constantInts(i, role);
  if (values.size() != 1) ctx.fail(fmt::format("{} must hold one value", role));
  return values[0];
}

void requireFloat32Or64(const OpContext& ctx, size_t i) {
  if (ctx.inputType(i) != DType::kF32 && ctx.inputType(i) != DType::kF64)
    ctx.fail(fmt::format("element type {} is not supported (float32 or float64)",
                         dtypeName(ctx.inputType(i))));
}

void importDft(OpContext& ctx) {
  ctx.requireInputs(1, 2);
  requireFloat32Or64(ctx, 0);
  Shape out = ctx.inputShape(0);
  const int64_t rank = static_cast<int64_t>(out.size());
  if (rank < 3 || (out.back() != 1 && out.back() != 2))
    ctx.fail("needs an input [batch, ..., 1 or 2] of rank >= 3");
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 1 || axis > rank - 2) ctx.fail(fmt::format("axis {} is not a signal axis", axis));
  const bool onesided = ctx.attrInt("onesided", 0) != 0, inverse = ctx.attrInt("inverse", 0) != 0;
  if (onesided && inverse) ctx.fail("an inverse onesided DFT is not supported");
  const int64_t n = ctx.hasInput(1) ? constantScalar(ctx, 1, "dft_length") : out[axis];
  if (n < 1) ctx.fail("dft_length must be positive");
  out[axis] = onesided ? n / 2 + 1 : n;
  out.back() = 2;
  ctx.emit("DFT", {ctx.inputs[0]}, {{ctx.inputType(0), out}},
           {{"axis", axis}, {"n", n}, {"inverse", int64_t{inverse}}});
}

void importStft(OpContext& ctx) {
  ctx.requireInputs(2, 4);
  requireFloat32Or64(ctx, 0);
  const Shape& signal = ctx.inputShape(0);
  if (signal.size() != 3 || (signal[2] != 1 && signal[2] != 2))
    ctx.fail("signal must be [batch, length, 1 or 2]");
  const int64_t step = constantScalar(ctx, 1, "frame_step");
  int64_t frameLength = -1;
  std::vector<int> inputs = {ctx.inputs[0]};
  if (ctx.hasInput(2)) {
    if (ctx.inputShape(2).size() != 1 || ctx.inputType(2) != ctx.inputType(0))
      ctx.fail("window must be 1-D of the signal's type");
    frameLength = ctx.inputShape(2)[0];
    inputs.push_back(ctx.inputs[2]);
  }
  if (ctx.hasInput(3)) {
    const int64_t given = constantScalar(ctx, 3, "frame_length");
    if (frameLength >= 0 && given != frameLength)
      ctx.fail("frame_length differs from the window's length");
    frameLength = given;
  }
  if (frameLength < 1 || step < 1 || frameLength > signal[1])
    ctx.fail("needs a positive frame_step and a frame length in [1, signal length]");
  const int64_t frames = (signal[1] - frameLength) / step + 1;
  const int64_t bins = ctx.attrInt("onesided", 1) ? frameLength / 2 + 1 : frameLength;
  ctx.emit("STFT", inputs, {{ctx.inputType(0), {signal[0], frames, bins, 2}}},
           {{"frame_length", frameLength}, {"step", step}});
}

void importMelWeightMatrix(OpContext& ctx) {
  ctx.requireInputs(5, 5);
  const int64_t mels = constantScalar(ctx, 0, "num_mel_bins");
  const int64_t dftLength = constantScalar(ctx, 1, "dft_length");
  if (mels < 1 || dftLength < 1) ctx.fail("num_mel_bins and dft_length must be positive");
  for (size_t i = 2; i < 5; ++i)
    if (ctx.input(i).type.numElements() != 1) ctx.fail(fmt::format("input {} must be a scalar", i));
  if (ctx.inputType(3) != ctx.inputType(4)) ctx.fail("the edge frequencies differ in type");
  const auto type = static_cast<DType>(ctx.attrInt("output_datatype", 1));
  if (dtypeSize(type) == 0) ctx.fail("output_datatype is not supported");
  ctx.emit("MelWeightMatrix", {ctx.inputs[2], ctx.inputs[3], ctx.inputs[4]},
           {{type, {dftLength / 2 + 1, mels}}},
           {{"num_mel_bins", mels}, {"dft_length", dftLength}});
}

void importGridSample(OpContext& ctx) {
  ctx.requireInputs(2, 2);
  const Shape& x = ctx.inputShape(0);
  const Shape& grid = ctx.inputShape(1);
  if (ctx.inputType(0) != DType::kF32 || ctx.inputType(1) != DType::kF32)
    ctx.fail("X and grid must be float32");
  if (x.size() != 4 || grid.size() != 4 || grid[0] != x[0] || grid[3] != 2)
    ctx.fail(fmt::format("X {} and grid {} are not [N, C, H, W] and [N, H_out, W_out, 2]",
                         ir::shapeString(x), ir::shapeString(grid)));
  const std::string mode = ctx.attrString("mode", "bilinear");
  const std::string padding = ctx.attrString("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    ctx.fail(fmt::format("unknown mode '{}'", mode));
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    ctx.fail(fmt::format("unknown padding_mode '{}'", padding));
  ctx.emit("GridSample", {ctx.inputs[0], ctx.inputs[1]},
           {{DType::kF32, {x[0], x[1], grid[1], grid[2]}}},
           {{"mode", mode},
            {"padding_mode", padding},
            {"align_corners", ctx.attrInt("align_corners", 0)}});
}

void importRoiAlign(OpContext& ctx) {
  ctx.requireInputs(3, 3);
  const Shape& x = ctx.inputShape(0);
  if (ctx.inputType(0) != DType::kF32 || ctx.inputType(1) != DType::kF32)
    ctx.fail("X and rois must be float32");
  if (x.size() != 4) ctx.fail("X must be [N, C, H, W]");
  const Shape& rois = ctx.inputShape(1);
  if (rois.size() != 2 || rois[1] != 4) ctx.fail("rois must be [num_rois, 4]");
  if (ctx.inputType(2) != DType::kI64 || ctx.inputShape(2) != Shape{rois[0]})
    ctx.fail(fmt::format("batch_indices must be int64[{}]", rois[0]));
  const std::string mode = ctx.attrString("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail(fmt::format("unknown mode '{}'", mode));
  const std::string coordinates = ctx.attrString(
      "coordinate_transformation_mode", ctx.opset < 16 ? "output_half_pixel" : "half_pixel");
  if (coordinates != "half_pixel" && coordinates != "output_half_pixel")
    ctx.fail(fmt::format("unknown coordinate_transformation_mode '{}'", coordinates));
  const int64_t h = ctx.attrInt("output_height", 1), w = ctx.attrInt("output_width", 1);
  const int64_t ratio = ctx.attrInt("sampling_ratio", 0);
  if (h < 1 || w < 1 || ratio < 0 || ratio > 1 << 16)
    ctx.fail("output sizes must be positive and sampling_ratio in [0, 65536]");
  ctx.emit("RoiAlign", ctx.inputs, {{DType::kF32, {rois[0], x[1], h, w}}},
           {{"mode", mode},
            {"half_pixel", int64_t{coordinates == "half_pixel"}},
            {"output_height", h},
            {"output_width", w},
            {"sampling_ratio", ratio},
            {"spatial_scale", double{ctx.attrFloat("spatial_scale", 1.0f)}}});
}

/// The seed attribute's seed, or the default from the node's name.
int64_t seedOf(const OpContext& ctx) {
  if (ctx.hasAttr("seed")) return rt::random_seed(ctx.attrFloat("seed", 0.f));
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : ctx.nodeName) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h >> 1);
}

/// RandomUniform, RandomNormal and their Like forms (the input gives only
/// its shape and, by default, its type), and Bernoulli.
void importRandom(OpContext& ctx) {
  const std::string& op = ctx.proto.op_type();
  const bool like = op == "RandomUniformLike" || op == "RandomNormalLike" || op == "Bernoulli";
  ctx.requireInputs(like ? 1 : 0, like ? 1 : 0);
  ir::TensorType out;
  if (like) {
    out = {ctx.hasAttr("dtype") ? static_cast<DType>(ctx.attrInt("dtype", 1)) : ctx.inputType(0),
           ctx.inputShape(0)};
  } else {
    out = {static_cast<DType>(ctx.attrInt("dtype", 1)), ctx.attrInts("shape")};
    if (!ctx.hasAttr("shape")) ctx.fail("the shape attribute is required");
  }
  for (int64_t d : out.shape)
    if (d < 0) ctx.fail("shape has a negative dimension");
  if (dtypeSize(out.dtype) == 0) ctx.fail("dtype is not supported");
  std::map<std::string, ir::Attribute> attrs = {{"seed", seedOf(ctx)}};
  std::vector<int> inputs;
  if (op == "Bernoulli") {
    requireFloat32Or64(ctx, 0);
    attrs["distribution"] = std::string("bernoulli");
    inputs.push_back(ctx.inputs[0]);
  } else if (op == "RandomUniform" || op == "RandomUniformLike") {
    attrs["distribution"] = std::string("uniform");
    attrs["a"] = double{ctx.attrFloat("low", 0.f)};
    attrs["b"] = double{ctx.attrFloat("high", 1.f)};
  } else {
    attrs["distribution"] = std::string("normal");
    attrs["a"] = double{ctx.attrFloat("mean", 0.f)};
    attrs["b"] = double{ctx.attrFloat("scale", 1.f)};
  }
  ctx.emit("Random", inputs, {out}, attrs);
}

}  // namespace

void registerSignalOps(std::map<std::string, OpImporter>& table) {
  table["DFT"] = importDft;
  table["STFT"] = importStft;
  table["MelWeightMatrix"] = importMelWeightMatrix;
  table["GridSample"] = importGridSample;
  table["RoiAlign"] = importRoiAlign;
  for (const char* op :
       {"RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", "Bernoulli"})
    table[op] = importRandom;
}

}  // namespace cgc::frontend
