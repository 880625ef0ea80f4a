// Edge cases for the runtime kernels, each against a naive reference written
// here: 3-D and 1-D convolutions and pools, blocking boundaries of the GEMM
// core, general broadcasting for every element type, integer corner cases,
// rank 0..8 strided copies, every cast pair, and the profiler's JSON files.
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
using cgc::DType;
using cgc::bfloat16_to_float;
using cgc::float_to_bfloat16;
using cgc::float_to_half;
using cgc::half_to_float;

namespace {

/// Deterministic values in [-1, 1).
std::vector<float> uniform(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
  }
  return v;
}

/// Deterministic integers in [lo, hi].
template <typename T>
std::vector<T> integers(size_t n, uint32_t seed, int64_t lo, int64_t hi) {
  std::vector<T> v(n);
  uint32_t s = seed * 2246822519u + 7u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<T>(lo + static_cast<int64_t>(s >> 8) % (hi - lo + 1));
  }
  return v;
}

void requireClose(const std::vector<float>& actual,
                  const std::vector<float>& expected, double tol = 1e-4) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i);
    REQUIRE(actual[i] == Approx(expected[i]).epsilon(tol).margin(tol));
  }
}

int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t d, int64_t padBegin,
                int64_t padEnd) {
  return (in + padBegin + padEnd - ((k - 1) * d + 1)) / s + 1;
}

/// One spatial axis of a convolution or pool: input size, kernel, stride,
/// begin / end pads and dilation.
struct Axis {
  int64_t in, k, s, padBegin, padEnd, d;
  int64_t out() const { return outSize(in, k, s, d, padBegin, padEnd); }
};

ConvParams convParams(int64_t n, int64_t cin, int64_t cout, int64_t groups,
                      Axis d, Axis h, Axis w) {
  return ConvParams{
      n,          cin,        d.in,       h.in, w.in, cout, d.out(), h.out(),
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
                    const int64_t id =
                        od * p.stride_d - p.pad_front + kd * p.dilation_d;
                    const int64_t ih =
                        oh * p.stride_h - p.pad_top + kh * p.dilation_h;
                    const int64_t iw =
                        ow * p.stride_w - p.pad_left + kw * p.dilation_w;
                    if (id < 0 || id >= p.d_in || ih < 0 || ih >= p.h_in ||
                        iw < 0 || iw >= p.w_in)
                      continue;
                    const int64_t ci = g * cinG + c;
                    sum +=
                        double(x[(((n * p.c_in + ci) * p.d_in + id) * p.h_in +
                                  ih) *
                                     p.w_in +
                                 iw]) *
                        w[(((o * cinG + c) * p.k_d + kd) * p.k_h + kh) * p.k_w +
                          kw];
                  }
            y[at++] = static_cast<float>(sum);
          }
  return y;
}

