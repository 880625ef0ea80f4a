// The int8 direct convolution's product along output channels (AVX-512
// VNNI; the DirectChannels variant of qconv_variants.def, whose choice
// qconv_direct.cpp makes), for the planes whose tiles of 32 positions
// would hold lanes that are not outputs: 7x7 planes fill 49 of 64, 14x14 planes at
// 3x3 196 of 224 (their virtual rows carry the window's reach). Here a
// tile is 7 output positions times up to 3 vectors of 16 output channels,
// 21 sums in registers; each step broadcasts one position's quad of input
// channels against a vector of 16 channels' 4 weights, so every lane is an
// output and every plane of ResNet and MobileNetV2 (7 x 7, 14 x 14, ...)
// splits into whole tiles. It reads what the product along positions reads
// (qconv_direct.cpp): the copied planes, where position v of quad q is at
// v * 4 + offsets[q], and the weights packed in blocks of 8 channels, a
// vector of 16 being two blocks' 32 bytes of one quad (one load and one
// insert: 93% of vpdpbusd's peak on L1-resident data, against 97% for
// weights packed 16 wide, which the other product cannot read).
//
// The epilogue requantises each vector of 16 channels for 8 positions (the
// 8th a copy), packs them into bytes (packBytes64) and transposes them with
// two vpermt2b (VBMI: qconv_channels_vbmi.cpp's transposes; without it,
// two vpshufb and two dword unpacks: qconv_channels_vnni.cpp's) into 16
// rows of 8 positions, stored with one masked store per channel; a
// residual is read the same way round (two vpermt2b, or two vpermt2w).
// Here the kernel, for the transposes of the tier's file that includes it.
//
// The team splits (image, group, chunk of 3 vectors of channels, tile),
// tiles innermost, so that a chunk's weights stay in L2 while its tiles
// pass.
#pragma once

#include "core/diagnostics.h"
#include "core/isa.h"
#include "int8/qconv_direct.h"

#if CGC_ISA_VNNI
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "int8/quant_support.h"
#include "int8/requant_skx.h"

// GCC 12's extracts and permutes pass _mm512_undefined_* (bug 105593, as
// requant_skx.h).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED

namespace cgc::rt::detail::channels {

inline constexpr int64_t kVectors = 3;                       // channel vectors a tile
inline constexpr int64_t kChunk = kVectors * kChannelLanes;  // output channels a chunk
inline constexpr int64_t kBlockBytes = kMaxBlock * kQuad;    // one quad of a packed block
inline constexpr int kPositions = static_cast<int>(kTilePositions);

/// One tile's job: where its inputs, weights and terms are.
struct Tile {
  const uint8_t* at[kPositions];  // each position's first quad in the planes
  const int8_t* w;                // the chunk's first packed block
  int64_t blockStride;            // bytes from one packed block to the next
  int64_t quads;
  const int64_t* offsets;
  const int32_t* bias;  // the chunk's first channel's
  const float* multiplier;
};

/// The 16 channels of blocks w and w + stride at one quad.
inline __m512i channelWeights(const int8_t* w, int64_t stride) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + stride)), 1);
}

inline __m512i broadcastQuad(const uint8_t* a) {
  int32_t word;
  std::memcpy(&word, a, 4);
  return _mm512_set1_epi32(word);
}

#define CGC_CHANNEL_STEP(p)                                             \
  {                                                                     \
    const __m512i a = broadcastQuad(t.at[p] + offset);                  \
    c##p##0 = _mm512_dpbusd_epi32(c##p##0, a, w0);                      \
    if constexpr (V > 1) c##p##1 = _mm512_dpbusd_epi32(c##p##1, a, w1); \
    if constexpr (V > 2) c##p##2 = _mm512_dpbusd_epi32(c##p##2, a, w2); \
  }
#define CGC_CHANNEL_SUMS(p) __m512i c##p##0 = b0, c##p##1 = b1, c##p##2 = b2;
#define CGC_CHANNEL_OUT(p) out[p][0] = c##p##0, out[p][1] = c##p##1, out[p][2] = c##p##2;
#define CGC_EACH_POSITION(m) m(0) m(1) m(2) m(3) m(4) m(5) m(6)

/// out[p][v] = the biases plus the products of position p and channel
/// vector v over every quad. The 21 sums in named registers (an array's
/// went through the stack: 40% of the peak, against 93%).
template <int V>
__attribute__((noinline)) void channelProducts(const Tile& t,
                                               __m512i (&out)[kPositions][kVectors]) {
  const __m512i b0 = _mm512_loadu_si512(t.bias);
  const __m512i b1 = V > 1 ? _mm512_loadu_si512(t.bias + 16) : b0;
  const __m512i b2 = V > 2 ? _mm512_loadu_si512(t.bias + 32) : b0;
  CGC_EACH_POSITION(CGC_CHANNEL_SUMS);
  const int64_t stride = t.blockStride;
  const int8_t* w = t.w;
  for (int64_t q = 0; q < t.quads; ++q, w += kBlockBytes) {
    const int64_t offset = t.offsets[q];
    const __m512i w0 = channelWeights(w, stride);
    const __m512i w1 = V > 1 ? channelWeights(w + 2 * stride, stride) : w0;
    const __m512i w2 = V > 2 ? channelWeights(w + 4 * stride, stride) : w0;
    CGC_EACH_POSITION(CGC_CHANNEL_STEP);
  }
  CGC_EACH_POSITION(CGC_CHANNEL_OUT);
}
#undef CGC_CHANNEL_STEP
#undef CGC_CHANNEL_SUMS
#undef CGC_EACH_POSITION
#undef CGC_CHANNEL_OUT

