// Convolution and transposed convolution over 1, 2 or 3 spatial dims.
// conv runs one of the variants that cgc/kernels/conv_variants.def
// declares, in priority order (each variant's file says more):
//  - PackedBf16 (--precision bf16 only), on packConvWeights' panels of
//    bfloat16 pairs: Packed's driver and tiles with vdpbf16ps, the input
//    rounded to bfloat16 as it is padded; conv_packed_bf16.cpp;
//  - Winograd, on winogradWeights' transforms: F(2x2, 3x3), F(4x4, 3x3)
//    and their 5x5, 2x2 and one-dimensional forms; winograd.cpp;
//  - Packed, on packConvWeights' panels: gemmPacked, vectorised along
//    output channels, reads the (zero-padded) input in place through index
//    tables, NCHW or channel-blocked; conv_packed.cpp;
//  - the depthwise 2-D ones (groups == c_in == c_out; a GEMM of depth k_h
//    * k_w would waste the micro-kernel): DepthwiseRows, 16 outputs of a
//    row in registers straight from NCHW (AVX-512, 3x3 windows at stride 1
//    or 2); DepthwiseVectors, 16 channels per vector on planes up to L2's
//    size (channel_vectors.h); DepthwisePlanes, a direct loop per channel
//    over the plane's stride phases (plane_phases.h); conv_depthwise.cpp;
//  - FewChannels (RGB stems): a direct loop, 8 output channels x 32
//    positions per register block, over the input planes' stride phases,
//    with the fused max pooling; conv_stem.cpp;
//  - Pointwise (1x1, stride 1, no padding): already a GEMM on NCHW,
//    Y[c_out, HW] = W[c_out, c_in] X[c_in, HW], no copies; here;
//  - Im2col, any layer: im2col of a chunk of output columns into
//    per-thread scratch, then the GEMM on that chunk (the chunk is sized so
//    its column matrix stays in L2 while the GEMM reads it); here.
// The pack-conv-weights pass chooses a layer's variant with
// chooseConvVariant and its target's context, and gives the layer the
// weights it reads; conv runs p.variant, or chooses the same way where the
// compiler did not. In --dim's general code a layer may also hold other
// variants on weights of their own (p.alternatives): conv then picks among
// them per call on the extents it is given (convChoiceAt).
// Bias, residual and activation are the GEMM block epilogue (gemm_core.h).
// conv_transpose is GEMM + col2im, the team splitting output channels.
// The public predicates that passes ask (convPrefersPackedWeights,
// convTakesBlocked*, convFusesMaxPool) are here too, next to the choice.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cgc/isa_tiers.h"
#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "conv/conv_strategies.h"
#include "conv/conv_support.h"
#include "core/scratch.h"
#include "core/simd.h"
#include "gemm/gemm_core.h"

namespace cgc::rt {
namespace {

using detail::epilogueOf;
using detail::fewChannelsPays;
using detail::isDepthwise2d;
using detail::isFewChannels;
using detail::packedChannels;
using detail::scratch;

bool isPointwise(const ConvParams& p) {
  return p.k_d == 1 && p.k_h == 1 && p.k_w == 1 && p.stride_d == 1 && p.stride_h == 1 &&
         p.stride_w == 1 && p.pad_front == 0 && p.pad_top == 0 && p.pad_left == 0 &&
         p.d_in == p.d_out && p.h_in == p.h_out && p.w_in == p.w_out;
}

/// Visits every (kernel tap, output position) pair with the input position
/// it reads: f(tap, outIndex, inIndex), inIndex = -1 in the padding.
/// `in` sizes are the image side, `out` the GEMM side of the lowering.
template <typename F>
void forEachTap(const ConvParams& p, int64_t inD, int64_t inH, int64_t inW, int64_t outD,
                int64_t outH, int64_t outW, F f) {
  int64_t tap = 0;
  for (int64_t kd = 0; kd < p.k_d; ++kd)
    for (int64_t kh = 0; kh < p.k_h; ++kh)
      for (int64_t kw = 0; kw < p.k_w; ++kw, ++tap)
        for (int64_t od = 0; od < outD; ++od) {
          const int64_t id = od * p.stride_d - p.pad_front + kd * p.dilation_d;
          for (int64_t oh = 0; oh < outH; ++oh) {
            const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
            const bool rowInside = id >= 0 && id < inD && ih >= 0 && ih < inH;
            const int64_t outRow = (od * outH + oh) * outW;
            const int64_t inRow = (id * inH + ih) * inW;
            for (int64_t ow = 0; ow < outW; ++ow) {
              const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
              f(tap, outRow + ow, rowInside && iw >= 0 && iw < inW ? inRow + iw : -1);
            }
          }
        }
}

void addBias(const float* bias, int64_t channels, int64_t spatial, float* y) {
  if (!bias) return;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t s = 0; s < spatial; ++s) y[c * spatial + s] += bias[c];
}

}  // namespace

