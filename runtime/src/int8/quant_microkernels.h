// The int8 micro-kernels: one tile of kQTile (32) positions times one block
// of nb output channels, summed over the packed depth, into int32
// acc[nb][32]. A tile is [quads][32][4] uint8 (4 depths of a position
// together), a block of weights [quads][nb][4] int8 (kQuads) or int16
// (kWide), so each step broadcasts a channel's 4 weights against vectors of
// 8 (AVX2) or 16 (AVX-512) positions. A file per tier:
//  - AVX-512 VNNI (qproduct_vnni.cpp, quant_microkernels_vnni.h): vpdpbusd
//    (uint8 x int8, 4 products into each int32 lane, no intermediate
//    saturation), nb = 8: 2 x 8 accumulators;
//  - AVX2 (qproduct_avx2.cpp, quant_microkernels_avx2.h): vpmaddubsw into
//    int16 pairs, vpmaddwd by ones into int32, nb = 3: 4 x 3 accumulators;
//    the packing's split keeps the pairs from saturating (qpack.cpp), and
//    addSplitEntries adds the rest. AVX-VNNI (qproduct_avxvnni.cpp): the
//    same tiles on the ymm vpdpbusd, which takes any kQuads block of 3;
//  - portable (here): plain loops for any nb and for kWide.
// qproduct.cpp calls the tiers' functions declared below where the build
// has the tier (core/build_tier.h), so a build for another target gets
// that target's kernels.
#pragma once

#include <cstdint>

#include "int8/quant_support.h"

namespace cgc::rt::detail {

/// Any packing, any nb: the reference the vector kernels must equal.
template <typename W>
void productPortable(const uint8_t* a, const W* w, int64_t quads, int64_t nb, int64_t lanes,
                     int32_t* acc) {
  for (int64_t j = 0; j < nb; ++j)
    for (int64_t m = 0; m < lanes; ++m) acc[j * kQTile + m] = 0;
  for (int64_t q = 0; q < quads; ++q) {
    const uint8_t* aq = a + q * kQTile * kQuad;
    const W* wq = w + q * nb * kQuad;
    for (int64_t j = 0; j < nb; ++j) {
      const int32_t w0 = wq[j * kQuad], w1 = wq[j * kQuad + 1], w2 = wq[j * kQuad + 2],
                    w3 = wq[j * kQuad + 3];
      int32_t* out = acc + j * kQTile;
      for (int64_t m = 0; m < lanes; ++m) {
        const uint8_t* x = aq + m * kQuad;
        out[m] += x[0] * w0 + x[1] * w1 + x[2] * w2 + x[3] * w3;
      }
    }
  }
}

/// Quads ahead that productVnni prefetches (quadAt must answer that far
/// past `quads`): the direct convolution's quads are spread over the
/// planes of its taps, where the hardware prefetchers miss some (8 ahead beat
/// none, 4 and 16 on a 128-to-128 3x3 stride-2 layer on 56x56).
inline constexpr int64_t kPrefetchQuads = 8;

/// qProductTile (quant_support.h) on the kernels of a tier
/// (qproduct_vnni.cpp, qproduct_avxvnni.cpp, qproduct_avx2.cpp), and
/// finishRow on AVX2's vectors.
void qProductTileVnni(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                      int64_t b1);
void qProductTileAvxVnni(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                         int64_t b1);
void qProductTileAvx2(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                      int64_t b1);
void finishRowAvx2(const QEpilogue& e, int32_t bias, float multiplier, const int32_t* acc,
                   int64_t count, const void* residual, void* y);

/// AVX-512 VNNI (qproduct_vnni.cpp): one row of A (p.k bytes) against the
/// kQuads blocks [b0, b1) of kVnniBlock columns, with finishQ per column:
/// qgemm's batch-1 rows, which a tile of 32 rows would waste. `row` is
/// scratch of quads * 4 bytes.
void rowTimesBlocksVnni(const QGemmParams& p, const uint8_t* a, const uint8_t* weights,
                        int64_t quads, const ChannelTerms& terms, int64_t b0, int64_t b1,
                        uint8_t* y, const uint8_t* residual, uint8_t* row);

/// interleaveQuad's row i at stride 1 on AVX2, returning the columns it
/// interleaved, and interleaveQuad at strides 1 and 2 on AVX-512
/// (qproduct_avx2.cpp, qproduct_skx.cpp).
int64_t interleaveRowAvx2(const QuadRows& q, int64_t i, uint8_t flip, uint8_t* out);
void interleaveQuadsSkx(const QuadRows& q, uint8_t flip, uint8_t* out);

/// Portable form of addSplitEntries.
inline void addSplitEntriesPortable(const uint8_t* a, const uint8_t* entries, int64_t count,
                                    int64_t lanes, int32_t* acc) {
  for (int64_t e = 0; e < count; ++e, entries += 8) {
    int32_t quad;
    std::memcpy(&quad, entries, 4);
    const auto* w = reinterpret_cast<const int8_t*>(entries + 4);
    const uint8_t* aq = a + quad * kQTile * kQuad;
    for (int64_t m = 0; m < lanes; ++m)
      acc[m] +=
          aq[m * 4] * w[0] + aq[m * 4 + 1] * w[1] + aq[m * 4 + 2] * w[2] + aq[m * 4 + 3] * w[3];
  }
}

}  // namespace cgc::rt::detail
