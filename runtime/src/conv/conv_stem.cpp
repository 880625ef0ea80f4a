// Direct convolution for few input channels (stem layers: RGB in, depth
// 27 to 147; isFewChannels in conv_strategies.h), one of conv's variants
// (conv.cpp). There im2col would copy as many floats as the GEMM then
// multiplies per output, and the packed kernel's tiles would run a handful
// of steps each: instead the input rows under a band of output rows are
// copied into their stride phases (plane_phases.h), and register blocks of
// 8 output channels x 32 positions sum every tap of every input plane. The
// layer can also store the 3x3, stride-2 max pooling of its output instead
// of the output (StemPool; the fuse-conv-maxpool pass, where
// convFusesMaxPool), pooling each band while it is in L2.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "cgc/kernels.h"
#include "conv/conv_strategies.h"
#include "conv/conv_support.h"
#include "conv/plane_phases.h"
#include "core/diagnostics.h"
#include "core/isa.h"
#include "core/scratch.h"
#include "core/simd.h"
#include "gemm/row_blocks.h"

namespace cgc::rt {
namespace {

using detail::activationBounds;
using detail::Bounds;

/// sums[o * ldSums + i] = sum over input planes c and taps t of
/// weights[(c * taps + t) * ldw + o] * planes[c * planeSize + tapOffsets[t] + i],
/// for C channels and i < V registers of positions (simd.h).
template <int C, int V>
void fewChannelsBlock(const float* planes, int64_t planeSize, int64_t inChannels,
                      const int64_t* tapOffsets, int64_t taps, const float* weights, int64_t ldw,
                      float* sums, int64_t ldSums) {
  using simd::kLanes;
  simd::Floats sum[C][V];
  for (int o = 0; o < C; ++o)
    for (int v = 0; v < V; ++v) sum[o][v] = simd::Floats{};
  for (int64_t c = 0; c < inChannels; ++c)
    for (int64_t t = 0; t < taps; ++t) {
      const float* src = planes + c * planeSize + tapOffsets[t];
      simd::Floats in[V];
      for (int v = 0; v < V; ++v) in[v] = simd::load(src + v * kLanes);
      const float* wk = weights + (c * taps + t) * ldw;
      for (int o = 0; o < C; ++o)
        for (int v = 0; v < V; ++v) sum[o][v] += wk[o] * in[v];
    }
  for (int o = 0; o < C; ++o)
    for (int v = 0; v < V; ++v) simd::store(sums + o * ldSums + v * kLanes, sum[o][v]);
}

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at -O3 (a false positive).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED
/// The rows of a 3x3, stride-2 max pooling that a stem convolution stores
/// instead of its output (ConvParams::pool_h_out > 0).
struct StemPool {
  const ConvParams& p;

  bool on() const { return p.pool_h_out > 0; }
  /// Rows of y: pooled rows when pooling.
  int64_t rows() const { return on() ? p.pool_h_out : p.h_out; }
  int64_t spatial() const { return on() ? p.pool_h_out * p.pool_w_out : p.h_out * p.w_out; }
  /// The most convolution rows that `band` rows of y read.
  int64_t convolutionRows(int64_t band) const {
    return on() ? std::min(p.h_out, 2 * band + 1) : band;
  }
  /// The convolution rows that rows [r0, r1) of y read.
  Range convolutionRows(int64_t r0, int64_t r1) const {
    if (!on()) return {r0, r1};
    return {std::max<int64_t>(0, 2 * r0 - p.pool_pad_top),
            std::min(p.h_out, 2 * (r1 - 1) - p.pool_pad_top + 3)};
  }