namespace {

/// Output positions [lo, hi) whose input column ow * stride + offset lies in
/// [0, width).
Range validColumns(int64_t outWidth, int64_t width, int64_t stride, int64_t offset) {
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t last = width - offset - 1;
  int64_t hi = last < 0 ? 0 : last / stride + 1;
  hi = std::min(hi, outWidth);
  return {std::min(lo, hi), hi};
}

/// col[(c * taps + tap) * cols + s - s0] = x[c] at the input position that
/// output position s (flattened (od, oh, ow), s0 <= s < s1) reads with that
/// tap, 0 in the padding.
void im2col(const ConvParams& p, const float* xg, int64_t channels, int64_t s0, int64_t s1,
            float* col) {
  const int64_t cols = s1 - s0;
  const int64_t taps = p.k_d * p.k_h * p.k_w;
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  const int64_t outPlane = p.h_out * p.w_out;
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = xg + c * inSpatial;
    int64_t tap = 0;
    for (int64_t kd = 0; kd < p.k_d; ++kd)
      for (int64_t kh = 0; kh < p.k_h; ++kh)
        for (int64_t kw = 0; kw < p.k_w; ++kw, ++tap) {
          float* dst = col + (c * taps + tap) * cols;
          const int64_t offset = kw * p.dilation_w - p.pad_left;
          const Range valid = validColumns(p.w_out, p.w_in, p.stride_w, offset);
          for (int64_t s = s0; s < s1;) {
            const int64_t od = s / outPlane, oh = s % outPlane / p.w_out;
            const int64_t ow0 = s % p.w_out;
            const int64_t ow1 = std::min(p.w_out, ow0 + (s1 - s));
            const int64_t id = od * p.stride_d - p.pad_front + kd * p.dilation_d;
            const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
            float* out = dst - ow0;  // out[ow] for ow in [ow0, ow1)
            if (id < 0 || id >= p.d_in || ih < 0 || ih >= p.h_in) {
              std::fill(out + ow0, out + ow1, 0.0f);
            } else {
              const float* row = plane + (id * p.h_in + ih) * p.w_in + offset;
              const int64_t lo = std::clamp(valid.begin, ow0, ow1);
              const int64_t hi = std::clamp(valid.end, lo, ow1);
              std::fill(out + ow0, out + lo, 0.0f);
              if (p.stride_w == 1)
                std::copy(row + lo, row + hi, out + lo);
              else if (p.stride_w == 2)  // a constant stride GCC vectorises
                for (int64_t ow = lo; ow < hi; ++ow) out[ow] = row[ow * 2];
              else
                for (int64_t ow = lo; ow < hi; ++ow) out[ow] = row[ow * p.stride_w];
              std::fill(out + hi, out + ow1, 0.0f);
            }
            dst += ow1 - ow0;
            s += ow1 - ow0;
          }
        }
  }
}

/// Columns of the im2col matrix per chunk: about 512 KiB of it, whole
/// micro-kernel blocks.
int64_t columnChunk(int64_t depth) {
  const int64_t cols = (128 * 1024 / std::max<int64_t>(depth, 1)) / 16 * 16;
  return std::max<int64_t>(cols, 128);
}

}  // namespace

