// The convolution's variants (cgc/kernels/conv_variants.def), each in a
// file of its own: packed bf16 weights (conv_packed_bf16.cpp), Winograd
// (winograd.cpp), packed weights (conv_packed.cpp), the three depthwise ones
// (conv_depthwise.cpp), few input channels (conv_stem.cpp), pointwise and
// im2col (conv.cpp): the declarations of their functions, which conv.cpp's
// dispatch table lists. Also the shape predicates that the choice and the
// variants share, the driver the two packed variants share, and the
// epilogue store of the kernels that run through PlanePhases.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cgc/kernels.h"
#include "conv/conv_support.h"
#include "conv/plane_phases.h"
#include "gemm/gemm_core.h"

namespace cgc::rt::detail {

/// NCHW on both sides and no fused pooling: what the variants on plain
/// weights (but the stem's) take.
inline bool plainLayouts(const ConvParams& p) {
  return !p.blocked_input && !p.blocked_output && p.pool_h_out == 0;
}

/// Depthwise 2-D convolution: groups == c_in == c_out, unit depth.
inline bool isDepthwise2d(const ConvParams& p) {
  return p.groups == p.c_in && p.groups == p.c_out && p.k_d == 1 && p.d_in == 1 && p.d_out == 1;
}

/// Few input channels (stem layers: RGB in, depth 27 to 147): the layers
/// the FewChannels variant computes, at any plane size (--dim's general
/// code runs a stem chosen at its largest image at the smallest too). Not
/// for strides past 2 (Silero's STFT: stride 64, 8 outputs), whose phases
/// the direct loop would mostly compute and drop.
inline bool isFewChannels(const ConvParams& p) {
  constexpr int64_t kMaxChannels = 4;
  return p.groups == 1 && p.c_in <= kMaxChannels && p.k_d == 1 && p.d_in == 1 && p.d_out == 1 &&
         p.stride_h <= 2 && p.stride_w <= 2;
}

/// A few-channel layer on a large image, where im2col copies as many
/// floats as the GEMM then multiplies per output and the packed kernel's
/// tiles would run a handful of steps each: where FewChannels pays, and
/// the other variants leave the layer to it.
inline bool fewChannelsPays(const ConvParams& p) {
  constexpr int64_t kMinPositions = 256;
  return isFewChannels(p) && p.h_out * p.w_out >= kMinPositions;
}

/// Output channels the packed kernel computes: c_out rounded up to 16 (the
/// packed weights of the extra ones are zero and their results dropped).
inline int64_t packedChannels(const ConvParams& p) { return (p.c_out + 15) / 16 * 16; }

/// Stores PlanePhases' output rows `rows` into the plane `out` with the
/// epilogue: act(v + bias + residual) (a copy and then applyEpilogue per
/// plane cost more than the taps).
inline void storeWithEpilogue(const ConvParams& p, const PlanePhases& phases, const float* rows,
                              float bias, const float* residual, float* out, int64_t begin = 0,
                              int64_t end = -1) {
  const Bounds bounds = activationBounds(p);
  const float lo = bounds.low, hi = bounds.high;
  if (residual)
    phases.store(
        rows, out, [&](float v, int64_t i) { return std::clamp(v + bias + residual[i], lo, hi); },
        begin, end);
  else
    phases.store(
        rows, out, [&](float v, int64_t) { return std::clamp(v + bias, lo, hi); }, begin, end);
}

/// What the packed convolution's driver (runPacked, conv_packed.cpp) runs
/// with: Packed's float tiles ({}), or PackedBf16's tiles, whose depth rows
/// are pairs of input channels at a tap, and `pairs`, which copies x's
/// planes `planes` (blocks of 16 channels) and rows `rows` into
/// zero-padded d x h x w volumes, rounded to bfloat16, each element the 16
/// channels' 8 pairs (padInput's channel-blocked copy, narrowed).
struct PackedKernel {
  const PackedTiles* tiles = nullptr;
  void (*pairs)(const ConvParams& p, const float* x, int64_t d, int64_t h, int64_t w, Range planes,
                Range rows, float* padded) = nullptr;
};
void runPacked(const ConvParams& p, const float* x, const float* w, const float* bias,
               const float* residual, float* y, const Team& team, const PackedKernel& kernel);

/// Each variant's functions: takes<Name> (the layers it computes; its
/// weights' layout aside), prefers<Name> (whether it should run them rather
/// than the variants after it, on a CPU of that context) and conv<Name>
/// (conv's signature).
#define CGC_CONV_VARIANT(name, tier, weights)                                             \
  bool takes##name(const ConvParams& p);                                                  \
  bool prefers##name(const ConvParams& p, const ConvContext& context);                    \
  void conv##name(const ConvParams& p, const float* x, const float* w, const float* bias, \
                  const float* residual, float* y, const Team& team);
#include "cgc/kernels/conv_variants.def"
#undef CGC_CONV_VARIANT

}  // namespace cgc::rt::detail
