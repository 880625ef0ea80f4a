// conv (every variant, the team splits and the fused epilogues, pooling and
// alternatives) against plain reference loops in double, over awkward
// shapes, each run serially and by teams of 2 and 3 threads.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "cgc/isa_tiers.h"
#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::isaTierIncludes;
using cgc::runtime_isa_tier;
using cgc::test::Act;
using cgc::test::activate;
using cgc::test::kActs;
using cgc::test::onTeam;
using cgc::test::randomFloats;
using cgc::test::requireClose;
using cgc::test::roundedToBf16;

namespace {

struct ConvCase {
  int64_t n, cin, d, h, w, cout, groups;
  int64_t kd, kh, kw, sd, sh, sw;
  int64_t pf, pt, pl, pbk, pb, pr;  // begin and end pads
  int64_t dd, dh, dw;
};

ConvParams paramsOf(const ConvCase& c) {
  auto out = [](int64_t in, int64_t k, int64_t s, int64_t dil, int64_t b, int64_t e) {
    return (in + b + e - ((k - 1) * dil + 1)) / s + 1;
  };
  ConvParams p{};
  p.n = c.n;
  p.c_in = c.cin;
  p.d_in = c.d;
  p.h_in = c.h;
  p.w_in = c.w;
  p.c_out = c.cout;
  p.d_out = out(c.d, c.kd, c.sd, c.dd, c.pf, c.pbk);
  p.h_out = out(c.h, c.kh, c.sh, c.dh, c.pt, c.pb);
  p.w_out = out(c.w, c.kw, c.sw, c.dw, c.pl, c.pr);
  p.groups = c.groups;
  p.k_d = c.kd;
  p.k_h = c.kh;
  p.k_w = c.kw;
  p.stride_d = c.sd;
  p.stride_h = c.sh;
  p.stride_w = c.sw;
  p.pad_front = c.pf;
  p.pad_top = c.pt;
  p.pad_left = c.pl;
  p.dilation_d = c.dd;
  p.dilation_h = c.dh;
  p.dilation_w = c.dw;
  return p;
}

std::vector<float> referenceConv(const ConvParams& p, const std::vector<float>& x,
                                 const std::vector<float>& w, const float* bias,
                                 const float* residual) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t outSpatial = p.d_out * p.h_out * p.w_out;
  std::vector<float> y(p.n * p.c_out * outSpatial);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < p.c_out; ++o)
      for (int64_t od = 0; od < p.d_out; ++od)
        for (int64_t oh = 0; oh < p.h_out; ++oh)
          for (int64_t ow = 0; ow < p.w_out; ++ow) {
            const int64_t g = o / coutG;
            double sum = bias ? bias[o] : 0.0;
            for (int64_t ci = 0; ci < cinG; ++ci)
              for (int64_t kd = 0; kd < p.k_d; ++kd)
                for (int64_t kh = 0; kh < p.k_h; ++kh)
                  for (int64_t kw = 0; kw < p.k_w; ++kw) {
                    const int64_t id = od * p.stride_d - p.pad_front + kd * p.dilation_d;
                    const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
                    const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
                    if (id < 0 || id >= p.d_in || ih < 0 || ih >= p.h_in || iw < 0 || iw >= p.w_in)
                      continue;
                    sum += double{x[(((n * p.c_in + g * cinG + ci) * p.d_in + id) * p.h_in + ih) *
                                        p.w_in +
                                    iw]} *
                           w[(((o * cinG + ci) * p.k_d + kd) * p.k_h + kh) * p.k_w + kw];
                  }
            const int64_t at =
                ((n * p.c_out + o) * p.d_out + od) * p.h_out * p.w_out + oh * p.w_out + ow;
            if (residual) sum += residual[at];
            y[at] = static_cast<float>(activate(p.activation, p.act_min, p.act_max, sum));
          }
  return y;
}

/// NCHW values of n images of c channels in the channel-blocked layout
/// (ConvParams::blocked_input), or back with `inverse`.
std::vector<float> blocked(const std::vector<float>& v, int64_t n, int64_t c,
                           bool inverse = false) {
  const int64_t spatial = static_cast<int64_t>(v.size()) / (n * c);
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < spatial; ++s) {
        const int64_t plain = (i * c + ch) * spatial + s;
        const int64_t block =
            ((i * c + ch / kChannelBlock * kChannelBlock) * spatial + s * kChannelBlock) +
            ch % kChannelBlock;
        if (inverse)
          out[plain] = v[block];
        else
          out[block] = v[plain];
      }
  return out;
}

/// How conv gets its weights: as in the model, repacked by
/// packConvWeights (as floats or bfloat16 pairs), or transformed by
/// winogradWeights.
enum class Weights { kPlain, kPacked, kWinograd, kWinograd4, kPackedBf16 };

