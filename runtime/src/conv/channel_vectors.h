// A 2-D sliding window (depthwise convolution, max pooling) over small
// planes with 16 planes in the vector lanes.
//
// A block of 16 planes is transposed into [row][column][16] inside a padded
// buffer (16x16 in-register transposes), so every tap of every output is one
// aligned vector operation on whole vectors, 8 outputs of a row at a time;
// the [position][16] result is transposed back into the 16 planes. Plane by
// plane (plane_phases.h), the row-by-row copies and stride-phase scatters of
// a 7x7 to 28x28 plane cost more than its taps: MobileNetV2's depthwise
// layers take less time here (bench/micro/run.sh). Planes
// whose block would leave L2 take other kernels (conv.cpp, pool.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/simd.h"
#include "gemm/gemm_core.h"

namespace cgc::rt::detail {

/// Where a 2-D window reads: sizes, window, strides, dilations and the
/// padding before the first row and column.
struct Window2d {
  int64_t h_in, w_in, h_out, w_out;
  int64_t k_h, k_w, stride_h, stride_w, dilation_h, dilation_w;
  int64_t pad_top, pad_left;
};

class ChannelVectors {
 public:
  static constexpr int64_t kLanes = 16;  // planes in a block
  /// A register's share of a block's lanes (simd.h): the part-th of
  /// kParts, lanes part * simd::kLanes on.
  using Lanes = simd::Floats;
  static constexpr int kParts = simd::kPerBlock;

  explicit ChannelVectors(const Window2d& g) : g_(g) {
    padRows_ = (g.h_out - 1) * g.stride_h + (g.k_h - 1) * g.dilation_h + 1;
    padCols_ = (g.w_out - 1) * g.stride_w + (g.k_w - 1) * g.dilation_w + 1;
    // Outputs past a row's end are computed and dropped: slack for their reads.
    padded_ = padRows_ * padCols_ * kLanes + (kPositions * g.stride_w + 1) * kLanes;
  }

  /// Whether `planes` planes (in blocks of 16) are small enough: a block's
  /// buffers stay within 1 MiB, a core's L2. (MobileNetV2's stride-2 layer
  /// on 112x112 planes, 1016 KiB, takes less time here than in
  /// PlanePhases; the 1.6 MiB of its 112x112 stride-1 layer gain nothing.)
  bool fits(int64_t planes) const {
    constexpr int64_t kMaxFloats = 256 * 1024;
    return planes % kLanes == 0 && padded_ + g_.h_out * g_.w_out * kLanes <= kMaxFloats;
  }

  int64_t scratchSize() const { return padded_ + g_.h_out * g_.w_out * kLanes; }

  /// Sets the padding of the buffers in `scratch` (once per kernel call:
  /// blocks overwrite only the inside).
  void prepare(float padding, float* scratch) const { std::fill_n(scratch, padded_, padding); }

  /// For the 16 planes of x (inStride apart) into those of y (outStride
  /// apart), a register's part of the lanes at a time: op.start(part, out),
  /// then op(out, input, tap) for every tap t = kh * k_w + kw, where
  /// op.tap(t, part, tap) sets what the op needs of the tap (its weights,
  /// say) once per kPositions outputs, then op.finish(part, out).
  template <typename Op>
  void run(const float* x, int64_t inStride, const Op& op, float* y, int64_t outStride,
           float* scratch) const {
    const int64_t spatial = g_.h_out * g_.w_out;
    float* padded = scratch;
    float* out = padded + padded_;
    // Each input row is transposed straight into its padded row.
    const int64_t copied = std::min(g_.w_in, padCols_ - g_.pad_left);
    for (int64_t ih = 0; ih < g_.h_in && ih + g_.pad_top < padRows_ && copied > 0; ++ih)
      transpose(x + ih * g_.w_in, inStride, kLanes, copied,
                padded + ((ih + g_.pad_top) * padCols_ + g_.pad_left) * kLanes, kLanes);
    // At stride 2 the 17 shared inputs, 8 sums and 3 taps would spill.
    if (g_.k_w == 3 && g_.dilation_w == 1 && g_.stride_w == 1)
      sweep<3, 1>(padded, op, out);
    else
      sweep<0, 0>(padded, op, out);
    transpose(out, kLanes, spatial, kLanes, y, outStride);
  }

