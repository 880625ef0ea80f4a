// What the convolution kernels share (conv.cpp, winograd.cpp): the fused
// activation as bounds, the GEMM epilogue of a convolution, and the
// zero-padded copy of the input that the packed and Winograd kernels read.
#pragma once

#include <algorithm>
#include <limits>

#include "core/isa.h"

#if CGC_ISA_SKX
#include <immintrin.h>
#endif

#include "cgc/kernels.h"
#include "gemm/gemm_core.h"
#include "gemm/row_blocks.h"

namespace cgc::rt::detail {

/// The fused activation as the bounds of a clamp: [0, inf) for Relu,
/// [act_min, act_max] for Clip, none otherwise.
struct Bounds {
  float low, high;
};

inline Bounds activationBounds(const ConvParams& p) {
  const float inf = std::numeric_limits<float>::infinity();
  switch (p.activation) {
    case Activation::kRelu:
      return {0.0f, inf};
    case Activation::kClip:
      return {p.act_min, p.act_max};
    default:
      return {-inf, inf};
  }
}

/// The epilogue of group g of image n (its output channels are rows of the
/// block).
inline Epilogue epilogueOf(const ConvParams& p, const float* bias, const float* residual, int64_t n,
                           int64_t g) {
  const int64_t coutG = p.c_out / p.groups;
  const int64_t spatial = p.d_out * p.h_out * p.w_out;
  Epilogue e;
  e.activation = p.activation;
  e.act_min = p.act_min;
  e.act_max = p.act_max;
  if (bias) e.row_bias = bias + g * coutG;
  if (residual) {
    e.residual = residual + (n * p.c_out + g * coutG) * spatial;
    e.ld_residual = spatial;
  }
  return e;
}

/// out[0, w) = 0 but out[lo, hi) = src[0, hi - lo): one masked load and
/// store per 16 floats. Per-row memmove and memset calls on 16- to
/// 58-float rows cost more than the copy (4-6% of a 3x3 layer).
inline void padRow(const float* src, int64_t lo, int64_t hi, int64_t w, float* out) {
#if CGC_ISA_SKX
  for (int64_t c0 = 0; c0 < w; c0 += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(lanesInside(c0 - lo, hi - lo), src + (c0 - lo));
    _mm512_mask_storeu_ps(out + c0, lanesInside(c0, w), v);
  }
#else
  std::fill(out, out + lo, 0.0f);
  std::copy(src, src + (hi - lo), out + lo);
  std::fill(out + hi, out + w, 0.0f);
#endif
}

/// Copies x's planes into zero-padded volumes of d x h x w, the extents
/// the windows of p read (padding included): only the planes in `planes`
/// and the rows in `rows` of each (rows count over depth and height). A
/// plane is a channel, or a block of them where x is channel-blocked: its
/// elements are then vectors of `lanes` channels. With `toBlocked`, x is
/// NCHW, a plane is a block of kChannelBlock of its channels, and the copy
/// is channel-blocked.
inline void padInput(const ConvParams& p, const float* x, int64_t d, int64_t h, int64_t w,
                     Range planes, Range rows, int64_t lanes, float* padded,
                     bool toBlocked = false) {
  const int64_t lo = std::min(w, p.pad_left), hi = std::max(lo, std::min(w, p.pad_left + p.w_in));
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  for (int64_t c = planes.begin; c < planes.end; ++c)
    for (int64_t r = rows.begin; r < rows.end; ++r) {
      const int64_t id = r / h - p.pad_front, ih = r % h - p.pad_top;
      const bool inside = id >= 0 && id < p.d_in && ih >= 0 && ih < p.h_in;
      const int64_t first = (id * p.h_in + ih) * p.w_in + (lo - p.pad_left);
      if (!toBlocked) {
        padRow(x + (c * inSpatial + first) * lanes, lo * lanes, (inside ? hi : lo) * lanes,
               w * lanes, padded + (c * d * h + r) * w * lanes);
        continue;
      }
      // The last block of a c_in that is not a multiple of it gets zero
      // lanes past c_in (Winograd pads its transforms, not the tensor).
      const int64_t channels = std::min(kChannelBlock, p.c_in - c * kChannelBlock);
      float* out = padded + (c * d * h + r) * w * kChannelBlock;
      const bool partial = channels < kChannelBlock;
      std::fill(out, out + (inside && !partial ? lo : w) * kChannelBlock, 0.0f);
      if (!inside) continue;
      std::fill(out + hi * kChannelBlock, out + w * kChannelBlock, 0.0f);
      transpose(x + c * kChannelBlock * inSpatial + first, inSpatial, channels, hi - lo,
                out + lo * kChannelBlock, kChannelBlock);
    }
}

}  // namespace cgc::rt::detail
