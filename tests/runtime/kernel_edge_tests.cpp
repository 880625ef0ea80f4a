// Edge cases for the convolution, pooling and GEMM kernels, each against a
// naive reference written here: 3-D and 1-D convolutions and pools,
// transposed convolutions, global pooling accuracy, and the blocking
// boundaries of the GEMM core and batched MatMul.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "cgc/float16.h"
#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::bfloat16_to_float;
using cgc::DType;
using cgc::float_to_bfloat16;
using cgc::float_to_half;
using cgc::half_to_float;

using cgc::test::requireClose;

namespace {

int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t d, int64_t padBegin, int64_t padEnd) {
  return (in + padBegin + padEnd - ((k - 1) * d + 1)) / s + 1;
}

/// One spatial axis of a convolution or pool: input size, kernel, stride,
/// begin / end pads and dilation.
struct Axis {
  int64_t in, k, s, padBegin, padEnd, d;
  int64_t out() const { return outSize(in, k, s, d, padBegin, padEnd); }
};

ConvParams convParams(int64_t n, int64_t cin, int64_t cout, int64_t groups, Axis d, Axis h,
                      Axis w) {
  return ConvParams{n,          cin,        d.in,       h.in, w.in, cout, d.out(), h.out(),
                    w.out(),    groups,     d.k,        h.k,  w.k,  d.s,  h.s,     w.s,
                    d.padBegin, h.padBegin, w.padBegin, d.d,  h.d,  w.d};
}

/// The definition: a 9-deep loop in double.
std::vector<float> naiveConv(const ConvParams& p, const std::vector<float>& x,
                             const std::vector<float>& w, const float* bias) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  std::vector<float> y(p.n * p.c_out * p.d_out * p.h_out * p.w_out);
  size_t at = 0;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < p.c_out; ++o)
      for (int64_t od = 0; od < p.d_out; ++od)
        for (int64_t oh = 0; oh < p.h_out; ++oh)
          for (int64_t ow = 0; ow < p.w_out; ++ow) {
            double sum = bias ? bias[o] : 0.0;
            const int64_t g = o / coutG;
            for (int64_t c = 0; c < cinG; ++c)
              for (int64_t kd = 0; kd < p.k_d; ++kd)
                for (int64_t kh = 0; kh < p.k_h; ++kh)
                  for (int64_t kw = 0; kw < p.k_w; ++kw) {
                    const int64_t id = od * p.stride_d - p.pad_front + kd * p.dilation_d;
                    const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
                    const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
                    if (id < 0 || id >= p.d_in || ih < 0 || ih >= p.h_in || iw < 0 || iw >= p.w_in)
                      continue;
                    const int64_t ci = g * cinG + c;
                    sum +=
                        double(x[(((n * p.c_in + ci) * p.d_in + id) * p.h_in + ih) * p.w_in + iw]) *
                        w[(((o * cinG + c) * p.k_d + kd) * p.k_h + kh) * p.k_w + kw];
                  }
            y[at++] = static_cast<float>(sum);
          }
  return y;
}

/// Transposed convolution as the scatter it is defined by.
std::vector<float> naiveConvTranspose(const ConvParams& p, const std::vector<float>& x,
                                      const std::vector<float>& w, const float* bias) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t outSpatial = p.d_out * p.h_out * p.w_out;
  std::vector<double> y(p.n * p.c_out * outSpatial, 0.0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t ci = 0; ci < p.c_in; ++ci)
      for (int64_t oc = 0; oc < coutG; ++oc)
        for (int64_t id = 0; id < p.d_in; ++id)
          for (int64_t ih = 0; ih < p.h_in; ++ih)
            for (int64_t iw = 0; iw < p.w_in; ++iw)
              for (int64_t kd = 0; kd < p.k_d; ++kd)
                for (int64_t kh = 0; kh < p.k_h; ++kh)
                  for (int64_t kw = 0; kw < p.k_w; ++kw) {
                    const int64_t od = id * p.stride_d - p.pad_front + kd * p.dilation_d;
                    const int64_t oh = ih * p.stride_h - p.pad_top + kh * p.dilation_h;
                    const int64_t ow = iw * p.stride_w - p.pad_left + kw * p.dilation_w;
                    if (od < 0 || od >= p.d_out || oh < 0 || oh >= p.h_out || ow < 0 ||
                        ow >= p.w_out)
                      continue;
                    const int64_t o = (ci / cinG) * coutG + oc;
                    y[(n * p.c_out + o) * outSpatial + (od * p.h_out + oh) * p.w_out + ow] +=
                        double(x[(((n * p.c_in + ci) * p.d_in + id) * p.h_in + ih) * p.w_in + iw]) *
                        w[(((ci * coutG + oc) * p.k_d + kd) * p.k_h + kh) * p.k_w + kw];
                  }
  std::vector<float> out(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t o = static_cast<int64_t>(i) / outSpatial % p.c_out;
    out[i] = static_cast<float>(y[i] + (bias ? bias[o] : 0.0));
  }
  return out;
}

}  // namespace

