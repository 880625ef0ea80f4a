// The int8 product engine's loops (qProductTile: a tile of positions over
// blocks of output channels, then the requantising epilogue; finishRow) for
// one tier's kernels K, so that they inline into the loops: qproduct.cpp
// instantiates them with the portable loops, each tier's file
// (qproduct_avx2.cpp, qproduct_avxvnni.cpp, qproduct_vnni.cpp) with its
// own, and qProductTile runs the build's best. K is a struct of
//   static bool product(a, w, quads, nb, packing, lanes, acc): a block's
//     sums where the tier has a kernel for nb and the packing (false: the
//     portable loops run);
//   static void addSplitEntries(a, entries, count, lanes, acc);
//   static int64_t finishRow(e, bias, multiplier, acc, count, residual, y):
//     the first positions of a row it finishes in vectors (finishQ's float
//     operations in finishQ's order: the int8 files are built with
//     -ffp-contract=off), the scalar loop the rest.
#pragma once

#include <algorithm>
#include <cstring>

#include "int8/quant_microkernels.h"

namespace cgc::rt::detail::engine {

/// The sums of one block for `lanes` positions: the tier's kernel, or the
/// portable loops.
template <typename K>
void blockSums(const QProduct& q, const uint8_t* a, int64_t block, int64_t lanes, int32_t* acc) {
  const int64_t nb = q.pack.nb;
  const int64_t quads = (q.depth + kQuad - 1) / kQuad;
  if (q.pack.packing == QPacking::kWide) {
    const auto* w = reinterpret_cast<const int16_t*>(q.packed) + block * quads * nb * kQuad;
    return productPortable(a, w, quads, nb, lanes, acc);
  }
  const auto* w = reinterpret_cast<const int8_t*>(q.packed) + block * quads * nb * kQuad;
  if (!K::product(a, w, quads, nb, q.pack.packing, lanes, acc))
    productPortable(a, w, quads, nb, lanes, acc);
}

template <typename K>
void addSplits(const QProduct& q, const uint8_t* a, int64_t channel, int64_t lanes, int32_t* acc) {
  const int32_t first = q.splitOffsets[channel], last = q.splitOffsets[channel + 1];
  if (first != last) K::addSplitEntries(a, q.splitEntries + 8 * first, last - first, lanes, acc);
}

/// finishRow (quant_support.h) on K's vectors and the scalar loop.
template <typename K>
void finishRow(const QEpilogue& e, int32_t bias, float multiplier, const int32_t* acc,
               int64_t count, const void* residual, void* y) {
  const auto* r = static_cast<const uint8_t*>(residual);
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t m = K::finishRow(e, bias, multiplier, acc, count, r, out); m < count; ++m)
    storeQ(out, m, e.y_type, finishQ(e, acc[m], bias, multiplier, r ? loadQ(r, m, e.r_signed) : 0));
}

/// Channel c's results for positions [m0, m0 + lanes) from acc[lanes].
template <typename K>
void finishChannel(const QProduct& q, int64_t c, int64_t m0, int64_t lanes, const int32_t* acc) {
  const QEpilogue& e = *q.out;
  const int32_t bias = q.terms.bias[c];
  const float multiplier = e.kind == QOutput::kInt32 ? 1.0f : q.terms.multiplier[c];
  const int64_t size = e.y_type == DType::kI32 ? 4 : 1;
  auto* y = static_cast<uint8_t*>(q.y) + (c * q.cStride) * size;
  const auto* r = static_cast<const uint8_t*>(q.residual) + (q.residual ? c * q.cStride : 0);
  if (q.mStride == 1)
    return finishRow<K>(e, bias, multiplier, acc, lanes, r ? r + m0 : nullptr, y + m0 * size);
  for (int64_t m = 0; m < lanes; ++m) {
    const int64_t at = (m0 + m) * q.mStride;
    const int32_t residual = r ? loadQ(r, at, e.r_signed) : 0;
    storeQ(y, at, e.y_type, finishQ(e, acc[m], bias, multiplier, residual));
  }
}

/// A block of channels of a row-major result (the matrix product's y[m][c]:
/// cStride 1): each channel finished by finishRow into a column of
/// `staged`, its residual gathered likewise, then stored row by row, so
/// that the epilogue runs on vectors rather than on one strided value at
/// a time.
template <typename K>
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
    finishRow<K>(e, q.terms.bias[c0 + j], multiplier, acc + j * kQTile, valid,
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

/// qProductTile (quant_support.h) on K.
template <typename K>
void productTile(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                 int64_t b1) {
  alignas(64) int32_t acc[kMaxBlock * kQTile];
  const int64_t nb = q.pack.nb;
  for (int64_t b = b0; b < b1; ++b) {
    blockSums<K>(q, a, b, valid, acc);
    const int64_t channels = std::min(nb, q.channels - b * nb);
    if (q.pack.packing == QPacking::kQuadsSplit)
      for (int64_t j = 0; j < channels; ++j)
        addSplits<K>(q, a, b * nb + j, valid, acc + j * kQTile);
    if (q.mStride != 1 && q.cStride == 1) {
      finishBlockRows<K>(q, b * nb, channels, m0, valid, acc);
      continue;
    }
    for (int64_t j = 0; j < channels; ++j)
      finishChannel<K>(q, b * nb + j, m0, valid, acc + j * kQTile);
  }
}

}  // namespace cgc::rt::detail::engine
