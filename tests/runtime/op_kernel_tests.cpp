// The math and indexing kernels of issue 19 (cgc/kernels/math.h,
// indexing.h, the new UnaryOp functions, Pad's run-time value) against
// plain reference loops, over awkward shapes, every reduction and index
// form, and indices out of range (a status, never an access out of bounds).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cgc/float16.h"
#include "cgc/kernels.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::DType;
using cgc::test::randomFloats;

namespace {

MaxUnpoolParams unpoolParams(int64_t in, int64_t out, int64_t bytes) {
  MaxUnpoolParams p{};
  p.in_count = in, p.out_count = out, p.elem_bytes = bytes;
  return p;
}

BroadcastParams broadcast(const std::vector<int64_t>& out, const std::vector<int64_t>& a,
                          const std::vector<int64_t>& b) {
  auto strides = [&](const std::vector<int64_t>& in) {
    PerDim<int64_t> s{};
    int64_t stride = 1;
    for (int d = static_cast<int>(in.size()) - 1; d >= 0; --d) {
      s[d + out.size() - in.size()] = in[d] == 1 ? 0 : stride;
      stride *= in[d];
    }
    return s;
  };
  BroadcastParams p{};
  p.rank = static_cast<int32_t>(out.size());
  p.count = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    p.shape[d] = out[d];
    p.count *= out[d];
  }
  p.a_strides = strides(a);
  p.b_strides = strides(b);
  return p;
}

template <typename T>
PerDim<T> dims(std::initializer_list<T> values) {
  PerDim<T> out{};
  std::copy(values.begin(), values.end(), out.begin());
  return out;
}

}  // namespace

TEST_CASE("the new unary functions match the C library, on a team too") {
  struct Case {
    UnaryOp op;
    double (*f)(double);
  };
  const Case cases[] = {{UnaryOp::kCos, std::cos},    {UnaryOp::kSin, std::sin},
                        {UnaryOp::kTan, std::tan},    {UnaryOp::kAtan, std::atan},
                        {UnaryOp::kCosh, std::cosh},  {UnaryOp::kSinh, std::sinh},
                        {UnaryOp::kAsinh, std::asinh}};
  auto x = randomFloats(1001, 7);
  for (const Case& c : cases) {
    std::vector<float> y(x.size());
    cgc::test::onTeam(3, [&](const Team& team) {
      unary<float>({c.op, static_cast<int64_t>(x.size()), 0, 0}, x.data(), y.data(), team);
    });
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == Approx(c.f(x[i])).margin(1e-6));
  }
  const std::vector<double> unit = {-0.9, -0.5, 0.0, 0.3, 0.99};
  std::vector<double> out(unit.size());
  unary<double>({UnaryOp::kAcos, 5, 0, 0}, unit.data(), out.data());
  for (size_t i = 0; i < unit.size(); ++i) REQUIRE(out[i] == Approx(std::acos(unit[i])));
  unary<double>({UnaryOp::kAtanh, 5, 0, 0}, unit.data(), out.data());
  for (size_t i = 0; i < unit.size(); ++i) REQUIRE(out[i] == Approx(std::atanh(unit[i])));
  const std::vector<double> big = {1.0, 1.5, 10.0};
  std::vector<double> acosh(3);
  unary<double>({UnaryOp::kAcosh, 3, 0, 0}, big.data(), acosh.data());
  for (size_t i = 0; i < 3; ++i) REQUIRE(acosh[i] == Approx(std::acosh(big[i])));
}

TEST_CASE("Sign, Round (half to even), Selu, ThresholdedRelu and Shrink") {
  const std::vector<float> x = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 2.4f, -3.6f, 0.f};
  std::vector<float> y(x.size());
  unary<float>({UnaryOp::kRound, 8, 0, 0}, x.data(), y.data());
  REQUIRE(y == std::vector<float>{0.f, 2.f, 2.f, -0.f, -2.f, 2.f, -4.f, 0.f});
  unary<float>({UnaryOp::kSign, 8, 0, 0}, x.data(), y.data());
  REQUIRE(y == std::vector<float>{1, 1, 1, -1, -1, 1, -1, 0});
  const std::vector<int8_t> xi = {-128, -1, 0, 5, 127};
  std::vector<int8_t> yi(5);
  unary<int8_t>({UnaryOp::kSign, 5, 0, 0}, xi.data(), yi.data());
  REQUIRE(yi == std::vector<int8_t>{-1, -1, 0, 1, 1});
  unary<float>({UnaryOp::kSelu, 8, 1.5f, 2.f}, x.data(), y.data());
  for (size_t i = 0; i < x.size(); ++i)
    REQUIRE(y[i] == Approx(2.0 * (x[i] > 0 ? x[i] : 1.5 * (std::exp(x[i]) - 1))));
  unary<float>({UnaryOp::kThresholdedRelu, 8, 1.5f, 0}, x.data(), y.data());
  REQUIRE(y == std::vector<float>{0, 0, 2.5f, 0, 0, 2.4f, 0, 0});
  unary<float>({UnaryOp::kShrink, 8, 1.5f, 0.5f}, x.data(), y.data());
  const std::vector<float> shrunk = {0, 0, 2.f, 0, -2.f, 1.9f, -3.1f, 0};
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == Approx(shrunk[i]));
}