TEST_CASE("conv: 3-D, 1-D, strided 1x1, depthwise and GEMM-block sizes") {
  struct Case {
    const char* name;
    int64_t n, cin, cout, groups;
    Axis d, h, w;
  };
  const Axis unit{1, 1, 1, 0, 0, 1};
  const Case cases[] = {
      {"3-D groups, strides, asymmetric pads, dilation", 2, 4, 6, 2, Axis{5, 3, 2, 1, 0, 1},
       Axis{6, 2, 1, 0, 1, 2}, Axis{7, 3, 3, 2, 1, 1}},
      {"1-D", 2, 3, 5, 1, unit, unit, Axis{11, 4, 3, 2, 1, 2}},
      {"1x1 stride 2", 1, 5, 7, 1, unit, Axis{9, 1, 2, 0, 0, 1}, Axis{8, 1, 2, 0, 0, 1}},
      {"1x1 padded", 1, 3, 2, 1, unit, Axis{4, 1, 1, 1, 1, 1}, Axis{3, 1, 1, 0, 2, 1}},
      {"1x1x1 pointwise 3-D", 2, 6, 4, 1, Axis{3, 1, 1, 0, 0, 1}, Axis{4, 1, 1, 0, 0, 1},
       Axis{5, 1, 1, 0, 0, 1}},
      {"depthwise, multiplier 2, stride 3", 2, 5, 10, 5, unit, Axis{10, 3, 3, 1, 2, 1},
       Axis{11, 3, 3, 0, 1, 1}},
      {"kernel as large as the padded input", 1, 2, 3, 1, unit, Axis{3, 5, 1, 1, 1, 1},
       Axis{2, 4, 1, 2, 0, 1}},
      {"k > 256, m > 64, odd spatial", 1, 35, 70, 1, unit, Axis{13, 3, 1, 1, 1, 1},
       Axis{11, 3, 1, 1, 1, 1}},
      {"grouped 1x1", 3, 8, 12, 4, unit, Axis{5, 1, 1, 0, 0, 1}, Axis{7, 1, 1, 0, 0, 1}},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    INFO(c.name);
    const ConvParams p = convParams(c.n, c.cin, c.cout, c.groups, c.d, c.h, c.w);
    auto x = cgc::test::randomFloats(p.n * p.c_in * p.d_in * p.h_in * p.w_in, ++seed);
    auto w = cgc::test::randomFloats(p.c_out * (p.c_in / p.groups) * p.k_d * p.k_h * p.k_w, ++seed);
    auto bias = cgc::test::randomFloats(p.c_out, ++seed);
    std::vector<float> y(p.n * p.c_out * p.d_out * p.h_out * p.w_out, 42.0f);
    conv(p, x.data(), w.data(), bias.data(), nullptr, y.data());
    requireClose(y, naiveConv(p, x, w, bias.data()));
    std::fill(y.begin(), y.end(), 42.0f);
    conv(p, x.data(), w.data(), nullptr, nullptr, y.data());
    requireClose(y, naiveConv(p, x, w, nullptr));
  }
}