  /// Pools rows [r0, r1) of y (the plane at `out`) from the convolution
  /// rows in `sums` (from row `first`, `stride` apart), then adds `bias`
  /// and applies the activation: both commute with the maximum, as the
  /// activations are non-decreasing.
  void store(const float* sums, int64_t first, int64_t stride, int64_t r0, int64_t r1, float bias,
             float* out) const {
    const Bounds bounds = activationBounds(p);
    const float lo = bounds.low, hi = bounds.high;
#if CGC_ISA_SKX
    const std::vector<detail::RowBlock> blocks =
        detail::rowBlocks(p.pool_w_out, p.w_out, 2, p.pool_pad_left);
    const __m512 b = _mm512_set1_ps(bias), low = _mm512_set1_ps(lo), high = _mm512_set1_ps(hi);
    for (int64_t r = r0; r < r1; ++r) {
      const float* rows[3];
      int count = 0;
      for (int64_t k = 0; k < 3; ++k) {
        const int64_t row = 2 * r - p.pool_pad_top + k;
        if (row >= 0 && row < p.h_out) rows[count++] = sums + (row - first) * stride;
      }
      detail::maxPoolRow3x3Stride2(rows, count, blocks, out + r * p.pool_w_out, [&](__m512 v) {
        return _mm512_min_ps(high, _mm512_max_ps(low, _mm512_add_ps(v, b)));
      });
    }
#else
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < p.pool_w_out; ++c) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t row = std::max<int64_t>(0, 2 * r - p.pool_pad_top);
             row < std::min(p.h_out, 2 * r - p.pool_pad_top + 3); ++row)
          for (int64_t col = std::max<int64_t>(0, 2 * c - p.pool_pad_left);
               col < std::min(p.w_out, 2 * c - p.pool_pad_left + 3); ++col)
            m = std::max(m, sums[(row - first) * stride + col]);
        out[r * p.pool_w_out + c] = std::clamp(m + bias, lo, hi);
      }
#endif
  }
};
#pragma GCC diagnostic pop

}  // namespace

