// Resize, InstanceNormalization and LayerNormalization kernels (and the
// float64 matmul that float64 Einsum lowers to) against plain reference loops written from the
// textbook formulas (rounding rules, the bilinear and trilinear corner sums, Keys' cubic kernel by
// distance), not from the kernel's own tap tables: awkward shapes, 1x1, downsampling, non-integer
// scales, 3-D and 5-D tensors.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "cgc/kernels.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::test::randomFloats;
using cgc::test::requireClose;

namespace {

int64_t countOf(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

/// Params for in -> out with scales out / in unless given.
ResizeParams resizeParams(ResizeMode mode, ResizeCoordinates coordinates,
                          const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                          std::vector<double> scales = {}) {
  ResizeParams p{};
  p.mode = mode;
  p.nearest_mode = NearestMode::kRoundPreferFloor;
  p.coordinates = coordinates;
  p.rank = static_cast<int32_t>(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    p.in_shape[d] = in[d];
    p.out_shape[d] = out[d];
    p.scales[d] =
        scales.empty() ? static_cast<double>(out[d]) / static_cast<double>(in[d]) : scales[d];
    p.roi_start[d] = 0.f;
    p.roi_end[d] = 1.f;
  }
  p.cubic_coeff_a = -0.75;
  return p;
}

/// The textbook source coordinate of output index x. As in ONNX, the output
/// width in these formulas is scale * input width, which differs from the
/// integer output size when scales are given.
double source(const ResizeParams& p, int d, int64_t x) {
  double s = p.scales[d], in = static_cast<double>(p.in_shape[d]), outWidth = s * in;
  switch (p.coordinates) {
    case ResizeCoordinates::kHalfPixel:
      return (x + 0.5) / s - 0.5;
    case ResizeCoordinates::kPytorchHalfPixel:
      return outWidth != 1 ? (x + 0.5) / s - 0.5 : -0.5;
    case ResizeCoordinates::kAlignCorners:
      return outWidth != 1 ? x * (in - 1) / (outWidth - 1) : 0.0;
    case ResizeCoordinates::kAsymmetric:
      return x / s;
    case ResizeCoordinates::kTfHalfPixelForNn:
      return (x + 0.5) / s;
    case ResizeCoordinates::kTfCropAndResize: {
      double begin = p.roi_start[d] * (in - 1), end = p.roi_end[d] * (in - 1);
      return outWidth != 1 ? begin + x * (end - begin) / (outWidth - 1) : (begin + end) / 2;
    }
  }
  return 0;
}

int64_t clampIndex(double i, int64_t in) {
  return std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(i), 0), in - 1);
}

int64_t nearestIndex(const ResizeParams& p, int d, int64_t x) {
  double c = source(p, d, x);
  double i = 0;
  switch (p.nearest_mode) {
    case NearestMode::kRoundPreferFloor:
      i = std::ceil(c - 0.5);
      break;
    case NearestMode::kRoundPreferCeil:
      i = std::floor(c + 0.5);
      break;
    case NearestMode::kFloor:
      i = std::floor(c);
      break;
    case NearestMode::kCeil:
      i = std::ceil(c);
      break;
  }
  return clampIndex(i, p.in_shape[d]);
}

/// Nearest resize of a 4-D tensor.
std::vector<float> nearestReference(const ResizeParams& p, const std::vector<float>& x) {
  const int64_t* in = p.in_shape.data();
  const int64_t* out = p.out_shape.data();
  std::vector<float> y;
  for (int64_t a = 0; a < out[0]; ++a)
    for (int64_t b = 0; b < out[1]; ++b)
      for (int64_t h = 0; h < out[2]; ++h)
        for (int64_t w = 0; w < out[3]; ++w) {
          int64_t ia = nearestIndex(p, 0, a), ib = nearestIndex(p, 1, b);
          int64_t ih = nearestIndex(p, 2, h), iw = nearestIndex(p, 3, w);
          y.push_back(x[((ia * in[1] + ib) * in[2] + ih) * in[3] + iw]);
        }
  return y;
}