/// Transposed convolution as the scatter it is defined by.
std::vector<float> naiveConvTranspose(const ConvParams& p,
                                      const std::vector<float>& x,
                                      const std::vector<float>& w,
                                      const float* bias) {
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
                    const int64_t od =
                        id * p.stride_d - p.pad_front + kd * p.dilation_d;
                    const int64_t oh =
                        ih * p.stride_h - p.pad_top + kh * p.dilation_h;
                    const int64_t ow =
                        iw * p.stride_w - p.pad_left + kw * p.dilation_w;
                    if (od < 0 || od >= p.d_out || oh < 0 || oh >= p.h_out ||
                        ow < 0 || ow >= p.w_out)
                      continue;
                    const int64_t o = (ci / cinG) * coutG + oc;
                    y[(n * p.c_out + o) * outSpatial +
                      (od * p.h_out + oh) * p.w_out + ow] +=
                        double(x[(((n * p.c_in + ci) * p.d_in + id) * p.h_in +
                                  ih) *
                                     p.w_in +
                                 iw]) *
                        w[(((ci * coutG + oc) * p.k_d + kd) * p.k_h + kh) *
                              p.k_w +
                          kw];
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
      {"3-D groups, strides, asymmetric pads, dilation", 2, 4, 6, 2,
       Axis{5, 3, 2, 1, 0, 1}, Axis{6, 2, 1, 0, 1, 2}, Axis{7, 3, 3, 2, 1, 1}},
      {"1-D", 2, 3, 5, 1, unit, unit, Axis{11, 4, 3, 2, 1, 2}},
      {"1x1 stride 2", 1, 5, 7, 1, unit, Axis{9, 1, 2, 0, 0, 1},
       Axis{8, 1, 2, 0, 0, 1}},
      {"1x1 padded", 1, 3, 2, 1, unit, Axis{4, 1, 1, 1, 1, 1},
       Axis{3, 1, 1, 0, 2, 1}},
      {"1x1x1 pointwise 3-D", 2, 6, 4, 1, Axis{3, 1, 1, 0, 0, 1},
       Axis{4, 1, 1, 0, 0, 1}, Axis{5, 1, 1, 0, 0, 1}},
      {"depthwise, multiplier 2, stride 3", 2, 5, 10, 5, unit,
       Axis{10, 3, 3, 1, 2, 1}, Axis{11, 3, 3, 0, 1, 1}},
      {"kernel as large as the padded input", 1, 2, 3, 1, unit,
       Axis{3, 5, 1, 1, 1, 1}, Axis{2, 4, 1, 2, 0, 1}},
      {"k > 256, m > 64, odd spatial", 1, 35, 70, 1, unit,
       Axis{13, 3, 1, 1, 1, 1}, Axis{11, 3, 1, 1, 1, 1}},
      {"grouped 1x1", 3, 8, 12, 4, unit, Axis{5, 1, 1, 0, 0, 1},
       Axis{7, 1, 1, 0, 0, 1}},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    INFO(c.name);
    const ConvParams p =
        convParams(c.n, c.cin, c.cout, c.groups, c.d, c.h, c.w);
    auto x = uniform(p.n * p.c_in * p.d_in * p.h_in * p.w_in, ++seed);
    auto w =
        uniform(p.c_out * (p.c_in / p.groups) * p.k_d * p.k_h * p.k_w, ++seed);
    auto bias = uniform(p.c_out, ++seed);
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
      {"3-D",
       2,
       4,
       3,
       2,
       {{3, 2, 2, 0, 1, 1, 1}, {4, 3, 1, 1, 1, 1, 0}, {2, 2, 3, 1, 0, 2, 2}}},
      {"1-D",
       1,
       3,
       2,
       1,
       {{1, 1, 1, 0, 0, 1, 0}, {1, 1, 1, 0, 0, 1, 0}, {7, 5, 2, 2, 1, 1, 1}}},
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
    const ConvParams p{c.n,        c.cin,      c.ax[0][0],
                       c.ax[1][0], c.ax[2][0], c.coutG * c.groups,
                       out[0],     out[1],     out[2],
                       c.groups,   c.ax[0][1], c.ax[1][1],
                       c.ax[2][1], c.ax[0][2], c.ax[1][2],
                       c.ax[2][2], c.ax[0][3], c.ax[1][3],
                       c.ax[2][3], c.ax[0][5], c.ax[1][5],
                       c.ax[2][5]};
    auto x = uniform(p.n * p.c_in * p.d_in * p.h_in * p.w_in, ++seed);
    auto w = uniform(p.c_in * c.coutG * p.k_d * p.k_h * p.k_w, ++seed);
    auto bias = uniform(p.c_out, ++seed);
    for (int threads : {1, 2, 3}) {  // the team splits output channels
      INFO("threads " << threads);
      for (const float* b : {static_cast<const float*>(bias.data()), static_cast<const float*>(nullptr)}) {
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
void naivePool(const PoolParams& p, const std::vector<float>& x,
               std::vector<float>& maxY, std::vector<float>& avgY) {
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
                const int64_t id =
                    od * p.stride_d - p.pad_front + kd * p.dilation_d;
                const int64_t ih =
                    oh * p.stride_h - p.pad_top + kh * p.dilation_h;
                const int64_t iw =
                    ow * p.stride_w - p.pad_left + kw * p.dilation_w;
                if (id < 0 || id >= p.d_in || ih < 0 || ih >= p.h_in ||
                    iw < 0 || iw >= p.w_in)
                  continue;
                const float v =
                    x[((c * p.d_in + id) * p.h_in + ih) * p.w_in + iw];
                m = std::max(m, v);
                sum += v;
                ++count;
              }
          const int64_t at = c * outPlane + (od * p.h_out + oh) * p.w_out + ow;
          maxY[at] = m;
          const int64_t divisor =
              p.count_include_pad ? p.k_d * p.k_h * p.k_w : count;
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
      {"3-D", 3, Axis{5, 2, 2, 1, 0, 1}, Axis{6, 3, 3, 1, 1, 1},
       Axis{7, 2, 1, 0, 1, 2}},
      {"1-D dilated", 2, unit, unit, Axis{13, 3, 2, 2, 2, 3}},
      {"2-D stride 3 asymmetric", 4, unit, Axis{10, 3, 3, 0, 2, 1},
       Axis{9, 2, 3, 1, 0, 1}},
      {"window = image", 2, unit, Axis{4, 4, 1, 0, 0, 1},
       Axis{5, 5, 1, 0, 0, 1}},
      {"1x1 window, stride 2", 2, unit, Axis{7, 1, 2, 0, 0, 1},
       Axis{6, 1, 2, 0, 0, 1}},
      // Planes in 16s: max pooling with 16 planes per vector.
      {"16 planes, 3x3 stride 1 pad 1", 16, unit, Axis{9, 3, 1, 1, 1, 1},
       Axis{10, 3, 1, 1, 1, 1}},
      {"32 planes, stride 2, end pads", 32, unit, Axis{11, 3, 2, 0, 1, 1},
       Axis{13, 3, 2, 1, 1, 1}},
      {"16 planes, stride 3, dilated", 16, unit, Axis{12, 2, 3, 1, 0, 2},
       Axis{8, 3, 1, 2, 2, 1}},
      // Rows of 16 outputs or more: whole vectors, the last one overlapping.
      {"rows: stride 2, pads 1 / 1", 3, unit, Axis{9, 3, 2, 1, 1, 1},
       Axis{37, 3, 2, 1, 1, 1}},
      {"rows: stride 1, dilated, 16 planes", 16, unit, Axis{5, 2, 1, 0, 1, 1},
       Axis{40, 3, 1, 1, 1, 2}},
      {"rows: stride 3, end pad 2", 2, unit, Axis{7, 3, 3, 0, 2, 1},
       Axis{60, 3, 3, 0, 2, 1}},
      {"rows: 16 wide, 10 outputs", 5, unit, Axis{6, 2, 2, 0, 0, 1},
       Axis{20, 2, 2, 0, 0, 1}},
      {"rows: 4x1 window", 2, unit, Axis{11, 4, 1, 2, 1, 1},
       Axis{33, 1, 1, 0, 0, 1}},
      // 3x3 at stride 2, rows of 16 outputs or more: three loads per input
      // row for 16 outputs, masked at the edges, the last block overlapping.
      {"3x3 stride 2: end pads only (ceil mode)", 3, unit, Axis{10, 3, 2, 0, 1, 1},
       Axis{40, 3, 2, 0, 1, 1}},
      {"3x3 stride 2: 16 planes, pads 1, exactly 16 wide", 16, unit, Axis{7, 3, 2, 1, 1, 1},
       Axis{31, 3, 2, 1, 1, 1}},
      {"3x3 stride 2: stride 1 down the rows", 2, unit, Axis{6, 3, 1, 1, 1, 1},
       Axis{50, 3, 2, 1, 0, 1}},
      // Rows of fewer than 16 outputs: one block, its stores masked.
      {"3x3 stride 2: 14 outputs (ceil mode, GoogLeNet's 28x28)", 3, unit,
       Axis{28, 3, 2, 0, 1, 1}, Axis{28, 3, 2, 0, 1, 1}},
      {"3x3 stride 2: one output", 2, unit, Axis{3, 3, 2, 0, 0, 1}, Axis{4, 3, 2, 0, 0, 1}},
      // 3x3 at stride 1 (inception branches): blocks of 16 outputs walk
      // down the plane, each input row loaded once.
      {"3x3 stride 1: pads 1, 28 wide", 3, unit, Axis{28, 3, 1, 1, 1, 1},
       Axis{28, 3, 1, 1, 1, 1}},
      {"3x3 stride 1: pads 1, 7 wide", 16, unit, Axis{7, 3, 1, 1, 1, 1},
       Axis{7, 3, 1, 1, 1, 1}},
      {"3x3 stride 1: no pads, 15 outputs", 2, unit, Axis{6, 3, 1, 0, 0, 1},
       Axis{17, 3, 1, 0, 0, 1}},
      {"3x3 stride 1: exactly 16 outputs, pads 2", 2, unit, Axis{5, 3, 1, 2, 2, 1},
       Axis{14, 3, 1, 2, 2, 1}},
      {"3x3 stride 1 across, 2 down", 2, unit, Axis{9, 3, 2, 1, 1, 1},
       Axis{33, 3, 1, 1, 1, 1}},
      {"3x3 stride 1: one row of outputs", 2, unit, Axis{3, 3, 1, 0, 0, 1},
       Axis{20, 3, 1, 1, 1, 1}},
      {"3x3 stride 1: dilated down the rows", 2, unit, Axis{9, 3, 1, 1, 1, 2},
       Axis{21, 3, 1, 1, 1, 1}},
  };
  uint32_t seed = 300;
  for (const Case& c : cases) {
    for (bool includePad : {false, true}) {
      INFO(c.name << (includePad ? ", count_include_pad" : ""));
      PoolParams p{c.n_c,        c.d.in,    c.h.in, c.w.in,       c.d.out(),
                   c.h.out(),    c.w.out(), c.d.k,  c.h.k,        c.w.k,
                   c.d.s,        c.h.s,     c.w.s,  c.d.padBegin, c.h.padBegin,
                   c.w.padBegin, c.d.d,     c.h.d,  c.w.d,        includePad};
      auto x = uniform(p.n_c * p.d_in * p.h_in * p.w_in, ++seed);
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
    const auto x = uniform(3 * spatial, static_cast<uint32_t>(spatial));
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
    const auto x = uniform(channels * spatial, static_cast<uint32_t>(spatial));  // blocked
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
  for (Case c : {Case{130, 97, 513}, Case{65, 33, 256}, Case{64, 32, 257},
                 Case{1, 129, 3}, Case{1, 300, 40}, Case{129, 1, 70}, Case{3, 5, 1}}) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool ta = trans & 1, tb = trans & 2;
      INFO("m=" << c.m << " n=" << c.n << " k=" << c.k << " ta=" << ta
                << " tb=" << tb);
      auto a = uniform(c.m * c.k, 400 + trans), b = uniform(c.k * c.n, 410);
      auto bias = uniform(c.n, 420);
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
    auto a = uniform(p.m * p.k, 500), b = uniform(p.k * p.n, 501);
    std::vector<float> y(p.m * p.n), ref(y.size());
    matmul<float>(p, a.data(), b.data(), nullptr, y.data());
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < p.k; ++q)
          sum += double(a[i * p.k + q]) * b[q * p.n + j];
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
    auto a = uniform(3 * 2 * mk, 502), b = uniform(4 * kn, 503);
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
                sum += double(a[(i0 * 2 + i2) * mk + r * p.k + q]) *
                       b[i1 * kn + q * p.n + col];
              ref[at++] = static_cast<float>(sum);
            }
    requireClose(y, ref);
  }
}