TEST_CASE("conv_transpose: 3-D, 1-D, groups, cropped pads, output padding") {
  struct Case {
    const char* name;
    int64_t n, cin, coutG, groups;
    // in, k, stride, pad begin, pad end, dilation, output padding
    int64_t ax[3][7];
  };
  const Case cases[] = {
      {"3-D", 2, 4, 3, 2, {{3, 2, 2, 0, 1, 1, 1}, {4, 3, 1, 1, 1, 1, 0}, {2, 2, 3, 1, 0, 2, 2}}},
      {"1-D", 1, 3, 2, 1, {{1, 1, 1, 0, 0, 1, 0}, {1, 1, 1, 0, 0, 1, 0}, {7, 5, 2, 2, 1, 1, 1}}},
      {"depthwise 2-D",
       1,
       6,
       1,
       6,
       {{1, 1, 1, 0, 0, 1, 0}, {5, 3, 2, 1, 1, 1, 1}, {4, 4, 2, 1, 2, 1, 0}}},
      {"1x1 stride 1",
       2,
       5,
       3,
       1,
       {{1, 1, 1, 0, 0, 1, 0}, {3, 1, 1, 0, 0, 1, 0}, {4, 1, 1, 0, 0, 1, 0}}},
  };
  uint32_t seed = 200;
  for (const Case& c : cases) {
    INFO(c.name);
    int64_t out[3];
    for (int a = 0; a < 3; ++a) {
      const int64_t* v = c.ax[a];
      out[a] = (v[0] - 1) * v[2] - v[3] - v[4] + (v[1] - 1) * v[5] + 1 + v[6];
    }
    const ConvParams p{
        c.n,        c.cin,      c.ax[0][0], c.ax[1][0], c.ax[2][0], c.coutG * c.groups,
        out[0],     out[1],     out[2],     c.groups,   c.ax[0][1], c.ax[1][1],
        c.ax[2][1], c.ax[0][2], c.ax[1][2], c.ax[2][2], c.ax[0][3], c.ax[1][3],
        c.ax[2][3], c.ax[0][5], c.ax[1][5], c.ax[2][5]};
    auto x = cgc::test::randomFloats(p.n * p.c_in * p.d_in * p.h_in * p.w_in, ++seed);
    auto w = cgc::test::randomFloats(p.c_in * c.coutG * p.k_d * p.k_h * p.k_w, ++seed);
    auto bias = cgc::test::randomFloats(p.c_out, ++seed);
    for (int threads : {1, 2, 3}) {  // the team splits output channels
      INFO("threads " << threads);
      for (const float* b :
           {static_cast<const float*>(bias.data()), static_cast<const float*>(nullptr)}) {
        std::vector<float> y(p.n * p.c_out * p.d_out * p.h_out * p.w_out, 42.0f);
        cgc::test::onTeam(threads, [&](const Team& team) {
          conv_transpose(p, x.data(), w.data(), b, y.data(), team);
        });
        requireClose(y, naiveConvTranspose(p, x, w, b));
      }
    }
  }
}

namespace {

/// Max and average over the window positions inside the image.
void naivePool(const PoolParams& p, const std::vector<float>& x, std::vector<float>& maxY,
               std::vector<float>& avgY) {
  const int64_t outPlane = p.d_out * p.h_out * p.w_out;
  maxY.assign(p.n_c * outPlane, 0.0f);
  avgY.assign(p.n_c * outPlane, 0.0f);
  for (int64_t c = 0; c < p.n_c; ++c)
    for (int64_t od = 0; od < p.d_out; ++od)
      for (int64_t oh = 0; oh < p.h_out; ++oh)
        for (int64_t ow = 0; ow < p.w_out; ++ow) {
          float m = -std::numeric_limits<float>::infinity();
          double sum = 0;
          int64_t count = 0;
          for (int64_t kd = 0; kd < p.k_d; ++kd)
            for (int64_t kh = 0; kh < p.k_h; ++kh)
              for (int64_t kw = 0; kw < p.k_w; ++kw) {
                const int64_t id = od * p.stride_d - p.pad_front + kd * p.dilation_d;
                const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
                const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
                if (id < 0 || id >= p.d_in || ih < 0 || ih >= p.h_in || iw < 0 || iw >= p.w_in)
                  continue;
                const float v = x[((c * p.d_in + id) * p.h_in + ih) * p.w_in + iw];
                m = std::max(m, v);
                sum += v;
                ++count;
              }
          const int64_t at = c * outPlane + (od * p.h_out + oh) * p.w_out + ow;
          maxY[at] = m;
          const int64_t divisor = p.count_include_pad ? p.k_d * p.k_h * p.k_w : count;
          avgY[at] = static_cast<float>(sum / static_cast<double>(divisor));
        }
}

}  // namespace

