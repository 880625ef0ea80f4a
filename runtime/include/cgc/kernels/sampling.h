// Sampling kernels: GridSample (PyTorch's grid_sampler arithmetic, which the
// ONNX test data comes from) and RoiAlign (ONNX Runtime's arithmetic, the
// ONNX reference's). Both read coordinates from the model's data and never
// read outside the input: samples outside it take the padding rule.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

CGC_ENUM(GridSampleMode, kBilinear, kNearest, kBicubic)
CGC_ENUM(GridSamplePadding, kZeros, kBorder, kReflection)

/// GridSample of x [n, c, in_h, in_w] at grid [n, out_h, out_w, 2] (x then
/// y, normalised to [-1, 1]) into y [n, c, out_h, out_w].
struct GridSampleParams {
  GridSampleMode mode;
  GridSamplePadding padding;
  bool align_corners;
  int64_t n, c, in_h, in_w, out_h, out_w;
  CGC_REFLECT(GridSampleParams, mode, padding, align_corners, n, c, in_h, in_w, out_h, out_w)
};

void grid_sample(const GridSampleParams& p, const float* x, const float* grid, float* y);

CGC_ENUM(RoiPoolMode, kAvg, kMax)

/// RoiAlign of x [n, c, h, w] over rois [num_rois, 4] (x1, y1, x2, y2)
/// with batch_indices [num_rois] into y [num_rois, c, out_h, out_w].
/// half_pixel shifts the scaled ROI by -0.5 (opset 16's default); without
/// it, ROIs are at least 1x1 (opset 10). sampling_ratio 0: adaptive. A batch
/// index outside [0, n) fails with kIndexOutOfRange (its output is zeros).
struct RoiAlignParams {
  RoiPoolMode mode;
  bool half_pixel;
  int64_t n, c, h, w, num_rois, out_h, out_w, sampling_ratio;
  float spatial_scale;
  CGC_REFLECT(RoiAlignParams, mode, half_pixel, n, c, h, w, num_rois, out_h, out_w, sampling_ratio,
              spatial_scale)
};

Status roi_align(const RoiAlignParams& p, const float* x, const float* rois,
                 const int64_t* batch_indices, float* y);

}  // namespace cgc::rt
