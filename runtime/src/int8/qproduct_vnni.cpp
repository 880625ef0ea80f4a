// The int8 product engine's AVX-512 VNNI tier (qproduct.cpp and qgemm.cpp
// call it where the build has VNNI): the engine (qproduct_engine.h) with a
// tile of 32 positions times a kQuads block of kVnniBlock channels on
// vpdpbusd (quant_microkernels_vnni.h), AVX2's kernels for the other
// blocks, and qgemm's single rows of A against blocks of columns.
#include "core/isa.h"

#if CGC_ISA_VNNI
#include "cgc/kernels.h"
#include "int8/quant_microkernels_avx2.h"
#include "int8/quant_microkernels_vnni.h"

namespace cgc::rt::detail {

namespace {

/// acc[8][32] = a tile packed [quads][32][4] times one block of weights.
void blockVnni(const uint8_t* a, const int8_t* w, int64_t quads, int32_t* acc) {
  __m512i c[2][kVnniBlock];
  for (auto& half : c)
    for (auto& v : half) v = _mm512_setzero_si512();
  // Prefetches past the last quad read the last again.
  productVnni(
      a, [quads](int64_t q) { return std::min(q, quads - 1) * kQTile * kQuad; }, quads, w, c);
  for (int64_t j = 0; j < kVnniBlock; ++j) {
    _mm512_storeu_si512(acc + j * kQTile, c[0][j]);
    _mm512_storeu_si512(acc + j * kQTile + 16, c[1][j]);
  }
}

/// The engine's kernels: vpdpbusd on kQuads blocks of kVnniBlock
/// channels, AVX2's on the others.
struct VnniKernels : Avx2Kernels<DotAvx2, false> {
  static bool product(const uint8_t* a, const int8_t* w, int64_t quads, int64_t nb,
                      QPacking packing, int64_t lanes, int32_t* acc) {
    if (nb != kVnniBlock || packing != QPacking::kQuads)
      return Avx2Kernels::product(a, w, quads, nb, packing, lanes, acc);
    blockVnni(a, w, quads, acc);
    return true;
  }
};

}  // namespace

void qProductTileVnni(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                      int64_t b1) {
  engine::productTile<VnniKernels>(q, a, m0, valid, b0, b1);
}

void rowTimesBlocksVnni(const QGemmParams& p, const uint8_t* a, const uint8_t* weights,
                        int64_t quads, const ChannelTerms& terms, int64_t b0, int64_t b1,
                        uint8_t* y, const uint8_t* residual, uint8_t* row) {
  // The row as uint8 quads, once, into `row` (quads * 4 bytes): the zero
  // point past k.
  const uint8_t flip = p.a_signed ? 0x80 : 0;
  for (int64_t d = 0; d < quads * kQuad; ++d)
    row[d] = static_cast<uint8_t>((d < p.k ? a[d] : static_cast<uint8_t>(p.a_zero)) ^ flip);
  constexpr int64_t kBlocks = 4, kBlockBytes = kVnniBlock * kQuad;
  for (int64_t b = b0; b < b1; b += kBlocks) {
    const int64_t count = std::min(kBlocks, b1 - b);
    __m256i acc[kBlocks] = {};
    for (int64_t q = 0; q < quads; ++q) {
      int32_t word;
      std::memcpy(&word, row + q * kQuad, kQuad);
      const __m256i x = _mm256_set1_epi32(word);
      for (int64_t i = 0; i < count; ++i)
        acc[i] = _mm256_dpbusd_epi32(acc[i], x,
                                     _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                         weights + ((b + i) * quads + q) * kBlockBytes)));
    }
    for (int64_t i = 0; i < count; ++i) {
      alignas(32) int32_t sums[kVnniBlock];
      _mm256_store_si256(reinterpret_cast<__m256i*>(sums), acc[i]);
      for (int64_t j = 0; j < kVnniBlock; ++j) {
        const int64_t c = (b + i) * kVnniBlock + j;
        if (c >= p.n) break;
        const int32_t r = residual ? loadQ(residual, c, p.out.r_signed) : 0;
        storeQ(y, c, p.out.y_type,
               finishQ(p.out, sums[j], terms.bias[c],
                       p.out.kind == QOutput::kInt32 ? 1.0f : terms.multiplier[c], r));
      }
    }
  }
}

}  // namespace cgc::rt::detail
#endif
