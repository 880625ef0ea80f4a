// Depthwise 2-D convolution (groups == c_in == c_out), one of conv's
// strategies (conv.cpp): a GEMM of depth k_h * k_w would waste the GEMM
// micro-kernel, so every channel's window runs directly, on one of three
// kernels that convDepthwise picks by shape:
//  - 3x3 windows at stride 1 or 2 (AVX-512 only), in rows of 12 to 15
//    outputs, wider rows at stride 2, or on planes too large for channel
//    vectors: 16 outputs of a row in registers straight from NCHW, the
//    stores masked in rows under 16 (row_blocks.h), no copy of the input;
//  - planes up to L2's size: 16 channels per vector (channel_vectors.h),
//    every tap one vector operation on whole vectors;
//  - otherwise a direct loop per channel over the plane's stride phases
//    (plane_phases.h), each block of outputs through every tap while its
//    sums stay in registers.
// The epilogue (bias, residual, activation) is applied before the store,
// but for channel vectors with a residual, which apply it on the planes
// after.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "cgc/kernels.h"
#include "channel_vectors.h"
#include "conv_strategies.h"
#include "conv_support.h"
#include "gemm_core.h"
#include "plane_phases.h"
#include "row_blocks.h"
#include "scratch.h"
#include "simd.h"