 private:
  // Outputs of a row at once: 8 sums, 10 inputs and 3 taps at 3 wide fit
  // AVX-512's 32 registers, 4 (13 in all) AVX2's 16.
  static constexpr int64_t kPositions = simd::kRegisters >= 32 ? 8 : 4;

  /// Every output of the padded block into out ([position][16]), kPositions
  /// of a row at a time. With the window's width kW and stride kStride
  /// fixed at compile time (0: g_'s at run time), the inputs a row of taps
  /// shares are loaded once: 10 loads for 24 FMAs at 3 wide, stride 1,
  /// instead of 24 (the loads, not the FMAs, bounded the kernel).
  template <int64_t kW, int64_t kStride, typename Op>
  void sweep(const float* padded, const Op& op, float* out) const {
    const int64_t kw = kW ? kW : g_.k_w, stride = kStride ? kStride : g_.stride_w;
    const int64_t dilation = kW ? 1 : g_.dilation_w;
    for (int64_t oh = 0; oh < g_.h_out; ++oh)
      for (int64_t ow0 = 0; ow0 < g_.w_out; ow0 += kPositions)
        for (int part = 0; part < kParts; ++part)
          sweepPart<kW, kStride>(padded, op, out, oh, ow0, part, kw, stride, dilation);
  }

  /// sweep's body: outputs [ow0, ow0 + kPositions) of row oh for the
  /// part-th register of the 16 lanes (one on AVX-512, two on AVX2).
  template <int64_t kW, int64_t kStride, typename Op>
  void sweepPart(const float* padded, const Op& op, float* out, int64_t oh, int64_t ow0, int part,
                 int64_t kw, int64_t stride, int64_t dilation) const {
    Lanes acc[kPositions];
    for (Lanes& v : acc) op.start(part, v);
    for (int64_t kh = 0; kh < g_.k_h; ++kh) {
      const float* row = padded + (oh * g_.stride_h + kh * g_.dilation_h) * padCols_ * kLanes +
                         ow0 * stride * kLanes + part * simd::kLanes;
      if constexpr (kW > 0) {
        constexpr int64_t kInputs = (kPositions - 1) * kStride + kW;
        Lanes in[kInputs], taps[kW];
        // Unrolled before the loop vectoriser sees it: otherwise the loads
        // became a copy loop into the stack (AVX2, half the kernel's time).
#pragma GCC unroll 16
        for (int64_t j = 0; j < kInputs; ++j) in[j] = simd::load(row + j * kLanes);
        for (int64_t t = 0; t < kW; ++t) op.tap(kh * kW + t, part, taps[t]);
        for (int64_t t = 0; t < kW; ++t)
          for (int64_t i = 0; i < kPositions; ++i) op(acc[i], in[i * kStride + t], taps[t]);
      } else {
        for (int64_t t = 0; t < kw; ++t) {
          Lanes tap;
          op.tap(kh * kw + t, part, tap);
          for (int64_t i = 0; i < kPositions; ++i) {
            op(acc[i], simd::load(row + (i * stride + t * dilation) * kLanes), tap);
          }
        }
      }
    }
    for (Lanes& v : acc) op.finish(part, v);
    const int64_t count = std::min(kPositions, g_.w_out - ow0);
    for (int64_t i = 0; i < count; ++i)
      simd::store(out + (oh * g_.w_out + ow0 + i) * kLanes + part * simd::kLanes, acc[i]);
  }

  Window2d g_;
  int64_t padRows_, padCols_, padded_;
};

}  // namespace cgc::rt::detail
