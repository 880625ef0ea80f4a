// The depthwise int8 loops' AVX2 tier (qconv_depthwise.cpp calls it where
// the build has AVX2): stride 2's even columns widened 16 at a time, and an
// output row's window sums on vpmaddwd, 16 columns in two registers over
// all its tap pairs.
#include "core/isa.h"

#if CGC_ISA_AVX2
#include <immintrin.h>

#include <type_traits>

#include "int8/qconv_depthwise.h"

namespace cgc::rt::detail {

/// out[i] = src[2 * i] - zero for the first 16s of `count`: 32 bytes
/// split into even and odd with one shuffle, the even ones widened. At
/// stride 2 the scalar gather took a third of the kernel's time on
/// MobileNetV2's 96 planes of 112x112.
template <typename T>
int64_t everyOtherAvx2(const T* src, int64_t count, int16_t zero, int16_t* out) {
  int64_t i = 0;
  // Even bytes of each 128-bit lane first: lane 0's 8 in bytes 0-7, lane 1's in 16-23.
  const __m256i evenFirst = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                             0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m256i z = _mm256_set1_epi16(zero);
  // 2 * i + 31 < 2 * count: the load stays within the row's elements.
  for (; i + 16 <= count - 1; i += 16) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i));
    v = _mm256_shuffle_epi8(v, evenFirst);
    v = _mm256_permute4x64_epi64(v, 0x08);  // qwords 0 and 2: the 16 even bytes
    const __m128i even = _mm256_castsi256_si128(v);
    const __m256i wide =
        std::is_signed_v<T> ? _mm256_cvtepi8_epi16(even) : _mm256_cvtepu8_epi16(even);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_sub_epi16(wide, z));
  }
  return i;
}

template int64_t everyOtherAvx2(const int8_t*, int64_t, int16_t, int16_t*);
template int64_t everyOtherAvx2(const uint8_t*, int64_t, int16_t, int16_t*);

/// The window sums, 16 columns at a time.
int64_t rowSumsAvx2(int64_t columns, const TapPairs& pairs, int32_t* acc) {
  int64_t c = 0;
  for (; c + 16 <= columns; c += 16) {
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int64_t t = 0; t < pairs.count; ++t) {
      const __m256i wp = _mm256_set1_epi32(pairs.weights[t]);
      const __m256i a =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs.source[0][t] + c));
      const __m256i b =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs.source[1][t] + c));
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), wp));
      hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), wp));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + c),
                        _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + c + 8),
                        _mm256_permute2x128_si256(lo, hi, 0x31));
  }
  return c;
}

}  // namespace cgc::rt::detail
#endif
