// The convolution strategies that conv (conv.cpp) picks from, each in a
// file of its own: depthwise (conv_depthwise.cpp), few input channels
// (conv_stem.cpp) and packed weights (conv_packed.cpp); Winograd is
// convWinograd (conv_support.h, winograd.cpp). Also the shape predicates
// that the choice and the strategies share, and the epilogue store of the
// kernels that run through PlanePhases.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cgc/kernels.h"
#include "conv_support.h"
#include "plane_phases.h"

namespace cgc::rt::detail {

/// Depthwise 2-D convolution: groups == c_in == c_out, unit depth.
inline bool isDepthwise2d(const ConvParams& p) {
  return p.groups == p.c_in && p.groups == p.c_out && p.k_d == 1 && p.d_in == 1 && p.d_out == 1;
}

/// Few input channels on a large image (stem layers: RGB in, depth 27 to
/// 147), where im2col copies as many floats as the GEMM then multiplies per
/// output and the packed kernel's tiles would run a handful of steps each.
/// Not for strides past 2 (Silero's STFT: stride 64, 8 outputs), whose
/// phases the direct loop would mostly compute and drop.
inline bool isFewChannels(const ConvParams& p) {
  constexpr int64_t kMaxChannels = 4, kMinPositions = 256;
  return p.groups == 1 && p.c_in <= kMaxChannels && p.k_d == 1 && p.d_in == 1 && p.d_out == 1 &&
         p.stride_h <= 2 && p.stride_w <= 2 && p.h_out * p.w_out >= kMinPositions;
}

/// Output channels the packed kernel computes: c_out rounded up to 16 (the
/// packed weights of the extra ones are zero and their results dropped).
inline int64_t packedChannels(const ConvParams& p) { return (p.c_out + 15) / 16 * 16; }

/// Stores PlanePhases' output rows `rows` into the plane `out` with the
/// epilogue: act(v + bias + residual) (a copy and then applyEpilogue per
/// plane cost more than the taps).
inline void storeWithEpilogue(const ConvParams& p, const PlanePhases& phases, const float* rows,
                              float bias, const float* residual, float* out, int64_t begin = 0,
                              int64_t end = -1) {
  const Bounds bounds = activationBounds(p);
  const float lo = bounds.low, hi = bounds.high;
  if (residual)
    phases.store(
        rows, out, [&](float v, int64_t i) { return std::clamp(v + bias + residual[i], lo, hi); },
        begin, end);
  else
    phases.store(
        rows, out, [&](float v, int64_t) { return std::clamp(v + bias, lo, hi); }, begin, end);
}

/// Depthwise 2-D convolution (isDepthwise2d), conv_depthwise.cpp.
void convDepthwise(const ConvParams& p, const float* x, const float* w, const float* bias,
                   const float* residual, float* y, const Team& team);

/// Direct convolution for few input channels (isFewChannels), with the
/// fused max pooling where p.pool_h_out > 0, conv_stem.cpp.
void convFewChannels(const ConvParams& p, const float* x, const float* w, const float* bias,
                     const float* residual, float* y, const Team& team);

/// Group 1 on weights stored by packConvWeights, conv_packed.cpp.
void convPacked(const ConvParams& p, const float* x, const float* w, const float* bias,
                const float* residual, float* y, const Team& team);

}  // namespace cgc::rt::detail
