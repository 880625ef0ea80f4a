// Convolution and transposed convolution, and the questions the compiler's
// packing passes ask about a layer (which weight layout and activation
// layout the kernel takes for it).
#pragma once

#include "cgc/kernels/common.h"
#include "cgc/machine.h"

namespace cgc::rt {

/// The layouts of a convolution's weights that its variants read: OI(D)HW
/// as the model has them, packConvWeights' panels, winogradWeights'
/// transforms, packConvWeights' panels of bfloat16 pairs (--precision bf16).
CGC_ENUM(ConvWeights, kPlain, kPanels, kWinograd, kBf16Panels)

/// The variants of the float convolution (cgc/kernels/conv_variants.def):
/// ConvVariant (kNone: conv chooses, chooseConvVariant), ConvVariantInfo
/// {variant, name, tier, weights}, kConvVariants and variantInfo(v).
#define CGC_VARIANTS_PREFIX Conv
#define CGC_VARIANTS_DEF "cgc/kernels/conv_variants.def"
#define CGC_VARIANTS_LAYOUT ConvWeights
#define CGC_VARIANTS_FIELD weights
#define CGC_CONV_VARIANT CGC_VARIANT
#include "cgc/kernels/variant_table.h"
#undef CGC_CONV_VARIANT

/// What a variant's choice weighs of the CPU that runs it.
struct ConvContext {
  const char* tier;     // its instruction-set tier (cgc/isa_tiers.def)
  MachineInfo machine;  // its vector width, caches and cores (cgc/machine.h)