TEST_CASE("clip reads its bounds from tensors, or the parameters when null") {
  const std::vector<int64_t> x = {-(int64_t{1} << 60), -5, 0, 7, int64_t{1} << 60};
  std::vector<int64_t> y(5);
  const int64_t lo = -3, hi = (int64_t{1} << 60) - 1;
  clip<int64_t>({5, 0, 0}, x.data(), &lo, &hi, y.data());
  REQUIRE(y == std::vector<int64_t>{-3, -3, 0, 7, (int64_t{1} << 60) - 1});
  clip<int64_t>({5, -std::numeric_limits<double>::infinity(), 2.0}, x.data(), nullptr, nullptr,
                y.data());
  REQUIRE(y == std::vector<int64_t>{-(int64_t{1} << 60), -5, 0, 2, 2});
  std::vector<float> f = randomFloats(100, 3);
  const std::vector<float> ref = f;
  const float flo = -0.25f;
  clip<float>({100, 0, 0.5}, f.data(), &flo, nullptr, f.data());  // in place
  for (size_t i = 0; i < f.size(); ++i) REQUIRE(f[i] == std::min(std::max(ref[i], -0.25f), 0.5f));
}

TEST_CASE("mod follows the divisor's sign, or the dividend's with fmod") {
  const std::vector<int32_t> a = {-4, 7, -7, 5, std::numeric_limits<int32_t>::min(), 3};
  const std::vector<int32_t> b = {3, -3, -3, 0, -1, 5};
  std::vector<int32_t> y(6);
  mod({broadcast({6}, {6}, {6}), DType::kI32, false}, a.data(), b.data(), y.data());
  REQUIRE(y == std::vector<int32_t>{2, -2, -1, 0, 0, 3});
  mod({broadcast({6}, {6}, {6}), DType::kI32, true}, a.data(), b.data(), y.data());
  REQUIRE(y == std::vector<int32_t>{-1, 1, -1, 0, 0, 3});
  // Broadcast [3, 1] % [4] on uint16.
  const std::vector<uint16_t> u = {10, 65535, 7}, v = {3, 4, 7, 1};
  std::vector<uint16_t> w(12);
  mod({broadcast({3, 4}, {3, 1}, {4}), DType::kU16, false}, u.data(), v.data(), w.data());
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) REQUIRE(w[i * 4 + j] == u[i] % v[j]);
  const std::vector<double> fa = {-4.5, 7.25, 5.0}, fb = {2.0, -2.0, 0.75};
  std::vector<double> fy(3);
  mod({broadcast({3}, {3}, {3}), DType::kF64, true}, fa.data(), fb.data(), fy.data());
  for (int i = 0; i < 3; ++i) REQUIRE(fy[i] == std::fmod(fa[i], fb[i]));
  const std::vector<uint16_t> ha = {cgc::float_to_half(-4.5f), cgc::float_to_half(7.f)};
  const std::vector<uint16_t> hb = {cgc::float_to_half(2.f), cgc::float_to_half(-3.f)};
  std::vector<uint16_t> hy(2);
  mod({broadcast({2}, {2}, {2}), DType::kF16, true}, ha.data(), hb.data(), hy.data());
  REQUIRE(cgc::half_to_float(hy[0]) == -0.5f);
  REQUIRE(cgc::half_to_float(hy[1]) == 1.f);
}

