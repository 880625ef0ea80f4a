// Edge cases for the elementwise and data-movement kernels, each against a
// naive reference written here: general broadcasting for every element type,
// integer corner cases, rank 0..8 strided copies, concat and gather, every
// cast pair, half and bfloat16, softmax stability.
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
      return cgc::test::randomIntegers<T>(n, seed, exponent ? 0 : -4, exponent ? 5 : 4);
    return cgc::test::randomIntegers<T>(n, seed, -20, 20);
  } else {
    std::vector<T> v(n);
    auto f = cgc::test::randomFloats(n, seed);
    for (size_t i = 0; i < n; ++i)
      v[i] = op == BinaryOp::kPow && !exponent ? T(std::fabs(f[i]) + 0.5f) : T(f[i] * 3);
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
      {{2, 1, 2, 1, 2, 1, 2, 3}, {2, 1, 1, 1, 2, 1, 2, 1}, {1, 1, 2, 1, 1, 1, 2, 3}},
      {{3, 0, 2}, {3, 0, 2}, {1, 1, 2}},
  };
  uint32_t seed = 600;
  for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kMin,
                      BinaryOp::kMax, BinaryOp::kPRelu, BinaryOp::kAnd, BinaryOp::kOr,
                      BinaryOp::kXor, BinaryOp::kDiv, BinaryOp::kPow}) {
    for (const BroadcastCase& c : cases) {
      const BinaryParams p = binaryParams(op, c);
      INFO("op " << static_cast<int>(op) << " rank " << p.bc.rank << " count " << p.bc.count);
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
    CHECK(std::vector<int32_t>(y.begin(), y.begin() + 5) == std::vector<int32_t>{3, -3, -3, 3, 0});
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
    CHECK(std::vector<int64_t>(y.begin() + 1, y.end()) == std::vector<int64_t>{1024, -8, 1, 0, 1});
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
    // Issue 19's ops: against reference loops in op_kernel_tests.cpp.
    case UnaryOp::kCos:
      return std::cos(v);
    case UnaryOp::kSin:
      return std::sin(v);
    case UnaryOp::kTan:
      return std::tan(v);
    case UnaryOp::kAcos:
      return std::acos(v);
    case UnaryOp::kAsin:
      return std::asin(v);
    case UnaryOp::kAtan:
      return std::atan(v);
    case UnaryOp::kCosh:
      return std::cosh(v);
    case UnaryOp::kSinh:
      return std::sinh(v);
    case UnaryOp::kAcosh:
      return std::acosh(v);
    case UnaryOp::kAsinh:
      return std::asinh(v);
    case UnaryOp::kAtanh:
      return std::atanh(v);
    case UnaryOp::kSign:
      return (v > 0) - (v < 0);
    case UnaryOp::kRound:
      return std::nearbyint(v);
    case UnaryOp::kSelu:
      return beta * (v > 0 ? v : alpha * std::expm1(v));
    case UnaryOp::kThresholdedRelu:
      return v > alpha ? v : 0;
    case UnaryOp::kShrink:
      return v < -alpha ? v + beta : v > alpha ? v - beta : 0;
    case UnaryOp::kPowConstant:
      return std::pow(v, alpha);
  }
  return 0;
}

const UnaryOp kAllUnary[] = {
    UnaryOp::kRelu,     UnaryOp::kLeakyRelu,   UnaryOp::kClip,     UnaryOp::kSigmoid,
    UnaryOp::kTanh,     UnaryOp::kHardSigmoid, UnaryOp::kSqrt,     UnaryOp::kExp,
    UnaryOp::kLog,      UnaryOp::kNeg,         UnaryOp::kAbs,      UnaryOp::kReciprocal,
    UnaryOp::kFloor,    UnaryOp::kCeil,        UnaryOp::kIdentity, UnaryOp::kErf,
    UnaryOp::kSoftplus, UnaryOp::kElu,         UnaryOp::kSoftsign, UnaryOp::kNot};

bool positiveOnly(UnaryOp op) {
  return op == UnaryOp::kSqrt || op == UnaryOp::kLog || op == UnaryOp::kReciprocal;
}

}  // namespace