  int lanes() const { return machine.lanes(); }  // floats per vector register
};

/// This runtime's context: the tier and vector width it was built for, on
/// the machine it runs on (hostMachine).
ConvContext buildConvContext();

/// A variant conv may run instead of ConvParams::variant on the extents of a
/// call (--dim's general code, whose extents change from call to call):
/// its own weights, in its layout, start `weights` floats into w.
struct ConvAlternative {
  ConvVariant variant = ConvVariant::kNone;
  int64_t setting = 0;  // Winograd's tile, Packed's depth step (0: the runtime's)
  int64_t weights = 0;
  CGC_REFLECT(ConvAlternative, variant, setting, weights)
};

/// Convolution over (depth,) height and width: NC(D)HW input, OI(D)HW
/// weights (I = c_in / groups). 1-D and 2-D convolutions have unit depth
/// (and height) with unit window, stride and dilation there (the defaults,
/// so the generated parameters of a 2-D layer leave the depth fields out).
/// Epilogue: y = act(conv(x, w) + bias + residual).
struct ConvParams {
  int64_t n, c_in, d_in = 1, h_in = 1, w_in;
  int64_t c_out, d_out = 1, h_out = 1, w_out;
  int64_t groups = 1;
  int64_t k_d = 1, k_h = 1, k_w = 1;
  int64_t stride_d = 1, stride_h = 1, stride_w = 1;
  int64_t pad_front = 0, pad_top = 0, pad_left = 0;
  int64_t dilation_d = 1, dilation_h = 1, dilation_w = 1;
  Activation activation = Activation::kNone;  // ignored by conv_transpose
  float act_min = 0.0f, act_max = 0.0f;
  // w is in packConvWeights' layout (set by the pack-conv-weights pass);
  // with bf16_weights, its panels hold bfloat16 pairs along the depth
  // (--precision bf16: the PackedBf16 variant).
  bool packed_weights = false;
  bool bf16_weights = false;
  // Where pool_h_out > 0, y holds the 3x3, stride-2 max pooling (pads
  // pool_pad_top/left in front, the rest implied by pool_h/w_out) of the
  // output instead of the output: n x c_out x pool_h_out x pool_w_out (the
  // fuse-conv-maxpool pass, where convFusesMaxPool).
  int64_t pool_h_out = 0, pool_w_out = 0, pool_pad_top = 0, pool_pad_left = 0;
  // x, or y and the residual, in the channel-blocked layout
  // [n][c / kChannelBlock][d][h][w][kChannelBlock] instead of NCHW (the
  // block-activations pass). Needs packed or Winograd weights and, on that
  // side, a multiple of kChannelBlock channels.
  bool blocked_input = false, blocked_output = false;
  // w is in winogradWeights' layout and conv runs Winograd F(m x m, 3x3)
  // with m = winograd_tile, 2 or 4, or F(2x2, 5x5), F(2x2, 2x2), F(1x2, 1x7), F(2x1,
  // 7x1), F(1xm, 1x3) or F(mx1, 3x1) on those windows (the pack-conv-weights pass, where
  // convPrefersWinograd, with convWinogradTile's m); packed_weights is then false. Takes either
  // layout on both sides.
  bool winograd = false;
  int64_t winograd_tile = 2;
  // The variant conv runs (the pack-conv-weights pass's choice, or a
  // test's); kNone: conv chooses, as chooseConvVariant.
  ConvVariant variant = ConvVariant::kNone;
  // The Packed variant's depth per pass over the weights
  // (convPackedDepthStep of the target's context, set by the
  // pack-conv-weights pass); 0: this runtime's context's.
  int64_t depth_step = 0;
  // Other variants, each on weights of its own packed after the variant's
  // in w (the pack-conv-weights pass, for --dim's general code): per call,
  // conv runs the one convChoiceAt picks for p's extents.
  std::array<ConvAlternative, 2> alternatives{};
  CGC_REFLECT(ConvParams, n, c_in, d_in, h_in, w_in, c_out, d_out, h_out, w_out, groups, k_d, k_h,
              k_w, stride_d, stride_h, stride_w, pad_front, pad_top, pad_left, dilation_d,
              dilation_h, dilation_w, activation, act_min, act_max, packed_weights, bf16_weights,
              pool_h_out, pool_w_out, pool_pad_top, pool_pad_left, blocked_input, blocked_output,
              winograd, winograd_tile, variant, depth_step, alternatives)
};

/// The layout of p's weights (packed_weights, bf16_weights, winograd).
ConvWeights convWeightsOf(const ConvParams& p);

/// Whether variant v computes p: its shapes and layouts, p's weights'
/// layout and v's tier aside.
bool convVariantTakes(ConvVariant v, const ConvParams& p);

/// The variant called `name` ("Winograd"), or kNone.
ConvVariant convVariantNamed(const char* name);

/// The variant to run p on a CPU of `context`: the first of kConvVariants
/// whose tier the context has, that takes p and prefers it (else the first
/// that takes it), among those reading p's weights, or, with `mayPack`
/// (constant weights the compiler may rearrange), any float weights, and
/// with `mayNarrow` too (--precision bf16) bfloat16 ones. conv runs this
/// where p.variant is kNone; the pack-conv-weights pass records it, with
/// its target's context, and gives the layer the weights it reads. kNone
/// where no variant takes p.
ConvVariant chooseConvVariant(const ConvParams& p, const ConvContext& context, bool mayPack = false,
                              bool mayNarrow = false);

/// p as conv runs it on a CPU of `context`: where p has alternatives, the
/// first in kConvVariants' order among p.variant and them that takes p's
/// extents and prefers them (of two Winograd forms, convWinogradTile's),
/// else p.variant; its layout fields, tile and depth step set, and
/// `*weights` (if given) the offset of its weights in w.
ConvParams convChoiceAt(const ConvParams& p, const ConvContext& context,
                        int64_t* weights = nullptr);

/// Whether weights of layout `w` are narrower than float (bfloat16): a
/// variant reading them is chosen only under --precision bf16.
constexpr bool convWeightsNarrow(ConvWeights w) { return w == ConvWeights::kBf16Panels; }

/// Channels per block of the channel-blocked activation layout: one
/// AVX-512 vector, so a vector of output channels leaves a convolution
/// without a transpose and the next one reads its inputs in place.
constexpr int64_t kChannelBlock = 16;

/// bias and residual (same shape as y, must not alias it) may be null.
/// Splits the output over the team: by output columns for im2col layers, by
/// the GEMM split (see gemm) for pointwise ones, by channels for depthwise.
void conv(const ConvParams& p, const float* x, const float* w, const float* bias,
          const float* residual, float* y, const Team& team = Team::serial());

/// Whether conv runs faster on weights stored by packConvWeights (groups 1,
/// c_out at least 3/4 of itself rounded up to 16, depth c_in x window at
/// least 128): windows larger than 1x1 and strided or padded ones, which
/// the packed kernel reads in place instead of through an im2col copy, and
/// 1x1 layers with at most 64 outputs per channel, or 196 with 256 output
/// channels or more, where the NCHW GEMM's vectors along positions run
/// part-empty.
bool convPrefersPackedWeights(const ConvParams& p);

/// Whether conv, on packed or Winograd weights, can read x
/// (takesBlockedInput) or write y and the residual (takesBlockedOutput) in
/// the channel-blocked layout: groups 1, that side's channels in
/// kChannelBlocks, not a few-channel stem (its direct loop reads NCHW
/// planes), no fused pooling.
bool convTakesBlockedInput(const ConvParams& p);
bool convTakesBlockedOutput(const ConvParams& p);

struct PoolParams;

/// Whether conv can store `pool` (a MaxPool reading its whole output) of
/// its output instead of the output: 3x3 windows at stride 2 over a 2-D
/// stem with few input channels, whose output is the largest tensor of a
/// CNN and otherwise goes to memory and back.
bool convFusesMaxPool(const ConvParams& conv, const PoolParams& pool);

/// Floats packConvWeights writes: c_out rounded up to 16, times the depth
/// (with bf16_weights, 32-bit pairs: times the depth's pairs).
int64_t packedConvWeightCount(const ConvParams& p);

/// Repacks OI(D)HW weights (groups 1) for conv with packed_weights: output
/// channels padded with zeros to a multiple of 16, in panels of 64 (the
/// last one narrower), each stored [c_in * taps][panel width], so the
/// kernel's vectors run along output channels. With bf16_weights, each
/// panel is [(c_in + 1) / 2 * taps][panel width] 32-bit pairs instead, the
/// weights of input channels 2i (low half) and 2i + 1 (high half, zero
/// past c_in) at one tap, rounded to bfloat16 (nearest, ties to even):
/// the operand vdpbf16ps takes, pair q = i * taps + tap.
void packConvWeights(const ConvParams& p, const float* w, float* packed);

/// The depth (rows of packed weights) the Packed variant takes per pass on
/// a CPU of `context`: a panel's slice a quarter of L2 (AVX-512: 1024 on
/// 1 MiB), or, with 8-float vectors, a tile group's slice three quarters of
/// L1d (384 on 32 KiB).
int64_t convPackedDepthStep(const ConvContext& context);

/// Whether conv can run as Winograd F(2x2, 3x3) (takes): 2-D 3x3 windows
/// at stride 1, no dilation, groups 1, no fused pooling (any channel
/// counts: the transforms are padded to whole kChannelBlocks), or F(2x2,
/// 5x5), F(2x2, 2x2), F(2, 7) and F(m, 3) on 5x5, 2x2, 1x7, 7x1, 1x3 and
/// 3x1 windows likewise; and whether that is faster (prefers) on a CPU of
/// `context`: for 3x3, 32 input channels or more and at least 49 tiles of
/// 2x2 outputs, 13x13 and larger planes, or where F(4x4) pays; for the
/// others, 16 input channels or more, 16 tiles a core or more over the
/// batch and transformed weights of at most half the L3 (32 tiles and 16 MB
/// on two cores of a Zen 4).
bool convTakesWinograd(const ConvParams& p);
bool convPrefersWinograd(const ConvParams& p, const ConvContext& context);

/// The tile a preferred Winograd layer runs fastest with on `context`'s
/// machine: 4 (F(4x4, 3x3)) or 2 (F(2x2, 3x3)), 4 only where each core
/// keeps F(4x4)'s transformed weights in its L2 or has 16 tiles or more to
/// stream them for; 2 for 5x5, 2x2, 1x7 and 7x1 windows, 4 for 1x3 and 3x1.
int64_t convWinogradTile(const ConvParams& p, const ConvContext& context);

/// Whether Winograd can run p with `tile` (winograd_tile): 2 or 4 on 3x3
/// windows, the one form the others have (convWinogradTile's).
bool convWinogradTakesTile(const ConvParams& p, int64_t tile);

/// Floats winogradWeights writes for p.winograd_tile m: (m + 2)^2 x c_in x
/// c_out for 3x3 windows, 36 for 5x5 ones, 9 for 2x2 ones, 8 for 1x7 and 7x1 ones, m + 2
/// for 1x3 and 3x1 ones; the channels rounded up to multiples of
/// kChannelBlock.
int64_t winogradWeightCount(const ConvParams& p);

/// The Winograd transform G g G^T of each 3x3, 5x5 or 2x2 kernel g of OIHW weights
/// (groups 1), stored as (m + 2)^2 row-major c_in x c_out matrices (padded
/// with zeros to whole kChannelBlocks), one per element of the (m + 2) x
/// (m + 2) transformed kernel (conv with winograd, m = p.winograd_tile);
/// for 1x7, 7x1, 1x3 and 3x1 kernels, G g along the window's axis: 8, or
/// m + 2, matrices.
void winogradWeights(const ConvParams& p, const float* w, float* u);

/// Transposed convolution, weights [c_in, c_out / groups, k_d, k_h, k_w].
/// The *_in sizes are the input's, *_out the output's; pads are the ones
/// cropped from the full output (resolved from output_shape / auto_pad by the
/// compiler). Splits output channels over the team.
void conv_transpose(const ConvParams& p, const float* x, const float* w, const float* bias,
                    float* y, const Team& team = Team::serial());

}  // namespace cgc::rt