TEST_CASE("bit_shift on every unsigned width, shifts past the width give 0") {
  const std::vector<uint8_t> a = {16, 4, 255, 1};
  const std::vector<uint8_t> s = {1, 2, 8, 200};
  std::vector<uint8_t> y(4);
  bit_shift({broadcast({4}, {4}, {4}), DType::kU8, true}, a.data(), s.data(), y.data());
  REQUIRE(y == std::vector<uint8_t>{32, 16, 0, 0});
  bit_shift({broadcast({4}, {4}, {4}), DType::kU8, false}, a.data(), s.data(), y.data());
  REQUIRE(y == std::vector<uint8_t>{8, 1, 0, 0});
  const std::vector<uint64_t> big = {1, uint64_t{1} << 63}, shifts = {63, 63};
  std::vector<uint64_t> out(2);
  bit_shift({broadcast({2}, {2}, {2}), DType::kU64, false}, big.data(), shifts.data(), out.data());
  REQUIRE(out == std::vector<uint64_t>{0, 1});
}

TEST_CASE("classify finds NaN and signed infinities in float, double and float16") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1.f, -inf, inf, std::nanf(""), 0.f};
  std::vector<uint8_t> y(5);
  classify({ClassifyOp::kIsNaN, DType::kF32, 5, true, true}, x.data(), y.data());
  REQUIRE(y == std::vector<uint8_t>{0, 0, 0, 1, 0});
  classify({ClassifyOp::kIsInf, DType::kF32, 5, true, false}, x.data(), y.data());
  REQUIRE(y == std::vector<uint8_t>{0, 0, 1, 0, 0});
  classify({ClassifyOp::kIsInf, DType::kF32, 5, false, true}, x.data(), y.data());
  REQUIRE(y == std::vector<uint8_t>{0, 1, 0, 0, 0});
  const std::vector<uint16_t> h = {cgc::float_to_half(-inf), cgc::float_to_half(2.f)};
  std::vector<uint8_t> hy(2);
  classify({ClassifyOp::kIsInf, DType::kF16, 2, true, true}, h.data(), hy.data());
  REQUIRE(hy == std::vector<uint8_t>{1, 0});
}

TEST_CASE("hardmax marks the first maximum along the middle axis") {
  const std::vector<float> x = {1, 3, 3, 0, /**/ 2, 2, 1, 0,   // outer 0: axis 2 x inner 4
                                5, 1, 1, 1, /**/ 5, 7, 1, 1};  // outer 1
  std::vector<float> y(16);
  hardmax<float>({2, 2, 4}, x.data(), y.data());
  REQUIRE(y == std::vector<float>{0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0});
}

TEST_CASE("cumsum along a run-time axis, exclusive and reverse, checks the axis") {
  const std::vector<int64_t> shape = {3, 4, 5};
  auto x = randomFloats(60, 11);
  for (int64_t axis = -3; axis < 3; ++axis)
    for (int flags = 0; flags < 4; ++flags) {
      const bool exclusive = flags & 1, reverse = flags & 2;
      CumSumParams p{3, dims<int64_t>({3, 4, 5}), DType::kI64, exclusive, reverse};
      std::vector<float> y(60);
      REQUIRE(cumsum<float>(p, x.data(), &axis, y.data()) == Status::kOk);
      const int64_t a = axis < 0 ? axis + 3 : axis;
      int64_t stride = 1;
      for (int64_t d = a + 1; d < 3; ++d) stride *= shape[d];
      for (int64_t i = 0; i < 60; ++i) {
        const int64_t pos = i / stride % shape[a];
        double ref = 0;
        for (int64_t j = 0; j < shape[a]; ++j) {
          const bool take =
              reverse ? (exclusive ? j > pos : j >= pos) : (exclusive ? j < pos : j <= pos);
          if (take) ref += x[i + (j - pos) * stride];
        }
        REQUIRE(y[i] == Approx(ref).margin(1e-5));
      }
    }
  const int32_t bad = 3;
  std::vector<int32_t> xi = {1, 2, 3}, yi(3);
  CumSumParams p{1, dims<int64_t>({3}), DType::kI32, false, false};
  REQUIRE(cumsum<int32_t>(p, xi.data(), &bad, yi.data()) == Status::kIndexOutOfRange);
  const int32_t last = -1;
  REQUIRE(cumsum<int32_t>(p, xi.data(), &last, yi.data()) == Status::kOk);
  REQUIRE(yi == std::vector<int32_t>{1, 3, 6});
}

namespace {

double cofactorDet(const std::vector<double>& m, int64_t n) {
  if (n == 1) return m[0];
  double sum = 0;
  for (int64_t c = 0; c < n; ++c) {
    std::vector<double> minor;
    for (int64_t r = 1; r < n; ++r)
      for (int64_t k = 0; k < n; ++k)
        if (k != c) minor.push_back(m[r * n + k]);
    sum += (c % 2 ? -1 : 1) * m[c] * cofactorDet(minor, n - 1);
  }
  return sum;
}

}  // namespace

