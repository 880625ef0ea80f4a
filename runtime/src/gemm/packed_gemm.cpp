// gemmPacked: the GEMM of a convolution whose weights were packed at compile
// time (packConvWeights), with the vectors along output channels, stored
// as [position][channel] blocks or straight into the channel-blocked
// activation layout, the epilogue applied in registers on the last depth
// step; and transpose, which brings a [position][channel] block back into
// rows of channels (and planes into vectors of channels).
//
// The NCHW GEMM (xsmm_gemm.cpp) vectorises along output positions. A 7x7
// output (49 positions) fills 4 vectors of 16 with 49 lanes, and LIBXSMM 1.17
// has no transposed-A kernel that would vectorise along channels instead.
// Here a register tile is 6 positions x up to 4 registers of channels (24
// sums; simd.h: 64 channels on AVX-512, 16 on AVX2); each step of the depth
// loads the panel's next weights (contiguous, as packed) and broadcasts 6
// inputs. It beats gemmRows on ResNet-50's convolution products
// (bench/micro/run.sh; bench/history/2026-11-code-comment-measurements.md).
#include <algorithm>
#include <cstring>

#include "core/diagnostics.h"
#include "core/isa.h"
#include "core/simd.h"
#include "gemm/gemm_core.h"

#if CGC_ISA_AVX2
#include <immintrin.h>
#endif

namespace cgc::rt::detail {
namespace {

using simd::kLanes;
constexpr int kTile = kPackedTilePositions;
/// Vectors of channels per register tile: kTile x kTileVectors sums, the
/// tile's weights and a broadcast fill the registers (4 on AVX-512 and
/// NEON, 2 on AVX2 and SSE). A panel wider than a tile takes several.
constexpr int kTileVectors = (simd::kRegisters - 1) / (kTile + 1);
static_assert(kTileVectors <= 4);
using Lanes = simd::Floats;

/// out(j, o) (+)= sum_p b[offsets[p] + positions[j]] * a[p * lda + o] for
/// j < J, o < kLanes V, through out's epilogue when `last`; prefetches
/// `lines` cache lines from `prefetch` into L2 on the way, one per depth
/// step.
template <int V, int J>
void tile(int64_t k, const float* __restrict a, int64_t lda, const float* __restrict b,
          const int64_t* __restrict offsets, const int64_t* __restrict positions,
          const PackedOutput& out, bool accumulate, bool last, const char* prefetch,
          int64_t lines) {
  float* __restrict c = out.y;
  // Vector v holds channels kLanes v to kLanes (v + 1) - 1: in block
  // kLanes v / 16 of out, from lane kLanes v % 16.
  auto at = [&](int j, int v) {
    return j * out.ld_position + v * kLanes / 16 * out.ld_vector + v * kLanes % 16;
  };
  Lanes sum[J][V];
  for (int j = 0; j < J; ++j)
    for (int v = 0; v < V; ++v) {
      if (accumulate)
        sum[j][v] = simd::load(c + at(j, v));
      else
        sum[j][v] = Lanes{};
    }
  int64_t from[J];
  for (int j = 0; j < J; ++j) from[j] = positions[j];
  for (int64_t p = 0; p < k; ++p) {
    if (p < lines) __builtin_prefetch(prefetch + p * 64, 0, 2);
    // Unrolled before store motion runs, so that the sums live in
    // registers under every -mtune: GCC 12's Skylake-AVX512, Cascade Lake
    // and Ice Lake tunings unroll these loops later and keep all 24 sums on the
    // stack (tests/isa/register_tiles.sh checks it).
    Lanes w[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) w[v] = simd::load(a + p * lda + v * kLanes);
    const float* row = b + offsets[p];
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) {
      const float in = row[from[j]];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) sum[j][v] += w[v] * in;
    }
  }
  if (last) {
    const Lanes low = out.low - Lanes{}, high = out.high - Lanes{};
    for (int v = 0; v < V; ++v) {
      const Lanes bias = out.bias ? simd::load(out.bias + v * kLanes) : Lanes{};
      for (int j = 0; j < J; ++j) {
        Lanes& s = sum[j][v];
        s += bias;
        if (out.residual) s += simd::load(out.residual + at(j, v));
        s = s < low ? low : s;  // a NaN sum stays NaN, as in std::clamp
        s = high < s ? high : s;
      }
    }
  }
  for (int j = 0; j < J; ++j)
    for (int v = 0; v < V; ++v) simd::store(c + at(j, v), sum[j][v]);
}

