// Convolution on packed bfloat16 weights (--precision bf16): conv's
// PackedBf16 variant (conv_variants.def), for AVX512_BF16. Packed's driver
// (runPacked, conv_packed.cpp) and layout with 32-bit elements that are
// pairs of bfloat16 along the depth: packConvWeights (bf16_weights) stores
// the weights of input channels 2i and 2i + 1 at one tap as one pair, and
// padPairs copies the input, zero-padded and rounded to bfloat16 (nearest
// even), into blocks of 16 channels, whose 8 pairs per position are the
// same pairs. A tile's step then loads a pair row of weights per vector of
// 16 output channels, broadcasts each position's input pair, and vdpbf16ps
// adds both products to the float sums: the depth in half the steps of
// Packed's FMAs, and the weights in half the bytes. Sums, bias, residual
// and activation stay float, as in Packed.
#include <algorithm>
#include <cstring>

#include "cgc/kernels.h"
#include "conv/conv_strategies.h"
#include "conv/conv_support.h"
#include "core/diagnostics.h"
#include "core/isa.h"

#if CGC_ISA_BF16
#include <immintrin.h>
#endif

namespace cgc::rt::detail {

#if CGC_ISA_BF16
// GCC 12's max, min and unpack intrinsics start from _mm512_undefined_ps(),
// which -Wuninitialized and -Wmaybe-uninitialized report at -O3 (a false
// positive, as in packed_gemm.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
CGC_IGNORE_MAYBE_UNINITIALIZED
namespace {

/// out(j, o) (+)= sum_q A(o, q) . B(q, j) over pairs q, for j < J and
/// o < 16 V (PackedTile's contract on bfloat16 pairs).
template <int V, int J>
void tile(int64_t k, const float* __restrict a, int64_t lda, const float* __restrict b,
          const int64_t* __restrict offsets, const int64_t* __restrict positions,
          const PackedOutput& out, bool accumulate, bool last, const char* prefetch,
          int64_t lines) {
  float* __restrict c = out.y;
  auto at = [&](int j, int v) { return j * out.ld_position + v * out.ld_vector; };
  __m512 sum[J][V];
  for (int j = 0; j < J; ++j)
    for (int v = 0; v < V; ++v)
      sum[j][v] = accumulate ? _mm512_loadu_ps(c + at(j, v)) : _mm512_setzero_ps();
  int64_t from[J];
  for (int j = 0; j < J; ++j) from[j] = positions[j];
  for (int64_t q = 0; q < k; ++q) {
    if (q < lines) __builtin_prefetch(prefetch + q * 64, 0, 2);
    // Unrolled early, as Packed's tiles, so that the sums stay in registers.
    __m512bh w[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) w[v] = (__m512bh)_mm512_loadu_ps(a + q * lda + v * 16);
    const float* row = b + offsets[q];
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) {
      const __m512bh in = (__m512bh)_mm512_set1_ps(row[from[j]]);  // the pair's 32 bits
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) sum[j][v] = _mm512_dpbf16_ps(sum[j][v], in, w[v]);
    }
  }
  if (last) {
    const __m512 low = _mm512_set1_ps(out.low), high = _mm512_set1_ps(out.high);
    for (int v = 0; v < V; ++v) {
      const __m512 bias = out.bias ? _mm512_loadu_ps(out.bias + v * 16) : _mm512_setzero_ps();
      for (int j = 0; j < J; ++j) {
        __m512 s = _mm512_add_ps(sum[j][v], bias);
        if (out.residual) s = _mm512_add_ps(s, _mm512_loadu_ps(out.residual + at(j, v)));
        // max(bound, s) and min(bound, s) keep a NaN sum, as Packed's clamp.
        sum[j][v] = _mm512_min_ps(high, _mm512_max_ps(low, s));
      }
    }
  }
  for (int j = 0; j < J; ++j)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(c + at(j, v), sum[j][v]);
}

/// tile's forms, for kPackedTileTable: up to 4 vectors of channels x
/// kPackedTilePositions positions.
struct Bf16Tiles {
  template <int V, int J>
  static constexpr PackedTile at = &tile<V, J>;
};

