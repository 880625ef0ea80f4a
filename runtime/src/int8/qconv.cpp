// qconv: the int8 convolution on NCHW activations, and the choice of its
// variant (cgc/kernels/qconv_variants.def), in priority order:
//  - DepthwiseVnni and Depthwise (groups == c_in == c_out): a direct loop
//    per channel plane, on vpdpbusd or on int16 pairs;
//    qconv_depthwise.cpp;
//  - DirectChannels and Direct, on kTapQuads weights: the convolution
//    without im2col, by tiles of output channels or of positions, what
//    AVX-512 VNNI prefers; qconv_direct.cpp;
//  - GemmSplit, Gemm and GemmWide, on kQuadsSplit (AVX2's vpmaddubsw),
//    kQuads and kWide (w - w_zero beyond int8) weights: the implicit GEMM,
//    any layer; here.
// The pack-quantized-weights pass plans a layer (planQConv: the variant
// chooseQConvVariant takes for its target's tier, the packing it reads)
// and records the variant; qconv runs p.variant where this build has it,
// else chooses the same way, packing unpacked weights into scratch first.
//
// The implicit GEMM runs per image and group: positions of the output
// plane in tiles of 32, the depth (input channels x window taps) in quads
// of 4, so a tile is the im2col of 32 positions with each position's 4
// depths side by side: [quads][32][4] uint8, the layout the micro-kernels
// broadcast their weights against (quant_microkernels.h: the packing's
// block picks vpdpbusd, vpmaddubsw or the portable loops).
// A thread packs a band of up to 8 tiles at once (a row of the input per
// depth and output row: memcpy at stride 1, a gather otherwise; 1x1
// stride-1 layers interleave straight from the input planes), then runs
// every tile of the band against its output-channel blocks, the tile kept
// in L1 while the weights stream. Positions outside the image read the
// activations' zero point, which the compensation term cancels; int8
// activations are flipped to uint8 (x ^ 0x80, zero point + 128).
// The team splits bands (images x groups x bands of the plane); when there
// are fewer bands than threads, it splits the output-channel blocks too and
// each thread packs the bands it needs.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cgc/isa_tiers.h"
#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "core/scratch.h"
#include "int8/qconv_strategies.h"
#include "int8/quant_support.h"