TEST_CASE("det matches cofactor expansion; singular matrices give 0") {
  for (int64_t n : {1, 2, 3, 5}) {
    auto x = randomFloats(static_cast<size_t>(3 * n * n), static_cast<uint32_t>(n));
    std::vector<float> y(3);
    det<float>({3, n}, x.data(), y.data());
    for (int64_t b = 0; b < 3; ++b) {
      std::vector<double> m(x.begin() + b * n * n, x.begin() + (b + 1) * n * n);
      REQUIRE(y[b] == Approx(cofactorDet(m, n)).margin(1e-5));
    }
  }
  const std::vector<double> singular = {1, 2, 3, 2, 4, 6, 0, 1, 1};
  double d = 1;
  det<double>({1, 3}, singular.data(), &d);
  REQUIRE(d == 0.0);
}

TEST_CASE("lrn sums squares over the channel window, odd and even sizes") {
  const int64_t n = 2, c = 5, inner = 3;
  auto x = randomFloats(n * c * inner, 5);
  for (int64_t size : {1, 3, 4}) {
    std::vector<float> y(x.size());
    lrn({n, c, inner, size, 2e-2f, 0.75f, 1.5f}, x.data(), y.data());
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < inner; ++i) {
          double sum = 0;
          for (int64_t k = ch - (size - 1) / 2; k <= ch + size / 2; ++k)
            if (k >= 0 && k < c) sum += std::pow(x[(b * c + k) * inner + i], 2);
          const int64_t at = (b * c + ch) * inner + i;
          REQUIRE(y[at] == Approx(x[at] / std::pow(1.5 + 2e-2 / size * sum, 0.75)));
        }
  }
}

TEST_CASE("gather_elements on every axis, negative and bad indices") {
  auto data = randomFloats(2 * 3 * 4, 9);
  for (int axis = 0; axis < 3; ++axis) {
    const std::vector<int64_t> dataShape = {2, 3, 4};
    std::vector<int64_t> indexShape = {2, 2, 3};
    std::vector<int64_t> indices(12);
    for (size_t i = 0; i < 12; ++i)
      indices[i] = static_cast<int64_t>(i * 7 % dataShape[axis]) - (i % 2 ? dataShape[axis] : 0);
    GatherElementsParams p{3, axis, 4, dims<int64_t>({2, 3, 4}), dims<int64_t>({2, 2, 3})};
    std::vector<float> y(12);
    REQUIRE(gather_elements<int64_t>(p, data.data(), indices.data(), y.data()) == Status::kOk);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t k = 0; k < 3; ++k) {
          int64_t c[3] = {i, j, k};
          int64_t index = indices[(i * 2 + j) * 3 + k];
          c[axis] = index < 0 ? index + dataShape[axis] : index;
          REQUIRE(y[(i * 2 + j) * 3 + k] == data[(c[0] * 3 + c[1]) * 4 + c[2]]);
        }
  }
  const std::vector<int32_t> bad = {0, 3, -4};
  std::vector<double> small = {1, 2, 3}, out(3, 9.0);
  GatherElementsParams p{1, 0, 8, dims<int64_t>({3}), dims<int64_t>({3})};
  REQUIRE(gather_elements<int32_t>(p, small.data(), bad.data(), out.data()) ==
          Status::kIndexOutOfRange);
  REQUIRE(out == std::vector<double>{1, 0, 0});
}