namespace cgc::rt {
namespace {

using detail::activationBounds;
using detail::Bounds;
using detail::epilogueOf;
using detail::isDepthwise2d;
using detail::scratch;
using detail::storeWithEpilogue;

detail::Window2d windowOf(const ConvParams& p) {
  return {p.h_in,     p.w_in,     p.h_out,      p.w_out,      p.k_h,     p.k_w,
          p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.pad_top, p.pad_left};
}

/// ChannelVectors' op for depthwise convolution: sum = bias, sum += w[tap]
/// * in, then the activation (a residual is added after, on the planes).
struct MultiplyAdd {
  using Lanes = detail::ChannelVectors::Lanes;
  const float* weights;  // [tap][16 channels]
  float bias[detail::ChannelVectors::kLanes];
  Lanes low, high;
  void start(int part, Lanes& sum) const {
    std::memcpy(&sum, bias + part * simd::kLanes, sizeof sum);
  }
  void tap(int64_t t, int part, Lanes& w) const {
    std::memcpy(&w, weights + t * detail::ChannelVectors::kLanes + part * simd::kLanes, sizeof w);
  }
  void operator()(Lanes& sum, const Lanes& in, const Lanes& w) const { sum += w * in; }
  void finish(int, Lanes& sum) const {  // std::clamp, lane by lane
    sum = sum < low ? low : sum;
    sum = high < sum ? high : sum;
  }
};

/// Depthwise convolution on blocks of 16 channels in the vector lanes
/// (channel_vectors.h), the epilogue fused unless there is a residual.
void depthwiseVectors(const detail::ChannelVectors& vectors, const ConvParams& p, const float* x,
                      const float* w, const float* bias, const float* residual, float* y,
                      const Team& team) {
  constexpr int64_t kLanes = detail::ChannelVectors::kLanes;
  using Lanes = MultiplyAdd::Lanes;
  const int64_t taps = p.k_h * p.k_w;
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  float* buffer = scratch(vectors.scratchSize() + taps * kLanes);
  float* weights = buffer + vectors.scratchSize();
  vectors.prepare(0.0f, buffer);
  const float inf = std::numeric_limits<float>::infinity();
  const bool fused = residual == nullptr;
  const Bounds bounds = fused ? activationBounds(p) : Bounds{-inf, inf};
  MultiplyAdd op{weights, {}, bounds.low - Lanes{}, bounds.high - Lanes{}};
  const int64_t blocks = p.c_out / kLanes;
  const Range work = team.split(p.n * blocks);
  for (int64_t item = work.begin; item < work.end; ++item) {
    const int64_t n = item / blocks, c0 = item % blocks * kLanes;
    detail::transpose(w + c0 * taps, taps, kLanes, taps, weights, kLanes);
    if (fused && bias) std::memcpy(&op.bias, bias + c0, sizeof op.bias);
    float* yb = y + (n * p.c_out + c0) * spatial;
    vectors.run(x + (n * p.c_out + c0) * inSpatial, inSpatial, op, yb, spatial, buffer);
    if (!fused)
      detail::applyEpilogue(epilogueOf(p, bias, residual, n, 0).at(c0, 0), kLanes, spatial, yb,
                            spatial);
  }
}

/// One channel plane per work item, split over the team; each plane goes
/// through PlanePhases, and each block of outputs through every tap while
/// its sums stay in registers.
void depthwise(const ConvParams& p, const float* x, const float* w, const float* bias,
               const float* residual, float* y, const Team& team) {
  using detail::PlanePhases;
  const PlanePhases phases(p.h_in, p.w_in, p.h_out, p.w_out, p.k_h, p.k_w, p.stride_h, p.stride_w,
                           p.dilation_h, p.dilation_w, p.pad_top, p.pad_left);
  using Lanes = simd::Floats;
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  float* buffer = scratch(phases.scratchSize());
  float* acc = phases.outputs(buffer);
  const std::vector<int64_t>& taps = phases.tapOffsets();
  const Range planes = team.split(p.n * p.c_out);
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    const int64_t c = plane % p.c_out;
    phases.fill(x + plane * inSpatial, 0.0f, buffer);
    const float* wc = w + c * p.k_h * p.k_w;
    const float b = bias ? bias[c] : 0.0f;
    // Each sum is a chain of dependent FMAs, one per tap: two blocks at a
    // time keep 8 chains in flight, enough to cover the FMA latency, where
    // the registers hold them (simd.h); one block of 8 registers on AVX2.
    auto block = [&]<int kVectors>(int64_t j) {
      Lanes sum[kVectors];
      for (Lanes& v : sum) v = b - Lanes{};
      for (size_t t = 0; t < taps.size(); ++t) {
        const float* src = buffer + taps[t] + j;
        const float wv = wc[t];
        for (int v = 0; v < kVectors; ++v) {
          Lanes in;
          std::memcpy(&in, src + v * simd::kLanes, sizeof in);
          sum[v] += wv * in;
        }
      }
      std::memcpy(acc + j, sum, sizeof sum);
    };
    constexpr int64_t kSlack = PlanePhases::kSlack;  // floats of a block
    constexpr int64_t kWide =
        2 * kSlack / simd::kLanes <= simd::kRegisters / 2 ? 2 * kSlack : kSlack;
    int64_t j = 0;
    for (; j + kWide <= phases.length(); j += kWide)
      block.template operator()<kWide / simd::kLanes>(j);
    for (; j < phases.length(); j += kSlack) block.template operator()<kSlack / simd::kLanes>(j);
    storeWithEpilogue(p, phases, acc, 0.0f, residual ? residual + plane * spatial : nullptr,
                      y + plane * spatial);
  }
}

#ifdef __AVX512F__
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at -O3 (a false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// Whether depthwiseRows takes p: 3x3 windows, stride 1 or 2 in both axes,
/// no dilation.
bool takesDepthwiseRows(const ConvParams& p) {
  return isDepthwise2d(p) && p.k_h == 3 && p.k_w == 3 && p.stride_h == p.stride_w &&
         (p.stride_w == 1 || p.stride_w == 2) && p.dilation_h == 1 && p.dilation_w == 1;
}

/// Whether depthwiseRows beats channel vectors (which fit or not): rows of
/// 12 to 15 outputs, one block each with at most 4 lanes idle (MobileNetV2's
/// 14x14 layers: 1.4-1.5x faster at stride 1, 1.6x at stride 2); wider
/// rows at stride 2 (1.2-1.3x on its 112x112 and 56x56 layers), where
/// channel vectors transpose four inputs in for every output; and wherever
/// channel vectors do not fit (1.3x faster than PlanePhases at 112x112).
/// Rows of 7 (half the lanes idle) ran 1.1-1.6x slower, wide rows at stride
/// 1 within 5% either way.
bool prefersDepthwiseRows(const ConvParams& p, bool vectorsFit) {
  constexpr int64_t kMinRow = 12;
  if (!takesDepthwiseRows(p)) return false;
  if (!vectorsFit) return true;
  return p.w_out >= kMinRow && (p.w_out < 16 || p.stride_w == 2);
}

/// Depthwise 3x3 convolution straight from the NCHW planes, 16 outputs of a
/// row at a time in registers (row_blocks.h): per input row, the 18 (stride 1) or 33
/// (stride 2) columns under them are two or three loads, the three taps'
/// columns come out of them by align and permute instructions, and the
/// epilogue runs before the one store. No copy of the input: channel
/// vectors transpose four inputs in for every output at stride 2, and
/// PlanePhases copies every plane into its phases first.
template <int kStride>
void depthwiseRows(const ConvParams& p, const float* x, const float* w, const float* bias,
                   const float* residual, float* y, const Team& team) {
  const __m512 zero = _mm512_setzero_ps();
  const Bounds bounds = activationBounds(p);
  const __m512 lo = _mm512_set1_ps(bounds.low), hi = _mm512_set1_ps(bounds.high);
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  const std::vector<detail::RowBlock> blocks =
      detail::rowBlocks(p.w_out, p.w_in, kStride, p.pad_left);
  const Range planes = team.split(p.n * p.c_out);
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    const int64_t c = plane % p.c_out;
    const float* in = x + plane * inSpatial;
    __m512 taps[9];
    for (int t = 0; t < 9; ++t) taps[t] = _mm512_set1_ps(w[c * 9 + t]);
    const __m512 b = _mm512_set1_ps(bias ? bias[c] : 0.0f);
    for (int64_t oh = 0; oh < p.h_out; ++oh) {
      float* out = y + plane * spatial + oh * p.w_out;
      const float* res = residual ? residual + plane * spatial + oh * p.w_out : nullptr;
      for (const detail::RowBlock& block : blocks) {
        const int64_t ow = block.ow, first = block.first;
        __m512 sum[3] = {b, zero, zero};  // one chain per kernel row
        for (int kh = 0; kh < 3; ++kh) {
          const int64_t ih = oh * kStride - p.pad_top + kh;
          if (ih < 0 || ih >= p.h_in) continue;
          const float* row = in + ih * p.w_in;
          const __m512 v0 = _mm512_maskz_loadu_ps(block.lanes[0], row + first);
          const __m512 v1 = _mm512_maskz_loadu_ps(block.lanes[1], row + first + 16);
          __m512 t0, t1, t2;
          if constexpr (kStride == 1) {
            t0 = v0;
            t1 = _mm512_castsi512_ps(
                _mm512_alignr_epi32(_mm512_castps_si512(v1), _mm512_castps_si512(v0), 1));
            t2 = _mm512_castsi512_ps(
                _mm512_alignr_epi32(_mm512_castps_si512(v1), _mm512_castps_si512(v0), 2));
          } else {
            const __m512 v2 = _mm512_maskz_loadu_ps(block.lanes[2], row + first + 32);
            detail::strideTwoTaps(v0, v1, v2, t0, t1, t2);
          }
          sum[kh] = _mm512_fmadd_ps(taps[kh * 3], t0, sum[kh]);
          sum[kh] = _mm512_fmadd_ps(taps[kh * 3 + 1], t1, sum[kh]);
          sum[kh] = _mm512_fmadd_ps(taps[kh * 3 + 2], t2, sum[kh]);
        }
        __m512 v = _mm512_add_ps(_mm512_add_ps(sum[0], sum[1]), sum[2]);
        if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(block.outputs, res + ow));
        _mm512_mask_storeu_ps(out + ow, block.outputs, _mm512_min_ps(hi, _mm512_max_ps(lo, v)));
      }
    }
  }
}
#pragma GCC diagnostic pop
#endif

}  // namespace

