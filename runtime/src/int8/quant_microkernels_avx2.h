// The AVX2 product of one tile of positions and one block of kAvx2Block
// output channels, on a product of uint8 and int8 quads into int32 lanes
// (`Dot`: dot(acc, a, b) adds to each int32 lane of acc the four products
// of its bytes in a and b): vpmaddubsw and vpmaddwd (DotAvx2), or AVX-VNNI's
// ymm vpdpbusd (qproduct_avxvnni.cpp); the 8-lane epilogue; and the engine's
// kernels made of them (Avx2Kernels). Included by the tier files of AVX2
// and above.
#pragma once

#include "core/isa.h"

#if CGC_ISA_AVX2
#include <immintrin.h>

#include <cstring>

#include "int8/qproduct_engine.h"

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

/// vpmaddubsw + vpmaddwd: AVX2's quad product (exact where the packing's
/// split keeps vpmaddubsw's pairs from saturating).
struct DotAvx2 {
  __m256i operator()(__m256i acc, __m256i a, __m256i b) const {
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)));
  }
};

/// round_half_even(v) + zero clamped to [lo, hi], 8 lanes (roundClamp).
inline __m256i roundClamp8(__m256 v, int32_t zero, int32_t lo, int32_t hi) {
  v = _mm256_max_ps(v, _mm256_set1_ps(static_cast<float>(lo - zero)));
  v = _mm256_min_ps(v, _mm256_set1_ps(static_cast<float>(hi - zero)));
  return _mm256_add_epi32(_mm256_cvtps_epi32(v), _mm256_set1_epi32(zero));
}

inline __m256i loadResidual8(const void* r, bool isSigned) {
  const __m128i bytes = _mm_loadl_epi64(static_cast<const __m128i*>(r));
  return isSigned ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
}

/// Stores 8 int32 in [-128, 255] as bytes.
inline void storeBytes8(void* y, __m256i v) {
  const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
  const __m128i words = _mm_packs_epi32(lo, hi);
  const __m128i bytes = _mm_packus_epi16(_mm_and_si128(words, _mm_set1_epi16(0xff)), words);
  _mm_storel_epi64(static_cast<__m128i*>(y), bytes);
}

/// Eight contiguous results of channel c (finishQ on 8 lanes).
inline void finish8(const QEpilogue& e, const int32_t* acc, int32_t bias, float multiplier,
                    const void* residual, void* y) {
  const __m256i sums = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc)),
                                        _mm256_set1_epi32(bias));
  if (e.kind == QOutput::kInt32) {
    _mm256_storeu_si256(static_cast<__m256i*>(y), sums);
    return;
  }
  const __m256 scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(sums), _mm256_set1_ps(multiplier));
  __m256i q;
  if (e.kind == QOutput::kRequant) {
    q = roundClamp8(scaled, e.y_zero, e.y_min, e.y_max);
  } else {
    const __m256i mid = roundClamp8(scaled, e.mid_zero, e.mid_min, e.mid_max);
    const AddRatios ratio = addRatios(e);
    const __m256 a =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(mid, _mm256_set1_epi32(e.mid_zero))),
                      _mm256_set1_ps(ratio.mid));
    const __m256i r =
        _mm256_sub_epi32(loadResidual8(residual, e.r_signed), _mm256_set1_epi32(e.r_zero));
    const __m256 b = _mm256_mul_ps(_mm256_cvtepi32_ps(r), _mm256_set1_ps(ratio.r));
    q = roundClamp8(_mm256_add_ps(a, b), e.y_zero, e.y_min, e.y_max);
  }
  storeBytes8(y, q);
}

/// The engine's kernels (qproduct_engine.h) on the tiles of kAvx2Block
/// channels with the quad product Dot: on kQuadsSplit blocks, or on any
/// kQuads block of 3 where Dot cannot saturate (kAnyQuads).
template <typename Dot, bool kAnyQuads>
struct Avx2Kernels {
  static bool product(const uint8_t* a, const int8_t* w, int64_t quads, int64_t nb,
                      QPacking packing, int64_t lanes, int32_t* acc) {
    if (nb != kAvx2Block || !(kAnyQuads || packing == QPacking::kQuadsSplit)) return false;
    productLanes(a, w, quads, lanes, acc, Dot{});
    return true;
  }
  static void addSplitEntries(const uint8_t* a, const uint8_t* entries, int64_t count,
                              int64_t lanes, int32_t* acc) {
    addSplitLanes(a, entries, count, lanes, acc, Dot{});
  }
  static int64_t finishRow(const QEpilogue& e, int32_t bias, float multiplier, const int32_t* acc,
                           int64_t count, const uint8_t* residual, uint8_t* y) {
    const int64_t size = e.y_type == DType::kI32 ? 4 : 1;
    int64_t m = 0;
    for (; m + 8 <= count; m += 8)
      finish8(e, acc + m, bias, multiplier, residual ? residual + m : nullptr, y + m * size);
    return m;
  }
};

}  // namespace cgc::rt::detail
#endif
