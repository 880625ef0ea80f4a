// qconv's direct variants (qconv_variants.def): the int8 convolution
// without im2col, for weights packed kTapQuads. Direct, by tiles of
// positions, is what AVX-512 VNNI prefers for every layer that is not
// depthwise (any build runs it: without VNNI on the portable loops);
// DirectChannels, by tiles of channels (qconv_channels_vnni.cpp), for the
// planes whose tiles of positions would hold lanes that are not outputs.
//
// The input is copied once per call into padded planes, 4 channels
// interleaved, in which every tap of the window reads a tile's positions
// as contiguous bytes. For image n, group g, quad of input channels cq,
// row phase ry of the stride and column plane cp, a plane of [hq][wq][4]
// uint8 whose element (i, j) is the input at row i * stride_h + ry -
// pad_top, column j * stride_w + base(cp) - pad_left (the zero point
// outside the image and for channels past c_in). Output (oy, ox) is the
// virtual position v = oy * wq + ox of every plane, and tap (kh, kw) reads
// row phase (kh * dilation_h) % stride_h at v + (kh * dilation_h /
// stride_h) * wq + shift(kw) in column plane cp(kw):
//  - column phases (cp = (kw * dilation_w) % stride_w, base = cp, shift =
//    kw * dilation_w / stride_w): wq is w_out plus the window's reach, and
//    a tile also computes the columns between rows, which it does not store
//    (2 of 58 at 56x56);
//  - where those would cost a tenth of the tiles (at 8x8, 3x3: 3 tiles
//    instead of 2), a plane per column tap (cp = kw, base = kw * dilation_w, shift = 0):
//    wq is w_out, the input is copied k_w times (small: such planes are
//    small), and a tile's positions are y's.
// So a tile's 32 positions are 128 contiguous bytes for every (tap, quad),
// the same addressing at any stride, dilation and padding.
//
// The product (qconv_direct_vnni.cpp) is quant_microkernels_vnni.h's
// productVnni: 32 positions x 8 output channels in 16 registers, vpdpbusd
// over the quads (tap by tap, quads of channels within), one offset per
// quad into the copy. The requantising epilogue runs on those registers (16
// lanes at a time, the same float operations as finishQ: the int8 files
// are built with -ffp-contract=off) and stores each output row's part of
// the tile with one masked store per channel; a residual is read the same
// way. Without VNNI the product and epilogue are the portable loops here.
//
// The copy is shared: each thread copies a share of the (image, group,
// quad, phase) planes into thread 0's scratch. Then the team splits (image,
// group, chunk of output-channel blocks, tile), tiles innermost, so that
// a chunk's weights (at most kChunkBytes) stay in L2 while its tiles pass;
// each thread runs its tiles in groups of 8, the chunk's blocks outer.
#include "int8/qconv_direct.h"

#include <type_traits>

#include "cgc/isa_tiers.h"
#include "cgc/kernels.h"
#include "core/build_tier.h"
#include "core/diagnostics.h"
#include "core/scratch.h"
#include "int8/qconv_strategies.h"
#include "int8/quant_microkernels.h"
#include "int8/requant_skx.h"

