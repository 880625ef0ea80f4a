// The AVX2 product of one tile of positions and one block of kAvx2Block
// output channels, on a product of uint8 and int8 quads into int32 lanes
// that the tier's file passes in (`Dot`: dot(acc, a, b) adds to each int32
// lane of acc the four products of its bytes in a and b): vpmaddubsw and
// vpmaddwd in qproduct_avx2.cpp, AVX-VNNI's ymm vpdpbusd in
// qproduct_avxvnni.cpp. Included by those two files only.
#pragma once

#include "core/isa.h"

#if CGC_ISA_AVX2
#include <immintrin.h>

#include <cstring>

#include "int8/quant_microkernels.h"

namespace cgc::rt::detail {

inline __m256i broadcastQuad(const int8_t* w) {
  int32_t word;
  std::memcpy(&word, w, 4);
  return _mm256_set1_epi32(word);
}

/// nb = 3 channels x NA vectors of 8 positions (NA = 1..4: a tile's
/// positions that hold data).
template <int NA, typename Dot>
void productTile(const uint8_t* a, const int8_t* w, int64_t quads, int32_t* acc, Dot dot) {
  __m256i c[NA][kAvx2Block];
  for (auto& row : c)
    for (auto& v : row) v = _mm256_setzero_si256();
  for (int64_t q = 0; q < quads; ++q, a += kQTile * kQuad, w += kAvx2Block * kQuad) {
    for (int i = 0; i < NA; ++i) {
      const __m256i av = _mm256_load_si256(reinterpret_cast<const __m256i*>(a + 32 * i));
      for (int64_t j = 0; j < kAvx2Block; ++j)
        c[i][j] = dot(c[i][j], av, broadcastQuad(w + j * kQuad));
    }
  }
  for (int64_t j = 0; j < kAvx2Block; ++j)
    for (int i = 0; i < NA; ++i)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + j * kQTile + 8 * i), c[i][j]);
}

/// kQuadsSplit: adds channel j's split entries (quad index, 4 weights) to
/// its NA vectors of sums, kept in registers over the entries.
template <int NA, typename Dot>
void addSplitTile(const uint8_t* a, const uint8_t* entries, int64_t count, int32_t* acc, Dot dot) {
  __m256i c[NA];
  for (int i = 0; i < NA; ++i)
    c[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + 8 * i));
  for (int64_t e = 0; e < count; ++e, entries += 8) {
    int32_t quad;
    std::memcpy(&quad, entries, 4);
    const __m256i b = broadcastQuad(reinterpret_cast<const int8_t*>(entries + 4));
    const uint8_t* aq = a + quad * kQTile * kQuad;
    for (int i = 0; i < NA; ++i)
      c[i] = dot(c[i], _mm256_load_si256(reinterpret_cast<const __m256i*>(aq + 32 * i)), b);
  }
  for (int i = 0; i < NA; ++i) _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 8 * i), c[i]);
}

/// productTile for the vectors of 8 that hold `lanes` positions.
template <typename Dot>
void productLanes(const uint8_t* a, const int8_t* w, int64_t quads, int64_t lanes, int32_t* acc,
                  Dot dot) {
  switch ((lanes + 7) / 8) {
    case 1:
      return productTile<1>(a, w, quads, acc, dot);
    case 2:
      return productTile<2>(a, w, quads, acc, dot);
    case 3:
      return productTile<3>(a, w, quads, acc, dot);
    default:
      return productTile<4>(a, w, quads, acc, dot);
  }
}

/// addSplitTile for the vectors of 8 that hold `lanes` positions.
template <typename Dot>
void addSplitLanes(const uint8_t* a, const uint8_t* entries, int64_t count, int64_t lanes,
                   int32_t* acc, Dot dot) {
  switch ((lanes + 7) / 8) {
    case 1:
      return addSplitTile<1>(a, entries, count, acc, dot);
    case 2:
      return addSplitTile<2>(a, entries, count, acc, dot);
    case 3:
      return addSplitTile<3>(a, entries, count, acc, dot);
    default:
      return addSplitTile<4>(a, entries, count, acc, dot);
  }
}

}  // namespace cgc::rt::detail
#endif