namespace cgc::rt {
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

/// The implicit GEMM on packed weights (kQuads, kQuadsSplit or kWide).
void implicitGemm(const QConvParams& p, const void* x, const uint8_t* packed, const float* w_scale,
                  const int32_t* bias, const void* residual, void* y, const Team& team) {
  const ConvGeometry g = geometryOf(p);
  const QPackInfo info{p.packing, p.pack_nb, 0, p.split_entries};
  const detail::QPackLayout layout = detail::qPackLayout(qconvWeightShape(p), info);
  const auto* sums = reinterpret_cast<const int32_t*>(packed + layout.sumsOffset);
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
        packed + group * layout.blocks * g.quads * info.nb * kQuad *
                     (info.packing == QPacking::kWide ? 2 : 1),
        info,
        reinterpret_cast<const int32_t*>(packed + layout.splitOffset) + group * g.coutG,
        packed + layout.entriesOffset,
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

}  // namespace

namespace detail {

// The implicit GEMM's variants (qconv_variants.def): one kernel, on the
// packing each reads. Each takes every layer.

bool takesGemmSplit(const QConvParams&) { return true; }
/// The packing of AVX2's vpmaddubsw (VNNI has vpdpbusd, on which the
/// direct kernel runs).
bool prefersGemmSplit(const QConvParams&, const char* tier) {
  return preferredQPacking(tier) == QPacking::kQuadsSplit;
}
void qconvGemmSplit(const QConvParams& p, const void* x, const void* w, const float* w_scale,
                    const int32_t* bias, const void* residual, void* y, const Team& team) {
  implicitGemm(p, x, static_cast<const uint8_t*>(w), w_scale, bias, residual, y, team);
}

bool takesGemm(const QConvParams&) { return true; }
bool prefersGemm(const QConvParams&, const char*) { return true; }
void qconvGemm(const QConvParams& p, const void* x, const void* w, const float* w_scale,
               const int32_t* bias, const void* residual, void* y, const Team& team) {
  implicitGemm(p, x, static_cast<const uint8_t*>(w), w_scale, bias, residual, y, team);
}

bool takesGemmWide(const QConvParams&) { return true; }
bool prefersGemmWide(const QConvParams&, const char*) { return true; }
void qconvGemmWide(const QConvParams& p, const void* x, const void* w, const float* w_scale,
                   const int32_t* bias, const void* residual, void* y, const Team& team) {
  implicitGemm(p, x, static_cast<const uint8_t*>(w), w_scale, bias, residual, y, team);
}

}  // namespace detail

namespace {

/// The variants' functions, in kQConvVariants' order.
struct VariantFunctions {
  bool (*takes)(const QConvParams&);
  bool (*prefers)(const QConvParams&, const char*);
  void (*run)(const QConvParams&, const void*, const void*, const float*, const int32_t*,
              const void*, void*, const Team&);
};
constexpr VariantFunctions kFunctions[] = {
#define CGC_QCONV_VARIANT(name, tier, packing) \
  {detail::takes##name, detail::prefers##name, detail::qconv##name},
#include "cgc/kernels/qconv_variants.def"
#undef CGC_QCONV_VARIANT
};

/// v's functions (v is not kNone).
const VariantFunctions& functionsOf(QConvVariant v) {
  return kFunctions[static_cast<size_t>(v) - 1];
}

}  // namespace

QWeightShape qconvWeightShape(const QConvParams& p) {
  const int64_t taps = p.k_h * p.k_w;
  return {p.groups, p.c_out / p.groups, p.c_in / p.groups * taps, true, p.w_signed, p.per_channel,
          taps};
}

bool qconvVariantRuns(QConvVariant v, const QConvParams& p, const char* tier) {
  if (v == QConvVariant::kNone) return false;
  const QConvVariantInfo& info = variantInfo(v);
  return isaTierIncludes(tier, info.tier) &&
         (p.packing == QPacking::kNone || p.packing == info.packing) && functionsOf(v).takes(p);
}

QConvVariant qconvVariantNamed(const char* name) {
  for (const QConvVariantInfo& v : kQConvVariants)
    if (std::strcmp(v.name, name) == 0) return v.variant;
  return QConvVariant::kNone;
}

QConvVariant chooseQConvVariant(const QConvParams& p, const char* tier) {
  QConvVariant fallback = QConvVariant::kNone;
  for (const QConvVariantInfo& v : kQConvVariants) {
    if (!qconvVariantRuns(v.variant, p, tier)) continue;
    if (functionsOf(v.variant).prefers(p, tier)) return v.variant;
    if (fallback == QConvVariant::kNone) fallback = v.variant;
  }
  return fallback;
}

QConvPlan planQConv(const QConvParams& p, const void* w, const void* w_zero, const char* tier) {
  QConvPlan plan{qconvVariantRuns(p.variant, p, tier) ? p.variant : chooseQConvVariant(p, tier),
                 {}};
  if (plan.variant == QConvVariant::kNone) return plan;
  const QPacking packing = variantInfo(plan.variant).packing;
  plan.info = planQWeights(qconvWeightShape(p), w, w_zero, packing, tier);
  if (plan.info.packing != packing) {  // some w - w_zero beyond int8: kWide
    QConvParams wide = p;
    wide.packing = plan.info.packing, wide.pack_nb = plan.info.nb;
    plan.variant = chooseQConvVariant(wide, tier);
  }
  return plan;
}

namespace {

[[noreturn]] void noVariant() {  // every packing has a variant that takes any layer
  std::fprintf(stderr, "cgc runtime: no int8 convolution variant takes this layer\n");
  std::abort();
}

}  // namespace

void qconv(const QConvParams& p, const void* x, const void* w, const float* w_scale,
           const void* w_zero, const int32_t* bias, const void* residual, void* y,
           const Team& team) {
  const char* tier = runtime_isa_tier();
  QConvParams packed = p;
  if (p.packing == QPacking::kNone) {
    // Packed here, on every call, as pack-quantized-weights would have.
    const QConvPlan plan = planQConv(p, w, w_zero, tier);
    if (plan.variant == QConvVariant::kNone) noVariant();
    auto* bytes = reinterpret_cast<uint8_t*>(detail::scratch<int8_t>(plan.info.bytes));
    packQWeights(qconvWeightShape(p), plan.info, w, w_zero, bytes);
    packed.packing = plan.info.packing, packed.pack_nb = plan.info.nb;
    packed.split_entries = plan.info.split_entries, packed.variant = plan.variant;
    w = bytes;
  }
  // The compiler's choice where this build has it and it fits (lowering
  // checks that it does), else this build's.
  if (!qconvVariantRuns(packed.variant, packed, tier))
    packed.variant = chooseQConvVariant(packed, tier);
  if (packed.variant == QConvVariant::kNone) noVariant();
  functionsOf(packed.variant).run(packed, x, w, w_scale, bias, residual, y, team);
}

}  // namespace cgc::rt