/// v with each element rounded to bfloat16.
std::vector<float> roundedAll(std::vector<float> v) {
  for (float& e : v) e = roundedToBf16(e);
  return v;
}

/// conv against referenceConv for every epilogue form, activation and team
/// size; on packed or Winograd weights also in every combination of input
/// and output layouts that the channel counts allow. `variant`: the one conv
/// must run (kNone: its choice); without `full`, one epilogue (bias,
/// residual, Relu), the plain layouts and teams of 1 and 3.
void checkConv(const ConvCase& c, Weights form = Weights::kPlain,
               ConvVariant variant = ConvVariant::kNone, bool full = true) {
  ConvParams p = paramsOf(c);
  p.variant = variant;
  auto x = randomFloats(c.n * c.cin * c.d * c.h * c.w, 7);
  auto w = randomFloats(c.cout * (c.cin / c.groups) * c.kd * c.kh * c.kw, 8);
  auto bias = randomFloats(c.cout, 9);
  const int64_t outCount = p.n * p.c_out * p.d_out * p.h_out * p.w_out;
  auto residual = randomFloats(outCount, 10);
  std::vector<float> kernelWeights = w;
  // What the kernel multiplies: with bf16 weights, x and w rounded to
  // bfloat16, so that the products are exact and the bound is float's
  // over the sums, as for the float kernels.
  const bool bf16 = form == Weights::kPackedBf16;
  const std::vector<float> xRef = bf16 ? roundedAll(x) : x, wRef = bf16 ? roundedAll(w) : w;
  if (form == Weights::kPacked || bf16) {
    p.bf16_weights = bf16;
    kernelWeights.resize(packedConvWeightCount(p));
    packConvWeights(p, w.data(), kernelWeights.data());
    p.packed_weights = true;
  } else if (form == Weights::kWinograd || form == Weights::kWinograd4) {
    REQUIRE(convTakesWinograd(p));
    p.winograd_tile = form == Weights::kWinograd4 ? 4 : 2;
    kernelWeights.resize(winogradWeightCount(p));
    winogradWeights(p, w.data(), kernelWeights.data());
    p.winograd = true;
  }
  for (int terms = full ? 0 : 3; terms < 4; ++terms) {  // bias?, residual?
    const float* b = terms & 1 ? bias.data() : nullptr;
    const float* r = terms & 2 ? residual.data() : nullptr;
    for (const Act& act : kActs) {
      if (!full && act.kind != Activation::kRelu) continue;
      p.activation = act.kind;
      p.act_min = act.lo;
      p.act_max = act.hi;
      auto expected = referenceConv(p, xRef, wRef, b, r);
      for (int layouts = 0; layouts < (full ? 4 : 1); ++layouts) {  // in, out blocked?
        p.blocked_input = layouts & 1;
        p.blocked_output = layouts & 2;
        if (layouts != 0 &&
            (form == Weights::kPlain || (p.blocked_input && c.cin % kChannelBlock != 0) ||
             (p.blocked_output && c.cout % kChannelBlock != 0)))
          continue;
        const auto input = p.blocked_input ? blocked(x, c.n, c.cin) : x;
        const auto res = p.blocked_output ? blocked(residual, c.n, c.cout) : residual;
        for (int threads : {1, 2, 3}) {
          if (!full && threads == 2) continue;
          INFO("variant " << enumName(variant) << " cin " << c.cin << " cout " << c.cout
                          << " groups " << c.groups << " k " << c.kh << "x" << c.kw << " terms "
                          << terms << " act " << static_cast<int>(act.kind) << " layouts "
                          << layouts << " threads " << threads);
          std::vector<float> y(outCount, 123.0f);
          onTeam(threads, [&](const Team& team) {
            conv(p, input.data(), kernelWeights.data(), b, r ? res.data() : nullptr, y.data(),
                 team);
          });
          // F(4x4, 3x3)'s transforms have coefficients up to 8 (and 1/24 in
          // the weights'): on these sums of up to 576 products of [-1, 1]
          // its errors reach 2e-4 (F(2x2) and direct: under 1e-4); F(2x2,
          // 5x5), at the same points, on sums of 1200: 1.2e-4.
          const bool widePoints = form == Weights::kWinograd4 || (p.winograd && c.kh == 5);
          const double margin = widePoints ? 3e-4 : 1e-4;
          requireClose(p.blocked_output ? blocked(y, c.n, c.cout, true) : y, expected, margin);
        }
      }
    }
  }
}