namespace detail {

/// NCHW planes on both sides; a fused 3x3 stride-2 max pooling or none.
bool takesFewChannels(const ConvParams& p) {
  return isFewChannels(p) && !p.blocked_input && !p.blocked_output;
}

/// Large images (fewChannelsPays); small ones go to the variants after
/// it, unless none of them takes the layer (a fused pooling).
bool prefersFewChannels(const ConvParams& p, const ConvContext&) { return fewChannelsPays(p); }

/// Direct convolution for few input channels, in bands of output rows:
/// the input rows under a band go through PlanePhases, then blocks of 32
/// output positions of 8 output channels sum every tap of every input plane
/// in registers (16 sums, each input vector loaded once for 8 channels), and
/// leave through the epilogue, or through a max pooling (StemPool). A band's
/// phases and sums stay in L2 while its 8-channel blocks pass. The team
/// splits the rows of y, so each thread copies only the input rows it
/// reads; a plane of fewer rows (1-D) splits the blocks of 8 channels
/// instead. When every thread copied the whole image and then split the
/// channels, ResNet-50's stem on 2 threads ran slower, on an image fresh
/// from memory.
void convFewChannels(const ConvParams& p, const float* x, const float* w, const float* bias,
                     const float* residual, float* y, const Team& team) {
  using detail::PlanePhases;
  // Blocks of 8 channels x 32 positions, summed in register tiles of 8 or
  // 4 channels (as the registers allow: simd.h) x 2 registers of positions.
  constexpr int64_t kLanes = PlanePhases::kLanes, kVectors = 2, kChannels = 8;
  constexpr int kTileChannels = simd::kRegisters >= 32 ? 8 : 4, kTileVectors = 2;
  constexpr int64_t kTilePositions = kTileVectors * simd::kLanes;
  // Rows of y per band: about 16 rows of convolution either way; pooled
  // bands recompute the row they share, so they are as large as L2 allows.
  const StemPool pool{p};
  const int64_t bandRows = pool.on() ? 32 : 16;
  auto phasesOf = [&](Range convolutionRows) {
    return PlanePhases(p.h_in, p.w_in, convolutionRows.size(), p.w_out, p.k_h, p.k_w, p.stride_h,
                       p.stride_w, p.dilation_h, p.dilation_w,
                       p.pad_top - convolutionRows.begin * p.stride_h, p.pad_left);
  };
  const int64_t inSpatial = p.h_in * p.w_in, spatial = pool.spatial();
  const int64_t depth = p.c_in * p.k_h * p.k_w;
  const int64_t blocks = (p.c_out + kChannels - 1) / kChannels;
  const bool splitRows = pool.rows() >= 4 * team.size();
  const Range rows = splitRows ? team.split(pool.rows()) : Range{0, pool.rows()};
  const Range channelBlocks = splitRows ? Range{0, blocks} : team.split(blocks);
  if (rows.size() <= 0 || channelBlocks.size() <= 0) return;
  const PlanePhases largest = phasesOf({0, pool.convolutionRows(std::min(bandRows, rows.size()))});
  float* weights = scratch(channelBlocks.size() * depth * kChannels + p.c_in * largest.fillSize() +
                           kChannels * largest.length());
  float* planes = weights + channelBlocks.size() * depth * kChannels;
  float* sums = planes + p.c_in * largest.fillSize();  // [8 channels][length]
  // weights[(block * depth + c * taps + t) * 8 + o]
  for (int64_t block = channelBlocks.begin; block < channelBlocks.end; ++block) {
    float* packed = weights + (block - channelBlocks.begin) * depth * kChannels;
    for (int64_t k = 0; k < depth; ++k)
      for (int64_t o = 0; o < kChannels; ++o) {
        const int64_t channel = block * kChannels + o;
        packed[k * kChannels + o] = channel < p.c_out ? w[channel * depth + k] : 0.0f;
      }
  }
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t r0 = rows.begin; r0 < rows.end; r0 += bandRows) {
      const int64_t r1 = std::min(r0 + bandRows, rows.end);
      const Range convolutionRows = pool.convolutionRows(r0, r1);
      const PlanePhases phases = phasesOf(convolutionRows);
      const std::vector<int64_t>& taps = phases.tapOffsets();
      const int64_t planeSize = phases.fillSize();
      for (int64_t c = 0; c < p.c_in; ++c)
        phases.fill(x + (n * p.c_in + c) * inSpatial, 0.0f, planes + c * planeSize);
      for (int64_t block = channelBlocks.begin; block < channelBlocks.end; ++block) {
        const int64_t o0 = block * kChannels, count = std::min(kChannels, p.c_out - o0);
        const float* packed = weights + (block - channelBlocks.begin) * depth * kChannels;
        auto sumBlocks = [&](int64_t j) {
          for (int64_t o = 0; o < kChannels; o += kTileChannels)
            for (int64_t i = j; i < j + kVectors * kLanes; i += kTilePositions)
              fewChannelsBlock<kTileChannels, kTileVectors>(
                  planes + i, planeSize, p.c_in, taps.data(), static_cast<int64_t>(taps.size()),
                  packed + o, kChannels, sums + o * phases.length() + i, phases.length());
        };
        if (pool.on()) {
          for (int64_t j = 0; j < phases.length(); j += kVectors * kLanes) sumBlocks(j);
          for (int64_t o = 0; o < count; ++o)
            pool.store(sums + o * phases.length(), convolutionRows.begin, phases.rowStride(), r0,
                       r1, bias ? bias[o0 + o] : 0.0f, y + (n * p.c_out + o0 + o) * spatial);
          continue;
        }
        // The output is fresh from memory in a model. Its lines are
        // prefetched for writing a few blocks ahead of the sums, and each
        // row leaves as soon as its sums are complete, so the stores overlap
        // the sums (stores that missed cost ResNet-50's stem 12% on 2
        // threads; one store pass per block, a further 2-7%).
        const int64_t band = r1 - r0;
        auto storeRows = [&](int64_t begin, int64_t end) {
          for (int64_t o = 0; o < count; ++o) {
            const int64_t first = (n * p.c_out + o0 + o) * spatial + r0 * p.w_out;
            storeWithEpilogue(p, phases, sums + o * phases.length(), bias ? bias[o0 + o] : 0.0f,
                              residual ? residual + first : nullptr, y + first, begin, end);
          }
        };
        int64_t stored = 0;
        for (int64_t j = 0; j < phases.length(); j += kVectors * kLanes) {
          const int64_t ahead = j + 4 * kVectors * kLanes, row = ahead / phases.rowStride();
          if (row < band)
            for (int64_t o = 0; o < count; ++o) {
              const float* at = y + (n * p.c_out + o0 + o) * spatial + (r0 + row) * p.w_out +
                                std::min(ahead % phases.rowStride(), p.w_out - 1);
              __builtin_prefetch(at, 1, 3);
              __builtin_prefetch(at + kLanes, 1, 3);
            }
          sumBlocks(j);
          const int64_t complete = std::min(band, (j + kVectors * kLanes) / phases.rowStride());
          if (complete > stored) storeRows(stored, complete);
          stored = std::max(stored, complete);
        }
        if (stored < band) storeRows(stored, band);
      }
    }
}

}  // namespace detail
}  // namespace cgc::rt
