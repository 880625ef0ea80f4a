// Depthwise 2-D convolution (groups == c_in == c_out): a GEMM of depth
// k_h * k_w would waste the GEMM micro-kernel, so every channel's window
// runs directly, on one of three of conv's variants (conv_variants.def):
//  - DepthwiseRows: 3x3 windows at stride 1 or 2 (AVX-512 only), in rows
//    of 9 outputs or more, or on planes too large for channel vectors:
//    blocks of 16 outputs of 4 rows in registers straight from NCHW, the
//    stores masked in rows under 16 (row_blocks.h), no copy of the input;
//  - DepthwiseVectors: planes up to L2's size, 16 channels per vector
//    (channel_vectors.h), every tap one vector operation on whole vectors;
//  - DepthwisePlanes: a direct loop per channel over the plane's stride
//    phases (plane_phases.h), each block of outputs through every tap
//    while its sums stay in registers.
// The epilogue (bias, residual, activation) is applied before the store,
// but for channel vectors with a residual, which apply it on the planes
// after.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "cgc/isa_tiers.h"
#include "cgc/kernels.h"
#include "conv/channel_vectors.h"
#include "conv/conv_strategies.h"
#include "conv/conv_support.h"
#include "conv/plane_phases.h"
#include "core/diagnostics.h"
#include "core/isa.h"
#include "core/scratch.h"
#include "core/simd.h"
#include "gemm/gemm_core.h"
#include "gemm/row_blocks.h"

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
  void start(int part, Lanes& sum) const { sum = simd::load(bias + part * simd::kLanes); }
  void tap(int64_t t, int part, Lanes& w) const {
    w = simd::load(weights + t * detail::ChannelVectors::kLanes + part * simd::kLanes);
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
        for (int v = 0; v < kVectors; ++v) sum[v] += wv * simd::load(src + v * simd::kLanes);
      }
      for (int v = 0; v < kVectors; ++v) simd::store(acc + j + v * simd::kLanes, sum[v]);
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

#if CGC_ISA_SKX
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at -O3 (a false positive).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED
/// Whether depthwiseRows takes p: 3x3 windows, stride 1 or 2 in both axes,
/// no dilation.
bool takesDepthwiseRows(const ConvParams& p) {
  return isDepthwise2d(p) && p.k_h == 3 && p.k_w == 3 && p.stride_h == p.stride_w &&
         (p.stride_w == 1 || p.stride_w == 2) && p.dilation_h == 1 && p.dilation_w == 1;
}

/// Whether depthwiseRows beats channel vectors (which fit or not): rows of
/// 9 outputs or more, and wherever channel vectors do not fit (faster than
/// PlanePhases at 112x112). Since it computes 4 rows at a time it beats
/// channel vectors on MobileNetV2's 56x56, 28x28 and 14x14 planes at stride
/// 1, ties on 7x7 ones and loses on 8x8 ones (bench/micro/run.sh;
/// bench/history/2026-11-code-comment-measurements.md).
bool prefersDepthwiseRows(const ConvParams& p, bool vectorsFit) {
  constexpr int64_t kMinRow = 9;
  return takesDepthwiseRows(p) && (!vectorsFit || p.w_out >= kMinRow);
}

/// One plane's part of depthwiseRows.
struct RowPlane {
  const float* in;
  float* out;
  const float* residual;  // or null
  __m512 taps[9], bias, lo, hi;
  int64_t hIn, wIn, wOut, padTop;
};