// Measured on one Zen 5 core (packed vs NCHW GFLOP/s): every 3x3 layer of
// ResNet-50 and SqueezeNet gains 20-50% (no im2col copy, full vectors),
// strided 1x1 layers -2 to +8%; pointwise layers gain 10-15% at 7x7 and
// mostly lose beyond (-18 to +12%), where the NCHW GEMM reads the input in
// place and the transpose back is not free. The exception, measured on 2
// threads with weights, input and output fresh from memory as in a model:
// 14x14 planes (196 positions: the NCHW GEMM's vectors of 16 positions
// waste 6% of their lanes) with 256 or more output channels gain 5-15%
// (ResNet-50's 1024-to-256, 256-to-1024 and 1024-to-512 layers, GoogLeNet's
// 528-to-256), helped by the packed kernel's weight prefetch that LIBXSMM's
// lacks. With 64 to 160 channels they lose 3-6%; SqueezeNet's 13x13
// classifier (4% of lanes wasted, 1000 channels) loses 2-3%, a 20x20 plane
// (none wasted) 5-10%.
bool convPrefersPackedWeights(const ConvParams& p) {
  constexpr int64_t kMaxPointwisePositions = 64, kMaxWidePointwisePositions = 196;
  constexpr int64_t kMinWidePointwiseChannels = 256;
  constexpr int64_t kMinDepth = 128;  // below, tile set-up and the transpose
                                      // outweigh the product (3-channel stems)
  // Channels are computed in 16s: at most a third more than c_out.
  if (p.groups != 1 || 3 * packedChannels(p) > 4 * p.c_out || isDepthwise2d(p) ||
      fewChannelsPays(p) || p.c_in * p.k_d * p.k_h * p.k_w < kMinDepth)
    return false;
  const int64_t positions = p.d_out * p.h_out * p.w_out;
  const int64_t wastedLanes = (positions + 15) / 16 * 16 - positions;
  return !isPointwise(p) || positions <= kMaxPointwisePositions ||
         (positions <= kMaxWidePointwisePositions && p.c_out >= kMinWidePointwiseChannels &&
          20 * wastedLanes >= positions);
}

bool convTakesBlockedInput(const ConvParams& p) {
  return p.groups == 1 && p.c_in % kChannelBlock == 0 && !fewChannelsPays(p);
}

bool convTakesBlockedOutput(const ConvParams& p) {
  return p.groups == 1 && p.c_out % kChannelBlock == 0 && !fewChannelsPays(p) && p.pool_h_out == 0;
}

bool convFusesMaxPool(const ConvParams& conv, const PoolParams& pool) {
  return isFewChannels(conv) && conv.d_out == 1 && pool.d_out == 1 && pool.k_d == 1 &&
         pool.k_h == 3 && pool.k_w == 3 && pool.stride_h == 2 && pool.stride_w == 2 &&
         pool.dilation_h == 1 && pool.dilation_w == 1 && pool.n_c == conv.n * conv.c_out &&
         pool.h_in == conv.h_out && pool.w_in == conv.w_out;
}

namespace detail {

bool takesPointwise(const ConvParams& p) { return plainLayouts(p) && isPointwise(p); }
bool prefersPointwise(const ConvParams&, const ConvContext&) { return true; }

void convPointwise(const ConvParams& p, const float* x, const float* w, const float* bias,
                   const float* residual, float* y, const Team& team) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t spatial = p.d_out * p.h_out * p.w_out;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t g = 0; g < p.groups; ++g)
      gemmRowsTeam(coutG, spatial, cinG, w + g * coutG * cinG, cinG,
                   x + (n * p.c_in + g * cinG) * spatial, spatial,
                   y + (n * p.c_out + g * coutG) * spatial, spatial,
                   epilogueOf(p, bias, residual, n, g), team);
}

bool takesIm2col(const ConvParams& p) { return plainLayouts(p); }
bool prefersIm2col(const ConvParams&, const ConvContext&) { return true; }