/// 128-bit lane i of v.
inline __m128i lane128(__m512i v, int i) {
  switch (i) {
    case 0:
      return _mm512_castsi512_si128(v);
    case 1:
      return _mm512_extracti32x4_epi32(v, 1);
    case 2:
      return _mm512_extracti32x4_epi32(v, 2);
    default:
      return _mm512_extracti32x4_epi32(v, 3);
  }
}

/// Where a tile's outputs go: channel 0 of the vector at position 0 of the
/// tile, the plane, the tile's positions (a mask of bytes) and the residual.
struct Rows {
  uint8_t* y;
  const uint8_t* residual;
  int64_t plane;
  __mmask16 positions;
};

/// The residual of 16 channels at the tile's positions as [4 positions][16
/// channels] bytes, positions 0-3 and 4-7.
template <typename Transposes>
inline void loadResidual(const Transposes& t, const Rows& r, __m512i (&out)[2]) {
  __m512i rows[2];
  for (int h = 0; h < 2; ++h) {
    rows[h] = _mm512_setzero_si512();
    for (int pair = 0; pair < 4; ++pair) {
      const uint8_t* at = r.residual + (8 * h + 2 * pair) * r.plane;
      const __m128i lo = _mm_maskz_loadu_epi8(r.positions, at);
      const __m128i hi = _mm_maskz_loadu_epi8(r.positions, at + r.plane);
      const __m512i both = Transposes::residualPair(lo, hi);
      rows[h] = _mm512_mask_shuffle_i32x4(rows[h], static_cast<__mmask16>(0xF << (4 * pair)), both,
                                          both, 0);
    }
  }
  for (int h = 0; h < 2; ++h) out[h] = t.residualPositions(rows, h);
}

/// Stores 16 channels x 8 positions (packBytes64's order, positions 0-3 in
/// a, 4-7 in b) as rows of y, the tile's positions of each.
template <typename Transposes>
inline void storeRows(const Transposes& t, __m512i a, __m512i b, const Rows& r) {
  __m512i rows[2];
  t.rowTables(a, b, rows);
  for (int h = 0; h < 2; ++h) {
    for (int lane = 0; lane < 4; ++lane) {
      const __m128i pair = lane128(rows[h], lane);
      uint8_t* at = r.y + Transposes::rowChannel(h, lane) * r.plane;
      _mm_mask_storeu_epi8(at, r.positions, pair);
      _mm_mask_storeu_epi8(at + r.plane, r.positions, _mm_unpackhi_epi64(pair, pair));
    }
  }
}