namespace {

/// Output shapes and operand shapes; 1 broadcasts.
struct BroadcastCase {
  std::vector<int64_t> out, a, b;
};

BinaryParams binaryParams(BinaryOp op, const BroadcastCase& c) {
  BinaryParams p{};
  p.op = op;
  p.bc.rank = static_cast<int32_t>(c.out.size());
  p.bc.count = 1;
  int64_t as = 1, bs = 1;
  for (int d = p.bc.rank - 1; d >= 0; --d) {
    p.bc.shape[d] = c.out[d];
    p.bc.count *= c.out[d];
    p.bc.a_strides[d] = c.a[d] == 1 ? 0 : as;
    p.bc.b_strides[d] = c.b[d] == 1 ? 0 : bs;
    as *= c.a[d];
    bs *= c.b[d];
  }
  return p;
}

template <typename T>
T referenceOp(BinaryOp op, T u, T v) {
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case BinaryOp::kAdd:
        return static_cast<T>(u + v);
      case BinaryOp::kSub:
        return static_cast<T>(u - v);
      case BinaryOp::kMul:
        return static_cast<T>(u * v);
      case BinaryOp::kDiv:
        return v == 0 ? T(0) : static_cast<T>(u / v);
      case BinaryOp::kPow:
        return static_cast<T>(std::pow(double(u), double(v)));
      case BinaryOp::kMin:
        return std::min(u, v);
      case BinaryOp::kMax:
        return std::max(u, v);
      case BinaryOp::kPRelu:
        return u < 0 ? static_cast<T>(u * v) : u;
      case BinaryOp::kAnd:
        return T(u != 0 && v != 0);
      case BinaryOp::kOr:
        return T(u != 0 || v != 0);
      case BinaryOp::kXor:
        return T((u != 0) != (v != 0));
    }
  } else {
    switch (op) {
      case BinaryOp::kAdd:
        return u + v;
      case BinaryOp::kSub:
        return u - v;
      case BinaryOp::kMul:
        return u * v;
      case BinaryOp::kDiv:
        return u / v;
      case BinaryOp::kPow:
        return std::pow(u, v);
      case BinaryOp::kMin:
        return std::min(u, v);
      case BinaryOp::kMax:
        return std::max(u, v);
      case BinaryOp::kPRelu:
        return u < 0 ? u * v : u;
      case BinaryOp::kAnd:
        return T(u != 0 && v != 0);
      case BinaryOp::kOr:
        return T(u != 0 || v != 0);
      case BinaryOp::kXor:
        return T((u != 0) != (v != 0));
    }
  }
  return T(0);
}