TEST_CASE("scatter_elements with none, add and mul, duplicates in order, bad indices") {
  const std::vector<float> data = {1, 2, 3, 4, 5, 6};  // [2, 3]
  const std::vector<int64_t> indices = {1, 1, -1, 0};  // [2, 2], axis 1
  const std::vector<float> updates = {10, 20, 30, 40};
  std::vector<float> y(6);
  ScatterElementsParams p{
      2, 1, ScatterReduction::kNone, DType::kF32, dims<int64_t>({2, 3}), dims<int64_t>({2, 2})};
  REQUIRE(scatter_elements<int64_t>(p, data.data(), indices.data(), updates.data(), y.data()) ==
          Status::kOk);
  REQUIRE(y == std::vector<float>{1, 20, 3, 40, 5, 30});
  p.reduction = ScatterReduction::kAdd;
  scatter_elements<int64_t>(p, data.data(), indices.data(), updates.data(), y.data());
  REQUIRE(y == std::vector<float>{1, 32, 3, 44, 5, 36});
  p.reduction = ScatterReduction::kMul;
  scatter_elements<int64_t>(p, data.data(), indices.data(), updates.data(), y.data());
  REQUIRE(y == std::vector<float>{1, 400, 3, 160, 5, 180});
  // int8 additions wrap; an index out of range is reported and skipped.
  const std::vector<int8_t> d8 = {120, 0}, u8 = {10, 1};
  const std::vector<int32_t> i8 = {0, 2};
  std::vector<int8_t> y8(2);
  ScatterElementsParams q{
      1, 0, ScatterReduction::kAdd, DType::kI8, dims<int64_t>({2}), dims<int64_t>({2})};
  REQUIRE(scatter_elements<int32_t>(q, d8.data(), i8.data(), u8.data(), y8.data()) ==
          Status::kIndexOutOfRange);
  REQUIRE(y8 == std::vector<int8_t>{-126, 0});
}

TEST_CASE("gather_nd with and without batch dims, bad tuples give zeros and a status") {
  std::vector<int32_t> data(2 * 3 * 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i);
  // batch_dims 0, k = 2: slices of 4.
  const std::vector<int64_t> idx = {1, 2, 0, -1, 1, 3};
  std::vector<int32_t> y(12, -1);
  GatherNDParams p{1, 3, 2, 16, dims<int64_t>({2, 3})};
  REQUIRE(gather_nd(p, data.data(), idx.data(), y.data()) == Status::kIndexOutOfRange);
  REQUIRE(std::vector<int32_t>(y.begin(), y.begin() + 8) ==
          std::vector<int32_t>{20, 21, 22, 23, 8, 9, 10, 11});
  REQUIRE(std::vector<int32_t>(y.begin() + 8, y.end()) == std::vector<int32_t>(4, 0));
  // batch_dims 1, k = 2: one element per tuple.
  const std::vector<int64_t> bidx = {2, 3, 0, 1};  // [2, 1, 2]
  std::vector<int32_t> by(2);
  GatherNDParams q{2, 1, 2, 4, dims<int64_t>({3, 4})};
  REQUIRE(gather_nd(q, data.data(), bidx.data(), by.data()) == Status::kOk);
  REQUIRE(by == std::vector<int32_t>{11, 13});
}

TEST_CASE("scatter_nd with reductions, slices and a bad tuple") {
  std::vector<float> data(2 * 3, 1.f);
  const std::vector<int64_t> idx = {1, 0, 5};  // k = 1: rows 1, 0 and a bad one
  const std::vector<float> updates = {2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<float> y(6);
  ScatterNDParams p{ScatterReduction::kMul, DType::kF32, 6, 3, 1, 3, dims<int64_t>({2})};
  REQUIRE(scatter_nd(p, data.data(), idx.data(), updates.data(), y.data()) ==
          Status::kIndexOutOfRange);
  REQUIRE(y == std::vector<float>{5, 6, 7, 2, 3, 4});
  const std::vector<int64_t> full = {1, 2, 1, 2};  // k = 2, a duplicate
  ScatterNDParams q{ScatterReduction::kAdd, DType::kF32, 6, 2, 2, 1, dims<int64_t>({2, 3})};
  REQUIRE(scatter_nd(q, data.data(), full.data(), updates.data(), y.data()) == Status::kOk);
  REQUIRE(y == std::vector<float>{1, 1, 1, 1, 1, 6});
}

TEST_CASE("one_hot: float and negative indices, out of range stays off") {
  const std::vector<float> indices = {0.f, -1.f, 2.7f, 7.f, std::nanf("")};
  const std::vector<int32_t> values = {-1, 9};
  std::vector<int32_t> y(5 * 4);
  one_hot<float>({1, 4, 5, 4}, indices.data(), values.data(), y.data());  // axis 0: [4, 5]
  for (int64_t d = 0; d < 4; ++d)
    for (int64_t i = 0; i < 5; ++i) {
      const bool on = (i == 0 && d == 0) || (i == 1 && d == 3) || (i == 2 && d == 2);
      REQUIRE(y[d * 5 + i] == (on ? 9 : -1));
    }
}

TEST_CASE("trilu keeps the k-th diagonal's side for every k, k from a tensor") {
  std::vector<int64_t> x(2 * 3 * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int64_t>(i) + 1;
  for (int upper = 0; upper < 2; ++upper)
    for (int64_t k = -5; k <= 5; ++k) {
      std::vector<int64_t> y(x.size(), -7);
      trilu({2, 3, 4, 8, 99, upper != 0}, x.data(), &k, y.data());
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t c = 0; c < 4; ++c) {
            const int64_t at = (b * 3 + r) * 4 + c;
            const bool keep = upper ? c - r >= k : c - r <= k;
            REQUIRE(y[at] == (keep ? x[at] : 0));
          }
    }
  std::vector<int64_t> y(x.size());
  trilu({2, 3, 4, 8, 0, true}, x.data(), nullptr, y.data());
  REQUIRE(y[4] == 0);
  REQUIRE(y[5] == 6);
  trilu({0, 0, 4, 8, 0, true}, x.data(), nullptr, y.data());  // empty
}

TEST_CASE("reverse_sequence in both layouts; a bad length is reported") {
  std::vector<int16_t> x(4 * 3 * 2);  // [time 4, batch 3, inner 2]
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int16_t>(i);
  const std::vector<int64_t> lens = {4, 1, 2};
  std::vector<int16_t> y(x.size());
  REQUIRE(reverse_sequence({4, 3, 4, true}, x.data(), lens.data(), y.data()) == Status::kOk);
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t i = 0; i < 2; ++i) {
        const int64_t src = t < lens[b] ? lens[b] - 1 - t : t;
        REQUIRE(y[(t * 3 + b) * 2 + i] == x[(src * 3 + b) * 2 + i]);
      }
  const std::vector<int64_t> bad = {5, -1, 0};
  REQUIRE(reverse_sequence({4, 3, 4, false}, x.data(), bad.data(), y.data()) ==
          Status::kIndexOutOfRange);
}