/// The epilogue of one tile: each channel vector requantised for its 7
/// positions (and an 8th, a copy), packed, transposed and stored. kFast:
/// rounded before the zero point and the clamp, which packBytes64 adds
/// (packsToBytes).
template <QOutput kKind, bool kFast, typename Transposes>
void storeTile(const Requant16& e, const Transposes& t, const __m512i (&c)[kPositions][kVectors],
               int vectors, const float* multiplier, Rows r) {
  Requant16 same = e;
  same.kind = kKind;  // a constant the compiler folds into requant16
  for (int v = 0; v < vectors; ++v, r.y += kChannelLanes * r.plane) {
    const __m512 m = _mm512_loadu_ps(multiplier + kChannelLanes * v);
    __m512i residual[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    if constexpr (kKind == QOutput::kRequantAdd) {
      loadResidual(t, r, residual);
      r.residual += kChannelLanes * r.plane;
    }
    __m512i q[8];
    for (int p = 0; p < 8; ++p) {
      const __m512i sums = c[std::min(p, kPositions - 1)][v];
      __m512i r16 = _mm512_setzero_si512();
      if constexpr (kKind == QOutput::kRequantAdd)
        r16 = widen16(lane128(residual[p / 4], p % 4), e.rSigned);
      if constexpr (kFast && kKind == QOutput::kRequantAdd)
        q[p] = residualRound16(e, sums, m, r16);
      else if constexpr (kFast)
        q[p] = scaleRound16(sums, m);
      else
        q[p] = requant16(same, sums, m, r16);
    }
    const __m512i zero = kFast ? e.zero16 : _mm512_setzero_si512();
    storeRows(t, packBytes64(e, q[0], q[1], q[2], q[3], zero),
              packBytes64(e, q[4], q[5], q[6], q[7], zero), r);
  }
}

/// This thread's share of the items (image and group, chunk, tile), tiles
/// innermost, by the channel vectors they compute: a last chunk of fewer
/// vectors weighs less (256 channels are 5 chunks of 3 vectors and one of
/// 1: an even split of the items gave one of two threads 144 channels, the
/// other 112).
inline Range share(const Team& team, int64_t images, int64_t chunks, int64_t lastVectors,
                   int64_t tiles) {
  const int64_t chunkWeight = kVectors * tiles;
  const int64_t perImage = (chunks - 1) * chunkWeight + lastVectors * tiles;
  const auto itemAt = [&](int64_t weight) {  // the first item from `weight` on
    const int64_t image = weight / perImage, rest = weight % perImage;
    const int64_t chunk = std::min(rest / chunkWeight, chunks - 1);
    const int64_t vectors = chunk == chunks - 1 ? lastVectors : kVectors;
    const int64_t tile = (rest - chunk * chunkWeight + vectors - 1) / vectors;
    return (image * chunks + chunk) * tiles + tile;
  };
  const int64_t total = images * perImage;
  return {itemAt(total * team.thread() / team.size()),
          itemAt(total * (team.thread() + 1) / team.size())};
}

/// DirectGeometry's channel-vector product (qconv_direct.h's
/// channelTilesVnni) with the transposes of a tier.
template <typename Transposes>
void channelTilesWith(const QConvParams& p, const DirectGeometry& g, const uint8_t* planes,
                      const int64_t* offsets, const uint8_t* packed, const int32_t* weightSums,
                      const float* w_scale, const int32_t* bias, const void* residual, void* y,
                      const Team& team) {
  const Requant16 epilogue(p.out);
  const Transposes transposes;
  const int32_t activationZero = p.x_zero + (p.x_signed ? 128 : 0);
  const int64_t plane = p.h_out * p.w_out, images = p.n * p.groups;
  const int64_t tiles = (plane + kTilePositions - 1) / kTilePositions;
  const int64_t chunks = (g.coutG + kChunk - 1) / kChunk;
  const int64_t blockStride = g.quads * kBlockBytes;
  const int64_t lastVectors = (g.coutG - (chunks - 1) * kChunk) / kChannelLanes;
  const Range items = share(team, images, chunks, lastVectors, tiles);
  int64_t termsGroup = -1;
  ChannelTerms terms{};
  bool fast = false;
  for (int64_t item = items.begin; item < items.end; ++item) {
    const int64_t tile = item % tiles, chunk = item / tiles % chunks;
    const int64_t image = item / (tiles * chunks), group = image % p.groups;
    if (group != termsGroup) {
      terms = channelTerms(p.out, group * g.coutG, g.coutG, weightSums, activationZero, w_scale,
                           p.per_channel, bias);
      termsGroup = group;
      fast = packsToBytes(p.out, terms.multiplier, g.coutG);
    }
    const int64_t first = tile * kTilePositions;
    const int64_t count = std::min(kTilePositions, plane - first);
    const int64_t c0 = chunk * kChunk;
    const int vectors = static_cast<int>(std::min(kChunk, g.coutG - c0) / kChannelLanes);
    Tile t{};
    for (int i = 0; i < kPositions; ++i) {
      const int64_t at = first + std::min<int64_t>(i, count - 1);  // past the plane: a copy
      const int64_t v = at / p.w_out * g.wq + at % p.w_out;
      t.at[i] = planes + image * g.imageBytes + v * kQuad;
    }
    t.w =
        reinterpret_cast<const int8_t*>(packed) + (group * g.blocks + c0 / kMaxBlock) * blockStride;
    t.blockStride = blockStride, t.quads = g.quads, t.offsets = offsets;
    t.bias = terms.bias + c0, t.multiplier = terms.multiplier + c0;
    __m512i c[kPositions][kVectors];
    if (vectors == 3)
      channelProducts<3>(t, c);
    else if (vectors == 2)
      channelProducts<2>(t, c);
    else
      channelProducts<1>(t, c);
    const int64_t channel = image / p.groups * p.c_out + group * g.coutG + c0;  // y's
    const Rows rows{
        static_cast<uint8_t*>(y) + channel * plane + first,
        residual ? static_cast<const uint8_t*>(residual) + channel * plane + first : nullptr, plane,
        static_cast<__mmask16>((1u << count) - 1)};
    if (p.out.kind == QOutput::kRequantAdd && fast)
      storeTile<QOutput::kRequantAdd, true>(epilogue, transposes, c, vectors, t.multiplier, rows);
    else if (p.out.kind == QOutput::kRequantAdd)
      storeTile<QOutput::kRequantAdd, false>(epilogue, transposes, c, vectors, t.multiplier, rows);
    else if (fast)
      storeTile<QOutput::kRequant, true>(epilogue, transposes, c, vectors, t.multiplier, rows);
    else
      storeTile<QOutput::kRequant, false>(epilogue, transposes, c, vectors, t.multiplier, rows);
  }
}

}  // namespace cgc::rt::detail::channels

#pragma GCC diagnostic pop
#endif
