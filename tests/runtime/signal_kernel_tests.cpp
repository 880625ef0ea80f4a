// The signal, sampling and random kernels of issue 19 (cgc/kernels/signal.h,
// sampling.h, random.h) against reference computations: complex sums for
// DFT/STFT, the ONNX test's MelWeightMatrix, identity grids and linear
// images for GridSample/RoiAlign, and the generator's range and
// repeatability; plus coordinates that must not escape the image.
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "cgc/kernels.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::DType;
using cgc::test::randomFloats;

namespace {

std::vector<std::complex<double>> referenceDft(const std::vector<std::complex<double>>& x,
                                               int64_t n, bool inverse) {
  std::vector<std::complex<double>> y(static_cast<size_t>(n));
  const double pi = std::acos(-1.0);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t t = 0; t < std::min<int64_t>(n, static_cast<int64_t>(x.size())); ++t)
      y[k] += x[t] * std::polar(1.0, (inverse ? 2 : -2) * pi * double(k) * double(t) / double(n));
  if (inverse)
    for (auto& v : y) v /= static_cast<double>(n);
  return y;
}

}  // namespace

TEST_CASE("dft of real and complex signals, padded, cut, onesided and inverse") {
  struct Case {
    int64_t len, n;
    bool complex, inverse, onesided;
  };
  for (Case c : {Case{10, 10, false, false, false}, Case{7, 12, false, false, true},
                 Case{9, 5, true, false, false}, Case{8, 8, true, true, false}}) {
    const int64_t outer = 2, inner = 3, channels = c.complex ? 2 : 1;
    const int64_t bins = c.onesided ? c.n / 2 + 1 : c.n;
    auto x = randomFloats(static_cast<size_t>(outer * c.len * inner * channels), 3);
    std::vector<float> y(static_cast<size_t>(outer * bins * inner * 2));
    dft<float>({outer, c.len, inner, c.n, bins, c.complex, c.inverse}, x.data(), y.data());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        std::vector<std::complex<double>> signal;
        for (int64_t t = 0; t < c.len; ++t) {
          const float* v = &x[((o * c.len + t) * inner + i) * channels];
          signal.emplace_back(v[0], c.complex ? v[1] : 0.f);
        }
        const auto ref = referenceDft(signal, c.n, c.inverse);
        for (int64_t k = 0; k < bins; ++k) {
          const float* out = &y[((o * bins + k) * inner + i) * 2];
          REQUIRE(out[0] == Approx(ref[k].real()).margin(1e-5));
          REQUIRE(out[1] == Approx(ref[k].imag()).margin(1e-5));
        }
      }
  }
}

TEST_CASE("stft frames the signal, windows each frame, keeps the onesided bins") {
  const int64_t length = 40, frameLength = 8, step = 5, frames = (length - frameLength) / step + 1;
  const int64_t bins = frameLength / 2 + 1;
  auto signal = randomFloats(2 * length, 4);
  auto window = randomFloats(frameLength, 5);
  for (bool windowed : {false, true}) {
    std::vector<double> s(signal.begin(), signal.end()), w(window.begin(), window.end());
    std::vector<double> y(static_cast<size_t>(2 * frames * bins * 2));
    stft<double>({2, length, frames, frameLength, step, bins, false}, s.data(),
                 windowed ? w.data() : nullptr, y.data());
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        std::vector<std::complex<double>> frame;
        for (int64_t t = 0; t < frameLength; ++t)
          frame.emplace_back(s[b * length + f * step + t] * (windowed ? w[t] : 1.0), 0.0);
        const auto ref = referenceDft(frame, frameLength, false);
        for (int64_t k = 0; k < bins; ++k) {
          REQUIRE(y[((b * frames + f) * bins + k) * 2] == Approx(ref[k].real()).margin(1e-9));
          REQUIRE(y[((b * frames + f) * bins + k) * 2 + 1] == Approx(ref[k].imag()).margin(1e-9));
        }
      }
  }
}