void convIm2col(const ConvParams& p, const float* x, const float* w, const float* bias,
                const float* residual, float* y, const Team& team) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t taps = p.k_d * p.k_h * p.k_w;
  const int64_t kSize = cinG * taps;
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  const int64_t spatial = p.d_out * p.h_out * p.w_out;
  // Work items: (image, group, chunk of columns, 64 rows), on a grid that
  // does not depend on the team, so each item's GEMM is the same call
  // whatever the team's size (gemm_core.h: gemmRowsTeam). Threads that
  // share a chunk repeat its im2col.
  const int64_t chunk = std::min(columnChunk(kSize), spatial);
  const int64_t chunks = (spatial + chunk - 1) / chunk;
  const int64_t rowBlocks = (coutG + kRowBlock - 1) / kRowBlock;
  const Range items = team.split(p.n * p.groups * chunks * rowBlocks);
  float* col = scratch(kSize * chunk);
  int64_t im2colDone = -1;
  for (int64_t item = items.begin; item < items.end; ++item) {
    const int64_t rowBlock = item % rowBlocks, image = item / rowBlocks;  // (n, g, chunk)
    const int64_t n = image / (p.groups * chunks), g = image / chunks % p.groups;
    const int64_t s0 = image % chunks * chunk, s1 = std::min(spatial, s0 + chunk);
    if (image != im2colDone) {
      im2col(p, x + (n * p.c_in + g * cinG) * inSpatial, cinG, s0, s1, col);
      im2colDone = image;
    }
    const int64_t r0 = rowBlock * kRowBlock;
    const int64_t rows = std::min(kRowBlock, coutG - r0);
    float* yg = y + (n * p.c_out + g * coutG) * spatial;
    gemmRows(rows, s1 - s0, kSize, w + (g * coutG + r0) * kSize, kSize, col, s1 - s0,
             yg + r0 * spatial + s0, spatial, epilogueOf(p, bias, residual, n, g).at(r0, s0));
  }
}

}  // namespace detail