/// R output rows from oh on, one block of 16 columns: each of the input
/// rows under them is loaded once (rows outside the image are zeros) and
/// its three taps' columns made once (align or permute instructions) for
/// every output row it feeds; each output row keeps one chain of sums per
/// kernel row, added (bias + row 0 + row 1) + row 2 before the epilogue.
template <int kStride, int R>
[[gnu::always_inline]] inline void rowGroup(const RowPlane& j, const detail::RowBlock& b,
                                            int64_t oh) {
  constexpr int kRows = (R - 1) * kStride + 3;
  __m512 sum[R][3];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) sum[r][0] = j.bias, sum[r][1] = sum[r][2] = _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int i = 0; i < kRows; ++i) {
    const int64_t ih = oh * kStride - j.padTop + i;
    const bool inside = ih >= 0 && ih < j.hIn;
    const float* row = j.in + (inside ? ih : 0) * j.wIn + b.first;
    const __m512 v0 = _mm512_maskz_loadu_ps(inside ? b.lanes[0] : 0, row);
    const __m512 v1 = _mm512_maskz_loadu_ps(inside ? b.lanes[1] : 0, row + 16);
    __m512 t[3];
    if constexpr (kStride == 1) {
      t[0] = v0;
      t[1] = _mm512_castsi512_ps(
          _mm512_alignr_epi32(_mm512_castps_si512(v1), _mm512_castps_si512(v0), 1));
      t[2] = _mm512_castsi512_ps(
          _mm512_alignr_epi32(_mm512_castps_si512(v1), _mm512_castps_si512(v0), 2));
    } else {
      const __m512 v2 = _mm512_maskz_loadu_ps(inside ? b.lanes[2] : 0, row + 32);
      detail::strideTwoTaps(v0, v1, v2, t[0], t[1], t[2]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const int kh = i - r * kStride;
      if (kh < 0 || kh > 2) continue;
      for (int kw = 0; kw < 3; ++kw)
        sum[r][kh] = _mm512_fmadd_ps(j.taps[kh * 3 + kw], t[kw], sum[r][kh]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const int64_t at = (oh + r) * j.wOut + b.ow;
    __m512 v = _mm512_add_ps(_mm512_add_ps(sum[r][0], sum[r][1]), sum[r][2]);
    if (j.residual) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(b.outputs, j.residual + at));
    _mm512_mask_storeu_ps(j.out + at, b.outputs, _mm512_min_ps(j.hi, _mm512_max_ps(j.lo, v)));
  }
}

/// Depthwise 3x3 convolution straight from the NCHW planes, blocks of 16
/// outputs of 4 rows at a time in registers (row_blocks.h): per input row,
/// the 18 (stride 1) or 33 (stride 2) columns under a block are two or
/// three loads, and the epilogue runs before the one store. No copy of the
/// input: channel vectors transpose four inputs in for every output at
/// stride 2, and PlanePhases copies every plane into its phases first. A
/// row at a time, the kernel loaded each input row three times.
template <int kStride>
void depthwiseRows(const ConvParams& p, const float* x, const float* w, const float* bias,
                   const float* residual, float* y, const Team& team) {
  constexpr int kGroup = 4;
  const Bounds bounds = activationBounds(p);
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  const std::vector<detail::RowBlock> blocks =
      detail::rowBlocks(p.w_out, p.w_in, kStride, p.pad_left);
  RowPlane j{};
  j.lo = _mm512_set1_ps(bounds.low), j.hi = _mm512_set1_ps(bounds.high);
  j.hIn = p.h_in, j.wIn = p.w_in, j.wOut = p.w_out, j.padTop = p.pad_top;
  const Range planes = team.split(p.n * p.c_out);
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    const int64_t c = plane % p.c_out;
    j.in = x + plane * inSpatial;
    j.out = y + plane * spatial;
    j.residual = residual ? residual + plane * spatial : nullptr;
    for (int t = 0; t < 9; ++t) j.taps[t] = _mm512_set1_ps(w[c * 9 + t]);
    j.bias = _mm512_set1_ps(bias ? bias[c] : 0.0f);
    int64_t oh = 0;
    for (; oh + kGroup <= p.h_out; oh += kGroup)
      for (const detail::RowBlock& b : blocks) rowGroup<kStride, kGroup>(j, b, oh);
    for (const detail::RowBlock& b : blocks) switch (p.h_out - oh) {
        case 3:
          rowGroup<kStride, 3>(j, b, oh);
          break;
        case 2:
          rowGroup<kStride, 2>(j, b, oh);
          break;
        case 1:
          rowGroup<kStride, 1>(j, b, oh);
          break;
        default:
          break;
      }
  }
}
#pragma GCC diagnostic pop
#endif

}  // namespace

namespace detail {

// The three depthwise variants (conv_variants.def).

#if CGC_ISA_SKX
bool takesDepthwiseRows(const ConvParams& p) {
  return plainLayouts(p) && rt::takesDepthwiseRows(p);
}

/// Where channel vectors do not fit, or rows of 9 outputs or more.
bool prefersDepthwiseRows(const ConvParams& p, const ConvContext&) {
  return rt::prefersDepthwiseRows(p, detail::ChannelVectors(windowOf(p)).fits(p.c_out));
}

void convDepthwiseRows(const ConvParams& p, const float* x, const float* w, const float* bias,
                       const float* residual, float* y, const Team& team) {
  if (p.stride_w == 1) return depthwiseRows<1>(p, x, w, bias, residual, y, team);
  depthwiseRows<2>(p, x, w, bias, residual, y, team);
}
#else
bool takesDepthwiseRows(const ConvParams&) { return false; }
bool prefersDepthwiseRows(const ConvParams&, const ConvContext&) { return false; }
void convDepthwiseRows(const ConvParams&, const float*, const float*, const float*, const float*,
                       float*, const Team&) {}  // never run: the build lacks its tier
#endif

/// Where a block of 16 planes and its outputs fit the vectors' scratch.
bool takesDepthwiseVectors(const ConvParams& p) {
  return plainLayouts(p) && isDepthwise2d(p) && detail::ChannelVectors(windowOf(p)).fits(p.c_out);
}

/// Without AVX-512 (no row kernel, registers of 8), channel vectors win
/// only at stride 2: MobileNetV2's layers run faster through PlanePhases at
/// stride 1, slower at stride 2.
bool prefersDepthwiseVectors(const ConvParams& p, const ConvContext& context) {
  return isaTierIncludes(context.tier, "skx") || p.stride_w > 1;
}

void convDepthwiseVectors(const ConvParams& p, const float* x, const float* w, const float* bias,
                          const float* residual, float* y, const Team& team) {
  depthwiseVectors(detail::ChannelVectors(windowOf(p)), p, x, w, bias, residual, y, team);
}

bool takesDepthwisePlanes(const ConvParams& p) { return plainLayouts(p) && isDepthwise2d(p); }
bool prefersDepthwisePlanes(const ConvParams&, const ConvContext&) { return true; }

void convDepthwisePlanes(const ConvParams& p, const float* x, const float* w, const float* bias,
                         const float* residual, float* y, const Team& team) {
  depthwise(p, x, w, bias, residual, y, team);
}

}  // namespace detail
}  // namespace cgc::rt