template <typename T>
std::vector<T> operand(size_t n, uint32_t seed, BinaryOp op, bool exponent) {
  if constexpr (std::is_integral_v<T>) {
    if (op == BinaryOp::kPow)
      return integers<T>(n, seed, exponent ? 0 : -4, exponent ? 5 : 4);
    return integers<T>(n, seed, -20, 20);
  } else {
    std::vector<T> v(n);
    auto f = uniform(n, seed);
    for (size_t i = 0; i < n; ++i)
      v[i] = op == BinaryOp::kPow && !exponent ? T(std::fabs(f[i]) + 0.5f)
                                               : T(f[i] * 3);
    return v;
  }
}

template <typename T>
void checkBroadcasts() {
  const std::vector<BroadcastCase> cases = {
      {{}, {}, {}},
      {{7}, {7}, {7}},
      {{7}, {1}, {7}},
      {{7}, {7}, {1}},
      {{1}, {1}, {1}},
      {{3, 1, 4}, {3, 1, 4}, {1, 1, 1}},
      {{4, 5}, {4, 1}, {1, 5}},
      {{4, 5}, {1, 5}, {4, 5}},
      {{2, 3, 4, 5, 6}, {2, 1, 4, 1, 6}, {1, 3, 1, 5, 1}},
      {{2, 3, 4, 5, 1}, {1, 3, 4, 5, 1}, {2, 1, 1, 1, 1}},
      {{2, 1, 2, 1, 2, 1, 2, 3},
       {2, 1, 1, 1, 2, 1, 2, 1},
       {1, 1, 2, 1, 1, 1, 2, 3}},
      {{3, 0, 2}, {3, 0, 2}, {1, 1, 2}},
  };
  uint32_t seed = 600;
  for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kMin, BinaryOp::kMax, BinaryOp::kPRelu, BinaryOp::kAnd, BinaryOp::kOr, BinaryOp::kXor,
                      BinaryOp::kDiv, BinaryOp::kPow}) {
    for (const BroadcastCase& c : cases) {
      const BinaryParams p = binaryParams(op, c);
      INFO("op " << static_cast<int>(op) << " rank " << p.bc.rank << " count "
                 << p.bc.count);
      int64_t aCount = 1, bCount = 1;
      for (int64_t v : c.a) aCount *= v;
      for (int64_t v : c.b) bCount *= v;
      auto a = operand<T>(aCount, ++seed, op, false);
      auto b = operand<T>(bCount, ++seed, op, true);
      std::vector<T> y(p.bc.count), ref(p.bc.count);
      for (int64_t i = 0; i < p.bc.count; ++i) {
        int64_t rest = i, ai = 0, bi = 0;
        for (int d = p.bc.rank - 1; d >= 0; --d) {
          const int64_t idx = rest % p.bc.shape[d];
          rest /= p.bc.shape[d];
          ai += idx * p.bc.a_strides[d];
          bi += idx * p.bc.b_strides[d];
        }
        ref[i] = referenceOp(op, a[ai], b[bi]);
      }
      binary<T>(p, a.data(), b.data(), y.data());
      for (int64_t i = 0; i < p.bc.count; ++i) {
        INFO("element " << i);
        if constexpr (std::is_integral_v<T>)
          REQUIRE(y[i] == ref[i]);
        else
          REQUIRE(double(y[i]) == Approx(double(ref[i])).epsilon(1e-5));
      }
      // In place on whichever operand has the output's size.
      if (aCount == p.bc.count) {
        std::vector<T> inPlace = a;
        binary<T>(p, inPlace.data(), b.data(), inPlace.data());
        REQUIRE(inPlace == y);
      }
      if (bCount == p.bc.count) {
        std::vector<T> inPlace = b;
        binary<T>(p, a.data(), inPlace.data(), inPlace.data());
        REQUIRE(inPlace == y);
      }
    }
  }
}

}  // namespace

TEST_CASE("binary broadcasting for every element type and rank 0..8") {
  SECTION("float") { checkBroadcasts<float>(); }
  SECTION("double") { checkBroadcasts<double>(); }
  SECTION("int32") { checkBroadcasts<int32_t>(); }
  SECTION("int64") { checkBroadcasts<int64_t>(); }
}

TEST_CASE("integer binary corner cases do not trap") {
  BinaryParams p{};
  p.bc.rank = 1;
  p.bc.count = 6;
  p.bc.shape[0] = 6;
  p.bc.a_strides[0] = 1;
  p.bc.b_strides[0] = 1;
  SECTION("int32 division truncates; by zero and INT_MIN / -1 are defined") {
    const int32_t lo = std::numeric_limits<int32_t>::min();
    std::vector<int32_t> a = {7, -7, 7, -7, 5, lo}, b = {2, 2, -2, -2, 0, -1};
    std::vector<int32_t> y(6);
    p.op = BinaryOp::kDiv;
    binary<int32_t>(p, a.data(), b.data(), y.data());
    CHECK(std::vector<int32_t>(y.begin(), y.begin() + 5) ==
          std::vector<int32_t>{3, -3, -3, 3, 0});
    CHECK(y[5] == lo);  // wraps, as two's complement negation
  }
  SECTION("int64 INT_MIN / -1 and pow") {
    const int64_t lo = std::numeric_limits<int64_t>::min();
    std::vector<int64_t> a = {lo, 2, -2, 3, 2, 0}, b = {-1, 10, 3, 0, -1, 0};
    std::vector<int64_t> y(6);
    p.op = BinaryOp::kDiv;
    binary<int64_t>(p, a.data(), b.data(), y.data());
    CHECK(y[0] == lo);
    p.op = BinaryOp::kPow;
    binary<int64_t>(p, a.data(), b.data(), y.data());
    CHECK(std::vector<int64_t>(y.begin() + 1, y.end()) ==
          std::vector<int64_t>{1024, -8, 1, 0, 1});
  }
}