/// Linear interpolation of an axis: two clamped neighbours and their weights.
struct Lerp {
  int64_t lo, hi;
  double wlo, whi;
};

Lerp lerp(const ResizeParams& p, int d, int64_t x) {
  double c = source(p, d, x);
  double f = std::floor(c);
  return {clampIndex(f, p.in_shape[d]), clampIndex(f + 1, p.in_shape[d]), 1 - (c - f), c - f};
}

/// Bilinear resize of the last two axes of an N x C x H x W tensor.
std::vector<float> bilinearReference(const ResizeParams& p, const std::vector<float>& x) {
  const int64_t* in = p.in_shape.data();
  const int64_t* out = p.out_shape.data();
  std::vector<float> y;
  for (int64_t nc = 0; nc < out[0] * out[1]; ++nc)
    for (int64_t h = 0; h < out[2]; ++h)
      for (int64_t w = 0; w < out[3]; ++w) {
        Lerp r = lerp(p, 2, h), c = lerp(p, 3, w);
        auto at = [&](int64_t i, int64_t j) { return x[(nc * in[2] + i) * in[3] + j]; };
        y.push_back(static_cast<float>(r.wlo * (c.wlo * at(r.lo, c.lo) + c.whi * at(r.lo, c.hi)) +
                                       r.whi * (c.wlo * at(r.hi, c.lo) + c.whi * at(r.hi, c.hi))));
      }
  return y;
}

/// Keys' cubic convolution weight at distance t.
double keys(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

/// Bicubic resize of an H x W image, one axis after the other.
std::vector<float> bicubicReference(const ResizeParams& p, const std::vector<float>& x) {
  int64_t inW = p.in_shape[1], outH = p.out_shape[0], outW = p.out_shape[1];
  auto cubic1d = [&](int d, int64_t o, auto&& value) {
    double c = source(p, d, o), f = std::floor(c), sum = 0, weights = 0;
    int64_t in = p.in_shape[d];
    for (int64_t k = -1; k <= 2; ++k) {
      double w = keys(c - (f + k), p.cubic_coeff_a);
      if (p.exclude_outside && (f + k < 0 || f + k >= in)) w = 0;
      sum += w * value(clampIndex(f + k, in));
      weights += w;
    }
    return p.exclude_outside ? sum / weights : sum;
  };
  std::vector<double> rows(outH * inW);
  for (int64_t h = 0; h < outH; ++h)
    for (int64_t w = 0; w < inW; ++w)
      rows[h * inW + w] = cubic1d(0, h, [&](int64_t i) { return double{x[i * inW + w]}; });
  std::vector<float> y;
  for (int64_t h = 0; h < outH; ++h)
    for (int64_t w = 0; w < outW; ++w)
      y.push_back(static_cast<float>(cubic1d(1, w, [&](int64_t j) { return rows[h * inW + j]; })));
  return y;
}

std::vector<float> runResize(const ResizeParams& p, const std::vector<float>& x) {
  std::vector<int64_t> out(p.out_shape.begin(), p.out_shape.begin() + p.rank);
  std::vector<float> y(countOf(out));
  resize(p, x.data(), y.data());
  return y;
}

}  // namespace

TEST_CASE("nearest resize matches the rounding rules of every nearest_mode") {
  struct Case {
    std::vector<int64_t> in, out;
  };
  for (const Case& c : {Case{{1, 1, 1, 1}, {1, 1, 3, 5}}, Case{{2, 3, 5, 4}, {2, 3, 1, 1}},
                        Case{{1, 2, 7, 5}, {1, 2, 4, 3}}, Case{{2, 1, 3, 4}, {2, 1, 8, 9}},
                        Case{{1, 1, 5, 5}, {1, 1, 5, 5}}})
    for (auto coordinates :
         {ResizeCoordinates::kHalfPixel, ResizeCoordinates::kAsymmetric,
          ResizeCoordinates::kAlignCorners, ResizeCoordinates::kTfHalfPixelForNn})
      for (auto mode : {NearestMode::kRoundPreferFloor, NearestMode::kRoundPreferCeil,
                        NearestMode::kFloor, NearestMode::kCeil}) {
        ResizeParams p = resizeParams(ResizeMode::kNearest, coordinates, c.in, c.out);
        p.nearest_mode = mode;
        auto x = randomFloats(countOf(c.in), 1);
        INFO("coordinates " << static_cast<int>(coordinates) << " mode " << static_cast<int>(mode));
        requireClose(runResize(p, x), nearestReference(p, x), 1e-5);
      }
}