TEST_CASE("unary ops for float and double, in place") {
  for (UnaryOp op : kAllUnary) {
    INFO("op " << static_cast<int>(op));
    auto f = cgc::test::randomFloats(53, 700);
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
    auto i64 = cgc::test::randomIntegers<int64_t>(41, 710, positiveOnly(op) ? 1 : -9, 9);
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
    for (UnaryOp op :
         {UnaryOp::kRelu, UnaryOp::kNeg, UnaryOp::kAbs, UnaryOp::kIdentity, UnaryOp::kClip}) {
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

TEST_CASE("Pow by a constant exponent: std::pow's values for double, in place, and integers") {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x = {0.0, -0.0, 1.0, -3.0, 0.3, 1e-200, 1e200, 5e-320, inf, -inf};
  for (float e : {1.0f, 2.0f, 3.0f, 4.0f, 0.5f, -1.0f, -0.5f, 2.5f}) {
    std::vector<double> y = x;
    unary<double>({UnaryOp::kPowConstant, static_cast<int64_t>(x.size()), e, 0}, y.data(),
                  y.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::pow(x[i], double{e});
      INFO(x[i] << "^" << e << ": std::pow " << want << ", got " << y[i]);
      if (std::isnan(want) || want == 0 || std::isinf(want)) {
        CHECK(std::isnan(y[i]) == std::isnan(want));
        if (!std::isnan(want)) CHECK((y[i] == want && std::signbit(y[i]) == std::signbit(want)));
      } else {
        CHECK(std::fabs(y[i] - want) <=
              2 * std::fabs(want) * std::numeric_limits<double>::epsilon());
      }
    }
  }
  SECTION("integers through double, as the binary kPow") {
    std::vector<int32_t> i = {-3, 0, 2, 5, 1 << 20}, y(5);
    unary<int32_t>({UnaryOp::kPowConstant, 5, 2, 0}, i.data(), y.data());
    CHECK(y == std::vector<int32_t>{9, 0, 4, 25, std::numeric_limits<int32_t>::max()});
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
    const int64_t strides[5] = {-dense[0], 2 * dense[1], 0, -dense[3], -dense[4]};
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
                ref[at++] =
                    x[(2 - i0) * dense[0] + 2 * i1 * dense[1] + (4 - i3) * dense[3] + (5 - i4)];
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

const DType kCastTypes[] = {DType::kF32,  DType::kF64, DType::kI8,  DType::kU8,  DType::kI16,
                            DType::kU16,  DType::kI32, DType::kI64, DType::kU32, DType::kU64,
                            DType::kBool, DType::kF16, DType::kBF16};

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
      std::vector<unsigned char> x(count * 8), y(count * 8, 0xcd), want(count * 8, 0xcd);
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
    CHECK(std::vector<int8_t>(i8, i8 + 5) == std::vector<int8_t>{2, -2, 0, 0, -128});
    CHECK(std::vector<uint8_t>(b, b + 5) == std::vector<uint8_t>{1, 1, 0, 1, 1});
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
    auto x = cgc::test::randomFloats(3 * 1 * 17, 800);
    std::vector<float> y(x.size()), logY(x.size());
    softmax({3, 1, 17, false}, x.data(), y.data());
    softmax({3, 1, 17, true}, x.data(), logY.data());
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(y[i] == 1.0f);
      CHECK(logY[i] == 0.0f);
    }
  }
}

TEST_CASE("write_sizes and range: the sizes and positions a --dim model computes at run time") {
  std::vector<int64_t> sizes(5, -1);
  write_sizes({3, {1, 0, 37, 99, 99, 99, 99, 99}}, sizes.data());
  CHECK(sizes == std::vector<int64_t>{1, 0, 37, -1, -1});  // count values, nothing past them
  const int64_t start = 37, delta = 2;
  std::vector<int64_t> y(4, -1);
  range<int64_t>({3}, &start, &delta, y.data());
  CHECK(y == std::vector<int64_t>{37, 39, 41, -1});
  const float fstart = 0.5f, fdelta = -0.25f;
  std::vector<float> f(3, 9.f);
  range<float>({2}, &fstart, &fdelta, f.data());
  CHECK(f == std::vector<float>{0.5f, 0.25f, 9.f});
  range<int64_t>({0}, &start, &delta, y.data());  // an empty range writes nothing
  CHECK(y[0] == 37);
}
