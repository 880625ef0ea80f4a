// The int8 product engine shared by qconv and qgemm: one tile of positions
// times blocks of output channels (quant_microkernels.h), then the
// requantising epilogue, vectorised where the positions are contiguous in y
// or staged so (the matrix product's rows), scalar (finishQ) otherwise.
// Here the portable code and the choice of each step's tier (core/
// build_tier.h); the tiers' code in qproduct_vnni.cpp, qproduct_skx.cpp,
// qproduct_avxvnni.cpp and qproduct_avx2.cpp. The vector and the scalar
// epilogue compute the same float operations in the same order (the int8
// files are built with -ffp-contract=off), so a tile's vector part and its
// tail agree.
#include <algorithm>
#include <cstring>

#include "core/build_tier.h"
#include "core/scratch.h"
#include "int8/quant_microkernels.h"

namespace cgc::rt::detail {
namespace {

/// The sums of one block for `lanes` positions: the packing's kernel, or
/// the portable loops.
void blockSums(const QProduct& q, const uint8_t* a, int64_t block, int64_t lanes, int32_t* acc) {
  const int64_t nb = q.pack.nb;
  const QPackLayout l{0, (q.depth + kQuad - 1) / kQuad, 0, 0, 0, 0};
  const int64_t quads = l.quads;
  if (q.pack.packing == QPacking::kWide) {
    const auto* w = reinterpret_cast<const int16_t*>(q.packed) + block * quads * nb * kQuad;
    return productPortable(a, w, quads, nb, lanes, acc);
  }
  const auto* w = reinterpret_cast<const int8_t*>(q.packed) + block * quads * nb * kQuad;
  if constexpr (buildHasTier("vnni"))
    if (nb == kVnniBlock && q.pack.packing == QPacking::kQuads)
      return productVnni(a, w, quads, acc);
  if constexpr (buildHasTier("avxvnni"))
    if (nb == kAvx2Block) return productAvxVnni(a, w, quads, lanes, acc);
  if constexpr (buildHasTier("avx2"))
    if (nb == kAvx2Block && q.pack.packing == QPacking::kQuadsSplit)
      return productAvx2(a, w, quads, lanes, acc);
  productPortable(a, w, quads, nb, lanes, acc);
}

void addSplits(const QProduct& q, const uint8_t* a, int64_t channel, int64_t lanes, int32_t* acc) {
  const int32_t first = q.splitOffsets[channel], last = q.splitOffsets[channel + 1];
  if (first == last) return;
  const uint8_t* entries = q.splitEntries + 8 * first;
  if constexpr (buildHasTier("avxvnni"))
    addSplitEntriesAvxVnni(a, entries, last - first, lanes, acc);
  else if constexpr (buildHasTier("avx2"))
    addSplitEntriesAvx2(a, entries, last - first, lanes, acc);
  else
    addSplitEntriesPortable(a, entries, last - first, lanes, acc);
}

/// Channel c's results for positions [m0, m0 + lanes) from acc[lanes].
void finishChannel(const QProduct& q, int64_t c, int64_t m0, int64_t lanes, const int32_t* acc) {
  const QEpilogue& e = *q.out;
  const int32_t bias = q.terms.bias[c];
  const float multiplier = e.kind == QOutput::kInt32 ? 1.0f : q.terms.multiplier[c];
  const int64_t size = e.y_type == DType::kI32 ? 4 : 1;
  auto* y = static_cast<uint8_t*>(q.y) + (c * q.cStride) * size;
  const auto* r = static_cast<const uint8_t*>(q.residual) + (q.residual ? c * q.cStride : 0);
  if (q.mStride == 1)
    return finishRow(e, bias, multiplier, acc, lanes, r ? r + m0 : nullptr, y + m0 * size);
  for (int64_t m = 0; m < lanes; ++m) {
    const int64_t at = (m0 + m) * q.mStride;
    const int32_t residual = r ? loadQ(r, at, e.r_signed) : 0;
    storeQ(y, at, e.y_type, finishQ(e, acc[m], bias, multiplier, residual));
  }
}

}  // namespace

void finishRow(const QEpilogue& e, int32_t bias, float multiplier, const int32_t* acc,
               int64_t count, const void* residual, void* y) {
  const auto* r = static_cast<const uint8_t*>(residual);
  auto* out = static_cast<uint8_t*>(y);
  int64_t m = 0;
  if constexpr (buildHasTier("avx2")) m = finishRowAvx2(e, bias, multiplier, acc, count, r, out);
  for (; m < count; ++m)
    storeQ(out, m, e.y_type, finishQ(e, acc[m], bias, multiplier, r ? loadQ(r, m, e.r_signed) : 0));
}

namespace {

/// A block of channels of a row-major result (the matrix product's y[m][c]:
/// cStride 1): each channel finished by finishRow into a column of
/// `staged`, its residual gathered likewise, then stored row by row, so
/// that the epilogue runs on vectors rather than on one strided value at
/// a time.
void finishBlockRows(const QProduct& q, int64_t c0, int64_t channels, int64_t m0, int64_t valid,
                     const int32_t* acc) {
  const QEpilogue& e = *q.out;
  const int64_t size = e.y_type == DType::kI32 ? 4 : 1;
  alignas(64) uint8_t staged[kMaxBlock * kQTile * 4];
  alignas(64) uint8_t residual[kMaxBlock * kQTile];
  const auto* r = static_cast<const uint8_t*>(q.residual);
  auto* y = static_cast<uint8_t*>(q.y);
  for (int64_t j = 0; j < channels; ++j) {
    if (r)
      for (int64_t m = 0; m < valid; ++m)
        residual[j * kQTile + m] = r[(m0 + m) * q.mStride + c0 + j];
    const float multiplier = e.kind == QOutput::kInt32 ? 1.0f : q.terms.multiplier[c0 + j];
    finishRow(e, q.terms.bias[c0 + j], multiplier, acc + j * kQTile, valid,
              r ? residual + j * kQTile : nullptr, staged + j * kQTile * size);
  }
  if (size == 1 && channels == kMaxBlock) {
    // A block of 8 bytes a row: an interleaving store group GCC vectorises.
    for (int64_t m = 0; m < valid; ++m) {
      uint8_t row[kMaxBlock];
      for (int64_t j = 0; j < kMaxBlock; ++j) row[j] = staged[j * kQTile + m];
      std::memcpy(y + (m0 + m) * q.mStride + c0, row, kMaxBlock);
    }
    return;
  }
  for (int64_t m = 0; m < valid; ++m) {
    uint8_t* row = y + ((m0 + m) * q.mStride + c0) * size;
    for (int64_t j = 0; j < channels; ++j)
      std::memcpy(row + j * size, staged + (j * kQTile + m) * size, static_cast<size_t>(size));
  }
}

}  // namespace

void qProductTile(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                  int64_t b1) {
  alignas(64) int32_t acc[kMaxBlock * kQTile];
  const int64_t nb = q.pack.nb;
  for (int64_t b = b0; b < b1; ++b) {
    blockSums(q, a, b, valid, acc);
    const int64_t channels = std::min(nb, q.channels - b * nb);
    if (q.pack.packing == QPacking::kQuadsSplit)
      for (int64_t j = 0; j < channels; ++j) addSplits(q, a, b * nb + j, valid, acc + j * kQTile);
    if (q.mStride != 1 && q.cStride == 1) {
      finishBlockRows(q, b * nb, channels, m0, valid, acc);
      continue;
    }
    for (int64_t j = 0; j < channels; ++j)
      finishChannel(q, b * nb + j, m0, valid, acc + j * kQTile);
  }
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
