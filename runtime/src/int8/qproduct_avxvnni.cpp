// The int8 product engine's AVX-VNNI tier (Alder Lake and later;
// qproduct.cpp calls it where the build has AVX-VNNI and not AVX-512
// VNNI): AVX2's tiles and epilogue (quant_microkernels_avx2.h) on the ymm
// vpdpbusd, which sums four uint8 x int8 products into int32 without
// vpmaddubsw's int16 saturation, so that it takes any kQuads block of
// kAvx2Block channels as well as the split packing.
#include "core/isa.h"

#if CGC_ISA_AVXVNNI
#include "int8/quant_microkernels_avx2.h"

namespace cgc::rt::detail {
namespace {

struct DotAvxVnni {
  __m256i operator()(__m256i acc, __m256i a, __m256i b) const {
    return _mm256_dpbusd_avx_epi32(acc, a, b);
  }
};

}  // namespace

void qProductTileAvxVnni(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                         int64_t b1) {
  engine::productTile<Avx2Kernels<DotAvxVnni, true>>(q, a, m0, valid, b0, b1);
}

}  // namespace cgc::rt::detail
#endif