TEST_CASE("mel_weight_matrix reproduces the ONNX test's matrix") {
  const int32_t rate = 8192;
  const float lower = 0.f, upper = 4096.f;
  std::vector<float> y(9 * 8, -1.f);
  mel_weight_matrix({8, 16, DType::kI32, DType::kF32, DType::kF32}, &rate, &lower, &upper,
                    y.data());
  // From onnx/backend/test/case/node/melweightmatrix.py.
  const std::vector<int> ones = {0 * 8 + 0, 0 * 8 + 1, 1 * 8 + 2, 1 * 8 + 3,
                                 2 * 8 + 4, 3 * 8 + 5, 4 * 8 + 6, 5 * 8 + 7};
  for (int i = 0; i < 72; ++i)
    REQUIRE(y[i] == (std::find(ones.begin(), ones.end(), i) != ones.end() ? 1.f : 0.f));
  // A zero sample rate or absurd edges stay inside the matrix.
  const int64_t zero = 0;
  const double huge = 1e30;
  std::vector<double> z(9 * 8);
  mel_weight_matrix({8, 16, DType::kI64, DType::kF64, DType::kF64}, &zero, &huge, &huge, z.data());
}

TEST_CASE("grid_sample on an align_corners identity grid returns the image") {
  const int64_t h = 3, w = 4;
  auto x = randomFloats(2 * h * w, 6);  // [1, 2, 3, 4]
  std::vector<float> grid;
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < w; ++j) {
      grid.push_back(-1.f + 2.f * static_cast<float>(j) / static_cast<float>(w - 1));
      grid.push_back(-1.f + 2.f * static_cast<float>(i) / static_cast<float>(h - 1));
    }
  for (auto mode : {GridSampleMode::kBilinear, GridSampleMode::kNearest, GridSampleMode::kBicubic})
    for (auto padding :
         {GridSamplePadding::kZeros, GridSamplePadding::kBorder, GridSamplePadding::kReflection}) {
      std::vector<float> y(x.size());
      grid_sample({mode, padding, true, 1, 2, h, w, h, w}, x.data(), grid.data(), y.data());
      for (size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == Approx(x[i]).margin(1e-5));
    }
}

TEST_CASE("grid_sample matches the ONNX example; wild coordinates stay inside") {
  // test_gridsample_{zeros,border,reflection}_padding from gridsample.py.
  const std::vector<float> x = {0, 1, 2, 3, 4, 5};  // [1, 1, 3, 2]
  const std::vector<float> grid = {-10, -10, -5,    -5,    -0.2f, -0.2f, 10, 10,
                                   10,  10,  -0.2f, -0.2f, 5,     5,     10, 10};
  const std::vector<std::vector<float>> expected = {{0, 0, 1.7f, 0, 0, 1.7f, 0, 0},
                                                    {0, 0, 1.7f, 5, 5, 1.7f, 5, 5},
                                                    {2.5f, 0, 1.7f, 2.5f, 2.5f, 1.7f, 5, 2.5f}};
  const GridSamplePadding paddings[] = {GridSamplePadding::kZeros, GridSamplePadding::kBorder,
                                        GridSamplePadding::kReflection};
  for (int k = 0; k < 3; ++k) {
    std::vector<float> y(8);
    grid_sample({GridSampleMode::kBilinear, paddings[k], false, 1, 1, 3, 2, 2, 4}, x.data(),
                grid.data(), y.data());
    for (int i = 0; i < 8; ++i) REQUIRE(y[i] == Approx(expected[k][i]).margin(1e-4));
  }
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> wild = {1e30f, -1e30f, inf, -inf, std::nanf(""), 0.f, 3.f, -7.f};
  for (auto mode : {GridSampleMode::kBilinear, GridSampleMode::kNearest, GridSampleMode::kBicubic})
    for (auto padding :
         {GridSamplePadding::kZeros, GridSamplePadding::kBorder, GridSamplePadding::kReflection}) {
      std::vector<float> out(4);
      grid_sample({mode, padding, false, 1, 1, 3, 2, 1, 4}, x.data(), wild.data(), out.data());
      if (padding == GridSamplePadding::kZeros && mode != GridSampleMode::kBicubic)
        REQUIRE(out[0] == 0.f);
    }
}

