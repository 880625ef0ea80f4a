// The int8 product engine's AVX-512 tier (qproduct.cpp calls it where the
// build has AVX-512 F/BW): the interleaving of 4 channels' rows into quads
// at strides 1 and 2, which the implicit GEMM's tiles and the direct
// convolution's planes are packed by.
#include "core/isa.h"

#if CGC_ISA_SKX
#include <algorithm>

#include "int8/requant_skx.h"

namespace cgc::rt::detail {

// GCC 12's permutes pass _mm512_undefined_* (bug 105593, as requant_skx.h).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED

namespace {

/// interleaveQuad on AVX-512. Stride 1: 64 columns at a time, byte and
/// word unpacks of the 4 rows (as the AVX2 loop) and a transpose of their
/// 128-bit lanes, 16 shuffles. Then 32 at a time, the last masked: lane L
/// of a pair of rows holds the words (row 0's byte, row 1's) of columns
/// 4L .. 4L + 3 then 16 + 4L .. 16 + 4L + 3 (stride 1: a vpermd of each
/// row and a byte unpack; stride 2: each row's even bytes, and a vpermq of
/// the words), so that the word unpacks of the two pairs are the quads of
/// columns 0-15 and 16-31: 8 shuffles. Masked loads and stores only where
/// needed: they made rows of 32 columns (qconv.cpp's tiles) a quarter
/// slower than the AVX2 loop, on Zen 5. (Four vpermt2b per 32 columns, with
/// VBMI, ran slower there.)
template <int kStride>
void interleaveQuads(const QuadRows& q, uint8_t flip, uint8_t* out) {
  const __m512i f = _mm512_set1_epi8(static_cast<char>(flip));
  const __m512i spread = _mm512_set_epi32(0, 0, 7, 3, 0, 0, 6, 2, 0, 0, 5, 1, 0, 0, 4, 0);
  const __m512i halves = _mm512_set_epi64(7, 3, 6, 2, 5, 1, 4, 0);
  const __m512i low = _mm512_set1_epi16(0xFF);
  const int64_t count = q.count;  // a local: the stores could alias q
  for (int64_t i = 0; i < q.rows; ++i) {
    const int64_t at = i * q.srcStep;
    uint8_t* o = out + i * q.outStep;
    int64_t j = 0;
    for (; kStride == 1 && j + 64 <= count; j += 64) {
      const auto load = [&](int r) {
        return _mm512_xor_si512(_mm512_loadu_si512(q.src[r] + at + j), f);
      };
      const __m512i a = load(0), b = load(1), c = load(2), d = load(3);
      const __m512i abLo = _mm512_unpacklo_epi8(a, b), abHi = _mm512_unpackhi_epi8(a, b);
      const __m512i cdLo = _mm512_unpacklo_epi8(c, d), cdHi = _mm512_unpackhi_epi8(c, d);
      // Lane L of qk: the quads of columns 16L + 4k .. 16L + 4k + 3.
      const __m512i q0 = _mm512_unpacklo_epi16(abLo, cdLo), q1 = _mm512_unpackhi_epi16(abLo, cdLo);
      const __m512i q2 = _mm512_unpacklo_epi16(abHi, cdHi), q3 = _mm512_unpackhi_epi16(abHi, cdHi);
      const __m512i t0 = _mm512_shuffle_i64x2(q0, q1, 0x44),
                    t1 = _mm512_shuffle_i64x2(q0, q1, 0xEE);
      const __m512i t2 = _mm512_shuffle_i64x2(q2, q3, 0x44),
                    t3 = _mm512_shuffle_i64x2(q2, q3, 0xEE);
      _mm512_storeu_si512(o + 4 * j, _mm512_shuffle_i64x2(t0, t2, 0x88));
      _mm512_storeu_si512(o + 4 * j + 64, _mm512_shuffle_i64x2(t0, t2, 0xDD));
      _mm512_storeu_si512(o + 4 * j + 128, _mm512_shuffle_i64x2(t1, t3, 0x88));
      _mm512_storeu_si512(o + 4 * j + 192, _mm512_shuffle_i64x2(t1, t3, 0xDD));
    }
    for (; j < count; j += 32) {
      const int64_t n = std::min<int64_t>(32, count - j);
      const __mmask64 in = firstBytes((n - 1) * kStride + 1);
      const auto load = [&](int r) {
        const uint8_t* from = q.src[r] + at + j * kStride;
        if (kStride == 1 && n == 32)
          return _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(from)));
        return _mm512_maskz_loadu_epi8(in, from);
      };
      const auto pair = [&](int r) {
        if constexpr (kStride == 1)
          return _mm512_unpacklo_epi8(_mm512_permutexvar_epi32(spread, load(r)),
                                      _mm512_permutexvar_epi32(spread, load(r + 1)));
        else  // (a & low) | b << 8: A & C | B
          return _mm512_permutexvar_epi64(
              halves,
              _mm512_ternarylogic_epi32(load(r), _mm512_slli_epi16(load(r + 1), 8), low, 0xEC));
      };
      const __m512i p01 = pair(0), p23 = pair(2);
      const __m512i lo = _mm512_xor_si512(_mm512_unpacklo_epi16(p01, p23), f);
      const __m512i hi = _mm512_xor_si512(_mm512_unpackhi_epi16(p01, p23), f);
      if (n == 32) {
        _mm512_storeu_si512(o + 4 * j, lo);
        _mm512_storeu_si512(o + 4 * j + 64, hi);
      } else {
        _mm512_mask_storeu_epi8(o + 4 * j, firstBytes(4 * n), lo);
        _mm512_mask_storeu_epi8(o + 4 * j + 64, firstBytes(4 * n - 64), hi);
      }
    }
  }
}

}  // namespace

void interleaveQuadsSkx(const QuadRows& q, uint8_t flip, uint8_t* out) {
  if (q.stride == 1)
    interleaveQuads<1>(q, flip, out);
  else
    interleaveQuads<2>(q, flip, out);
}

#pragma GCC diagnostic pop

}  // namespace cgc::rt::detail
#endif