namespace {

double referenceUnary(UnaryOp op, double v, double alpha, double beta) {
  switch (op) {
    case UnaryOp::kRelu:
      return v > 0 ? v : 0;
    case UnaryOp::kLeakyRelu:
      return v >= 0 ? v : alpha * v;
    case UnaryOp::kClip:
      return std::min(std::max(v, alpha), beta);
    case UnaryOp::kSigmoid:
      return 1 / (1 + std::exp(-v));
    case UnaryOp::kTanh:
      return std::tanh(v);
    case UnaryOp::kHardSigmoid:
      return std::max(0.0, std::min(1.0, alpha * v + beta));
    case UnaryOp::kSqrt:
      return std::sqrt(v);
    case UnaryOp::kExp:
      return std::exp(v);
    case UnaryOp::kLog:
      return std::log(v);
    case UnaryOp::kNeg:
      return -v;
    case UnaryOp::kAbs:
      return std::fabs(v);
    case UnaryOp::kReciprocal:
      return 1 / v;
    case UnaryOp::kFloor:
      return std::floor(v);
    case UnaryOp::kCeil:
      return std::ceil(v);
    case UnaryOp::kIdentity:
      return v;
    case UnaryOp::kErf:
      return std::erf(v);
    case UnaryOp::kSoftplus:
      return std::log1p(std::exp(v));
    case UnaryOp::kElu:
      return v >= 0 ? v : alpha * std::expm1(v);
    case UnaryOp::kSoftsign:
      return v / (1 + std::fabs(v));
    case UnaryOp::kNot:
      return v == 0;
  }
  return 0;
}

const UnaryOp kAllUnary[] = {
    UnaryOp::kRelu,    UnaryOp::kLeakyRelu, UnaryOp::kClip,
    UnaryOp::kSigmoid, UnaryOp::kTanh,      UnaryOp::kHardSigmoid,
    UnaryOp::kSqrt,    UnaryOp::kExp,       UnaryOp::kLog,
    UnaryOp::kNeg,     UnaryOp::kAbs,       UnaryOp::kReciprocal,
    UnaryOp::kFloor,   UnaryOp::kCeil,      UnaryOp::kIdentity,
    UnaryOp::kErf,     UnaryOp::kSoftplus,  UnaryOp::kElu,
    UnaryOp::kSoftsign, UnaryOp::kNot};

bool positiveOnly(UnaryOp op) {
  return op == UnaryOp::kSqrt || op == UnaryOp::kLog ||
         op == UnaryOp::kReciprocal;
}

}  // namespace

TEST_CASE("unary ops for float and double, in place") {
  for (UnaryOp op : kAllUnary) {
    INFO("op " << static_cast<int>(op));
    auto f = uniform(53, 700);
    for (auto& v : f) v = positiveOnly(op) ? std::fabs(v) * 4 + 0.1f : v * 4;
    std::vector<double> d(f.begin(), f.end());
    const UnaryParams p{op, 53, -0.7f, 1.3f};
    std::vector<float> y(53);
    unary<float>(p, f.data(), y.data());
    unary<double>(p, d.data(), d.data());
    for (size_t i = 0; i < f.size(); ++i) {
      const double ref = referenceUnary(op, f[i], -0.7f, 1.3f);
      REQUIRE(y[i] == Approx(ref).epsilon(1e-5).margin(1e-6));
      REQUIRE(d[i] == Approx(ref).epsilon(1e-12).margin(1e-12));
    }
  }
}

TEST_CASE("unary ops for int32 and int64 compute exactly and cast back") {
  for (UnaryOp op : kAllUnary) {
    INFO("op " << static_cast<int>(op));
    auto i64 = integers<int64_t>(41, 710, positiveOnly(op) ? 1 : -9, 9);
    std::vector<int32_t> i32(i64.begin(), i64.end());
    const UnaryParams p{op, 41, -2.0f, 5.0f};
    std::vector<int64_t> y64(41);
    unary<int64_t>(p, i64.data(), y64.data());
    unary<int32_t>(p, i32.data(), i32.data());
    for (size_t i = 0; i < i64.size(); ++i) {
      const double ref = referenceUnary(op, double(i64[i]), -2.0, 5.0);
      REQUIRE(y64[i] == static_cast<int64_t>(std::trunc(ref)));
      REQUIRE(i32[i] == static_cast<int32_t>(std::trunc(ref)));
    }
  }
  SECTION("values beyond 2^53 survive the native ops") {
    const int64_t big = (int64_t{1} << 60) + 1;
    for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kNeg, UnaryOp::kAbs,
                       UnaryOp::kIdentity, UnaryOp::kClip}) {
      INFO("op " << static_cast<int>(op));
      int64_t x[2] = {big, -big}, y[2];
      const float inf = std::numeric_limits<float>::infinity();
      unary<int64_t>({op, 2, -inf, inf}, x, y);
      const int64_t want0 = op == UnaryOp::kNeg ? -big : big;
      const int64_t want1 = op == UnaryOp::kRelu                         ? 0
                            : op == UnaryOp::kNeg || op == UnaryOp::kAbs ? big
                                                                         : -big;
      CHECK(y[0] == want0);
      CHECK(y[1] == want1);
    }
  }
  SECTION("results outside the type saturate instead of being undefined") {
    int32_t x[2] = {0, 1 << 30}, y[2];
    unary<int32_t>({UnaryOp::kReciprocal, 1, 0, 0}, x, y);
    unary<int32_t>({UnaryOp::kExp, 1, 0, 0}, x + 1, y + 1);
    CHECK(y[0] == std::numeric_limits<int32_t>::max());
    CHECK(y[1] == std::numeric_limits<int32_t>::max());
  }
}

