// The int8 elementwise kernels' AVX-512 tier (quant_elementwise.cpp calls
// it where the build has AVX-512 F/BW): qlookup's table on 64 bytes at a
// time (byte_permute_skx.h's vpermt2b or its emulation), the 3x3 max
// pool at strides 1 and 2 in 64-byte vectors (max_pool_skx.h) without VBMI,
// and the 2x2 max pool at strides 1 and 2 (with or without VBMI).
#include "core/isa.h"

#if CGC_ISA_SKX
#include "int8/byte_permute_skx.h"
#include "int8/max_pool_skx.h"
#include "int8/quant_elementwise.h"

namespace cgc::rt::detail {

/// y[i] = table[x[i]] for i < count.
void lookupBytesSkx(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t count) {
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

/// Stride 2 without VBMI: the max of each word's two bytes and the next
/// word's first, whose low bytes a vpackuswb and a vpermq put in order.
struct PackedColumns {
  __m512i low = _mm512_set1_epi16(0xFF);
  __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);  // vpackuswb's qwords

  template <typename Q>
  __m512i stride2(__m512i a, __m512i b, __m512i c, __m512i d) const {
    // The low byte of word j: the max of columns 2j, 2j + 1 and 2j + 2.
    const __m512i ac = maxBytes<Q>(maxBytes<Q>(a, _mm512_srli_epi16(a, 8)), c);
    const __m512i bd = maxBytes<Q>(maxBytes<Q>(b, _mm512_srli_epi16(b, 8)), d);
    return _mm512_permutexvar_epi64(
        order, _mm512_packus_epi16(_mm512_and_si512(ac, low), _mm512_and_si512(bd, low)));
  }
};

template <typename Q>
void maxPool3x3Skx(const PoolParams& p, const Q* x, Q* y, Q* rowMax) {
  maxPool3x3Vectors<Q, PackedColumns>(p, x, y, rowMax);
}

template void maxPool3x3Skx<int8_t>(const PoolParams&, const int8_t*, int8_t*, int8_t*);
template void maxPool3x3Skx<uint8_t>(const PoolParams&, const uint8_t*, uint8_t*, uint8_t*);

template <typename Q>
void maxPool2x2Skx(const PoolParams& p, const Q* x, Q* y, Q* rowMax) {
  maxPool2x2Vectors<Q>(p, x, y, rowMax);
}

template void maxPool2x2Skx<int8_t>(const PoolParams&, const int8_t*, int8_t*, int8_t*);
template void maxPool2x2Skx<uint8_t>(const PoolParams&, const uint8_t*, uint8_t*, uint8_t*);

}  // namespace cgc::rt::detail
#endif
