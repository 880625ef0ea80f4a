// The int8 micro-kernels: one tile of kQTile (32) positions times one block
// of nb output channels, summed over the packed depth, into int32
// acc[nb][32]. A tile is [quads][32][4] uint8 (4 depths of a position
// together), a block of weights [quads][nb][4] int8 (kQuads) or int16
// (kWide), so each step broadcasts a channel's 4 weights against vectors of
// 8 (AVX2) or 16 (AVX-512) positions:
//  - AVX-512 VNNI: vpdpbusd (uint8 x int8, 4 products into each int32
//    lane, no intermediate saturation), nb = 8: 2 x 8 accumulators;
//  - AVX2 (and AVX-VNNI): vpmaddubsw into int16 pairs, vpmaddwd by ones
//    into int32, nb = 3: 4 x 3 accumulators; the packing's split keeps the
//    pairs from saturating (qpack.cpp), and addSplitEntries adds the rest.
//    With AVX-VNNI (CGC_ISA_AVXVNNI) the ymm vpdpbusd replaces both steps;
//  - portable: plain loops for any nb and for kWide.
// The compile-time macros pick the code, so a build for another target gets
// that target's kernels.
#pragma once

#include <cstdint>

#include "core/isa.h"

#if CGC_ISA_AVX2
#include <immintrin.h>
#endif

#include "int8/quant_support.h"

namespace cgc::rt::detail {

/// Any packing, any nb: the reference the vector kernels must equal.
template <typename W>
void productPortable(const uint8_t* a, const W* w, int64_t quads, int64_t nb, int64_t lanes,
                     int32_t* acc) {
  for (int64_t j = 0; j < nb; ++j)
    for (int64_t m = 0; m < lanes; ++m) acc[j * kQTile + m] = 0;
  for (int64_t q = 0; q < quads; ++q) {
    const uint8_t* aq = a + q * kQTile * kQuad;
    const W* wq = w + q * nb * kQuad;
    for (int64_t j = 0; j < nb; ++j) {
      const int32_t w0 = wq[j * kQuad], w1 = wq[j * kQuad + 1], w2 = wq[j * kQuad + 2],
                    w3 = wq[j * kQuad + 3];
      int32_t* out = acc + j * kQTile;
      for (int64_t m = 0; m < lanes; ++m) {
        const uint8_t* x = aq + m * kQuad;
        out[m] += x[0] * w0 + x[1] * w1 + x[2] * w2 + x[3] * w3;
      }
    }
  }
}

/// Quads ahead that productVnni prefetches (quadAt must answer that far
/// past `quads`): the direct convolution's quads are spread over the
/// planes of its taps, where the hardware prefetchers miss some (8 ahead beat
/// none, 4 and 16 on a 128-to-128 3x3 stride-2 layer on 56x56).
inline constexpr int64_t kPrefetchQuads = 8;

#if CGC_ISA_VNNI
inline constexpr int64_t kVnniBlock = 8;

inline int32_t wordAt(const int8_t* w) {
  int32_t word;
  std::memcpy(&word, w, 4);
  return word;
}

#define CGC_DPBUSD_CHANNEL(j)                                   \
  {                                                             \
    const __m512i b = _mm512_set1_epi32(wordAt(w + (j)*kQuad)); \
    c0##j = _mm512_dpbusd_epi32(c0##j, a0, b);                  \
    c1##j = _mm512_dpbusd_epi32(c1##j, a1, b);                  \
  }

/// c (+)= 32 positions x kVnniBlock channels over `quads` quads, quad q of
/// the positions at a + quadAt(q) (128 bytes), its weights [quads][8][4].
/// The 16 sums in named registers, not an array: GCC 12 rotated an array's
/// vectors through other registers and the stack on every quad (42% of
/// vpdpbusd's peak on L1-resident data; 98-102% like this).
template <typename QuadAt>
inline void productVnni(const uint8_t* a, QuadAt quadAt, int64_t quads, const int8_t* w,
                        __m512i (&c)[2][kVnniBlock]) {
  __m512i c00 = c[0][0], c01 = c[0][1], c02 = c[0][2], c03 = c[0][3], c04 = c[0][4], c05 = c[0][5],
          c06 = c[0][6], c07 = c[0][7], c10 = c[1][0], c11 = c[1][1], c12 = c[1][2], c13 = c[1][3],
          c14 = c[1][4], c15 = c[1][5], c16 = c[1][6], c17 = c[1][7];
  for (int64_t q = 0; q < quads; ++q, w += kVnniBlock * kQuad) {
    const uint8_t* aq = a + quadAt(q);
    const uint8_t* ahead = a + quadAt(q + kPrefetchQuads);
    _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(ahead + 64), _MM_HINT_T0);
    const __m512i a0 = _mm512_loadu_si512(aq), a1 = _mm512_loadu_si512(aq + 64);
    CGC_DPBUSD_CHANNEL(0)
    CGC_DPBUSD_CHANNEL(1)
    CGC_DPBUSD_CHANNEL(2)
    CGC_DPBUSD_CHANNEL(3)
    CGC_DPBUSD_CHANNEL(4)
    CGC_DPBUSD_CHANNEL(5)
    CGC_DPBUSD_CHANNEL(6)
    CGC_DPBUSD_CHANNEL(7)
  }
  c[0][0] = c00, c[0][1] = c01, c[0][2] = c02, c[0][3] = c03;
  c[0][4] = c04, c[0][5] = c05, c[0][6] = c06, c[0][7] = c07;
  c[1][0] = c10, c[1][1] = c11, c[1][2] = c12, c[1][3] = c13;
  c[1][4] = c14, c[1][5] = c15, c[1][6] = c16, c[1][7] = c17;
}
#undef CGC_DPBUSD_CHANNEL