TEST_CASE("strided copy: every element size, rank 0 to 8, negative strides") {
  SECTION("rank 5 with negative, zero and scaled strides") {
    // Source [3, 4, 2, 5, 6]; view [3, 2, 2, 3, 4] reading
    // x[2 - i0, 2 * i1, any, 4 - i3, 5 - i4] (i2 broadcasts).
    const int64_t src[5] = {3, 4, 2, 5, 6};
    int64_t dense[5];
    dense[4] = 1;
    for (int d = 3; d >= 0; --d) dense[d] = dense[d + 1] * src[d + 1];
    StridedCopyParams p{};
    p.rank = 5;
    p.offset = 2 * dense[0] + 4 * dense[3] + 5 * dense[4];
    const int64_t shape[5] = {3, 2, 2, 3, 4};
    const int64_t strides[5] = {-dense[0], 2 * dense[1], 0, -dense[3],
                                -dense[4]};
    for (int d = 0; d < 5; ++d) {
      p.shape[d] = shape[d];
      p.in_strides[d] = strides[d];
    }
    const int64_t total = 3 * 4 * 2 * 5 * 6, outCount = 3 * 2 * 2 * 3 * 4;
    auto check = [&](auto tag) {
      using W = decltype(tag);
      p.elem_bytes = sizeof(W);
      std::vector<W> x(total), y(outCount), ref(outCount);
      for (int64_t i = 0; i < total; ++i) x[i] = static_cast<W>(i * 37 + 11);
      int64_t at = 0;
      for (int64_t i0 = 0; i0 < 3; ++i0)
        for (int64_t i1 = 0; i1 < 2; ++i1)
          for (int64_t i2 = 0; i2 < 2; ++i2)
            for (int64_t i3 = 0; i3 < 3; ++i3)
              for (int64_t i4 = 0; i4 < 4; ++i4)
                ref[at++] = x[(2 - i0) * dense[0] + 2 * i1 * dense[1] +
                              (4 - i3) * dense[3] + (5 - i4)];
      strided_copy(p, x.data(), y.data());
      CHECK(y == ref);
    };
    check(uint8_t{});
    check(uint16_t{});
    check(float{});
    check(double{});
  }
  SECTION("rank 1 reversed, rank 0 with every size, empty shapes") {
    std::vector<uint16_t> x = {1, 2, 3, 4, 5}, y(5);
    StridedCopyParams r{1, 2, 4, {5}, {-1}};
    strided_copy(r, x.data(), y.data());
    CHECK(y == std::vector<uint16_t>{5, 4, 3, 2, 1});
    for (int64_t bytes : {1, 2, 4, 8}) {
      unsigned char src[32], dst[8] = {};
      for (int i = 0; i < 32; ++i) src[i] = static_cast<unsigned char>(i + 1);
      StridedCopyParams s{0, bytes, 3, {}, {}};
      strided_copy(s, src, dst);
      CHECK(std::memcmp(dst, src + 3 * bytes, bytes) == 0);
    }
    std::vector<float> untouched(4, 7.0f), in(4, 1.0f);
    StridedCopyParams empty{3, 4, 0, {2, 0, 2}, {2, 1, 1}};
    strided_copy(empty, in.data(), untouched.data());
    CHECK(untouched == std::vector<float>(4, 7.0f));
  }
  SECTION("rank 8 transpose") {
    StridedCopyParams p{};
    p.rank = 8;
    p.elem_bytes = 4;
    int64_t dense[8], shape[8] = {2, 1, 3, 2, 1, 2, 3, 2};
    dense[7] = 1;
    for (int d = 6; d >= 0; --d) dense[d] = dense[d + 1] * shape[d + 1];
    for (int d = 0; d < 8; ++d) {  // reversed axes
      p.shape[d] = shape[7 - d];
      p.in_strides[d] = dense[7 - d];
    }
    std::vector<int32_t> x(144), y(144), ref(144);
    for (int i = 0; i < 144; ++i) x[i] = i;
    for (int i = 0; i < 144; ++i) {
      int rest = i, src = 0;
      for (int d = 7; d >= 0; --d) {
        src += rest % p.shape[d] * p.in_strides[d];
        rest /= p.shape[d];
      }
      ref[i] = x[src];
    }
    strided_copy(p, x.data(), y.data());
    CHECK(y == ref);
  }
}

TEST_CASE("concat with empty parts and gather with odd block sizes") {
  std::vector<uint8_t> a = {1, 2, 3, 4, 5, 6}, b, c = {7, 8, 9};
  const void* parts[] = {a.data(), b.data(), c.data()};
  const int64_t partBytes[] = {2, 0, 1};
  std::vector<uint8_t> y(9);
  concat({3, 3, partBytes}, parts, y.data());
  CHECK(y == std::vector<uint8_t>{1, 2, 7, 3, 4, 8, 5, 6, 9});

  // data [2, 4, 3 bytes]; indices [-4, 3, -5, 4, 0].
  std::vector<uint8_t> data(24);
  for (int i = 0; i < 24; ++i) data[i] = static_cast<uint8_t>(i + 1);
  std::vector<int32_t> idx32 = {-4, 3, -5, 4, 0};
  std::vector<int64_t> idx64(idx32.begin(), idx32.end());
  std::vector<uint8_t> ref(2 * 5 * 3, 0);
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 5; ++i) {
      int index = idx32[i] < 0 ? idx32[i] + 4 : idx32[i];
      if (index < 0 || index >= 4) continue;
      for (int byte = 0; byte < 3; ++byte)
        ref[(o * 5 + i) * 3 + byte] = data[(o * 4 + index) * 3 + byte];
    }
  std::vector<uint8_t> y32(30, 0xee), y64(30, 0xee);
  // -5 and 4 are outside the axis of 4: zeros, and the kernel says so.
  CHECK(gather({2, 4, 3, 5}, data.data(), idx32.data(), y32.data()) == Status::kIndexOutOfRange);
  CHECK(gather({2, 4, 3, 5}, data.data(), idx64.data(), y64.data()) == Status::kIndexOutOfRange);
  CHECK(y32 == ref);
  CHECK(y64 == ref);
}

