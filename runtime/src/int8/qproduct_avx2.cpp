// The int8 product engine's AVX2 tier (qproduct.cpp calls it where the
// build has AVX2 and no better tier): the engine (qproduct_engine.h) on the
// tiles of kAvx2Block channels on vpmaddubsw and vpmaddwd, the split
// entries' second product and the 8-lane epilogue
// (quant_microkernels_avx2.h); finishRow for every build with AVX2; and the
// interleaving of 4 channels' rows into quads at stride 1.
#include "core/isa.h"

#if CGC_ISA_AVX2
#include "int8/quant_microkernels_avx2.h"

namespace cgc::rt::detail {

using Avx2 = Avx2Kernels<DotAvx2, false>;

void qProductTileAvx2(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                      int64_t b1) {
  engine::productTile<Avx2>(q, a, m0, valid, b0, b1);
}

void finishRowAvx2(const QEpilogue& e, int32_t bias, float multiplier, const int32_t* acc,
                   int64_t count, const void* residual, void* y) {
  engine::finishRow<Avx2>(e, bias, multiplier, acc, count, residual, y);
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