TEST_CASE("pools: 3-D, 1-D, dilations, strides 3, asymmetric pads") {
  struct Case {
    const char* name;
    int64_t n_c;
    Axis d, h, w;
  };
  const Axis unit{1, 1, 1, 0, 0, 1};
  const Case cases[] = {
      {"3-D", 3, Axis{5, 2, 2, 1, 0, 1}, Axis{6, 3, 3, 1, 1, 1}, Axis{7, 2, 1, 0, 1, 2}},
      {"1-D dilated", 2, unit, unit, Axis{13, 3, 2, 2, 2, 3}},
      {"2-D stride 3 asymmetric", 4, unit, Axis{10, 3, 3, 0, 2, 1}, Axis{9, 2, 3, 1, 0, 1}},
      {"window = image", 2, unit, Axis{4, 4, 1, 0, 0, 1}, Axis{5, 5, 1, 0, 0, 1}},
      {"1x1 window, stride 2", 2, unit, Axis{7, 1, 2, 0, 0, 1}, Axis{6, 1, 2, 0, 0, 1}},
      // Planes in 16s: max pooling with 16 planes per vector.
      {"16 planes, 3x3 stride 1 pad 1", 16, unit, Axis{9, 3, 1, 1, 1, 1}, Axis{10, 3, 1, 1, 1, 1}},
      {"32 planes, stride 2, end pads", 32, unit, Axis{11, 3, 2, 0, 1, 1}, Axis{13, 3, 2, 1, 1, 1}},
      {"16 planes, stride 3, dilated", 16, unit, Axis{12, 2, 3, 1, 0, 2}, Axis{8, 3, 1, 2, 2, 1}},
      // Average pooling with 16 planes per vector too, where every window
      // has one divisor: no padding (Inception-v3's Pad then AveragePool),
      // or count_include_pad.
      {"48 planes, 3x3 stride 1, no pads", 48, unit, Axis{19, 3, 1, 0, 0, 1},
       Axis{19, 3, 1, 0, 0, 1}},
      {"32 planes, 2x2 stride 2, no pads, odd input", 32, unit, Axis{9, 2, 2, 0, 0, 1},
       Axis{7, 2, 2, 0, 0, 1}},
      // Rows of 16 outputs or more: whole vectors, the last one overlapping.
      {"rows: stride 2, pads 1 / 1", 3, unit, Axis{9, 3, 2, 1, 1, 1}, Axis{37, 3, 2, 1, 1, 1}},
      {"rows: stride 1, dilated, 16 planes", 16, unit, Axis{5, 2, 1, 0, 1, 1},
       Axis{40, 3, 1, 1, 1, 2}},
      {"rows: stride 3, end pad 2", 2, unit, Axis{7, 3, 3, 0, 2, 1}, Axis{60, 3, 3, 0, 2, 1}},
      {"rows: 16 wide, 10 outputs", 5, unit, Axis{6, 2, 2, 0, 0, 1}, Axis{20, 2, 2, 0, 0, 1}},
      {"rows: 4x1 window", 2, unit, Axis{11, 4, 1, 2, 1, 1}, Axis{33, 1, 1, 0, 0, 1}},
      // 3x3 at stride 2, rows of 16 outputs or more: three loads per input
      // row for 16 outputs, masked at the edges, the last block overlapping.
      {"3x3 stride 2: end pads only (ceil mode)", 3, unit, Axis{10, 3, 2, 0, 1, 1},
       Axis{40, 3, 2, 0, 1, 1}},
      {"3x3 stride 2: 16 planes, pads 1, exactly 16 wide", 16, unit, Axis{7, 3, 2, 1, 1, 1},
       Axis{31, 3, 2, 1, 1, 1}},
      {"3x3 stride 2: stride 1 down the rows", 2, unit, Axis{6, 3, 1, 1, 1, 1},
       Axis{50, 3, 2, 1, 0, 1}},
      // Rows of fewer than 16 outputs: one block, its stores masked.
      {"3x3 stride 2: 14 outputs (ceil mode, GoogLeNet's 28x28)", 3, unit, Axis{28, 3, 2, 0, 1, 1},
       Axis{28, 3, 2, 0, 1, 1}},
      {"3x3 stride 2: one output", 2, unit, Axis{3, 3, 2, 0, 0, 1}, Axis{4, 3, 2, 0, 0, 1}},
      // 3x3 at stride 1 (inception branches): blocks of 16 outputs walk
      // down the plane, each input row loaded once.
      {"3x3 stride 1: pads 1, 28 wide", 3, unit, Axis{28, 3, 1, 1, 1, 1}, Axis{28, 3, 1, 1, 1, 1}},
      {"3x3 stride 1: pads 1, 7 wide", 16, unit, Axis{7, 3, 1, 1, 1, 1}, Axis{7, 3, 1, 1, 1, 1}},
      {"3x3 stride 1: no pads, 15 outputs", 2, unit, Axis{6, 3, 1, 0, 0, 1},
       Axis{17, 3, 1, 0, 0, 1}},
      {"3x3 stride 1: exactly 16 outputs, pads 2", 2, unit, Axis{5, 3, 1, 2, 2, 1},
       Axis{14, 3, 1, 2, 2, 1}},
      {"3x3 stride 1 across, 2 down", 2, unit, Axis{9, 3, 2, 1, 1, 1}, Axis{33, 3, 1, 1, 1, 1}},
      {"3x3 stride 1: one row of outputs", 2, unit, Axis{3, 3, 1, 0, 0, 1},
       Axis{20, 3, 1, 1, 1, 1}},
      {"3x3 stride 1: dilated down the rows", 2, unit, Axis{9, 3, 1, 1, 1, 2},
       Axis{21, 3, 1, 1, 1, 1}},
  };
  uint32_t seed = 300;
  for (const Case& c : cases) {
    for (bool includePad : {false, true}) {
      INFO(c.name << (includePad ? ", count_include_pad" : ""));
      PoolParams p{c.n_c,        c.d.in,       c.h.in, c.w.in, c.d.out(), c.h.out(), c.w.out(),
                   c.d.k,        c.h.k,        c.w.k,  c.d.s,  c.h.s,     c.w.s,     c.d.padBegin,
                   c.h.padBegin, c.w.padBegin, c.d.d,  c.h.d,  c.w.d,     includePad};
      auto x = cgc::test::randomFloats(p.n_c * p.d_in * p.h_in * p.w_in, ++seed);
      std::vector<float> maxRef, avgRef;
      naivePool(p, x, maxRef, avgRef);
      std::vector<float> maxY(maxRef.size()), avgY(avgRef.size());
      max_pool(p, x.data(), maxY.data());
      avg_pool(p, x.data(), avgY.data());
      requireClose(maxY, maxRef);
      requireClose(avgY, avgRef);
    }
  }
}