namespace {

const DType kCastTypes[] = {DType::kF32, DType::kF64, DType::kI8,   DType::kU8,
                            DType::kI16, DType::kU16, DType::kI32,  DType::kI64,
                            DType::kU32, DType::kU64, DType::kBool, DType::kF16,
                            DType::kBF16};

/// Writes the small non-negative integer v as an element of type t.
void store(DType t, double v, void* out, int64_t i) {
  switch (t) {
    case DType::kF32:
      static_cast<float*>(out)[i] = float(v);
      break;
    case DType::kF64:
      static_cast<double*>(out)[i] = v;
      break;
    case DType::kI8:
      static_cast<int8_t*>(out)[i] = int8_t(v);
      break;
    case DType::kU8:
      static_cast<uint8_t*>(out)[i] = uint8_t(v);
      break;
    case DType::kI16:
      static_cast<int16_t*>(out)[i] = int16_t(v);
      break;
    case DType::kU16:
      static_cast<uint16_t*>(out)[i] = uint16_t(v);
      break;
    case DType::kI32:
      static_cast<int32_t*>(out)[i] = int32_t(v);
      break;
    case DType::kI64:
      static_cast<int64_t*>(out)[i] = int64_t(v);
      break;
    case DType::kU32:
      static_cast<uint32_t*>(out)[i] = uint32_t(v);
      break;
    case DType::kU64:
      static_cast<uint64_t*>(out)[i] = uint64_t(v);
      break;
    case DType::kBool:
      static_cast<uint8_t*>(out)[i] = v != 0;
      break;
    case DType::kF16: {
      _Float16 h = static_cast<_Float16>(v);
      std::memcpy(static_cast<char*>(out) + 2 * i, &h, 2);
      break;
    }
    case DType::kBF16: {
      const float f = float(v);  // small integers are exact in bfloat16
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      const uint16_t half = static_cast<uint16_t>(bits >> 16);
      std::memcpy(static_cast<char*>(out) + 2 * i, &half, 2);
      break;
    }
    case DType::kUndefined:
      break;
  }
}

}  // namespace

TEST_CASE("cast between every pair of element types") {
  const double values[] = {0, 1, 2, 7, 100, 127, 0, 1, 64, 3};
  const int64_t count = 10;
  for (DType from : kCastTypes)
    for (DType to : kCastTypes) {
      INFO(cgc::dtypeName(from) << " -> " << cgc::dtypeName(to));
      std::vector<unsigned char> x(count * 8), y(count * 8, 0xcd),
          want(count * 8, 0xcd);
      for (int64_t i = 0; i < count; ++i) {
        const double v = from == DType::kBool ? values[i] != 0 : values[i];
        store(from, v, x.data(), i);
        store(to, to == DType::kBool ? v != 0 : v, want.data(), i);
      }
      cast({from, to, count}, x.data(), y.data());
      CHECK(y == want);
    }
  SECTION("float to integer truncates; to bool tests != 0") {
    const float f[] = {2.9f, -2.9f, -0.0f, 0.5f, -128.0f};
    int8_t i8[5];
    uint8_t b[5];
    cast({DType::kF32, DType::kI8, 5}, f, i8);
    cast({DType::kF32, DType::kBool, 5}, f, b);
    CHECK(std::vector<int8_t>(i8, i8 + 5) ==
          std::vector<int8_t>{2, -2, 0, 0, -128});
    CHECK(std::vector<uint8_t>(b, b + 5) ==
          std::vector<uint8_t>{1, 1, 0, 1, 1});
    const double d[] = {-7.99, 1e10};
    int64_t i64[2];
    cast({DType::kF64, DType::kI64, 2}, d, i64);
    CHECK(i64[0] == -7);
    CHECK(i64[1] == 10000000000);
  }
}

TEST_CASE("float16 and bfloat16 conversions") {
  SECTION("every half survives half -> float -> half") {
    for (uint32_t h = 0; h < 0x10000; ++h) {
      const float f = half_to_float(static_cast<uint16_t>(h));
      _Float16 ref;
      const uint16_t bits = static_cast<uint16_t>(h);
      std::memcpy(&ref, &bits, 2);
      if (std::isnan(f)) {
        REQUIRE(std::isnan(static_cast<float>(ref)));
        REQUIRE(std::isnan(half_to_float(float_to_half(f))));
        continue;
      }
      INFO("half bits " << h);
      REQUIRE(f == static_cast<float>(ref));
      REQUIRE(float_to_half(f) == h);
    }
  }
  SECTION("float -> half rounds to nearest even like _Float16") {
    uint32_t s = 99;
    for (int i = 0; i < 200000; ++i) {
      s = s * 1664525u + 1013904223u;
      // Exponents around half's normal, subnormal and overflow ranges.
      const uint32_t bits = (s & 0x807fffffu) | ((96u + (s >> 8) % 48) << 23);
      float f;
      std::memcpy(&f, &bits, 4);
      const _Float16 ref = static_cast<_Float16>(f);
      uint16_t want;
      std::memcpy(&want, &ref, 2);
      INFO("float bits " << bits);
      REQUIRE(float_to_half(f) == want);
    }
    const float halfway = 65520.0f;  // rounds up to infinity
    CHECK(float_to_half(halfway) == 0x7c00);
    CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xfc00);
  }
  SECTION("bfloat16 truncates toward zero") {
    CHECK(float_to_bfloat16(1.0f) == 0x3f80);
    float f;
    const uint32_t bits = 0x3f80ffffu;
    std::memcpy(&f, &bits, 4);
    CHECK(float_to_bfloat16(f) == 0x3f80);
    CHECK(bfloat16_to_float(0xc040) == -3.0f);
    const float values[] = {1.5f, -2.0f, 0.0f};
    uint16_t b[3];
    cast({DType::kF32, DType::kBF16, 3}, values, b);
    double back[3];
    cast({DType::kBF16, DType::kF64, 3}, b, back);
    CHECK(back[0] == 1.5);
    CHECK(back[1] == -2.0);
    CHECK(back[2] == 0.0);
  }
}

