// qgemm: the int8 matrix product (QLinearMatMul, MatMulInteger, and the
// MatMul or Gemm that fuse-quantized turns into int8), on the same product
// engine as qconv: rows of A are its positions, columns of B its output
// channels. A tile of 32 rows of A is packed as [quads][32][4] (4
// consecutive depths of a row are 4 bytes of that row, so packing is a
// transpose of 32-bit words); the epilogue writes each column of the tile
// at the row stride n. B is packed by the compiler (constant weights) or,
// for a B computed at run time, per batch into scratch. The team splits
// (batch, row tiles) and, where there are fewer of those than threads,
// blocks of columns.
#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "core/build_tier.h"
#include "core/scratch.h"
#include "int8/quant_microkernels.h"
#include "int8/quant_support.h"

namespace cgc::rt {
namespace {

using detail::kQTile;
using detail::kQuad;

/// Rows [m0, m0 + 32) of A (k columns) as a tile; rows past m and depths
/// past k hold the zero point.
void packRows(const QGemmParams& p, const uint8_t* a, int64_t m0, uint8_t* tile) {
  const int64_t quads = (p.k + kQuad - 1) / kQuad;
  const uint8_t pad = static_cast<uint8_t>(p.a_zero);
  const uint8_t flip = p.a_signed ? 0x80 : 0;
  uint8_t quad[kQuad];
  for (int64_t r = 0; r < kQTile; ++r) {
    const int64_t row = m0 + r;
    const uint8_t* src = a + row * p.k;
    for (int64_t q = 0; q < quads; ++q) {
      uint8_t* out = tile + (q * kQTile + r) * kQuad;
      if (row < p.m && q * kQuad + kQuad <= p.k) {
        std::memcpy(quad, src + q * kQuad, kQuad);
      } else {
        for (int64_t i = 0; i < kQuad; ++i)
          quad[i] = row < p.m && q * kQuad + i < p.k ? src[q * kQuad + i] : pad;
      }
      for (int64_t i = 0; i < kQuad; ++i) out[i] = quad[i] ^ flip;
    }
  }
}

/// Offset of batch index `flat` in elements, given per-dimension strides.
int64_t batchOffset(const QGemmParams& p, int64_t flat, const PerDim<int64_t>& strides) {
  int64_t offset = 0;
  for (int32_t d = p.batch_rank - 1; d >= 0; --d) {
    offset += flat % p.batch_shape[d] * strides[d];
    flat /= p.batch_shape[d];
  }
  return offset;
}

}  // namespace

void qgemm(const QGemmParams& given, const void* a, const void* a_zero_point, const void* b,
           const float* b_scale, const void* b_zero, const int32_t* bias, const void* residual,
           void* y, const Team& team) {
  QGemmParams p = given;
  if (a_zero_point) p.a_zero = detail::loadQ(a_zero_point, 0, p.a_signed);
  int64_t batches = 1;
  for (int32_t d = 0; d < p.batch_rank; ++d) batches *= p.batch_shape[d];
  const QWeightShape shape{1, p.n, p.k, p.trans_b, p.b_signed, p.per_column};
  const int64_t quads = (p.k + kQuad - 1) / kQuad;
  const int64_t tiles = (p.m + kQTile - 1) / kQTile;
  const int32_t activationZero = p.a_zero + (p.a_signed ? 128 : 0);
  const int64_t ySize = p.out.y_type == DType::kI32 ? 4 : 1;
  const bool packed = p.packing != QPacking::kNone;
  QPackInfo info{p.packing, p.pack_nb, 0, 0};
  if (!packed)
    info =
        planQWeights(shape, b, b_zero, preferredQPacking(runtime_isa_tier()), runtime_isa_tier());
  const detail::QPackLayout layout = detail::qPackLayout(shape, info);

  const int64_t rowItems = batches * tiles;
  const int64_t chunks =
      std::min(layout.blocks, std::max<int64_t>(1, (2 * team.size() + rowItems - 1) / rowItems));
  const int64_t blocksPerChunk = (layout.blocks + chunks - 1) / chunks;
  const Range items = team.split(rowItems * chunks);
  uint8_t* tile = detail::scratch<uint8_t>(quads * kQTile * kQuad);
  uint8_t* own = packed ? nullptr : reinterpret_cast<uint8_t*>(detail::scratch<int8_t>(info.bytes));
  int64_t packedBatch = -1;
  const uint8_t* weights = static_cast<const uint8_t*>(b);
  detail::ChannelTerms terms{};
  for (int64_t item = items.begin; item < items.end; ++item) {
    const int64_t row = item / chunks, chunk = item % chunks;
    const int64_t batch = row / tiles, m0 = row % tiles * kQTile;
    if (!packed && batch != packedBatch) {
      const int64_t offset = batchOffset(p, batch, p.b_batch_strides);
      packQWeights(shape, info, static_cast<const uint8_t*>(b) + offset, b_zero, own);
      weights = own;
    }
    if (packedBatch < 0 || (!packed && batch != packedBatch))
      terms = detail::channelTerms(p.out, 0, p.n,
                                   reinterpret_cast<const int32_t*>(weights + layout.sumsOffset),
                                   activationZero, b_scale, p.per_column, bias);
    packedBatch = batch;
    if constexpr (detail::buildHasTier("vnni"))
      if (p.m == 1 && info.packing == QPacking::kQuads && info.nb == detail::kVnniBlock) {
        const int64_t b0 = chunk * blocksPerChunk,
                      b1 = std::min(layout.blocks, b0 + blocksPerChunk);
        detail::rowTimesBlocksVnni(
            p, static_cast<const uint8_t*>(a) + batchOffset(p, batch, p.a_batch_strides), weights,
            quads, terms, b0, b1, static_cast<uint8_t*>(y) + batch * p.n * ySize,
            residual ? static_cast<const uint8_t*>(residual) + batch * p.n : nullptr, tile);
        continue;
      }
    packRows(p, static_cast<const uint8_t*>(a) + batchOffset(p, batch, p.a_batch_strides), m0,
             tile);
    const int64_t first = batch * p.m * p.n;
    const detail::QProduct q{p.k,
                             p.n,
                             weights,
                             info,
                             reinterpret_cast<const int32_t*>(weights + layout.splitOffset),
                             weights + layout.entriesOffset,
                             terms,
                             &p.out,
                             static_cast<uint8_t*>(y) + first * ySize,
                             residual ? static_cast<const uint8_t*>(residual) + first : nullptr,
                             1,
                             p.n};
    const int64_t b0 = chunk * blocksPerChunk, b1 = std::min(layout.blocks, b0 + blocksPerChunk);
    detail::qProductTile(q, tile, m0, std::min(kQTile, p.m - m0), b0, b1);
  }
}

}  // namespace cgc::rt
