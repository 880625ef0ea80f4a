// The AVX-512 VNNI product of one tile of 32 positions and one block of
// kVnniBlock output channels, vpdpbusd over the quads in 16 registers, with
// the positions of each quad where a functor says: qproduct_vnni.cpp's
// tiles (quads in a row) and the direct convolution's copied planes
// (qconv_direct.cpp: one offset per tap and quad). Included by the VNNI
// tier's files only.
#pragma once

#include "core/isa.h"

#if CGC_ISA_VNNI
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "int8/quant_microkernels.h"

namespace cgc::rt::detail {

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

}  // namespace cgc::rt::detail
#endif