/// tile's forms, for kPackedTileTable: up to kTileVectors vectors of
/// channels x kTile positions.
struct FloatTiles {
  template <int V, int J>
  static constexpr PackedTile at = &tile<V, J>;
};

}  // namespace

// Depth per pass. AVX-512: the panel's slice (1024 deep, 256 KiB) stays in
// L2 across the tiles, a quarter of Zen 5's 1 MiB; 512 and 4096 were 3-10%
// slower on ResNet-50 and GoogLeNet. AVX2: a tile group's slice (16
// channels, 384 deep, 24 KiB) stays in L1 across the tiles, three quarters
// of Zen 3's 32 KiB; faster than 1024 on Inception-v3's and ResNet-50's
// deep layers, level on shallow ones (bench/micro/run.sh;
// bench/history/2026-11-code-comment-measurements.md). Other machines keep those shares of their
// caches.
int64_t packedDepthStep(const MachineInfo& machine) {
  constexpr int64_t kFloat = sizeof(float), kTileGroup = 16, kMinStep = 64;
  const int64_t step = machine.lanes() == 8 ? machine.l1dBytes * 3 / 4 / (kTileGroup * kFloat)
                                            : machine.l2Bytes / 4 / (kPackedPanel * kFloat);
  return std::max(kMinStep, step);
}

void gemmPacked(int64_t m, int64_t k, const float* packed, int64_t o0, int64_t o1, int64_t n,
                const float* b, const int64_t* offsets, const int64_t* positions,
                const PackedOutput& out, int64_t depthStep, const PackedTiles* tiles) {
  const PackedTiles& table = tiles ? *tiles : kPackedTileTable<FloatTiles, kTileVectors>;
  const int64_t panel = o0 / kPackedPanel * kPackedPanel;
  const int64_t width = std::min(kPackedPanel, m - panel);
  const int vectors = static_cast<int>((o1 - o0) / kLanes);
  const float* a = packed + panel * k + (o0 - panel);
  const int64_t steps = (k + depthStep - 1) / depthStep;
  const int64_t step = (k + steps - 1) / steps;
  // The weights are read in the order they lie: this depth step's slice,
  // then the next step's or the next panel's. While the tiles of a step run,
  // each fetches its share of the next slice into L2, a line per depth
  // step, so that the first tile over a slice does not wait on memory.
  // ResNet-50's 100 MB of weights come from memory every run: its 7x7
  // layers ran 15-20% below their speed on weights in cache, 0-8% with this.
  const int64_t tileCount = (n + kTile - 1) / kTile;
  for (int64_t pc = 0; pc < k; pc += step) {
    const int64_t kc = std::min(step, k - pc);
    const int64_t nextAt = std::min((a - packed) + (pc + kc) * width, m * k);  // in floats
    const char* next = reinterpret_cast<const char*>(packed + nextAt);
    const int64_t nextLines =
        std::min(kc * width, m * k - nextAt) * static_cast<int64_t>(sizeof(float)) / 64;
    const int64_t share = (nextLines + tileCount - 1) / tileCount;
    // Tiles of kTileVectors vectors of channels, kTileVectors kLanes
    // dividing 16 (64 on AVX-512): a tile's channels lie in one block of
    // out or fill whole ones. The first group's tiles prefetch.
    static_assert(16 % (kTileVectors * kLanes) == 0 || (kTileVectors * kLanes) % 16 == 0);
    for (int v0 = 0; v0 < vectors; v0 += kTileVectors) {
      const auto& row = table[std::min(kTileVectors, vectors - v0) - 1];
      const int64_t channel = v0 * kLanes, at = channel / 16 * out.ld_vector + channel % 16;
      PackedOutput tileOut = out;
      if (out.bias) tileOut.bias = out.bias + channel;
      for (int64_t j = 0, t = 0; j < n; j += kTile, ++t) {
        const int64_t first = std::min(nextLines, t * share);
        const int64_t lines = v0 == 0 ? std::min(nextLines, first + share) - first : 0;
        tileOut.y = out.y + j * out.ld_position + at;
        if (out.residual) tileOut.residual = out.residual + j * out.ld_position + at;
        row[std::min<int64_t>(kTile, n - j) - 1](kc, a + pc * width + channel, width, b,
                                                 offsets + pc, positions + j, tileOut, pc > 0,
                                                 pc + kc == k, next + first * 64, lines);
      }
    }
  }
}

