// Convolution on packed weights (the pack-conv-weights pass, where
// convPrefersPackedWeights), one of conv's variants (conv_variants.def), and the
// packing itself. The weights are stored in panels of 64 output channels
// (packConvWeights), so gemmPacked (packed_gemm.cpp) runs its vectors along
// output channels and reads the (zero-padded) input in place through index
// tables, NCHW or channel-blocked: no im2col copy. Its vectors of channels
// go into a channel-blocked y as they are, or are transposed into an NCHW
// one with the epilogue. The driver (runPacked) also runs PackedBf16
// (conv_packed_bf16.cpp) on the same layout of bfloat16 pairs, which
// packConvWeights writes with bf16_weights.
#include <algorithm>
#include <bit>

#include "cgc/kernels.h"
#include "conv/conv_strategies.h"
#include "conv/conv_support.h"
#include "core/bf16.h"
#include "core/scratch.h"
#include "gemm/gemm_core.h"

namespace cgc::rt {
namespace {

using detail::packedChannels;

}  // namespace

namespace detail {

/// Groups 1, any window, either layout on both sides.
bool takesPacked(const ConvParams& p) { return p.groups == 1 && p.pool_h_out == 0; }

bool prefersPacked(const ConvParams& p, const ConvContext&) { return convPrefersPackedWeights(p); }

/// Group 1 on packed weights. gemmPacked reads the input in place through
/// two index tables, B(c * taps + tap, s) = in[offsets[c, tap] +
/// positions[s]], from a zero-padded copy where the windows reach past the
/// image: no im2col matrix, and either input layout. The team splits output
/// channels (in 16s) and positions as for a GEMM; each thread takes chunks
/// of its positions and, one panel of its channels at a time, runs
/// gemmPacked. A channel-blocked y takes its vectors of channels as they
/// are, the epilogue applied in registers; an NCHW one gets them in scratch
/// laid out [position][channel], transposed into y with the epilogue while
/// the block is still in L1. With `kernel.pairs` (PackedBf16) the input is
/// always copied, by kernel.pairs, into blocks of 16 channels as bfloat16,
/// and a depth row is a pair of channels at one tap: 32-bit elements, as
/// the float ones, that the kernel's tiles read.
void runPacked(const ConvParams& p, const float* x, const float* w, const float* bias,
               const float* residual, float* y, const Team& team, const PackedKernel& kernel) {
  const bool pairs = kernel.pairs != nullptr;
  const int64_t taps = p.k_d * p.k_h * p.k_w;
  const int64_t kSize = (pairs ? (p.c_in + 1) / 2 : p.c_in) * taps;
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  const int64_t outPlane = p.h_out * p.w_out, spatial = p.d_out * outPlane;
  const int64_t channels = packedChannels(p), channelBlocks = channels / 16;
  detail::OutputSplit split{1, 1};
  detail::Block blk{{0, channelBlocks}, {0, spatial}};
  if (team.size() > 1) {
    split = detail::splitOutput(channels, spatial, kSize, team.size());
    blk = detail::blockOf(split, channelBlocks, spatial, team.thread());
  }

  const int64_t d = (p.d_out - 1) * p.stride_d + (p.k_d - 1) * p.dilation_d + 1;
  const int64_t h = (p.h_out - 1) * p.stride_h + (p.k_h - 1) * p.dilation_h + 1;
  const int64_t wd = (p.w_out - 1) * p.stride_w + (p.k_w - 1) * p.dilation_w + 1;
  const bool inPlace = !pairs && p.pad_front == 0 && p.pad_top == 0 && p.pad_left == 0 &&
                       d <= p.d_in && h <= p.h_in && wd <= p.w_in;
  // Where the team splits only channels, every thread reads the whole
  // padded image: they pad it once, together, into thread 0's scratch
  // (each its share of the channels), instead of each all of it (4-6% of a
  // 3x3 layer on two threads).
  const bool sharedPadding = !inPlace && split.tj == 1 && team.size() > 1;
  const bool idle = blk.rows.size() <= 0 || blk.cols.size() <= 0;
  if (idle && !sharedPadding) return;
  const int64_t o0 = blk.rows.begin * 16, o1 = blk.rows.end * 16;
  const int64_t rows = inPlace ? p.h_in : h, cols = inPlace ? p.w_in : wd;
  const int64_t volume = (inPlace ? p.d_in : d) * rows * cols;
  // Input channel c lies in plane c / lanes, at lane c % lanes of each
  // element; an element is `slots` 32-bit elements (floats, or pairs of
  // bfloat16), channel c at slot c % lanes / step of it.
  const int64_t lanes = pairs || p.blocked_input ? kChannelBlock : 1, step = pairs ? 2 : 1;
  const int64_t slots = lanes / step, planes = (p.c_in + lanes - 1) / lanes;
  int64_t* offsets = scratch<int64_t>(kSize + blk.cols.size());
  int64_t* positions = offsets + kSize - blk.cols.begin;  // positions[s]
  for (int64_t c = 0, i = 0; c < p.c_in; c += step)
    for (int64_t kd = 0; kd < p.k_d; ++kd)
      for (int64_t kh = 0; kh < p.k_h; ++kh)
        for (int64_t kw = 0; kw < p.k_w; ++kw)
          offsets[i++] =
              c / lanes * volume * slots + c % lanes / step +
              ((kd * p.dilation_d * rows + kh * p.dilation_h) * cols + kw * p.dilation_w) * slots;
  for (int64_t s = blk.cols.begin; s < blk.cols.end; ++s)
    positions[s] =
        ((s / outPlane * p.stride_d * rows + s % outPlane / p.w_out * p.stride_h) * cols +
         s % p.w_out * p.stride_w) *
        slots;

  // What this thread pads: its planes of the whole image when shared,
  // else all planes of the rows its positions read.
  Range padPlanes{0, planes}, padRows{0, d * h};
  if (sharedPadding) {
    padPlanes = team.split(planes);
  } else if (d == 1) {
    padRows = {
        blk.cols.begin / p.w_out * p.stride_h,
        std::min(h, (blk.cols.end - 1) / p.w_out * p.stride_h + (p.k_h - 1) * p.dilation_h + 1)};
  }
  constexpr int64_t kChunk = 96;  // positions: 64 x 96 floats of result fit L1
  const int64_t depthStep =
      p.depth_step > 0 ? p.depth_step : convPackedDepthStep(buildConvContext());
  float* transposed =
      scratch<float>(kChunk * detail::kPackedPanel + (inPlace ? 0 : planes * volume * slots));
  float* padded = transposed + kChunk * detail::kPackedPanel;
  if (sharedPadding) padded = team.shareFromFirst(padded);
  for (int64_t n = 0; n < p.n; ++n) {
    const float* in = x + n * p.c_in * inSpatial;
    if (!inPlace) {
      if (sharedPadding && n > 0) team.barrier();  // all done with image n - 1
      if (pairs)
        kernel.pairs(p, in, d, h, wd, padPlanes, padRows, padded);
      else
        padInput(p, in, d, h, wd, padPlanes, padRows, lanes, padded);
      if (sharedPadding) team.barrier();
      in = padded;
    }
    if (idle) continue;
    float* yn = y + n * p.c_out * spatial;
    const detail::Epilogue e = epilogueOf(p, bias, residual, n, 0);
    const Bounds bounds = activationBounds(p);
    for (int64_t s0 = blk.cols.begin; s0 < blk.cols.end; s0 += kChunk) {
      const int64_t count = std::min(blk.cols.end, s0 + kChunk) - s0;
      for (int64_t o = o0; o < o1;) {
        const int64_t end = std::min(o1, (o / detail::kPackedPanel + 1) * detail::kPackedPanel);
        const int64_t width = end - o, real = std::min(end, p.c_out) - o;
        // Channel block o / 16 at position s0: o * spatial + 16 s0 in
        // either layout.
        const int64_t first = o * spatial + s0 * (p.blocked_output ? kChannelBlock : 1);
        if (p.blocked_output) {
          const detail::PackedOutput out{yn + first,
                                         kChannelBlock,
                                         spatial * kChannelBlock,
                                         bias ? bias + o : nullptr,
                                         e.residual ? e.residual + first : nullptr,
                                         bounds.low,
                                         bounds.high};
          detail::gemmPacked(channels, kSize, w, o, end, count, in, offsets, positions + s0, out,
                             depthStep, kernel.tiles);
        } else {
          detail::gemmPacked(channels, kSize, w, o, end, count, in, offsets, positions + s0,
                             detail::PackedOutput{transposed, width}, depthStep, kernel.tiles);
          detail::transpose(transposed, width, count, real, yn + first, spatial, e.at(o, s0));
        }
        o = end;
      }
    }
  }
  // Thread 0's scratch must outlive the others' reads, even where the
  // caller's threads end right after the call (found by AddressSanitizer on
  // the kernel tests, whose teams are threads started per call).
  if (sharedPadding) team.barrier();
}

void convPacked(const ConvParams& p, const float* x, const float* w, const float* bias,
                const float* residual, float* y, const Team& team) {
  runPacked(p, x, w, bias, residual, y, team, {});
}

}  // namespace detail

int64_t convPackedDepthStep(const ConvContext& context) {
  return detail::packedDepthStep(context.machine);
}

int64_t packedConvWeightCount(const ConvParams& p) {
  const int64_t cin = p.c_in / p.groups;
  return packedChannels(p) * (p.bf16_weights ? (cin + 1) / 2 : cin) * p.k_d * p.k_h * p.k_w;
}

void packConvWeights(const ConvParams& p, const float* w, float* packed) {
  const int64_t taps = p.k_d * p.k_h * p.k_w, cin = p.c_in / p.groups, kSize = cin * taps;
  const int64_t channels = packedChannels(p), rows = packedConvWeightCount(p) / channels;
  std::fill_n(packed, channels * rows, 0.0f);
  for (int64_t o = 0; o < p.c_out; ++o) {
    const int64_t panel = o / detail::kPackedPanel * detail::kPackedPanel;
    const int64_t width = std::min(detail::kPackedPanel, channels - panel);
    float* to = packed + panel * rows + (o - panel);
    const float* from = w + o * kSize;
    if (!p.bf16_weights) {
      for (int64_t k = 0; k < kSize; ++k) to[k * width] = from[k];
      continue;
    }
    // Pair q = c / 2 * taps + tap: channels c (low half) and c + 1.
    for (int64_t c = 0; c < cin; ++c)
      for (int64_t tap = 0; tap < taps; ++tap) {
        const uint32_t half = detail::roundToBf16(from[c * taps + tap]);
        uint32_t pair = std::bit_cast<uint32_t>(to[(c / 2 * taps + tap) * width]);
        pair |= c % 2 ? half << 16 : half;
        to[(c / 2 * taps + tap) * width] = std::bit_cast<float>(pair);
      }
  }
}

}  // namespace cgc::rt