/// acc[8][32] = a tile packed [quads][32][4] times one block of weights.
inline void productVnni(const uint8_t* a, const int8_t* w, int64_t quads, int32_t* acc) {
  __m512i c[2][kVnniBlock];
  for (auto& half : c)
    for (auto& v : half) v = _mm512_setzero_si512();
  // Prefetches past the last quad read the last again.
  productVnni(
      a, [quads](int64_t q) { return std::min(q, quads - 1) * kQTile * kQuad; }, quads, w, c);
  for (int64_t j = 0; j < kVnniBlock; ++j) {
    _mm512_storeu_si512(acc + j * kQTile, c[0][j]);
    _mm512_storeu_si512(acc + j * kQTile + 16, c[1][j]);
  }
}
#endif

#if CGC_ISA_AVX2
inline constexpr int64_t kAvx2Block = 3;

/// u8 x s8 quads into int32 lanes: vpmaddubsw + vpmaddwd (or AVX-VNNI).
inline __m256i dotQuads(__m256i acc, __m256i a, __m256i b, __m256i ones) {
#if CGC_ISA_AVXVNNI
  (void)ones;
  return _mm256_dpbusd_avx_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
#endif
}

inline __m256i broadcastQuad(const int8_t* w) {
  int32_t word;
  std::memcpy(&word, w, 4);
  return _mm256_set1_epi32(word);
}

/// nb = 3 channels x NA vectors of 8 positions (NA = 1..4: a tile's
/// positions that hold data).
template <int NA>
void productAvx2(const uint8_t* a, const int8_t* w, int64_t quads, int32_t* acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i c[NA][kAvx2Block];
  for (auto& row : c)
    for (auto& v : row) v = _mm256_setzero_si256();
  for (int64_t q = 0; q < quads; ++q, a += kQTile * kQuad, w += kAvx2Block * kQuad) {
    for (int i = 0; i < NA; ++i) {
      const __m256i av = _mm256_load_si256(reinterpret_cast<const __m256i*>(a + 32 * i));
      for (int64_t j = 0; j < kAvx2Block; ++j)
        c[i][j] = dotQuads(c[i][j], av, broadcastQuad(w + j * kQuad), ones);
    }
  }
  for (int64_t j = 0; j < kAvx2Block; ++j)
    for (int i = 0; i < NA; ++i)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + j * kQTile + 8 * i), c[i][j]);
}

/// kQuadsSplit: adds channel j's split entries (quad index, 4 weights) to
/// its NA vectors of sums, kept in registers over the entries.
template <int NA>
void addSplitEntriesAvx2(const uint8_t* a, const uint8_t* entries, int64_t count, int32_t* acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i c[NA];
  for (int i = 0; i < NA; ++i)
    c[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + 8 * i));
  for (int64_t e = 0; e < count; ++e, entries += 8) {
    int32_t quad;
    std::memcpy(&quad, entries, 4);
    const __m256i b = broadcastQuad(reinterpret_cast<const int8_t*>(entries + 4));
    const uint8_t* aq = a + quad * kQTile * kQuad;
    for (int i = 0; i < NA; ++i)
      c[i] =
          dotQuads(c[i], _mm256_load_si256(reinterpret_cast<const __m256i*>(aq + 32 * i)), b, ones);
  }
  for (int i = 0; i < NA; ++i) _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 8 * i), c[i]);
}

inline void addSplitEntries(const uint8_t* a, const uint8_t* entries, int64_t count, int64_t lanes,
                            int32_t* acc) {
  switch ((lanes + 7) / 8) {
    case 1:
      return addSplitEntriesAvx2<1>(a, entries, count, acc);
    case 2:
      return addSplitEntriesAvx2<2>(a, entries, count, acc);
    case 3:
      return addSplitEntriesAvx2<3>(a, entries, count, acc);
    default:
      return addSplitEntriesAvx2<4>(a, entries, count, acc);
  }
}
#endif

/// Portable form of addSplitEntries.
inline void addSplitEntriesPortable(const uint8_t* a, const uint8_t* entries, int64_t count,
                                    int64_t lanes, int32_t* acc) {
  for (int64_t e = 0; e < count; ++e, entries += 8) {
    int32_t quad;
    std::memcpy(&quad, entries, 4);
    const auto* w = reinterpret_cast<const int8_t*>(entries + 4);
    const uint8_t* aq = a + quad * kQTile * kQuad;
    for (int64_t m = 0; m < lanes; ++m)
      acc[m] +=
          aq[m * 4] * w[0] + aq[m * 4 + 1] * w[1] + aq[m * 4 + 2] * w[2] + aq[m * 4 + 3] * w[3];
  }
}

}  // namespace cgc::rt::detail
