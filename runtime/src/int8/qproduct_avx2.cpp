// The int8 product engine's AVX2 tier (qproduct.cpp calls it where the
// build has AVX2): the tiles of kAvx2Block channels on vpmaddubsw and
// vpmaddwd (quant_microkernels_avx2.h), the split entries' second
// product, the requantising epilogue on 8 contiguous positions, and the
// interleaving of 4 channels' rows into quads at stride 1. The epilogue
// computes finishQ's float operations in finishQ's order (this file is
// built with -ffp-contract=off), so a row's vector part and its tail agree.
#include "core/isa.h"

#if CGC_ISA_AVX2
#include "int8/quant_microkernels_avx2.h"

namespace cgc::rt::detail {
namespace {

constexpr auto dotAvx2 = [](__m256i acc, __m256i a, __m256i b) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)));
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
void finish8(const QEpilogue& e, const int32_t* acc, int32_t bias, float multiplier,
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

}  // namespace

void productAvx2(const uint8_t* a, const int8_t* w, int64_t quads, int64_t lanes, int32_t* acc) {
  productLanes(a, w, quads, lanes, acc, dotAvx2);
}

void addSplitEntriesAvx2(const uint8_t* a, const uint8_t* entries, int64_t count, int64_t lanes,
                         int32_t* acc) {
  addSplitLanes(a, entries, count, lanes, acc, dotAvx2);
}

int64_t finishRowAvx2(const QEpilogue& e, int32_t bias, float multiplier, const int32_t* acc,
                      int64_t count, const uint8_t* residual, uint8_t* y) {
  const int64_t size = e.y_type == DType::kI32 ? 4 : 1;
  int64_t m = 0;
  for (; m + 8 <= count; m += 8)
    finish8(e, acc + m, bias, multiplier, residual ? residual + m : nullptr, y + m * size);
  return m;
}

int64_t interleaveRowAvx2(const QuadRows& q, int64_t i, uint8_t flip, uint8_t* out) {
  const __m256i f = _mm256_set1_epi8(static_cast<char>(flip));
  const int64_t at = i * q.srcStep;
  int64_t j = 0;
  auto load = [&](int r) {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q.src[r] + at + j)),
                            f);
  };
  for (; q.stride == 1 && j + 32 <= q.count; j += 32) {
    const __m256i a = load(0), b = load(1), c = load(2), d = load(3);
    const __m256i abLo = _mm256_unpacklo_epi8(a, b), abHi = _mm256_unpackhi_epi8(a, b);
    const __m256i cdLo = _mm256_unpacklo_epi8(c, d), cdHi = _mm256_unpackhi_epi8(c, d);
    const __m256i q0 = _mm256_unpacklo_epi16(abLo, cdLo), q1 = _mm256_unpackhi_epi16(abLo, cdLo);
    const __m256i q2 = _mm256_unpacklo_epi16(abHi, cdHi), q3 = _mm256_unpackhi_epi16(abHi, cdHi);
    auto* o = reinterpret_cast<__m256i*>(out + i * q.outStep + 4 * j);
    _mm256_storeu_si256(o, _mm256_permute2x128_si256(q0, q1, 0x20));
    _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(q2, q3, 0x20));
    _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(q0, q1, 0x31));
    _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(q2, q3, 0x31));
  }
  return j;
}

}  // namespace cgc::rt::detail
#endif
