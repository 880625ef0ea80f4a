// The int8 product engine shared by qconv and qgemm: one tile of positions
// times blocks of output channels (quant_microkernels.h), then the
// requantising epilogue, vectorised where the positions are contiguous in y
// or staged so (the matrix product's rows), scalar (finishQ) otherwise.
// The loops are qproduct_engine.h's, instantiated for each tier's kernels
// in the tier's file (qproduct_vnni.cpp, qproduct_avxvnni.cpp,
// qproduct_avx2.cpp); here the portable instance, the interleaving of
// activations into quads (AVX-512's and AVX2's in qproduct_skx.cpp and
// qproduct_avx2.cpp), and the choice of the build's best tier
// (core/build_tier.h).
#include <algorithm>
#include <cstring>

#include "core/build_tier.h"
#include "core/scratch.h"
#include "int8/qproduct_engine.h"

namespace cgc::rt::detail {
namespace {

/// The portable loops alone.
struct PortableKernels {
  static bool product(const uint8_t*, const int8_t*, int64_t, int64_t, QPacking, int64_t,
                      int32_t*) {
    return false;
  }
  static void addSplitEntries(const uint8_t* a, const uint8_t* entries, int64_t count,
                              int64_t lanes, int32_t* acc) {
    addSplitEntriesPortable(a, entries, count, lanes, acc);
  }
  static int64_t finishRow(const QEpilogue&, int32_t, float, const int32_t*, int64_t,
                           const uint8_t*, uint8_t*) {
    return 0;
  }
};

}  // namespace

void qProductTile(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                  int64_t b1) {
  if constexpr (buildHasTier("vnni"))
    qProductTileVnni(q, a, m0, valid, b0, b1);
  else if constexpr (buildHasTier("avxvnni"))
    qProductTileAvxVnni(q, a, m0, valid, b0, b1);
  else if constexpr (buildHasTier("avx2"))
    qProductTileAvx2(q, a, m0, valid, b0, b1);
  else
    engine::productTile<PortableKernels>(q, a, m0, valid, b0, b1);
}

void finishRow(const QEpilogue& e, int32_t bias, float multiplier, const int32_t* acc,
               int64_t count, const void* residual, void* y) {
  if constexpr (buildHasTier("avx2"))
    finishRowAvx2(e, bias, multiplier, acc, count, residual, y);
  else
    engine::finishRow<PortableKernels>(e, bias, multiplier, acc, count, residual, y);
}

namespace {

/// Columns the scalar loop interleaves: [from, q.count) of row i.
void interleaveTail(const QuadRows& q, int64_t i, int64_t from, uint8_t flip, uint8_t* out) {
  const int64_t at = i * q.srcStep;
  uint8_t* o = out + i * q.outStep;
  for (int64_t j = from; j < q.count; ++j)
    for (int r = 0; r < kQuad; ++r) o[4 * j + r] = q.src[r][at + j * q.stride] ^ flip;
}

}  // namespace

void interleaveQuad(const QuadRows& q, uint8_t flip, uint8_t* out) {
  if constexpr (buildHasTier("skx"))
    if (q.stride <= 2) return interleaveQuadsSkx(q, flip, out);
  for (int64_t i = 0; i < q.rows; ++i) {
    int64_t j = 0;
    if constexpr (buildHasTier("avx2")) j = interleaveRowAvx2(q, i, flip, out);
    interleaveTail(q, i, j, flip, out);
  }
}

ChannelTerms channelTerms(const QEpilogue& e, int64_t first, int64_t channels,
                          const int32_t* weightSums, int32_t activationZero, const float* w_scale,
                          bool perChannel, const int32_t* bias) {
  // A block of kMaxBlock past the last channel reads zeros.
  int32_t* sums = scratch<int32_t>(channels + kMaxBlock);
  float* multipliers = scratch<float>(channels + kMaxBlock);
  std::fill_n(sums + channels, kMaxBlock, 0);
  std::fill_n(multipliers + channels, kMaxBlock, 0.0f);
  const float divisor = e.kind == QOutput::kRequantAdd ? e.mid_scale : e.y_scale;
  for (int64_t c = 0; c < channels; ++c) {
    const int64_t channel = first + c;
    sums[c] = (bias ? bias[channel] : 0) - activationZero * weightSums[channel];
    if (e.kind != QOutput::kInt32)
      multipliers[c] = e.x_scale * w_scale[perChannel ? channel : 0] / divisor;
  }
  return {sums, multipliers};
}

}  // namespace cgc::rt::detail