TEST_CASE("max_unpool places values at flat indices and rejects bad ones") {
  const std::vector<float> x = {5, 6, 7};
  const std::vector<int64_t> indices = {3, 0, 9};
  std::vector<float> y(9, -1.f);
  REQUIRE(max_unpool(unpoolParams(3, 9, 4), x.data(), indices.data(), y.data()) ==
          Status::kIndexOutOfRange);
  REQUIRE(y == std::vector<float>{6, 0, 0, 5, 0, 0, 0, 0, 0});
}

TEST_CASE("max_unpool with an output_shape keeps each index's coordinates") {
  // Indices over [1, 1, 4, 4] (MaxPool 2x2 stride 2 of 4x4), output 5x5.
  MaxUnpoolParams p = unpoolParams(4, 25, 4);
  p.rank = 4;
  p.index_shape = {1, 1, 4, 4};
  p.out_shape = {1, 1, 5, 5};
  const std::vector<float> x = {5, 6, 7, 8};
  const std::vector<int64_t> indices = {5, 7, 13, 15};
  std::vector<float> y(25, -1.f);
  REQUIRE(max_unpool(p, x.data(), indices.data(), y.data()) == Status::kOk);
  std::vector<float> expected(25, 0.f);
  expected[1 * 5 + 1] = 5;
  expected[1 * 5 + 3] = 6;
  expected[3 * 5 + 1] = 7;
  expected[3 * 5 + 3] = 8;
  REQUIRE(y == expected);
  // A smaller output: coordinates outside it are out of range.
  p.out_shape = {1, 1, 3, 3};
  p.out_count = 9;
  std::vector<float> z(9);
  REQUIRE(max_unpool(p, x.data(), indices.data(), z.data()) == Status::kIndexOutOfRange);
  REQUIRE(z[1 * 3 + 1] == 5);
}

TEST_CASE("index_map pads with a value read at run time") {
  const std::vector<int32_t> x = {1, 2, 3};
  std::vector<int32_t> y(6);
  IndexMapParams p{};
  p.mode = IndexMapMode::kConstant;
  p.rank = 1;
  p.elem_bytes = 4;
  p.out_count = 6;
  p.in_shape = dims<int64_t>({3});
  p.out_shape = dims<int64_t>({6});
  p.pad_begin = dims<int64_t>({2});
  p.value = 5;
  p.dtype = DType::kI32;
  const int32_t value = -9;
  index_map(p, x.data(), &value, y.data());
  REQUIRE(y == std::vector<int32_t>{-9, -9, 1, 2, 3, -9});
  index_map(p, x.data(), nullptr, y.data());
  REQUIRE(y == std::vector<int32_t>{5, 5, 1, 2, 3, 5});
}
