// The int8 elementwise kernels' AVX-512 VBMI tier (quant_elementwise.cpp
// calls it where the build has VBMI): the 3x3 max pool in 64-byte vectors
// (max_pool_skx.h) with stride 2's even and odd columns picked by vpermt2b.
#include "core/isa.h"

#if CGC_ISA_VBMI
#include "int8/max_pool_skx.h"
#include "int8/quant_elementwise.h"

namespace cgc::rt::detail {
namespace {

/// Stride 2 on VBMI: a row's even and odd columns by vpermt2b.
struct PermutedColumns {
  __m512i evens, odds;

  PermutedColumns() {
    alignas(64) uint8_t even[64];
    for (int i = 0; i < 64; ++i) even[i] = static_cast<uint8_t>(2 * i);
    evens = _mm512_load_si512(even);
    odds = _mm512_add_epi8(evens, _mm512_set1_epi8(1));
  }

  template <typename Q>
  __m512i stride2(__m512i a, __m512i b, __m512i c, __m512i d) const {
    return maxBytes<Q>(
        maxBytes<Q>(_mm512_permutex2var_epi8(a, evens, b), _mm512_permutex2var_epi8(a, odds, b)),
        _mm512_permutex2var_epi8(c, evens, d));
  }
};

}  // namespace

template <typename Q>
void maxPool3x3Vbmi(const PoolParams& p, const Q* x, Q* y, Q* rowMax) {
  maxPool3x3Vectors<Q, PermutedColumns>(p, x, y, rowMax);
}

template void maxPool3x3Vbmi<int8_t>(const PoolParams&, const int8_t*, int8_t*, int8_t*);
template void maxPool3x3Vbmi<uint8_t>(const PoolParams&, const uint8_t*, uint8_t*, uint8_t*);

}  // namespace cgc::rt::detail
#endif