TEST_CASE("global_avg_pool over a large plane stays accurate") {
  const int64_t spatial = 1 << 17;
  std::vector<float> x(2 * spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    x[i] = 1.0f + 1e-3f * static_cast<float>(i % 7);
    x[spatial + i] = -0.25f;
  }
  double sum = 0;
  for (int64_t i = 0; i < spatial; ++i) sum += x[i];
  float y[2];
  global_avg_pool({2, spatial}, x.data(), y);
  CHECK(y[0] == Approx(sum / spatial).epsilon(1e-6));
  CHECK(y[1] == Approx(-0.25).epsilon(1e-6));
}

TEST_CASE("global_avg_pool: planes around its vector and block sizes") {
  for (int64_t spatial : {1, 15, 16, 17, 64, 169, 1023, 1040, 2100}) {
    INFO(spatial << " elements per plane");
    const auto x = cgc::test::randomFloats(3 * spatial, static_cast<uint32_t>(spatial));
    std::vector<float> y(3), ref(3);
    for (int64_t c = 0; c < 3; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < spatial; ++i) sum += x[c * spatial + i];
      ref[c] = static_cast<float>(sum / static_cast<double>(spatial));
    }
    global_avg_pool({3, spatial}, x.data(), y.data());
    requireClose(y, ref);
  }
}

TEST_CASE("global_avg_pool_blocked: vectors of 16 channels, runs of 64 positions") {
  for (int64_t spatial : {1, 2, 3, 49, 64, 65, 169, 1 << 14}) {
    INFO(spatial << " positions");
    const int64_t channels = 2 * kChannelBlock;
    const auto x =
        cgc::test::randomFloats(channels * spatial, static_cast<uint32_t>(spatial));  // blocked
    std::vector<float> y(channels), ref(channels);
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < spatial; ++i)
        sum += x[(c / kChannelBlock * spatial + i) * kChannelBlock + c % kChannelBlock];
      ref[c] = static_cast<float>(sum / static_cast<double>(spatial));
    }
    global_avg_pool({channels, spatial, true}, x.data(), y.data());
    requireClose(y, ref);
  }
}