/// PackedKernel::pairs: padInput's channel-blocked copy, each float rounded
/// to bfloat16 on its way out (vcvtneps2bf16): rows of 16 x 16-bit lanes a
/// position, through a float buffer of 64 positions where x is NCHW.
void padPairs(const ConvParams& p, const float* x, int64_t d, int64_t h, int64_t w, Range planes,
              Range rows, float* padded) {
  constexpr int64_t kColumns = 64, kRowBytes = kChannelBlock * 2;
  const int64_t lo = std::min(w, p.pad_left), hi = std::max(lo, std::min(w, p.pad_left + p.w_in));
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  alignas(64) float block[kColumns * kChannelBlock];
  for (int64_t c = planes.begin; c < planes.end; ++c) {
    const int64_t channels = std::min(kChannelBlock, p.c_in - c * kChannelBlock);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
      const int64_t id = r / h - p.pad_front, ih = r % h - p.pad_top;
      const bool inside = id >= 0 && id < p.d_in && ih >= 0 && ih < p.h_in;
      char* out = reinterpret_cast<char*>(padded + (c * d * h + r) * w * (kChannelBlock / 2));
      const int64_t begin = inside ? lo : w, end = inside ? hi : w;
      std::memset(out, 0, begin * kRowBytes);
      std::memset(out + end * kRowBytes, 0, (w - end) * kRowBytes);
      const int64_t first = (id * p.h_in + ih) * p.w_in + (lo - p.pad_left);
      for (int64_t j0 = begin; j0 < end; j0 += kColumns) {
        const int64_t count = std::min(kColumns, end - j0);
        const float* src = x + (c * inSpatial + first + (j0 - lo)) * kChannelBlock;
        if (!p.blocked_input) {
          if (channels < kChannelBlock) std::fill_n(block, count * kChannelBlock, 0.0f);
          transpose(x + c * kChannelBlock * inSpatial + first + (j0 - lo), inSpatial, channels,
                    count, block, kChannelBlock);
          src = block;
        }
        for (int64_t j = 0; j < count; ++j)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (j0 + j) * kRowBytes),
                              (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + j * 16)));
      }
    }
  }
}

}  // namespace
#pragma GCC diagnostic pop

bool takesPackedBf16(const ConvParams& p) { return takesPacked(p); }

/// Layers whose products per float they move (the input read and the
/// output written) are at least two vectors' worth (2 x lanes: vdpbf16ps
/// does two per lane): PackedBf16 rounds and lays out every input element
/// it reads, where the float variants read it in place, which pays only
/// where each element feeds that many products (the profile's measured
/// variant, cgc tune's, overrides). Not depthwise layers, few-channel
/// stems, nor layers whose channels rounded up to 16 exceed c_out by more
/// than a third.
bool prefersPackedBf16(const ConvParams& p, const ConvContext& context) {
  const double taps = static_cast<double>(p.k_d) * p.k_h * p.k_w;
  const double in = static_cast<double>(p.d_in) * p.h_in * p.w_in;
  const double out = static_cast<double>(p.d_out) * p.h_out * p.w_out;
  const double products = static_cast<double>(p.c_out) * p.c_in * taps * out;
  const double moved = static_cast<double>(p.c_in) * in + static_cast<double>(p.c_out) * out;
  return !isDepthwise2d(p) && !fewChannelsPays(p) && 3 * packedChannels(p) <= 4 * p.c_out &&
         products >= 2.0 * context.lanes() * moved;
}

void convPackedBf16(const ConvParams& p, const float* x, const float* w, const float* bias,
                    const float* residual, float* y, const Team& team) {
  runPacked(p, x, w, bias, residual, y, team, {&kPackedTileTable<Bf16Tiles, 4>, &padPairs});
}
#else
bool takesPackedBf16(const ConvParams&) { return false; }
bool prefersPackedBf16(const ConvParams&, const ConvContext&) { return false; }
void convPackedBf16(const ConvParams&, const float*, const float*, const float*, const float*,
                    float*, const Team&) {}  // never run: the build lacks its tier
#endif

}  // namespace cgc::rt::detail