TEST_CASE("nearest resize with non-integer scales uses the given scales") {
  // 7 * 0.6 = 4.2 -> 4 outputs, coordinates from 0.6, not from 4 / 7.
  std::vector<int64_t> in = {1, 1, 7, 9}, out = {1, 1, 4, 3};
  ResizeParams p = resizeParams(ResizeMode::kNearest, ResizeCoordinates::kAsymmetric, in, out,
                                {1.0, 1.0, 0.6, 0.35});
  auto x = randomFloats(countOf(in), 2);
  requireClose(runResize(p, x), nearestReference(p, x), 1e-5);
}

TEST_CASE("bilinear resize matches the four-corner formula") {
  struct Case {
    std::vector<int64_t> in, out;
    std::vector<double> scales;
  };
  for (const Case& c : {Case{{1, 1, 1, 1}, {1, 1, 4, 3}, {}}, Case{{2, 3, 4, 5}, {2, 3, 8, 10}, {}},
                        Case{{1, 2, 7, 5}, {1, 2, 4, 3}, {1.0, 1.0, 0.6, 0.6}},
                        Case{{1, 1, 5, 4}, {1, 1, 1, 1}, {}},
                        Case{{3, 1, 3, 6}, {3, 1, 7, 13}, {1.0, 1.0, 2.5, 2.2}}})
    for (auto coordinates : {ResizeCoordinates::kHalfPixel, ResizeCoordinates::kPytorchHalfPixel,
                             ResizeCoordinates::kAlignCorners, ResizeCoordinates::kAsymmetric}) {
      ResizeParams p = resizeParams(ResizeMode::kLinear, coordinates, c.in, c.out, c.scales);
      auto x = randomFloats(countOf(c.in), 3);
      INFO("coordinates " << static_cast<int>(coordinates));
      requireClose(runResize(p, x), bilinearReference(p, x), 1e-5);
    }
}

TEST_CASE("trilinear resize of a 5-D tensor matches the eight-corner formula") {
  std::vector<int64_t> in = {2, 2, 3, 4, 5}, out = {2, 2, 5, 3, 9};
  ResizeParams p = resizeParams(ResizeMode::kLinear, ResizeCoordinates::kHalfPixel, in, out);
  auto x = randomFloats(countOf(in), 4);
  std::vector<float> ref;
  for (int64_t nc = 0; nc < 4; ++nc)
    for (int64_t d = 0; d < out[2]; ++d)
      for (int64_t h = 0; h < out[3]; ++h)
        for (int64_t w = 0; w < out[4]; ++w) {
          Lerp a = lerp(p, 2, d), b = lerp(p, 3, h), c = lerp(p, 4, w);
          double sum = 0;
          for (int corner = 0; corner < 8; ++corner) {
            int64_t i = corner & 4 ? a.hi : a.lo, j = corner & 2 ? b.hi : b.lo,
                    k = corner & 1 ? c.hi : c.lo;
            double weight = (corner & 4 ? a.whi : a.wlo) * (corner & 2 ? b.whi : b.wlo) *
                            (corner & 1 ? c.whi : c.wlo);
            sum += weight * x[((nc * in[2] + i) * in[3] + j) * in[4] + k];
          }
          ref.push_back(static_cast<float>(sum));
        }
  requireClose(runResize(p, x), ref, 1e-5);
}