// n cin d h w cout groups | kd kh kw sd sh sw | pads (begin d h w, end d h w) | dilations
constexpr ConvCase kStrategyCases[] = {
    {2, 5, 1, 6, 7, 9, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1},    // pointwise
    {1, 4, 1, 7, 9, 3, 1, 1, 1, 1, 1, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1},    // strided 1x1
    {1, 3, 1, 9, 11, 5, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},   // 3x3 pad 1
    {2, 4, 1, 8, 8, 6, 2, 1, 3, 2, 1, 2, 3, 0, 0, 1, 0, 2, 0, 1, 1, 1},    // groups, odd pads
    {1, 2, 1, 9, 9, 2, 1, 1, 3, 3, 1, 1, 2, 0, 2, 2, 0, 2, 2, 1, 2, 3},    // dilated
    {1, 6, 1, 9, 10, 6, 6, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},   // depthwise
    {2, 5, 1, 11, 12, 5, 5, 1, 3, 3, 1, 2, 2, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // depthwise s2
    {1, 3, 1, 8, 9, 3, 3, 1, 5, 3, 1, 1, 2, 0, 2, 0, 0, 2, 3, 1, 2, 2},    // depthwise dilated
    {1, 4, 1, 13, 14, 4, 4, 1, 3, 3, 1, 3, 3, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // depthwise s3
    {1, 3, 1, 6, 37, 3, 3, 1, 5, 5, 1,
     1, 2, 0, 2, 2,  0, 2, 0, 1, 1, 1},  // depthwise wide, sh != sw
    {1, 2, 1, 7, 7, 2, 2, 1, 3, 3, 1,
     2, 1, 0, 0, 3, 0, 1, 0, 1, 2, 1},  // depthwise sh 2, pads > kernel reach
    // Depthwise with channels in 16s and small planes: 16 channels per vector.
    {1, 16, 1, 9, 8, 16, 16, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // vectors, 3x3 pad 1
    {2, 32, 1, 11, 12, 32, 32, 1, 3, 3, 1,
     2, 2,  0, 1,  1,  0,  1,  1, 1, 1, 1},  // vectors, s2, batch 2
    {1, 16, 1, 8, 9, 16, 16, 1, 5, 3, 1,
     1, 2,  0, 2, 0, 0,  2,  3, 1, 2, 2},  // vectors, dilated, one-sided pads
    {1, 16, 1, 13, 14, 16, 16, 1, 3, 3, 1, 3, 3, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // vectors, s3
    {1, 16, 1, 7, 7, 16, 16, 1, 3, 3, 1,
     2, 1,  0, 0, 3, 0,  1,  0, 1, 2, 1},  // vectors, pads > kernel reach
    {1, 16, 1, 3, 20, 16, 16, 1, 1, 7, 1,
     1, 1,  0, 0, 3,  0,  0,  3, 1, 1, 1},  // vectors, 1x7, rows past 8 outputs
    // Depthwise 3x3 rows of 9 outputs or more: blocks of 16 outputs of 4
    // rows in registers, the last block overlapping, masked loads at the
    // edges, groups of 1 to 3 rows at the bottom.
    {1, 3, 1, 9, 40, 3, 3, 1, 3, 3, 1, 2, 2, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // s2, pads 1, 20 wide
    {2, 2, 1, 7, 37, 2, 2, 1, 3, 3, 1,
     2, 2, 0, 0, 0,  0, 1, 1, 1, 1, 1},  // s2, pads at the end only
    {1, 16, 1, 6, 35, 16, 16, 1, 3, 3, 1, 2, 2, 0, 1, 0, 0, 0, 1, 1, 1, 1},  // s2, 16 channels
    {1, 5, 1, 8, 33, 5, 5, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},     // s1, pads 1, 33 wide
    {1, 2, 1, 4, 16, 2, 2, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // s1, one block exactly
    {1, 16, 1, 7, 9, 16, 16, 1, 3, 3, 1,
     1, 1,  0, 1, 1, 0,  1,  1, 1, 1, 1},  // s1, rows of 9: 4 rows at a time, then 3
    {1, 3, 1, 6, 14, 3, 3, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // s1, 14 outputs: masked
    {2, 2, 1, 9, 25, 2, 2, 1, 3, 3, 1, 2, 2, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // s2, 13 outputs: masked
    {1, 2, 4, 5, 6, 3, 1, 2, 2, 3, 1, 2, 1, 1, 0, 1, 0, 1, 1, 2, 1, 1},   // 3-D
    {1, 3, 1, 1, 17, 4, 1, 1, 1, 4, 1, 1, 3, 0, 0, 2, 0, 0, 1, 1, 1, 1},  // 1-D
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1},   // 1x1x1
    {1, 64, 1, 30, 30, 17, 1, 1, 3, 3, 1,
     1, 1,  0, 1,  1,  0,  1, 1, 1, 1, 1},  // several column chunks
    {1, 40, 1, 7, 7, 70, 1, 1, 1, 1, 1,
     1, 1,  0, 0, 0, 0,  0, 0, 1, 1, 1},  // pointwise, more rows than columns
    // Few input channels on 256+ positions (stems): blocks of 8 output
    // channels, the last partial.
    {2, 3, 1, 40, 38, 20, 1, 1, 7, 7, 1, 2, 2, 0, 3, 3, 0, 3, 3, 1, 1, 1},  // 7x7 s2, 8 + 8 + 4
    {1, 3, 1, 34, 36, 16, 1, 1, 3, 3, 1,
     2, 2, 0, 1,  1,  0,  0, 0, 1, 1, 1},                                  // 3x3 s2, one-sided pads
    {1, 4, 1, 20, 37, 9, 1, 1, 3, 2, 1, 1, 2, 0, 2, 1, 0, 2, 0, 1, 2, 2},  // 4 channels, dilated
    {1, 2, 1, 1, 300, 12, 1, 1, 1, 5, 1, 1, 1, 0, 0, 2, 0, 0, 2, 1, 1, 1},  // 1-D, 300 positions
    // Few input channels on small planes, which FewChannels takes too
    // (--dim's general code runs a stem chosen at its largest image on the
    // smallest).
    {2, 3, 1, 1, 1, 16, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1},  // 1x1 on 1x1
    {1, 3, 1, 2, 3, 20, 1, 1, 7, 7, 1, 2, 2, 0, 3, 3, 0, 3, 3, 1, 1, 1},  // 7x7 s2 on 2x3
    {3, 4, 1, 5, 1, 8, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},   // 3x3 on a column
};

// Panels of 64 channels with 16-, 32- and 48-wide remainders, channels
// not in 16s; positions that leave 1 to 5 for the last register tile and
// span several chunks of 96; depths over one 512 step; padding on one side
// only; strided 1x1.
// n cin d h w cout groups | kd kh kw sd sh sw | pads (begin d h w, end d h w) | dilations
constexpr ConvCase kPackedCases[] = {
    {1, 16, 1, 7, 7, 16, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},    // 3x3 pad 1, 7x7
    {2, 20, 1, 9, 11, 80, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},   // 64 + 16
    {1, 70, 1, 6, 5, 48, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},    // depth 630
    {1, 9, 1, 13, 14, 144, 1, 1, 3, 3, 1, 2, 2, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // 64 + 64 + 16, s2
    {1, 5, 1, 17, 19, 32, 1, 1, 5, 3, 1,
     1, 2, 0, 2,  0,  0,  0, 1, 1, 2, 1},  // one-sided pads, dilated
    {1, 3, 1, 40, 12, 96, 1, 1, 3, 3, 1,
     1, 1, 0, 0,  0,  0,  0, 0, 1, 1, 1},  // no pads, 380 positions
    {1, 40, 1, 7, 7, 112, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1},  // pointwise 7x7
    {1, 24, 1, 9, 9, 16, 1, 1, 1, 1, 1, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1},   // strided 1x1
    {1, 4, 3, 5, 6, 32, 1, 2, 3, 3, 1, 1, 2, 1, 1, 0, 0, 1, 1, 1, 1, 1},    // 3-D
    {1, 6, 1, 1, 23, 16, 1, 1, 1, 5, 1, 1, 1, 0, 0, 2, 0, 0, 2, 1, 1, 1},   // 1-D
    {1, 2, 1, 1, 1, 16, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1},    // one position
    {1, 12, 1, 9, 8, 24, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // 24 channels: 8 dropped
    {2, 7, 1, 6, 7, 72, 1, 1, 3, 3, 1, 2, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},   // 64 + 8 of 16
    // Channels in 16s, so also from and into the channel-blocked layout.
    {2, 32, 1, 9, 11, 80, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // 3x3 pad 1, batch 2
    {1, 48, 1, 10, 13, 32, 1, 1, 1, 1, 1,
     1, 1,  0, 0,  0,  0,  0, 0, 1, 1, 1},  // pointwise, 130 positions
    {1, 32, 1, 9, 9, 64, 1, 1, 1, 1, 1, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1},  // strided 1x1
    {1, 128, 1, 5, 6, 16, 1, 1, 3, 3, 1,
     1, 1,   0, 1, 1, 0,  1, 1, 1, 1, 1},  // depth 1152: two depth steps
    {1, 16, 1, 12, 11, 32, 1, 1, 3, 3, 1, 2, 2, 0, 1, 0, 0, 0, 1, 1, 1, 1},  // s2, one-sided pads
    {1, 16, 3, 4, 5, 16, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},    // 3-D
};

// Odd output sizes (tiles cut by the edge), pads on one side or none,
// a single row of outputs, batch 2, and planes of several chunks whose
// tiles split rows between chunks and threads.
// n cin d h w cout groups | kd kh kw sd sh sw | pads (begin d h w, end d h w) | dilations
constexpr ConvCase kWinogradCases[] = {
    {1, 16, 1, 5, 5, 16, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},   // 5x5: 3x3 tiles
    {2, 32, 1, 7, 9, 48, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},   // batch 2, 7x9
    {1, 16, 1, 6, 6, 32, 1, 1, 3, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1},   // no pads: 4x4
    {1, 16, 1, 8, 7, 16, 1, 1, 3, 3, 1, 1, 1, 0, 2, 1, 0, 0, 2, 1, 1, 1},   // one-sided pads
    {1, 48, 1, 3, 20, 16, 1, 1, 3, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1},  // one output row
    {1, 64, 1, 23, 21, 64, 1, 1, 3, 3, 1,
     1, 1,  0, 1,  1,  0,  1, 1, 1, 1, 1},  // 132 tiles, chunks of 64
    // Channels that are not multiples of 16: the transforms padded.
    {1, 40, 1, 9, 11, 24, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},   // 40 -> 24
    {2, 3, 1, 7, 6, 17, 1, 1, 3, 3, 1, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1},     // 3 -> 17
    {1, 33, 1, 12, 13, 48, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},  // 33 -> 48
    {1, 48, 1, 10, 10, 5, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},   // 48 -> 5
};

// Inception-v3's windows: F(2x2, 5x5), F(1x2, 1x7), F(2x1, 7x1), and
// F(1x2, 1x3) or F(1x4, 1x3) and their transposes; F(2x2, 2x2). Odd
// output sizes (a tile cut by the edge), pads on one side or none,
// channels that are not multiples of 16, and a plane of several chunks
// split between threads.
// n cin d h w cout groups | kd kh kw sd sh sw | pads (begin d h w, end d h w) | dilations
constexpr ConvCase kWindowCases[] = {
    {1, 32, 1, 17, 17, 48, 1, 1, 1, 7, 1, 1, 1, 0, 0, 3, 0, 0, 3, 1, 1, 1},  // 1x7, 17x17
    {1, 32, 1, 17, 17, 48, 1, 1, 7, 1, 1, 1, 1, 0, 3, 0, 0, 3, 0, 1, 1, 1},  // 7x1, 17x17
    {2, 40, 1, 6, 9, 24, 1, 1, 1, 7, 1, 1, 1, 0, 0, 1, 0, 0, 5, 1, 1, 1},    // one-sided pads
    {1, 16, 1, 12, 5, 33, 1, 1, 7, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1},   // no pads: 6 rows
    {1, 64, 1, 40, 41, 16, 1, 1, 1, 7, 1,
     1, 1,  0, 0,  3,  0,  0, 3, 1, 1, 1},  // 840 tiles, chunks of 204
    {1, 48, 1, 19, 19, 64, 1, 1, 5, 5, 1, 1, 1, 0, 2, 2, 0, 2, 2, 1, 1, 1},  // 5x5: 4 chunks
    {2, 20, 1, 9, 8, 17, 1, 1, 5, 5, 1, 1, 1, 0, 2, 1, 0, 0, 2, 1, 1, 1},    // one-sided pads
    {1, 16, 1, 6, 7, 32, 1, 1, 5, 5, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1},    // no pads: 2x3
    {1, 48, 1, 8, 8, 32, 1, 1, 1, 3, 1, 1, 1, 0, 0, 1, 0, 0, 1, 1, 1, 1},    // 1x3, 8x8
    {2, 24, 1, 11, 9, 40, 1, 1, 3, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1},   // 3x1, one pad
    // 2x2: DCGAN's phase convolutions, small planes in batches, whose
    // chunks take tiles across images (and end inside one).
    {4, 32, 1, 4, 4, 16, 1, 1, 2, 2, 1, 1, 1, 0, 1, 1, 0, 0, 0, 1, 1, 1},    // 4x4 x 4
    {3, 20, 1, 5, 7, 24, 1, 1, 2, 2, 1, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1},    // odd sizes
    {8, 128, 1, 6, 6, 128, 1, 1, 2, 2, 1, 1, 1, 0, 1, 1, 0, 0, 0, 1, 1, 1},  // chunks of 56
};

}  // namespace

TEST_CASE("conv strategies match a direct loop, with epilogues and teams") {
  for (const ConvCase& c : kStrategyCases) checkConv(c);
}

TEST_CASE("conv on packed weights matches a direct loop") {
  for (const ConvCase& c : kPackedCases) checkConv(c, Weights::kPacked);
}

// Hidden: ctest's kernels_bf16 runs it (--needs tier=bf16), skipped where the
// runtime or the CPU lacks the tier.
TEST_CASE("conv on packed bf16 weights matches a direct loop on bf16-rounded inputs and weights",
          "[.bf16]") {
  for (const ConvCase& c : kPackedCases) checkConv(c, Weights::kPackedBf16);
  // Odd input channels (the last pair's high half zero), blocked layouts.
  checkConv({1, 33, 1, 6, 7, 48, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},
            Weights::kPackedBf16);
}

TEST_CASE("conv variants on bf16 weights are chosen only where asked for and on their tier") {
  const ConvContext bf16{"bf16", hostMachine(16 * 32)}, vbmi{"vbmi", hostMachine(16 * 32)};
  int chosen = 0;
  for (const ConvCase& c : kPackedCases) {
    const ConvParams p = paramsOf(c);
    INFO("cin " << c.cin << " cout " << c.cout << " k " << c.kh << "x" << c.kw);
    for (const ConvContext& context : {bf16, vbmi})
      for (bool mayPack : {false, true})
        CHECK(!convWeightsNarrow(variantInfo(chooseConvVariant(p, context, mayPack)).weights));
    CHECK(!convWeightsNarrow(variantInfo(chooseConvVariant(p, vbmi, true, true)).weights));
    // With mayNarrow: PackedBf16 where it prefers the layer, else the float choice.
    const ConvVariant narrow = chooseConvVariant(p, bf16, true, true);
    CHECK((narrow == ConvVariant::kPackedBf16 || narrow == chooseConvVariant(p, bf16, true)));
    chosen += narrow == ConvVariant::kPackedBf16;
  }
  // A runtime built without the tier has no PackedBf16 to choose.
  if (isaTierIncludes(runtime_isa_tier(), "bf16")) CHECK(chosen >= 5);
}

TEST_CASE("conv on Winograd weights matches a direct loop") {
  for (const ConvCase& c : kWinogradCases) {
    checkConv(c, Weights::kWinograd);
    checkConv(c, Weights::kWinograd4);  // 6x6 patches: tiles cut at other edges
  }
}

TEST_CASE(
    "conv on Winograd weights for 5x5, 1x7, 7x1, 1x3, 3x1 and 2x2 windows matches a direct loop") {
  // F(2, 7), F(2x2, 5x5) and F(2x2, 2x2) have one tile; 1x3 and 3x1 take both.
  for (const ConvCase& c : kWindowCases) {
    checkConv(c, Weights::kWinograd);
    if (c.kh * c.kw == 3) checkConv(c, Weights::kWinograd4);
  }
}

TEST_CASE("every conv variant this runtime has, on every case it takes") {
  // The variants of cgc/kernels/conv_variants.def, each forced on the
  // cases above that it computes, against the direct loop.
  const char* tier = runtime_isa_tier();
  std::string ran, skipped;
  for (const ConvVariantInfo& v : kConvVariants) {
    if (!isaTierIncludes(tier, v.tier)) {
      skipped += std::string(" ") + v.name + " (tier " + v.tier + ")";
      continue;
    }
    int count = 0;
    for (std::span<const ConvCase> cases :
         {std::span<const ConvCase>(kStrategyCases), std::span<const ConvCase>(kPackedCases),
          std::span<const ConvCase>(kWinogradCases), std::span<const ConvCase>(kWindowCases)})
      for (const ConvCase& c : cases) {
        if (!convVariantTakes(v.variant, paramsOf(c))) continue;
        ++count;
        if (v.weights == ConvWeights::kPanels) {
          checkConv(c, Weights::kPacked, v.variant, false);
        } else if (v.weights == ConvWeights::kBf16Panels) {
          checkConv(c, Weights::kPackedBf16, v.variant, false);
        } else if (v.weights == ConvWeights::kWinograd) {
          checkConv(c, Weights::kWinograd, v.variant, false);
          if (c.kh * c.kw == 9 || c.kh * c.kw == 3)
            checkConv(c, Weights::kWinograd4, v.variant, false);
        } else {
          checkConv(c, Weights::kPlain, v.variant, false);
        }
      }
    INFO("variant " << v.name);
    CHECK(count > 0);  // every variant the runtime has meets a case
    ran += std::string(" ") + v.name + " (" + std::to_string(count) + " cases)";
  }
  std::printf("conv variants run on tier %s:%s; skipped for want of a tier:%s\n", tier, ran.c_str(),
              skipped.empty() ? " none" : skipped.c_str());
}

TEST_CASE("stem conv with a fused 3x3 stride-2 max pooling matches conv then pool") {
  // The pooled rows' windows cross the bands' edges (32 pooled rows each)
  // and the threads' edges; pads in front of the pool (ResNet's 1) or
  // implied behind it (ceil mode: GoogLeNet's and SqueezeNet's); rows of
  // 16 pooled outputs or more and fewer (one block, its stores masked).
  struct PoolCase {
    ConvCase conv;
    int64_t padTop, padLeft, hOut, wOut;  // of the pooling
  };
  // n cin d h w cout groups | kd kh kw sd sh sw | pads (begin d h w, end d h w) | dilations
  const PoolCase cases[] = {
      {{1, 3, 1, 150, 70, 20, 1, 1, 7, 7, 1, 2, 2, 0, 3, 3, 0, 3, 3, 1, 1, 1}, 1, 1, 38, 18},
      {{2, 3, 1, 45, 47, 16, 1, 1, 3, 3, 1, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1}, 0, 0, 11, 11},
      {{1, 4, 1, 140, 136, 9, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1}, 0, 1, 70, 68},
      // The first band's rows start at the top pad: later bands read one more.
      {{1, 3, 1, 140, 40, 8, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1}, 1, 1, 70, 20},
      {{1, 3, 1, 66, 40, 8, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1}, 1, 0, 33, 20},
      // Small images: one convolution output, and 3x4 pooled to 2x2.
      {{1, 3, 1, 1, 1, 8, 1, 1, 7, 7, 1, 2, 2, 0, 3, 3, 0, 3, 3, 1, 1, 1}, 1, 1, 1, 1},
      {{2, 3, 1, 5, 7, 16, 1, 1, 7, 7, 1, 2, 2, 0, 3, 3, 0, 3, 3, 1, 1, 1}, 1, 1, 2, 2},
  };
  for (const PoolCase& c : cases) {
    ConvParams p = paramsOf(c.conv);
    const PoolParams pool{
        p.n * p.c_out, 1,         p.h_out, p.w_out, 1, c.hOut, c.wOut, 1, 3, 3, 1, 2, 2, 0,
        c.padTop,      c.padLeft, 1,       1,       1, false};
    REQUIRE(convFusesMaxPool(p, pool));
    // The last window starts inside the convolution output (ONNX's ceil mode).
    REQUIRE(2 * (c.hOut - 1) - c.padTop < p.h_out);
    REQUIRE(2 * (c.wOut - 1) - c.padLeft < p.w_out);
    auto x = randomFloats(c.conv.n * c.conv.cin * c.conv.h * c.conv.w, 11);
    auto w = randomFloats(p.c_out * p.c_in * p.k_h * p.k_w, 12);
    auto bias = randomFloats(p.c_out, 13);
    for (const float* b :
         {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())})
      for (const Act& act : kActs) {
        p.activation = act.kind;
        p.act_min = act.lo;
        p.act_max = act.hi;
        p.pool_h_out = 0;
        const std::vector<float> convolved = referenceConv(p, x, w, b, nullptr);
        std::vector<float> expected(pool.n_c * c.hOut * c.wOut);
        max_pool(pool, convolved.data(), expected.data());
        p.pool_h_out = c.hOut;
        p.pool_w_out = c.wOut;
        p.pool_pad_top = c.padTop;
        p.pool_pad_left = c.padLeft;
        for (int threads : {1, 2, 3}) {
          INFO("conv " << p.h_out << "x" << p.w_out << " pooled " << c.hOut << "x" << c.wOut
                       << " act " << static_cast<int>(act.kind) << " bias " << (b != nullptr)
                       << " threads " << threads);
          std::vector<float> y(expected.size(), 123.0f);
          onTeam(threads, [&](const Team& team) {
            conv(p, x.data(), w.data(), b, nullptr, y.data(), team);
          });
          requireClose(y, expected, 1e-4);
        }
      }
  }
}

TEST_CASE("convFusesMaxPool takes only stems with 3x3 stride-2 pools, at any image size") {
  ConvParams stem = paramsOf({1, 3, 1, 64, 64, 16, 1, 1, 7, 7, 1, 2, 2, 0, 3, 3, 0, 3, 3, 1, 1, 1});
  const PoolParams pool{16, 1, 32, 32, 1, 16, 16, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1, false};
  CHECK(convFusesMaxPool(stem, pool));
  PoolParams twoByTwo = pool;
  twoByTwo.k_h = twoByTwo.k_w = 2;
  CHECK_FALSE(convFusesMaxPool(stem, twoByTwo));
  PoolParams strideOne = pool;
  strideOne.stride_h = strideOne.stride_w = 1;
  CHECK_FALSE(convFusesMaxPool(stem, strideOne));
  ConvParams wide = stem;
  wide.c_in = 64;
  CHECK_FALSE(convFusesMaxPool(wide, pool));
  // On a small image too, which FewChannels takes (though it prefers large
  // ones): --dim's general code fuses at every size or at none.
  ConvParams small = paramsOf({1, 3, 1, 8, 8, 16, 1, 1, 7, 7, 1, 2, 2, 0, 3, 3, 0, 3, 3, 1, 1, 1});
  const PoolParams smallPool{16, 1, 4, 4, 1, 2, 2, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1, false};
  CHECK(convFusesMaxPool(small, smallPool));
  CHECK(convVariantTakes(ConvVariant::kFewChannels, small));
  CHECK(chooseConvVariant(small, buildConvContext()) != ConvVariant::kFewChannels);
}

/// conv of p (with its alternatives) on `stored` (the weights in the
/// layouts p names) matches the reference loops on w, on 1 and 2 threads.
void requireConvAlternatives(const ConvParams& p, const std::vector<float>& x,
                             const std::vector<float>& w, const std::vector<float>& stored,
                             const std::vector<float>& bias) {
  const auto reference = referenceConv(p, x, w, bias.data(), nullptr);
  for (int threads : {1, 2}) {
    std::vector<float> y(reference.size(), 123.0f);
    onTeam(threads, [&](const Team& team) {
      conv(p, x.data(), stored.data(), bias.data(), nullptr, y.data(), team);
    });
    requireClose(y, reference, 3e-4);
  }
}

TEST_CASE(
    "conv with alternatives picks its variant per call on the extents, on each one's weights") {
  // --dim's general code: one layer, its weights packed for Winograd F(2x2)
  // (its own), then the packed panels and F(4x4); conv picks per call.
  const ConvContext context = buildConvContext();
  for (const auto& [side, expected] :
       {std::pair{6, ConvVariant::kPacked}, std::pair{30, ConvVariant::kWinograd}}) {
    const ConvCase c{1, 48, 1, side, side, 48, 1, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1};
    ConvParams p = paramsOf(c);
    const auto x = randomFloats(c.cin * side * side, 7), w = randomFloats(48 * 48 * 9, 8);
    const auto bias = randomFloats(c.cout, 9);
    ConvParams packed = p, four = p;
    packed.packed_weights = true;
    four.winograd = true;
    four.winograd_tile = 4;
    p.winograd = true;
    p.variant = ConvVariant::kWinograd;
    std::vector<float> all(winogradWeightCount(p) + packedConvWeightCount(packed) +
                           winogradWeightCount(four));
    winogradWeights(p, w.data(), all.data());
    const int64_t atPacked = winogradWeightCount(p);
    packConvWeights(packed, w.data(), all.data() + atPacked);
    const int64_t atFour = atPacked + packedConvWeightCount(packed);
    winogradWeights(four, w.data(), all.data() + atFour);
    p.alternatives = {{{ConvVariant::kPacked, 0, atPacked}, {ConvVariant::kWinograd, 4, atFour}}};
    int64_t at = -1;
    const ConvParams chosen = convChoiceAt(p, context, &at);
    INFO("side " << side);
    CHECK(chosen.variant == expected);
    if (expected == ConvVariant::kPacked) CHECK((chosen.packed_weights && at == atPacked));
    if (expected == ConvVariant::kWinograd) {
      // The form convWinogradTile prefers, on its own transforms.
      CHECK(chosen.winograd_tile == convWinogradTile(chosen, context));
      CHECK(at == (chosen.winograd_tile == 4 ? atFour : 0));
    }
    p.activation = Activation::kRelu;
    requireConvAlternatives(p, x, w, all, bias);
  }
}

TEST_CASE("conv with a plain-weight alternative that takes only some sizes runs it only there") {
  // --dim's general code: a depthwise layer on DepthwisePlanes with
  // DepthwiseVectors as an alternative on the same weights. Channel vectors
  // take the layer only while a block's planes fit their scratch: at a side
  // of 16, not at 96, so convChoiceAt must fall back to the layer's own
  // variant there.
  const ConvContext context = buildConvContext();
  for (const auto& [side, takes] : {std::pair{16, true}, std::pair{96, false}}) {
    const ConvCase c{1, 16, 1, side, side, 16, 16, 1, 3, 3, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1};
    ConvParams p = paramsOf(c);
    INFO("side " << side);
    REQUIRE(convVariantTakes(ConvVariant::kDepthwisePlanes, p));
    REQUIRE(convVariantTakes(ConvVariant::kDepthwiseVectors, p) == takes);
    p.variant = ConvVariant::kDepthwisePlanes;
    p.alternatives = {{{ConvVariant::kDepthwiseVectors, 0, 0}, {ConvVariant::kNone, 0, 0}}};
    int64_t at = -1;
    const ConvParams chosen = convChoiceAt(p, context, &at);
    CHECK(at == 0);
    // Where it takes the layer it comes first (kConvVariants' order) on
    // AVX-512, which it prefers at stride 1.
    if (takes && isaTierIncludes(context.tier, "skx"))
      CHECK(chosen.variant == ConvVariant::kDepthwiseVectors);
    else
      CHECK(chosen.variant == ConvVariant::kDepthwisePlanes);
    const auto x = randomFloats(16 * side * side, 11), w = randomFloats(16 * 9, 12);
    const auto bias = randomFloats(16, 13);
    requireConvAlternatives(p, x, w, w, bias);
  }
}