#if CGC_ISA_SKX
// GCC 12's unpack intrinsics start from _mm512_undefined_ps(), which
// -Wuninitialized and -Wmaybe-uninitialized report at -O3 (a false
// positive: every lane is written).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
CGC_IGNORE_MAYBE_UNINITIALIZED
namespace {

/// dst[c * ldd + j] = src[j * lds + c] for j < rows, c < cols of a block
/// of at most 16 x 16, in registers: pairs of rows interleaved at 1, 2, 4
/// and 8 floats. A block's edges are masked loads and stores (scalar loops
/// there cost a third of a 7x7 layer's transpose). With kEpilogue, each
/// row of dst gets e's row bias, residual and activation on its way out.
constexpr int64_t kTransposeBlock = 16;

template <bool kEpilogue>
void transposeBlock(const float* src, int64_t lds, float* dst, int64_t ldd, int rows, int cols,
                    const Epilogue& e) {
  const __mmask16 colMask = static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 rowMask = static_cast<__mmask16>((1u << rows) - 1);
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_maskz_loadu_ps(colMask, src + i * lds) : _mm512_setzero_ps();
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  auto pd = [](__m512 v) { return _mm512_castps_pd(v); };
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[4 * i]), pd(t[4 * i + 2])));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[4 * i]), pd(t[4 * i + 2])));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[4 * i + 1]), pd(t[4 * i + 3])));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[4 * i + 1]), pd(t[4 * i + 3])));
  }
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      t[8 * i + k] = _mm512_shuffle_f32x4(r[8 * i + k], r[8 * i + 4 + k], 0x88);
      t[8 * i + 4 + k] = _mm512_shuffle_f32x4(r[8 * i + k], r[8 * i + 4 + k], 0xdd);
    }
  auto store = [&](int c, __m512 v) {
    if (c >= cols) return;
    if constexpr (kEpilogue) {  // as epilogueRows: act(v + bias + residual)
      if (e.row_bias) v = _mm512_add_ps(v, _mm512_set1_ps(e.row_bias[c]));
      if (e.residual)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(rowMask, e.residual + c * e.ld_residual));
      // max(bound, v) and min(bound, v) keep a NaN, as std::max(v, bound) does.
      if (e.activation == Activation::kRelu) v = _mm512_max_ps(_mm512_setzero_ps(), v);
      if (e.activation == Activation::kClip)
        v = _mm512_min_ps(_mm512_set1_ps(e.act_max), _mm512_max_ps(_mm512_set1_ps(e.act_min), v));
    }
    _mm512_mask_storeu_ps(dst + c * ldd, rowMask, v);
  };
  for (int k = 0; k < 8; ++k) {
    store(k, _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88));
    store(8 + k, _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd));
  }
}

}  // namespace
#pragma GCC diagnostic pop
#elif CGC_ISA_AVX2
namespace {

/// The AVX-512 transposeBlock's AVX2 twin on blocks of at most 8 x 8: pairs of rows
/// interleaved at 1 and 2 floats, then 128-bit halves exchanged; the edges
/// are masked loads and part-row stores. (The scalar loop it replaces held
/// MobileNetV2's depthwise layers, whose channel vectors transpose every
/// input and output, at a fifth of ONNX Runtime's speed.)
constexpr int64_t kTransposeBlock = 8;

template <bool kEpilogue>
void transposeBlock(const float* src, int64_t lds, float* dst, int64_t ldd, int rows, int cols,
                    const Epilogue& e) {
  auto maskOf = [](int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  };
  const __m256i colMask = maskOf(cols), rowMask = maskOf(rows);
  __m256 r[8];
  for (int i = 0; i < 8; ++i)
    r[i] = i >= rows   ? _mm256_setzero_ps()
           : cols == 8 ? _mm256_loadu_ps(src + i * lds)
                       : _mm256_maskload_ps(src + i * lds, colMask);
  __m256 t[8], q[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 2; ++k) {
      q[4 * i + 2 * k] = _mm256_shuffle_ps(t[4 * i + k], t[4 * i + 2 + k], 0x44);
      q[4 * i + 2 * k + 1] = _mm256_shuffle_ps(t[4 * i + k], t[4 * i + 2 + k], 0xee);
    }
  auto store = [&](int c, __m256 v) {
    if (c >= cols) return;
    if constexpr (kEpilogue) {  // as epilogueRows: act(v + bias + residual)
      if (e.row_bias) v = _mm256_add_ps(v, _mm256_set1_ps(e.row_bias[c]));
      if (e.residual)
        v = _mm256_add_ps(v, _mm256_maskload_ps(e.residual + c * e.ld_residual, rowMask));
      // max(bound, v) and min(bound, v) keep a NaN, as std::max(v, bound) does.
      if (e.activation == Activation::kRelu) v = _mm256_max_ps(_mm256_setzero_ps(), v);
      if (e.activation == Activation::kClip)
        v = _mm256_min_ps(_mm256_set1_ps(e.act_max), _mm256_max_ps(_mm256_set1_ps(e.act_min), v));
    }
    // A masked store is microcoded on AMD's Zen (it held this kernel at
    // half speed): a part-row goes through L1 instead.
    if (rows == 8) {
      _mm256_storeu_ps(dst + c * ldd, v);
    } else {
      alignas(32) float part[8];
      _mm256_store_ps(part, v);
      for (int i = 0; i < rows; ++i) dst[c * ldd + i] = part[i];
    }
  };
  // q[k] holds columns k (low half, rows 0-3) and k + 4 (high half) of
  // rows 0-3; q[4 + k] the same of rows 4-7.
  for (int k = 0; k < 4; ++k) {
    store(k, _mm256_permute2f128_ps(q[k], q[4 + k], 0x20));
    store(4 + k, _mm256_permute2f128_ps(q[k], q[4 + k], 0x31));
  }
}

}  // namespace
#endif

void transpose(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd,
               const Epilogue& e) {
#if CGC_ISA_AVX2
  if (!e.col_bias) {
    const bool epilogue = !e.empty();
    for (int64_t r0 = 0; r0 < rows; r0 += kTransposeBlock)
      for (int64_t c0 = 0; c0 < cols; c0 += kTransposeBlock) {
        const int tileRows = static_cast<int>(std::min(kTransposeBlock, rows - r0));
        const int tileCols = static_cast<int>(std::min(kTransposeBlock, cols - c0));
        const float* from = src + r0 * lds + c0;
        float* to = dst + c0 * ldd + r0;
        if (epilogue)
          transposeBlock<true>(from, lds, to, ldd, tileRows, tileCols, e.at(c0, r0));
        else
          transposeBlock<false>(from, lds, to, ldd, tileRows, tileCols, e);
      }
    return;
  }
#endif
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) dst[c * ldd + r] = src[r * lds + c];
  applyEpilogue(e, cols, rows, dst, ldd);
}

}  // namespace cgc::rt::detail