namespace cgc::rt {
namespace {

using detail::kQTile;
using detail::kQuad;
constexpr int64_t kBlock = detail::kMaxBlock;  // output channels per packed block
constexpr int64_t kChunkBytes = 128 * 1024;    // packed weights per chunk of blocks

using Geometry = detail::DirectGeometry;
using detail::BlockJob;
using detail::TileRuns;

/// The most (block, tile) products a thread of `threads` runs where the
/// team splits (chunk of blocks, tile) items, tiles innermost.
int64_t heaviestShare(int64_t blocks, int64_t chunks, int64_t tiles, int threads) {
  const int64_t chunkBlocks = (blocks + chunks - 1) / chunks;
  int64_t heaviest = 0;
  for (int t = 0; t < threads; ++t) {
    const Range r = Team(t, threads, nullptr).split(chunks * tiles);
    int64_t load = 0;
    for (int64_t c = r.begin / tiles; c * tiles < r.end; ++c) {
      const int64_t items = std::min(r.end, (c + 1) * tiles) - std::max(r.begin, c * tiles);
      load += items * std::clamp<int64_t>(blocks - c * chunkBlocks, 0, chunkBlocks);
    }
    heaviest = std::max(heaviest, load);
  }
  return heaviest;
}

/// The tiles of 32 positions that cover an output plane with a plane per
/// column tap (`with`) and with a plane per phase (`without`), whose rows
/// carry the window's reach.
struct TileCounts {
  int64_t with, without;
};

TileCounts tileCounts(const QConvParams& p) {
  const int64_t colReach = (p.k_w - 1) * p.dilation_w / p.stride_w;
  return {(p.h_out * p.w_out + kQTile - 1) / kQTile,
          (p.h_out * (p.w_out + colReach) + kQTile - 1) / kQTile};
}

/// channelTiles: the product along channels (DirectChannels), on the
/// planes per phase: it computes outputs only, whatever wq.
Geometry geometryOf(const QConvParams& p, int threads, bool channelTiles) {
  Geometry g{};
  g.cinG = p.c_in / p.groups, g.coutG = p.c_out / p.groups;
  g.channelQuads = (g.cinG + kQuad - 1) / kQuad;
  g.taps = p.k_h * p.k_w;
  g.quads = g.taps * g.channelQuads;
  const int64_t rowReach = (p.k_h - 1) * p.dilation_h / p.stride_h;
  const int64_t colReach = (p.k_w - 1) * p.dilation_w / p.stride_w;
  // A plane per column tap where that saves a tenth of the tiles (8x8 at
  // 3x3: 2 tiles instead of 3; not 7x7, 2 either way).
  const TileCounts tiles = tileCounts(p);
  g.tapPlanes = !channelTiles && tiles.with * 10 < tiles.without * 9;
  g.channelTiles = channelTiles;
  g.columnPlanes = g.tapPlanes ? p.k_w : p.stride_w;
  g.wq = g.tapPlanes ? p.w_out : p.w_out + colReach;
  g.hq = p.h_out + rowReach;
  g.virtualPositions = p.h_out * g.wq;
  g.tiles = (g.virtualPositions + kQTile - 1) / kQTile;
  // The last tile reads up to kQTile positions past the last row.
  const int64_t positions = g.hq * g.wq + colReach + kQTile;
  g.planeBytes = (positions * kQuad + 63) / 64 * 64;
  g.imageBytes = g.channelQuads * p.stride_h * g.columnPlanes * g.planeBytes;
  g.blocks = (g.coutG + kBlock - 1) / kBlock;
  // At least the chunks that keep a chunk's weights within kChunkBytes;
  // more where the team's items then split more evenly: a 14x14 layer's 7
  // tiles split 4 and 3 on two threads, 2 chunks of its 72 blocks 7 and 7.
  const int64_t most = std::clamp<int64_t>(kChunkBytes / (g.quads * kBlock * kQuad), 1, g.blocks);
  const int64_t fewest = (g.blocks + most - 1) / most;
  int64_t best = -1;
  for (int64_t chunks = fewest; chunks <= std::min(g.blocks, fewest + 2 * threads); ++chunks) {
    const int64_t load = heaviestShare(g.blocks, chunks, g.tiles, threads);
    if (best < 0 || load * 10 < best * 9) best = load, g.chunks = chunks;
  }
  g.chunkBlocks = (g.blocks + g.chunks - 1) / g.chunks;
  return g;
}

/// Column plane cp's first input column (before padding) and the planes'
/// column shift for tap kw.
int64_t columnBase(const QConvParams& p, const Geometry& g, int64_t cp) {
  return g.tapPlanes ? cp * p.dilation_w : cp;
}
int64_t columnPlane(const QConvParams& p, const Geometry& g, int64_t kw) {
  return g.tapPlanes ? kw : kw * p.dilation_w % p.stride_w;
}
int64_t columnShift(const QConvParams& p, const Geometry& g, int64_t kw) {
  return g.tapPlanes ? 0 : kw * p.dilation_w / p.stride_w;
}

/// Whether some tap reads row phase ry and column plane cp (a 1x1 window
/// at stride 2 reads one plane of four: the others are not copied).
bool planeRead(const QConvParams& p, const Geometry& g, int64_t ry, int64_t cp) {
  bool row = false, column = false;
  for (int64_t kh = 0; kh < p.k_h; ++kh) row = row || kh * p.dilation_h % p.stride_h == ry;
  for (int64_t kw = 0; kw < p.k_w; ++kw) column = column || columnPlane(p, g, kw) == cp;
  return row && column;
}

/// Copies plane (ry, cp) of quad cq (image n, group g) into `planes`.
void copyPlane(const QConvParams& p, const Geometry& g, const uint8_t* x, int64_t n, int64_t group,
               int64_t cq, int64_t ry, int64_t cp, uint8_t* planes) {
  const uint8_t flip = p.x_signed ? 0x80 : 0;
  const auto rawZero = static_cast<uint8_t>(p.x_zero);
  // Channels past c_in read rows of the zero point.
  thread_local std::vector<uint8_t> padRows;
  const auto imageSize = static_cast<size_t>(p.h_in * p.w_in);
  if ((cq + 1) * kQuad > g.cinG && (padRows.size() != imageSize || padRows[0] != rawZero))
    padRows.assign(imageSize, rawZero);
  uint8_t* plane = planes + ((cq * p.stride_h + ry) * g.columnPlanes + cp) * g.planeBytes;
  // Columns j of the plane inside the image: [j0, j1); its rows i
  // inside the image: [i0, i1).
  const int64_t first = columnBase(p, g, cp) - p.pad_left;  // input column of j = 0
  const int64_t j0 = std::min(g.wq, first >= 0 ? 0 : (-first + p.stride_w - 1) / p.stride_w);
  const int64_t j1 = std::clamp<int64_t>(
      first >= p.w_in ? 0 : (p.w_in - first + p.stride_w - 1) / p.stride_w, j0, g.wq);
  const int64_t top = p.pad_top - ry;  // plane row i reads input row i * stride_h - top
  const int64_t i0 = std::clamp<int64_t>((top + p.stride_h - 1) / p.stride_h, 0, g.hq);
  const int64_t i1 = std::clamp<int64_t>((p.h_in + top + p.stride_h - 1) / p.stride_h, i0, g.hq);
  const auto fill = [&](int64_t from, int64_t to) {  // positions [from, to)
    std::memset(plane + from * kQuad, rawZero ^ flip, static_cast<size_t>((to - from) * kQuad));
  };
  if (i1 == i0 || j1 == j0) {
    fill(0, g.planeBytes / kQuad);
    return;
  }
  const uint8_t* rows[kQuad];  // the quad's channels at the first row inside the image
  for (int64_t r = 0; r < kQuad; ++r) {
    const int64_t channel = cq * kQuad + r, row = i0 * p.stride_h - top;
    rows[r] = channel < g.cinG
                  ? x + ((n * p.c_in + group * g.cinG + channel) * p.h_in + row) * p.w_in
                  : padRows.data() + row * p.w_in;
  }
  // Where the plane's rows are whole input rows one after another in x
  // (a 1x1 layer's plane), its rows inside the image are one run, and
  // the zero point goes only around it (writing it everywhere first
  // doubled the copy of a 1x1 layer's input). Otherwise the plane is
  // filled first, then its rows interleaved in one call (a call per row
  // of 28 columns and its two fills cost more than the row).
  if (p.stride_h == 1 && p.stride_w == 1 && first == 0 && j1 - j0 == g.wq && g.wq == p.w_in) {
    fill(0, i0 * g.wq);
    fill(i1 * g.wq, g.planeBytes / kQuad);
    detail::interleaveQuad({{rows[0], rows[1], rows[2], rows[3]}, (i1 - i0) * g.wq}, flip,
                           plane + i0 * g.wq * kQuad);
    return;
  }
  fill(0, g.planeBytes / kQuad);
  const int64_t at = first + j0 * p.stride_w;
  detail::interleaveQuad({{rows[0] + at, rows[1] + at, rows[2] + at, rows[3] + at},
                          j1 - j0,
                          p.stride_w,
                          i1 - i0,
                          p.stride_h * p.w_in,
                          g.wq * kQuad},
                         flip, plane + (i0 * g.wq + j0) * kQuad);
}

void runsOf(const QConvParams& p, const Geometry& g, int64_t v0, TileRuns& out) {
  out.count[0] = out.count[1] = 0;
  for (int64_t oy = v0 / g.wq; oy < p.h_out && oy * g.wq < v0 + kQTile; ++oy) {
    const int64_t from = std::max(v0, oy * g.wq), to = std::min(v0 + kQTile, oy * g.wq + p.w_out);
    const int64_t at = oy * p.w_out + (from - oy * g.wq);  // y's position of lane from - v0
    for (int h = 0; h < 2; ++h) {
      const int64_t lo = std::max(from - v0, int64_t{16} * h);
      const int64_t hi = std::min(to - v0, int64_t{16} * h + 16);
      if (hi <= lo) continue;
      const auto lanes = static_cast<uint16_t>(((1u << (hi - lo)) - 1) << (lo - 16 * h));
      const int64_t base = at - (from - v0) + 16 * h;
      // Rows that follow each other in y (wq == w_out: a 1x1 layer's)
      // are one run: most tiles are then one run of y.
      TileRuns::Run* last = out.count[h] ? &out.runs[h][out.count[h] - 1] : nullptr;
      if (last && last->base == base)
        last->lanes |= lanes;
      else
        out.runs[h][out.count[h]++] = {lanes, base};
    }
  }
}

/// Output position (in y) of virtual position v, or of the first output
/// after it (v between rows).
int64_t outputAt(const QConvParams& p, const Geometry& g, int64_t v) {
  return std::min(v / g.wq * p.w_out + std::min(v % g.wq, p.w_out), p.h_out * p.w_out);
}

/// Prefetches the cache lines of [begin, begin + bytes), to write (kWrite
/// 1) or to read. Inlined, as its caller: GCC takes a function whose only
/// effect is prefetches for one without effects, and drops its calls.
template <int kWrite>
__attribute__((always_inline)) inline void prefetchLines(const uint8_t* begin, int64_t bytes) {
  for (const uint8_t* line = begin - (reinterpret_cast<uintptr_t>(begin) & 63);
       line < begin + bytes; line += 64)
    __builtin_prefetch(line, kWrite);
}

/// Prefetches the rows of y that `job` writes, and of the residual that it
/// reads, at y positions [from, to) of each of its channels: 8 channel
/// planes a block, each a stream of its own, more than the hardware
/// prefetchers follow.
__attribute__((always_inline)) inline void prefetchRows(const BlockJob& job, int64_t from,
                                                        int64_t to, int64_t ySize) {
  for (int64_t j = 0; j < job.channels; ++j) {
    prefetchLines<1>(job.y + (j * job.plane + from) * ySize, (to - from) * ySize);
    if (job.residual) prefetchLines<0>(job.residual + j * job.plane + from, to - from);
  }
}

/// The byte offset of each quad's 32 positions from the tile's first, in
/// an (image, group)'s planes: kTapQuads' order, tap by tap.
void quadOffsets(const QConvParams& p, const Geometry& g, int64_t* offsets) {
  for (int64_t kh = 0; kh < p.k_h; ++kh)
    for (int64_t kw = 0; kw < p.k_w; ++kw) {
      const int64_t dh = kh * p.dilation_h;
      const int64_t plane = dh % p.stride_h * g.columnPlanes + columnPlane(p, g, kw);
      const int64_t shift = (dh / p.stride_h * g.wq + columnShift(p, g, kw)) * kQuad;
      for (int64_t cq = 0; cq < g.channelQuads; ++cq)
        *offsets++ = (cq * p.stride_h * g.columnPlanes + plane) * g.planeBytes + shift;
    }
}

/// The direct convolution on kTapQuads weights, by tiles of positions or
/// (channelTiles) of channels.
void direct(const QConvParams& p, const void* x, const uint8_t* packed, const float* w_scale,
            const int32_t* bias, const void* residual, void* y, const Team& team,
            bool channelTiles) {
  const Geometry g = geometryOf(p, team.size(), channelTiles);
  const QWeightShape shape{p.groups,   g.coutG,       g.cinG * g.taps, true,
                           p.w_signed, p.per_channel, g.taps};
  const detail::QPackLayout layout =
      detail::qPackLayout(shape, {QPacking::kTapQuads, kBlock, 0, 0});
  const auto* sums = reinterpret_cast<const int32_t*>(packed + layout.sumsOffset);
  const int32_t activationZero = p.x_zero + (p.x_signed ? 128 : 0);
  const int64_t ySize = p.out.y_type == DType::kI32 ? 4 : 1;
  const int64_t images = p.n * p.groups;

  // The copy: thread 0's scratch, a share of the planes each.
  auto* planes = team.shareFromFirst(
      team.thread() == 0 ? detail::scratch<uint8_t>(images * g.imageBytes) : nullptr);
  const int64_t quadPlanes = p.stride_h * g.columnPlanes;
  const Range copies = team.split(images * g.channelQuads * quadPlanes);
  for (int64_t item = copies.begin; item < copies.end; ++item) {
    const int64_t image = item / (g.channelQuads * quadPlanes);
    const int64_t cq = item / quadPlanes % g.channelQuads, ry = item % quadPlanes / g.columnPlanes;
    if (!planeRead(p, g, ry, item % g.columnPlanes)) continue;
    copyPlane(p, g, static_cast<const uint8_t*>(x), image / p.groups, image % p.groups, cq, ry,
              item % g.columnPlanes, planes + image * g.imageBytes);
  }
  team.barrier();

  // Then the last again, as far as productVnni prefetches.
  int64_t* offsets = detail::scratch<int64_t>(g.quads + detail::kPrefetchQuads);
  quadOffsets(p, g, offsets);
  std::fill_n(offsets + g.quads, detail::kPrefetchQuads, offsets[g.quads - 1]);
  if constexpr (detail::buildHasTier("vnni"))
    if (g.channelTiles) {
      if constexpr (detail::buildHasTier("vbmi"))
        detail::channelTilesVbmi(p, g, planes, offsets, packed, sums, w_scale, bias, residual, y,
                                 team);
      else
        detail::channelTilesVnni(p, g, planes, offsets, packed, sums, w_scale, bias, residual, y,
                                 team);
      team.barrier();  // thread 0's copy outlives the others' reads
      return;
    }
  const int64_t plane = p.h_out * p.w_out;
  using Epilogue = std::conditional_t<detail::buildHasTier("vnni"), detail::Requant16, QEpilogue>;
  const Epilogue epilogue(p.out);
  const Range items = team.split(images * g.chunks * g.tiles);
  int64_t termsGroup = -1;
  detail::ChannelTerms terms{};
  bool packs = false;
  // Blocks outer over a group of tiles: each block's stores then run along
  // 8 channel planes, not a tile's 32 bytes into every plane of the chunk
  // (faster on MobileNetV2's 16-to-96 1x1 on 112x112 and 24-to-144 on 56x56).
  constexpr int64_t kTileGroup = 8;
  TileRuns runs[kTileGroup];
  for (int64_t item = items.begin; item < items.end;) {
    const int64_t tile = item % g.tiles, chunk = item / g.tiles % g.chunks;
    const int64_t image = item / (g.tiles * g.chunks), group = image % p.groups;
    const int64_t count = std::min({kTileGroup, items.end - item, g.tiles - tile});
    if (group != termsGroup) {
      terms = detail::channelTerms(p.out, group * g.coutG, g.coutG, sums, activationZero, w_scale,
                                   p.per_channel, bias);
      termsGroup = group;
      packs = detail::packsToBytes(p.out, terms.multiplier, g.coutG);
    }
    for (int64_t i = 0; i < count; ++i) runsOf(p, g, (tile + i) * kQTile, runs[i]);
    const int64_t first = image / p.groups * p.c_out + group * g.coutG;  // y's channel 0
    const int64_t b1 = std::min(g.blocks, (chunk + 1) * g.chunkBlocks);
    const auto jobOf = [&](int64_t b) {
      const int64_t c0 = b * kBlock;
      return BlockJob{
          reinterpret_cast<const int8_t*>(packed) +
              (group * g.blocks + b) * g.quads * kBlock * kQuad,
          std::min(kBlock, g.coutG - c0),
          terms.bias + c0,
          terms.multiplier + c0,
          static_cast<uint8_t*>(y) + (first + c0) * plane * ySize,
          residual ? static_cast<const uint8_t*>(residual) + (first + c0) * plane : nullptr,
          plane,
          packs};
    };
    const int64_t from = outputAt(p, g, tile * kQTile),
                  to = outputAt(p, g, (tile + count) * kQTile);
    for (int64_t b = chunk * g.chunkBlocks; b < b1; ++b) {
      const BlockJob job = jobOf(b);
      if (b + 1 < b1) prefetchRows(jobOf(b + 1), from, to, ySize);  // while this block runs
      detail::tileBlocks(epilogue, planes + image * g.imageBytes + tile * kQTile * kQuad, count,
                         offsets, g.quads, job, runs);
    }
    item += count;
  }
  team.barrier();  // thread 0's copy outlives the others' reads
}

}  // namespace

namespace detail {

namespace {

/// One tile of tileBlocks.
void tileBlock(const QEpilogue& e, const uint8_t* a, const int64_t* offsets, int64_t quads,
               const BlockJob& job, const TileRuns& runs) {
  int32_t acc[kBlock][kQTile] = {};
  const int8_t* w = job.w;
  for (int64_t q = 0; q < quads; ++q, w += kBlock * kQuad) {
    const uint8_t* aq = a + offsets[q];
    for (int64_t j = 0; j < job.channels; ++j)
      for (int64_t m = 0; m < kQTile; ++m)
        for (int64_t r = 0; r < kQuad; ++r) acc[j][m] += aq[m * kQuad + r] * w[j * kQuad + r];
  }
  for (int64_t j = 0; j < job.channels; ++j)
    for (int h = 0; h < 2; ++h)
      for (int64_t i = 0; i < runs.count[h]; ++i)
        for (int64_t lane = 0; lane < 16; ++lane) {
          if (!(runs.runs[h][i].lanes >> lane & 1)) continue;
          const int64_t at = j * job.plane + runs.runs[h][i].base + lane;
          const int32_t r = job.residual ? loadQ(job.residual, at, e.r_signed) : 0;
          storeQ(job.y, at, e.y_type,
                 finishQ(e, acc[j][16 * h + lane], job.bias[j], job.multiplier[j], r));
        }
}

}  // namespace

/// The portable form of tileBlocks.
void tileBlocks(const QEpilogue& e, const uint8_t* a, int64_t count, const int64_t* offsets,
                int64_t quads, const BlockJob& job, const TileRuns* runs) {
  for (int64_t i = 0; i < count; ++i)
    tileBlock(e, a + i * kQTile * kQuad, offsets, quads, job, runs[i]);
}

// The two direct variants (qconv_variants.def). Their choice is the same
// in every build (the compiler's is its target's), so DirectChannels'
// predicates are here, outside its tier.

bool takesDirect(const QConvParams&) { return true; }

/// Where vpdpbusd runs it; the portable loops are slower than the
/// implicit GEMM's.
bool prefersDirect(const QConvParams&, const char* tier) { return isaTierIncludes(tier, "vnni"); }

void qconvDirect(const QConvParams& p, const void* x, const void* w, const float* w_scale,
                 const int32_t* bias, const void* residual, void* y, const Team& team) {
  direct(p, x, static_cast<const uint8_t*>(w), w_scale, bias, residual, y, team, false);
}

/// Whole vectors of 16 output channels, stored as bytes.
bool takesDirectChannels(const QConvParams& p) {
  return p.out.y_type != DType::kI32 && (p.c_out / p.groups) % kChannelLanes == 0;
}

/// Where a twentieth or more of the lanes of the tiles of positions would
/// not be outputs (7x7: 49 of 64; 14x14 at 3x3: 196 of 224).
bool prefersDirectChannels(const QConvParams& p, const char*) {
  const TileCounts tiles = tileCounts(p);
  return p.h_out * p.w_out * 20 < std::min(tiles.with, tiles.without) * kQTile * 19;
}

/// (Without AVX-512 VNNI, which the dispatch never runs it on: the tiles of
/// positions.)
void qconvDirectChannels(const QConvParams& p, const void* x, const void* w, const float* w_scale,
                         const int32_t* bias, const void* residual, void* y, const Team& team) {
  direct(p, x, static_cast<const uint8_t*>(w), w_scale, bias, residual, y, team,
         detail::buildHasTier("vnni"));
}

}  // namespace detail
}  // namespace cgc::rt