TEST_CASE("linear resize of a 3-D tensor along one axis") {
  std::vector<int64_t> in = {3, 5, 2}, out = {3, 8, 2};
  ResizeParams p = resizeParams(ResizeMode::kLinear, ResizeCoordinates::kAlignCorners, in, out);
  auto x = randomFloats(countOf(in), 5);
  std::vector<float> ref;
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 8; ++b)
      for (int64_t c = 0; c < 2; ++c) {
        Lerp l = lerp(p, 1, b);
        ref.push_back(static_cast<float>(l.wlo * x[(a * 5 + l.lo) * 2 + c] +
                                         l.whi * x[(a * 5 + l.hi) * 2 + c]));
      }
  requireClose(runResize(p, x), ref, 1e-5);
}

TEST_CASE("bicubic resize matches Keys' kernel, with and without exclude_outside") {
  struct Case {
    std::vector<int64_t> in, out;
    std::vector<double> scales;
  };
  for (const Case& c : {Case{{4, 4}, {8, 8}, {}}, Case{{5, 7}, {4, 5}, {0.8, 0.8}},
                        Case{{1, 1}, {3, 2}, {}}, Case{{6, 3}, {13, 7}, {}}})
    for (auto coordinates : {ResizeCoordinates::kHalfPixel, ResizeCoordinates::kAlignCorners,
                             ResizeCoordinates::kAsymmetric})
      for (bool exclude : {false, true}) {
        ResizeParams p = resizeParams(ResizeMode::kCubic, coordinates, c.in, c.out, c.scales);
        p.exclude_outside = exclude;
        p.cubic_coeff_a = exclude ? -0.5 : -0.75;
        auto x = randomFloats(countOf(c.in), 6);
        INFO("coordinates " << static_cast<int>(coordinates) << " exclude " << exclude);
        requireClose(runResize(p, x), bicubicReference(p, x), 1e-5);
      }
}

TEST_CASE("tf_crop_and_resize crops the region and extrapolates outside it") {
  std::vector<int64_t> in = {1, 1, 4, 6}, out = {1, 1, 3, 5};
  ResizeParams p = resizeParams(ResizeMode::kLinear, ResizeCoordinates::kTfCropAndResize, in, out);
  p.roi_start[2] = 0.2f;
  p.roi_end[2] = 1.3f;  // the last row maps below the input
  p.roi_start[3] = 0.1f;
  p.roi_end[3] = 0.7f;
  p.extrapolation_value = 10.f;
  auto x = randomFloats(countOf(in), 7);
  std::vector<float> ref;
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t w = 0; w < 5; ++w) {
      double ch = source(p, 2, h);
      if (ch < 0 || ch > 3) {
        ref.push_back(10.f);
        continue;
      }
      Lerp r = lerp(p, 2, h), c = lerp(p, 3, w);
      auto at = [&](int64_t i, int64_t j) { return x[i * 6 + j]; };
      ref.push_back(static_cast<float>(r.wlo * (c.wlo * at(r.lo, c.lo) + c.whi * at(r.lo, c.hi)) +
                                       r.whi * (c.wlo * at(r.hi, c.lo) + c.whi * at(r.hi, c.hi))));
    }
  auto y = runResize(p, x);
  CHECK(y[10] == 10.f);
  requireClose(y, ref, 1e-5);
}

TEST_CASE("instance_norm normalises every (n, c) plane") {
  struct Case {
    int64_t n, c, spatial;
  };
  for (Case k : {Case{1, 1, 1}, Case{2, 3, 7}, Case{3, 5, 64}, Case{1, 2, 1000}}) {
    auto x = randomFloats(k.n * k.c * k.spatial, 8);
    for (auto& v : x) v = v * 3 + 5;  // an offset that a naive one-pass variance would lose
    auto scale = randomFloats(k.c, 9), bias = randomFloats(k.c, 10);
    InstanceNormParams p{k.n, k.c, k.spatial, 1e-5f};
    std::vector<float> y(x.size()), ref;
    instance_norm(p, x.data(), scale.data(), bias.data(), y.data());
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t c = 0; c < k.c; ++c) {
        const float* plane = x.data() + (n * k.c + c) * k.spatial;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < k.spatial; ++i) mean += plane[i] / static_cast<double>(k.spatial);
        for (int64_t i = 0; i < k.spatial; ++i)
          var += (plane[i] - mean) * (plane[i] - mean) / static_cast<double>(k.spatial);
        for (int64_t i = 0; i < k.spatial; ++i)
          ref.push_back(
              static_cast<float>((plane[i] - mean) / std::sqrt(var + 1e-5) * scale[c] + bias[c]));
      }
    requireClose(y, ref, 1e-5);
  }
}