TEST_CASE("gemm across the core's block boundaries and degenerate shapes") {
  struct Case {
    int64_t m, n, k;
  };
  for (Case c : {Case{130, 97, 513}, Case{65, 33, 256}, Case{64, 32, 257}, Case{1, 129, 3},
                 Case{1, 300, 40}, Case{129, 1, 70}, Case{3, 5, 1}}) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool ta = trans & 1, tb = trans & 2;
      INFO("m=" << c.m << " n=" << c.n << " k=" << c.k << " ta=" << ta << " tb=" << tb);
      auto a = cgc::test::randomFloats(c.m * c.k, 400 + trans),
           b = cgc::test::randomFloats(c.k * c.n, 410);
      auto bias = cgc::test::randomFloats(c.n, 420);
      GemmParams p{c.m, c.n, c.k, ta, tb, -0.5f, 2.0f, 0, 1};
      std::vector<float> y(c.m * c.n, 42.0f), ref(c.m * c.n);
      gemm(p, a.data(), b.data(), bias.data(), y.data());
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double sum = 0;
          for (int64_t q = 0; q < c.k; ++q)
            sum += double(ta ? a[q * c.m + i] : a[i * c.k + q]) *
                   (tb ? b[j * c.k + q] : b[q * c.n + j]);
          ref[i * c.n + j] = static_cast<float>(-0.5 * sum + 2.0 * bias[j]);
        }
      requireClose(y, ref);
    }
  }
  SECTION("k = 0 leaves beta * C") {
    float c = 3.0f, y[6] = {9, 9, 9, 9, 9, 9};
    gemm({2, 3, 0, false, false, 1.0f, 0.5f, 0, 0}, nullptr, nullptr, &c, y);
    for (float v : y) CHECK(v == 1.5f);
    gemm({2, 3, 0, true, true, 1.0f, 0.5f, 0, 0}, nullptr, nullptr, nullptr, y);
    for (float v : y) CHECK(v == 0.0f);
  }
  SECTION("beta = 0 ignores C") {
    float a[2] = {1, 2}, b[2] = {3, 4}, c[1] = {1e30f}, y[1] = {0};
    gemm({1, 1, 2, false, false, 1.0f, 0.0f, 0, 0}, a, b, c, y);
    CHECK(y[0] == 11.0f);
  }
}

TEST_CASE("matmul: no batch, rank-3 batch broadcasting, block sizes") {
  SECTION("batch_rank 0") {
    MatMulParams p{};
    p.m = 70;
    p.n = 40;
    p.k = 300;
    auto a = cgc::test::randomFloats(p.m * p.k, 500), b = cgc::test::randomFloats(p.k * p.n, 501);
    std::vector<float> y(p.m * p.n), ref(y.size());
    matmul<float>(p, a.data(), b.data(), nullptr, y.data());
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < p.k; ++q) sum += double(a[i * p.k + q]) * b[q * p.n + j];
        ref[i * p.n + j] = static_cast<float>(sum);
      }
    requireClose(y, ref);
  }
  SECTION("A [3, 1, 2, m, k] x B [4, 1, k, n]") {
    MatMulParams p{};
    p.batch_rank = 3;
    p.m = 5;
    p.n = 3;
    p.k = 7;
    const int64_t shape[3] = {3, 4, 2};
    const int64_t mk = p.m * p.k, kn = p.k * p.n;
    const int64_t aStrides[3] = {2 * mk, 0, mk}, bStrides[3] = {0, kn, 0};
    for (int d = 0; d < 3; ++d) {
      p.batch_shape[d] = shape[d];
      p.a_batch_strides[d] = aStrides[d];
      p.b_batch_strides[d] = bStrides[d];
    }
    auto a = cgc::test::randomFloats(3 * 2 * mk, 502), b = cgc::test::randomFloats(4 * kn, 503);
    std::vector<float> y(24 * p.m * p.n), ref(y.size());
    matmul<float>(p, a.data(), b.data(), nullptr, y.data());
    int64_t at = 0;
    for (int64_t i0 = 0; i0 < 3; ++i0)
      for (int64_t i1 = 0; i1 < 4; ++i1)
        for (int64_t i2 = 0; i2 < 2; ++i2)
          for (int64_t r = 0; r < p.m; ++r)
            for (int64_t col = 0; col < p.n; ++col) {
              double sum = 0;
              for (int64_t q = 0; q < p.k; ++q)
                sum += double(a[(i0 * 2 + i2) * mk + r * p.k + q]) * b[i1 * kn + q * p.n + col];
              ref[at++] = static_cast<float>(sum);
            }
    requireClose(y, ref);
  }
}