TEST_CASE("roi_align averages bilinear samples: exact on a linear image") {
  const int64_t h = 10, w = 10;
  std::vector<float> x(2 * h * w);  // two images: v = 2y + x and v = 1
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < w; ++j) {
      x[i * w + j] = static_cast<float>(2 * i + j);
      x[h * w + i * w + j] = 1.f;
    }
  const std::vector<float> rois = {2, 2, 6, 8, 0, 0, 9, 9, 1, 1, 3, 3};
  const std::vector<int64_t> batches = {0, 1, 7};
  std::vector<float> y(3 * 2 * 2);
  RoiAlignParams p{RoiPoolMode::kAvg, false, 2, 1, h, w, 3, 2, 2, 2, 1.f};
  REQUIRE(roi_align(p, x.data(), rois.data(), batches.data(), y.data()) ==
          Status::kIndexOutOfRange);
  // ROI 0: x in [2, 6], y in [2, 8]; bin (r, c) centres at x = 3 + 2c, y = 3.5 + 3r.
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c)
      REQUIRE(y[r * 2 + c] == Approx(2 * (3.5 + 3 * r) + (3 + 2 * c)).margin(1e-4));
  for (int i = 4; i < 8; ++i) REQUIRE(y[i] == Approx(1.f));
  for (int i = 8; i < 12; ++i) REQUIRE(y[i] == 0.f);
  // A NaN or huge ROI gives zeros instead of a runaway sample grid.
  const std::vector<float> wild = {0, 0, 1e30f, std::nanf(""), 0, 0, 1, 1, 0, 0, 1, 1};
  p.mode = RoiPoolMode::kMax;
  p.half_pixel = true;
  REQUIRE(roi_align(p, x.data(), wild.data(), batches.data(), y.data()) ==
          Status::kIndexOutOfRange);
}

TEST_CASE("random_fill: in range, repeatable per seed, different across seeds") {
  const int64_t n = 20000;
  std::vector<float> a(n), b(n), c(n);
  RandomParams p{RandomDistribution::kUniform, DType::kF32, DType::kUndefined, n, -2.0, 3.0, 42};
  random_fill(p, nullptr, a.data());
  random_fill(p, nullptr, b.data());
  REQUIRE(a == b);
  p.seed = random_seed(1.5f);
  random_fill(p, nullptr, c.data());
  REQUIRE(a != c);
  double sum = 0;
  for (float v : a) {
    REQUIRE(v >= -2.f);
    REQUIRE(v < 3.f);
    sum += v;
  }
  REQUIRE(sum / n == Approx(0.5).margin(0.05));
  std::vector<double> normal(n);
  random_fill({RandomDistribution::kNormal, DType::kF64, DType::kUndefined, n, 1.0, 2.0, 7},
              nullptr, normal.data());
  double mean = 0, var = 0;
  for (double v : normal) mean += v / n;
  for (double v : normal) var += (v - mean) * (v - mean) / n;
  REQUIRE(mean == Approx(1.0).margin(0.05));
  REQUIRE(std::sqrt(var) == Approx(2.0).margin(0.05));
  const std::vector<double> prob = {0.0, 1.0, 0.0, 1.0, 0.5};
  std::vector<int32_t> bits(5);
  random_fill({RandomDistribution::kBernoulli, DType::kI32, DType::kF64, 5, 0, 1, 3}, prob.data(),
              bits.data());
  REQUIRE(bits[0] == 0);
  REQUIRE(bits[1] == 1);
  REQUIRE(bits[2] == 0);
  REQUIRE(bits[3] == 1);
  REQUIRE((bits[4] == 0 || bits[4] == 1));
}
