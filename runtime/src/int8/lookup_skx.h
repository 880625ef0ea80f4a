// A table of 256 bytes applied to 64 bytes at a time (AVX-512BW: two
// vpermt2b, or their emulation in byte_permute_skx.h, each over half the
// table, and a blend by the index's top bit), for qlookup.
#pragma once

#include "int8/byte_permute_skx.h"

#if CGC_ISA_SKX
namespace cgc::rt::detail {

/// y[i] = table[x[i]] for i < count.
inline void lookupBytes(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t count) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  auto apply = [&](__m512i index) {
    const __m512i low = permuteBytes2(t0, index, t1), high = permuteBytes2(t2, index, t3);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(index), low, high);
  };
  int64_t i = 0;
  for (; i + 64 <= count; i += 64) _mm512_storeu_si512(y + i, apply(_mm512_loadu_si512(x + i)));
  if (i == count) return;
  const __mmask64 tail = ~__mmask64{0} >> (64 - (count - i));
  _mm512_mask_storeu_epi8(y + i, tail, apply(_mm512_maskz_loadu_epi8(tail, x + i)));
}

}  // namespace cgc::rt::detail
#endif