TEST_CASE("softmax is stable for large magnitudes and any axis position") {
  SECTION("huge logits") {
    const float x[4] = {1000.0f, 1000.0f, -1000.0f, 999.0f};
    float y[4], logY[4];
    softmax({1, 4, 1, false}, x, y);
    softmax({1, 4, 1, true}, x, logY);
    const double z = 2 + std::exp(-1.0);
    CHECK(y[0] == Approx(1 / z));
    CHECK(y[2] == 0.0f);
    CHECK(y[3] == Approx(std::exp(-1.0) / z));
    CHECK(logY[0] == Approx(-std::log(z)));
    CHECK(logY[2] == Approx(-2000 - std::log(z)));
  }
  SECTION("axis of one and wide inner") {
    auto x = uniform(3 * 1 * 17, 800);
    std::vector<float> y(x.size()), logY(x.size());
    softmax({3, 1, 17, false}, x.data(), y.data());
    softmax({3, 1, 17, true}, x.data(), logY.data());
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(y[i] == 1.0f);
      CHECK(logY[i] == 0.0f);
    }
  }
}

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("profiler writes medians and a Chrome trace") {
  const char* names[] = {"conv \"1\"\\a", "relu\n2", "add", "unused"};
  const char* ops[] = {"Conv", "Relu", "Add", "Mul"};
  cgc::ModelInfo info{};
  info.name = "Tiny";
  info.graph_hash = "abc123";
  info.num_nodes = 4;
  info.node_names = names;
  info.node_ops = ops;
  info.executors = 2;
  info.threads_per_executor = 1;

  cgc::Profiler profiler;
  const int64_t t0 = profiler.now_ns();
  CHECK(t0 >= 0);
  CHECK(profiler.now_ns() >= t0);
  // Node 0: durations 5, 1, 3 us -> median 3; node 1: 2, 4, 8 us -> 4.
  const int64_t d0[] = {5000, 1000, 3000}, d1[] = {2000, 4000, 8000};
  for (int run = 0; run < 3; ++run) {
    const int64_t base = run * 100000;
    profiler.record(info, {0, 0, 1, base, base + d0[run]});
    profiler.record(info, {1, 1, 2, base + 10000, base + 10000 + d1[run]});
    // Node 2 in two runs only: 1 and 2 us -> median 1.5.
    if (run < 2)
      profiler.record(info, {2, 0, 1, base + 50000, base + 51000 + run * 1000});
    profiler.end_run();
  }
  CHECK(profiler.runs() == 3);
  CHECK(profiler.events().size() == 8);

  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp ? tmp : "/tmp";
  const std::string profilePath = dir + "/cgc_kernel_tests_profile.json";
  const std::string tracePath = dir + "/cgc_kernel_tests_trace.json";
  REQUIRE(profiler.write_profile(profilePath));
  REQUIRE(profiler.write_trace(tracePath));

  const auto profile = nlohmann::json::parse(slurp(profilePath));
  CHECK(profile["model"] == "Tiny");
  CHECK(profile["graph_hash"] == "abc123");
  CHECK(profile["runs"] == 3);
  REQUIRE(profile["nodes"].size() == 3);
  CHECK(profile["nodes"][0]["name"] == names[0]);
  CHECK(profile["nodes"][0]["op"] == "Conv");
  CHECK(profile["nodes"][0]["median_us"].get<double>() == Approx(3.0));
  CHECK(profile["nodes"][0]["executor"] == 0);
  CHECK(profile["nodes"][1]["name"] == names[1]);
  CHECK(profile["nodes"][1]["median_us"].get<double>() == Approx(4.0));
  CHECK(profile["nodes"][1]["executor"] == 1);
  CHECK(profile["nodes"][1]["threads"] == 2);
  CHECK(profile["nodes"][2]["name"] == "add");
  CHECK(profile["nodes"][2]["median_us"].get<double>() == Approx(1.5));

  const auto trace = nlohmann::json::parse(slurp(tracePath));
  int complete = 0, metadata = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      CHECK(e["pid"] == 0);
      if (e["name"] == names[1]) {
        CHECK(e["cat"] == "Relu");
        CHECK(e["tid"] == 1);
      }
      if (e["ts"].get<double>() == Approx(100.0)) {
        CHECK(e["dur"].get<double>() == Approx(1.0));
      }
    } else if (e["ph"] == "M") {
      ++metadata;
      CHECK(e["name"] == "thread_name");
      CHECK(e["args"]["name"] ==
            "executor " + std::to_string(e["tid"].get<int>()));
    }
  }
  CHECK(complete == 8);
  CHECK(metadata == 2);
  std::remove(profilePath.c_str());
  std::remove(tracePath.c_str());

  CHECK_FALSE(profiler.write_profile("/nonexistent-dir/x/profile.json"));
  CHECK_FALSE(profiler.write_trace("/nonexistent-dir/x/trace.json"));
  if (std::FILE* full = std::fopen("/dev/full", "w")) {  // write errors
    std::fclose(full);
    CHECK_FALSE(profiler.write_profile("/dev/full"));
    CHECK_FALSE(profiler.write_trace("/dev/full"));
  }
}

TEST_CASE("profiler with no events writes empty but valid JSON") {
  cgc::Profiler profiler;
  const char* tmp = std::getenv("TMPDIR");
  const std::string path =
      std::string(tmp ? tmp : "/tmp") + "/cgc_kernel_tests_empty.json";
  REQUIRE(profiler.write_profile(path));
  const auto profile = nlohmann::json::parse(slurp(path));
  CHECK(profile["runs"] == 0);
  CHECK(profile["nodes"].empty());
  REQUIRE(profiler.write_trace(path));
  CHECK(nlohmann::json::parse(slurp(path))["traceEvents"].empty());
  std::remove(path.c_str());
}