TEST_CASE("layer_norm normalises rows and reports mean and inverse deviation") {
  struct Case {
    int64_t outer, inner;
    bool bias;
  };
  for (Case k : {Case{1, 1, true}, Case{5, 7, true}, Case{3, 129, false}, Case{1, 64, true}}) {
    auto x = randomFloats(k.outer * k.inner, 11);
    auto scale = randomFloats(k.inner, 12), bias = randomFloats(k.inner, 13);
    LayerNormParams p{k.outer, k.inner, 1e-3f};
    std::vector<float> y(x.size()), mean(k.outer), inv(k.outer), ref, refMean, refInv;
    layer_norm(p, x.data(), scale.data(), k.bias ? bias.data() : nullptr, y.data(), mean.data(),
               inv.data());
    for (int64_t o = 0; o < k.outer; ++o) {
      const float* row = x.data() + o * k.inner;
      double m = 0, var = 0;
      for (int64_t i = 0; i < k.inner; ++i) m += row[i] / static_cast<double>(k.inner);
      for (int64_t i = 0; i < k.inner; ++i)
        var += (row[i] - m) * (row[i] - m) / static_cast<double>(k.inner);
      double d = 1 / std::sqrt(var + 1e-3);
      for (int64_t i = 0; i < k.inner; ++i)
        ref.push_back(static_cast<float>((row[i] - m) * d * scale[i] + (k.bias ? bias[i] : 0)));
      refMean.push_back(static_cast<float>(m));
      refInv.push_back(static_cast<float>(d));
    }
    requireClose(y, ref, 1e-5);
    requireClose(mean, refMean, 1e-5);
    requireClose(inv, refInv, 1e-5);
  }
}

TEST_CASE("layer_norm accepts null statistics outputs") {
  auto x = randomFloats(12, 14), scale = randomFloats(4, 15);
  std::vector<float> y(12), expected(12), mean(3), inv(3);
  LayerNormParams p{3, 4, 1e-5f};
  layer_norm(p, x.data(), scale.data(), nullptr, expected.data(), mean.data(), inv.data());
  layer_norm(p, x.data(), scale.data(), nullptr, y.data(), nullptr, nullptr);
  requireClose(y, expected, 1e-5);
}

TEST_CASE("float64 matmul broadcasts batch dimensions") {
  // a [2, 1, 3, 4] x b [3, 4, 5] -> [2, 3, 3, 5]
  const int64_t m = 3, k = 4, n = 5;
  auto af = randomFloats(2 * m * k, 16), bf = randomFloats(3 * k * n, 17);
  std::vector<double> a(af.begin(), af.end()), b(bf.begin(), bf.end());
  MatMulParams p{};
  p.batch_rank = 2;
  p.batch_shape[0] = 2;
  p.batch_shape[1] = 3;
  p.a_batch_strides[0] = m * k;
  p.b_batch_strides[1] = k * n;
  p.m = m;
  p.n = n;
  p.k = k;
  std::vector<double> y(2 * 3 * m * n, -1.0);
  matmul<double>(p, a.data(), b.data(), nullptr, y.data());
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < n; ++c) {
          double sum = 0;
          for (int64_t q = 0; q < k; ++q)
            sum += a[i * m * k + r * k + q] * b[j * k * n + q * n + c];
          REQUIRE(y[((i * 3 + j) * m + r) * n + c] == Approx(sum).epsilon(1e-12));
        }
}