namespace {

/// The variants' functions, in kConvVariants' order.
struct VariantFunctions {
  bool (*takes)(const ConvParams&);
  bool (*prefers)(const ConvParams&, const ConvContext&);
  void (*run)(const ConvParams&, const float*, const float*, const float*, const float*, float*,
              const Team&);
};
constexpr VariantFunctions kFunctions[] = {
#define CGC_CONV_VARIANT(name, tier, weights) \
  {detail::takes##name, detail::prefers##name, detail::conv##name},
#include "cgc/kernels/conv_variants.def"
#undef CGC_CONV_VARIANT
};

/// v's functions (v is not kNone).
size_t indexOf(ConvVariant v) { return static_cast<size_t>(v) - 1; }

}  // namespace

ConvContext buildConvContext() { return {runtime_isa_tier(), hostMachine(simd::kLanes * 32)}; }

ConvWeights convWeightsOf(const ConvParams& p) {
  if (p.winograd) return ConvWeights::kWinograd;
  if (!p.packed_weights) return ConvWeights::kPlain;
  return p.bf16_weights ? ConvWeights::kBf16Panels : ConvWeights::kPanels;
}

bool convVariantTakes(ConvVariant v, const ConvParams& p) {
  return v != ConvVariant::kNone && kFunctions[indexOf(v)].takes(p);
}

ConvVariant convVariantNamed(const char* name) {
  for (const ConvVariantInfo& v : kConvVariants)
    if (std::strcmp(v.name, name) == 0) return v.variant;
  return ConvVariant::kNone;
}

ConvVariant chooseConvVariant(const ConvParams& p, const ConvContext& context, bool mayPack,
                              bool mayNarrow) {
  const ConvWeights weights = convWeightsOf(p);
  ConvVariant fallback = ConvVariant::kNone;
  for (size_t i = 0; i < std::size(kConvVariants); ++i) {
    const ConvVariantInfo& v = kConvVariants[i];
    const bool readable =
        v.weights == weights || (mayPack && (mayNarrow || !convWeightsNarrow(v.weights)));
    if (!isaTierIncludes(context.tier, v.tier) || !readable || !kFunctions[i].takes(p)) continue;
    if (kFunctions[i].prefers(p, context)) return v.variant;
    if (fallback == ConvVariant::kNone) fallback = v.variant;
  }
  return fallback;
}

namespace {

/// p set to run `alternative` (its layout, tile or depth step).
ConvParams withAlternative(ConvParams p, const ConvAlternative& alternative) {
  const ConvWeights weights = variantInfo(alternative.variant).weights;
  p.variant = alternative.variant;
  p.winograd = weights == ConvWeights::kWinograd;
  p.packed_weights = weights == ConvWeights::kPanels || weights == ConvWeights::kBf16Panels;
  p.bf16_weights = weights == ConvWeights::kBf16Panels;
  if (p.winograd) p.winograd_tile = alternative.setting;
  if (p.packed_weights) p.depth_step = alternative.setting;
  p.alternatives = {};
  return p;
}

}  // namespace

ConvParams convChoiceAt(const ConvParams& p, const ConvContext& context, int64_t* weights) {
  if (weights) *weights = 0;
  if (p.alternatives[0].variant == ConvVariant::kNone) return p;
  // The candidates: p's own variant (weights at 0), then the alternatives.
  ConvAlternative own{p.variant, p.winograd ? p.winograd_tile : p.depth_step, 0};
  std::array<ConvAlternative, 3> candidates = {own, p.alternatives[0], p.alternatives[1]};
  for (const ConvVariantInfo& info : kConvVariants) {
    if (!isaTierIncludes(context.tier, info.tier)) continue;
    const ConvAlternative* taken = nullptr;
    for (const ConvAlternative& c : candidates) {
      if (c.variant != info.variant) continue;
      const ConvParams q = withAlternative(p, c);
      if (!kFunctions[indexOf(c.variant)].takes(q) ||
          !kFunctions[indexOf(c.variant)].prefers(q, context))
        continue;
      // Of two Winograd forms, the one convWinogradTile prefers.
      if (!taken || (q.winograd && c.setting == convWinogradTile(q, context))) taken = &c;
    }
    if (!taken) continue;
    if (weights) *weights = taken->weights;
    return withAlternative(p, *taken);
  }
  return withAlternative(p, own);
}

void conv(const ConvParams& given, const float* x, const float* w, const float* bias,
          const float* residual, float* y, const Team& team) {
  // --dim's general code: the variant for these extents, on its weights.
  static const ConvContext context = buildConvContext();
  int64_t offset = 0;
  const ConvParams p = convChoiceAt(given, context, &offset);
  w += offset;
  // The compiler's choice where this build has it and it fits (lowering
  // checks that it does), else this build's.
  ConvVariant v = p.variant;
  if (v == ConvVariant::kNone || !convVariantTakes(v, p) ||
      variantInfo(v).weights != convWeightsOf(p) ||
      !isaTierIncludes(runtime_isa_tier(), variantInfo(v).tier))
    v = chooseConvVariant(p, buildConvContext());
  if (v == ConvVariant::kNone) {  // a compiler fault: lowering checks every layer's variant
    std::fprintf(stderr, "cgc runtime: no convolution variant takes this layer\n");
    std::abort();
  }
  kFunctions[indexOf(v)].run(p, x, w, bias, residual, y, team);
}

void conv_transpose(const ConvParams& p, const float* x, const float* w, const float* bias,
                    float* y, const Team& team) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t taps = p.k_d * p.k_h * p.k_w;
  const int64_t rows = coutG * taps;
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  const int64_t outSpatial = p.d_out * p.h_out * p.w_out;
  // Each thread owns a range of output channels: its rows of col and its
  // planes of y, so the scatter needs no synchronisation.
  const Range channels = team.split(coutG);
  if (channels.size() <= 0) return;
  float* col = scratch(channels.size() * taps * inSpatial);
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t g = 0; g < p.groups; ++g) {
      // col = W_g^T x_g for this thread's channels, W_g viewed as [cinG, rows].
      const float* wg = w + g * cinG * rows + channels.begin * taps;
      const float* xg = x + (n * p.c_in + g * cinG) * inSpatial;
      detail::gemmRowsTransposedA(channels.size() * taps, inSpatial, cinG, wg, rows, xg, inSpatial,
                                  col, inSpatial);
      float* yg = y + (n * p.c_out + g * coutG) * outSpatial;
      std::fill(yg + channels.begin * outSpatial, yg + channels.end * outSpatial, 0.0f);
      // Scatter: input position i with tap t lands on output position o,
      // the mirror of the convolution's gather with the roles swapped.
      for (int64_t c = channels.begin; c < channels.end; ++c) {
        const float* colRows = col + (c - channels.begin) * taps * inSpatial;
        float* plane = yg + c * outSpatial;
        forEachTap(p, p.d_out, p.h_out, p.w_out, p.d_in, p.h_in, p.w_in,
                   [&](int64_t tap, int64_t in, int64_t out) {
                     if (out >= 0) plane[out] += colRows[tap * inSpatial + in];
                   });
      }
      addBias(bias ? bias + g * coutG + channels.begin : nullptr, channels.size(), outSpatial,
              yg + channels.begin * outSpatial);
    }
  }
}

}  // namespace cgc::rt