namespace detail {

/// Picks the depthwise kernel: the row kernel where prefersDepthwiseRows
/// (AVX-512), else channel vectors where a block of 16 planes fits them
/// (and, without AVX-512, at stride 2), else PlanePhases.
void convDepthwise(const ConvParams& p, const float* x, const float* w, const float* bias,
                   const float* residual, float* y, const Team& team) {
  const detail::ChannelVectors vectors(windowOf(p));
#ifdef __AVX512F__
  if (prefersDepthwiseRows(p, vectors.fits(p.c_out))) {
    if (p.stride_w == 1)
      depthwiseRows<1>(p, x, w, bias, residual, y, team);
    else
      depthwiseRows<2>(p, x, w, bias, residual, y, team);
    return;
  }
  const bool vectorsWin = vectors.fits(p.c_out);
#else
  // Without AVX-512 (no row kernel, registers of 8), channel vectors win
  // only at stride 2: on a Zen 3 core MobileNetV2's layers ran 1.5-2.4x
  // faster through PlanePhases at stride 1, 1.3x slower at stride 2.
  const bool vectorsWin = vectors.fits(p.c_out) && p.stride_w > 1;
#endif
  if (vectorsWin)
    depthwiseVectors(vectors, p, x, w, bias, residual, y, team);
  else
    depthwise(p, x, w, bias, residual, y, team);
}

}  // namespace detail
}  // namespace cgc::rt
