// qconv: the int8 convolution on NCHW activations.
//
// Depthwise layers (groups == c_in == c_out) run qconv_depthwise.cpp's
// direct loop. Every other layer is an implicit GEMM per image and group:
// positions of the output plane in tiles of 32, the depth (input channels x
// window taps) in quads of 4, so a tile is the im2col of 32 positions with
// each position's 4 depths side by side: [quads][32][4] uint8, the layout
// the micro-kernels broadcast their weights against (quant_microkernels.h).
// A thread packs a band of up to 8 tiles at once (a row of the input per
// depth and output row: memcpy at stride 1, a gather otherwise; 1x1
// stride-1 layers interleave straight from the input planes), then runs
// every tile of the band against its output-channel blocks, the tile kept
// in L1 while the weights stream. Positions outside the image read the
// activations' zero point, which the compensation term cancels; int8
// activations are flipped to uint8 (x ^ 0x80, zero point + 128).
//
// The team splits bands (images x groups x bands of the plane); when there
// are fewer bands than threads, it splits the output-channel blocks too and
// each thread packs the bands it needs.
#include <vector>

#include "cgc/kernels.h"
#include "core/scratch.h"
#include "int8/quant_support.h"

namespace cgc::rt {

void qconvDepthwise(const QConvParams& p, const void* x, const void* w, const float* w_scale,
                    const void* w_zero, const int32_t* bias, const void* residual, void* y,
                    const Team& team);
bool qconvRunsDepthwise(const QConvParams& p);
bool qconvDepthwiseShape(const QConvParams& p);
void qconvDirect(const QConvParams& p, const void* x, const uint8_t* packed, const float* w_scale,
                 const int32_t* bias, const void* residual, void* y, const Team& team);

QPacking preferredQConvPacking(const QConvParams& p, QIsa isa) {
  if (qconvDepthwiseShape(p)) return QPacking::kWide;
  return isa == QIsa::kVnni ? QPacking::kTapQuads : preferredQPacking(isa);
}

namespace {

using detail::kQTile;
using detail::kQuad;

constexpr int64_t kMaxBandTiles = 8;
constexpr int64_t kBandBytes = 96 * 1024;

struct ConvGeometry {
  const QConvParams& p;
  int64_t cinG, coutG, depth, quads, positions, tiles, bandTiles, bands;
};

ConvGeometry geometryOf(const QConvParams& p) {
  ConvGeometry g{p, p.c_in / p.groups, p.c_out / p.groups, 0, 0, p.h_out * p.w_out, 0, 0, 0};
  g.depth = g.cinG * p.k_h * p.k_w;
  g.quads = (g.depth + kQuad - 1) / kQuad;
  g.tiles = (g.positions + kQTile - 1) / kQTile;
  g.bandTiles = std::clamp<int64_t>(kBandBytes / (g.quads * kQTile * kQuad), 1, kMaxBandTiles);
  g.bandTiles = std::min(g.bandTiles, g.tiles);
  g.bands = (g.tiles + g.bandTiles - 1) / g.bandTiles;
  return g;
}

bool isPointwise(const QConvParams& p) {
  return p.k_h == 1 && p.k_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 &&
         p.pad_left == 0 && p.h_in == p.h_out && p.w_in == p.w_out;
}

/// A run of positions of one output row inside a band: output row oy,
/// columns [ox0, ox1), at `at` in the band.
struct Segment {
  int64_t oy, ox0, ox1, at;
};

/// The band's positions [m0, m0 + count) as runs of output rows (positions
/// past the plane: none).
int64_t segmentsOf(const ConvGeometry& g, int64_t m0, int64_t count, Segment* out) {
  int64_t n = 0;
  const int64_t end = std::min(m0 + count, g.positions);
  for (int64_t m = m0; m < end;) {
    const int64_t oy = m / g.p.w_out, ox0 = m % g.p.w_out;
    const int64_t ox1 = std::min(g.p.w_out, ox0 + (end - m));
    out[n++] = {oy, ox0, ox1, m - m0};
    m += ox1 - ox0;
  }
  return n;
}

/// Row of the band for depth d (image n, group g): the input values the
/// window reads there, `pad` outside the image and past the plane.
void fillRow(const ConvGeometry& g, const uint8_t* x, int64_t n, int64_t group, int64_t d,
             const Segment* segments, int64_t segmentCount, int64_t count, uint8_t pad,
             uint8_t* row) {
  const QConvParams& p = g.p;
  if (d >= g.depth) return void(std::memset(row, pad, static_cast<size_t>(count)));
  const int64_t taps = p.k_h * p.k_w, ci = group * g.cinG + d / taps, tap = d % taps;
  const int64_t kh = tap / p.k_w, kw = tap % p.k_w;
  const uint8_t* plane = x + (n * p.c_in + ci) * p.h_in * p.w_in;
  const int64_t shift = kw * p.dilation_w - p.pad_left;
  int64_t filled = 0;
  for (int64_t s = 0; s < segmentCount; ++s) {
    const Segment& seg = segments[s];
    uint8_t* out = row + seg.at;
    const int64_t width = seg.ox1 - seg.ox0;
    const int64_t iy = seg.oy * p.stride_h - p.pad_top + kh * p.dilation_h;
    filled = seg.at + width;
    if (iy < 0 || iy >= p.h_in) {
      std::memset(out, pad, static_cast<size_t>(width));
      continue;
    }
    const uint8_t* src = plane + iy * p.w_in;
    if (p.stride_w == 1) {
      // ix = ox + shift: inside for ox in [lo, hi).
      const int64_t lo = std::clamp<int64_t>(-shift, seg.ox0, seg.ox1);
      const int64_t hi = std::clamp<int64_t>(p.w_in - shift, lo, seg.ox1);
      std::memset(out, pad, static_cast<size_t>(lo - seg.ox0));
      std::memcpy(out + (lo - seg.ox0), src + lo + shift, static_cast<size_t>(hi - lo));
      std::memset(out + (hi - seg.ox0), pad, static_cast<size_t>(seg.ox1 - hi));
      continue;
    }
    for (int64_t ox = seg.ox0; ox < seg.ox1; ++ox) {
      const int64_t ix = ox * p.stride_w + shift;
      out[ox - seg.ox0] = ix >= 0 && ix < p.w_in ? src[ix] : pad;
    }
  }
  std::memset(row + filled, pad, static_cast<size_t>(count - filled));
}

/// Packs tiles [t0, t0 + count) of image n, group g into `a`
/// ([tile][quads][32][4]).
void packBand(const ConvGeometry& g, const uint8_t* x, int64_t n, int64_t group, int64_t t0,
              int64_t count, uint8_t* a) {
  const QConvParams& p = g.p;
  const uint8_t pad = static_cast<uint8_t>(p.x_zero);
  const uint8_t flip = p.x_signed ? 0x80 : 0;
  const int64_t m0 = t0 * kQTile, width = count * kQTile;
  const int64_t tileBytes = g.quads * kQTile * kQuad;
  const bool direct = isPointwise(p) && m0 + width <= g.positions;
  Segment segments[kMaxBandTiles * kQTile];
  const int64_t segmentCount = direct ? 0 : segmentsOf(g, m0, width, segments);
  alignas(64) uint8_t rows[kQuad][kMaxBandTiles * kQTile];
  for (int64_t q = 0; q < g.quads; ++q) {
    const uint8_t* r[kQuad];
    for (int64_t i = 0; i < kQuad; ++i) {
      const int64_t d = q * kQuad + i;
      if (direct && d < g.depth) {
        r[i] = x + (n * p.c_in + group * g.cinG + d) * g.positions + m0;
      } else {
        fillRow(g, x, n, group, d, segments, segmentCount, width, pad, rows[i]);
        r[i] = rows[i];
      }
    }
    // Tile t's quad q: row t of kQTile columns.
    detail::interleaveQuad({{r[0], r[1], r[2], r[3]}, kQTile, 1, count, kQTile, tileBytes}, flip,
                           a + q * kQTile * kQuad);
  }
}

/// The weights as the kernel reads them: packed by the compiler, or here
/// into scratch.
struct Weights {
  QWeightShape shape;
  QPackInfo info;
  const uint8_t* packed;
};

Weights weightsOf(const QConvParams& p, const ConvGeometry& g, const void* w, const void* w_zero) {
  Weights out{
      {p.groups, g.coutG, g.depth, true, p.w_signed, p.per_channel, p.k_h * p.k_w}, {}, nullptr};
  if (p.packing != QPacking::kNone) {
    out.info = {p.packing, p.pack_nb, 0, p.split_entries};
    out.packed = static_cast<const uint8_t*>(w);
    return out;
  }
  out.info = planQWeights(out.shape, w, w_zero, preferredQConvPacking(p));
  auto* packed = reinterpret_cast<uint8_t*>(detail::scratch<int8_t>(out.info.bytes));
  packQWeights(out.shape, out.info, w, w_zero, packed);
  out.packed = packed;
  return out;
}

}  // namespace

void qconv(const QConvParams& p, const void* x, const void* w, const float* w_scale,
           const void* w_zero, const int32_t* bias, const void* residual, void* y,
           const Team& team) {
  if (qconvRunsDepthwise(p))
    return qconvDepthwise(p, x, w, w_scale, w_zero, bias, residual, y, team);
  const ConvGeometry g = geometryOf(p);
  const Weights weights = weightsOf(p, g, w, w_zero);
  if (weights.info.packing == QPacking::kTapQuads)
    return qconvDirect(p, x, weights.packed, w_scale, bias, residual, y, team);
  const detail::QPackLayout layout = detail::qPackLayout(weights.shape, weights.info);
  const auto* sums = reinterpret_cast<const int32_t*>(weights.packed + layout.sumsOffset);
  const int32_t activationZero = p.x_zero + (p.x_signed ? 128 : 0);
  const int64_t ySize = p.out.y_type == DType::kI32 ? 4 : 1;

  // Work items: (image, group, band) x chunks of output-channel blocks.
  const int64_t bands = p.n * p.groups * g.bands;
  const int64_t chunks =
      std::min(layout.blocks, std::max<int64_t>(1, (2 * team.size() + bands - 1) / bands));
  const int64_t blocksPerChunk = (layout.blocks + chunks - 1) / chunks;
  const Range items = team.split(bands * chunks);
  uint8_t* a =
      reinterpret_cast<uint8_t*>(detail::scratch<uint8_t>(g.bandTiles * g.quads * kQTile * kQuad));
  int64_t packedBand = -1, termsGroup = -1;
  detail::ChannelTerms terms{};
  for (int64_t item = items.begin; item < items.end; ++item) {
    const int64_t band = item / chunks, chunk = item % chunks;
    const int64_t n = band / (p.groups * g.bands), group = band / g.bands % p.groups;
    const int64_t t0 = band % g.bands * g.bandTiles;
    const int64_t count = std::min(g.bandTiles, g.tiles - t0);
    if (band != packedBand) {
      packBand(g, static_cast<const uint8_t*>(x), n, group, t0, count, a);
      packedBand = band;
    }
    if (group != termsGroup) {
      terms = detail::channelTerms(p.out, group * g.coutG, g.coutG, sums, activationZero, w_scale,
                                   p.per_channel, bias);
      termsGroup = group;
    }
    const int64_t first = (n * p.c_out + group * g.coutG) * g.positions;
    const detail::QProduct q{
        g.depth,
        g.coutG,
        weights.packed + group * layout.blocks * g.quads * weights.info.nb * kQuad *
                             (weights.info.packing == QPacking::kWide ? 2 : 1),
        weights.info,
        reinterpret_cast<const int32_t*>(weights.packed + layout.splitOffset) + group * g.coutG,
        weights.packed + layout.entriesOffset,
        terms,
        &p.out,
        static_cast<uint8_t*>(y) + first * ySize,
        residual ? static_cast<const uint8_t*>(residual) + first : nullptr,
        g.positions,
        1};
    const int64_t b0 = chunk * blocksPerChunk, b1 = std::min(layout.blocks, b0 + blocksPerChunk);
    for (int64_t t = 0; t < count; ++t) {
      const int64_t m0 = (t0 + t) * kQTile;
      detail::qProductTile(q, a + t * g.quads * kQTile * kQuad, m0,
                           std::min(kQTile, g.positions - m0), b0, b1);
    }
  }
}

}  // namespace cgc::rt
