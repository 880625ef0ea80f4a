// The int8 product engine's AVX-VNNI tier (Alder Lake and later): AVX2's
// tiles (quant_microkernels_avx2.h) on the ymm vpdpbusd, which sums four
// uint8 x int8 products into int32 without vpmaddubsw's int16 saturation,
// so that it takes any kQuads block of kAvx2Block channels as well as the
// split packing.
#include "core/isa.h"

#if CGC_ISA_AVXVNNI
#include "int8/quant_microkernels_avx2.h"

namespace cgc::rt::detail {
namespace {

constexpr auto dotVnni = [](__m256i acc, __m256i a, __m256i b) {
  return _mm256_dpbusd_avx_epi32(acc, a, b);
};

}  // namespace

void productAvxVnni(const uint8_t* a, const int8_t* w, int64_t quads, int64_t lanes, int32_t* acc) {
  productLanes(a, w, quads, lanes, acc, dotVnni);
}

void addSplitEntriesAvxVnni(const uint8_t* a, const uint8_t* entries, int64_t count, int64_t lanes,
                            int32_t* acc) {
  addSplitLanes(a, entries, count, lanes, acc, dotVnni);
}

}  // namespace cgc::rt::detail
#endif
