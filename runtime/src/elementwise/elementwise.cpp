// Elementwise kernels: unary math and activations, binary arithmetic with
// broadcasting (dense, scalar and general strided paths). Unary and binary
// split the output over the team in 64-byte-aligned chunks (no two threads
// write one cache line); the loops are plain so that they vectorise, and
// float sigmoid/tanh/exp/erf use the branch-free versions in fast_math.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cgc/kernels.h"
#include "core/fast_math.h"

namespace cgc::rt {
namespace {

template <typename T, typename F>
void map(int64_t n, const T* x, T* y, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

/// Integer results of math done in double truncate and saturate to T's
/// range (NaN gives 0): a plain cast of an out-of-range double is undefined.
template <typename T>
T fromDouble(double v) {
  if constexpr (std::is_integral_v<T>) {
    constexpr double kLo = static_cast<double>(std::numeric_limits<T>::min());
    constexpr double kHi = static_cast<double>(std::numeric_limits<T>::max());
    if (std::isnan(v)) return T(0);
    if (v <= kLo) return std::numeric_limits<T>::min();
    if (v >= kHi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

/// Integer arithmetic wraps modulo 2^bits, as ONNX runtimes do, instead of
/// being undefined on signed overflow; floating point passes through.
template <typename T, typename F>
T wrapping(T u, T v, F f) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<std::common_type_t<T, int>>;
    return static_cast<T>(f(static_cast<U>(u), static_cast<U>(v)));
  } else {
    return f(u, v);
  }
}

/// Elements per 64-byte cache line: the grain of a team split.
template <typename T>
constexpr int64_t kLine = std::max<int64_t>(1, 64 / sizeof(T));

/// y[i] = f(a[i * as], b[i * bs]) for i < n, with the stride-1 and
/// stride-0 cases spelled out so that each one vectorises.
template <typename T, typename Out, typename F>
void row(int64_t n, const T* a, int64_t as, const T* b, int64_t bs, Out* y, F f) {
  if (as == 1 && bs == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
  } else if (as == 1 && bs == 0) {
    const T v = b[0];
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], v);
  } else if (as == 0 && bs == 1) {
    const T u = a[0];
    for (int64_t i = 0; i < n; ++i) y[i] = f(u, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i * as], b[i * bs]);
  }
}

template <typename T, typename Out, typename F>
void forEachBroadcast(const BroadcastParams& p, const T* a, const T* b, Out* y, F f,
                      const Team& team = Team::serial()) {
  const int rank = p.rank;
  if (rank == 0) {
    if (team.thread() == 0) y[0] = f(a[0], b[0]);
    return;
  }
  bool aDense = true, bDense = true, aScalar = true, bScalar = true;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (p.shape[d] != 1) {
      aDense &= p.a_strides[d] == stride;
      bDense &= p.b_strides[d] == stride;
      aScalar &= p.a_strides[d] == 0;
      bScalar &= p.b_strides[d] == 0;
    }
    stride *= p.shape[d];
  }
  const int64_t n = p.count;
  if ((aDense || aScalar) && (bDense || bScalar)) {
    Range r = team.split(n, kLine<Out>);
    row(r.size(), aDense ? a + r.begin : a, aDense ? 1 : 0, bDense ? b + r.begin : b,
        bDense ? 1 : 0, y + r.begin, f);
    return;
  }
  // General case: odometer over the outer dims, tight loop over the last;
  // the team splits the outer rows.
  const int64_t inner = p.shape[rank - 1];
  if (n == 0) return;
  const int64_t as = p.a_strides[rank - 1], bs = p.b_strides[rank - 1];
  const int64_t rows = n / inner;
  Range r = team.split(rows, std::max<int64_t>(1, kLine<Out> / inner));
  int64_t index[kMaxRank] = {};
  int64_t aOff = 0, bOff = 0;
  for (int64_t rest = r.begin, d = rank - 2; d >= 0; --d) {
    index[d] = rest % p.shape[d];
    rest /= p.shape[d];
    aOff += index[d] * p.a_strides[d];
    bOff += index[d] * p.b_strides[d];
  }
  for (int64_t out = r.begin * inner; out < r.end * inner; out += inner) {
    row(inner, a + aOff, as, b + bOff, bs, y + out, f);
    for (int d = rank - 2; d >= 0; --d) {
      ++index[d];
      aOff += p.a_strides[d];
      bOff += p.b_strides[d];
      if (index[d] < p.shape[d]) break;
      aOff -= p.a_strides[d] * p.shape[d];
      bOff -= p.b_strides[d] * p.shape[d];
      index[d] = 0;
    }
  }
}

/// Pow by a constant exponent e (UnaryOp::kPowConstant). The exponents
/// models use run as multiplies, sqrt and division instead of std::pow (an
/// order of magnitude slower, and not vectorised); each gives std::pow's
/// value within an ulp or two (exactly for 1, 2, 0.5 and -1) and its special
/// cases: x^0.5 is NaN for x < 0, +0 for -0 and +inf for -inf. Integers go
/// through double, as the binary kPow does.
template <typename T>
void powConstant(int64_t n, const T* x, T* y, float e) {
  if constexpr (!std::is_floating_point_v<T>) {
    map(n, x, y, [e](T v) { return fromDouble<T>(std::pow(static_cast<double>(v), double{e})); });
  } else {
    constexpr T kInf = std::numeric_limits<T>::infinity();
    // + 0 turns -0 into +0; sqrt(-inf) is NaN where pow gives +inf.
    auto root = [](T v) { return v == -kInf ? kInf : std::sqrt(v + T(0)); };
    if (e == 1)
      map(n, x, y, [](T v) { return v; });
    else if (e == 2)
      map(n, x, y, [](T v) { return v * v; });
    else if (e == 3)
      map(n, x, y, [](T v) { return v * v * v; });
    else if (e == 4)
      map(n, x, y, [](T v) { return (v * v) * (v * v); });
    else if (e == 0.5f)
      map(n, x, y, root);
    else if (e == -1)
      map(n, x, y, [](T v) { return T(1) / v; });
    else if (e == -0.5f)
      map(n, x, y, [&](T v) { return T(1) / root(v); });
    else
      map(n, x, y, [e](T v) { return std::pow(v, static_cast<T>(e)); });
  }
}

/// The trigonometric and hyperbolic functions, Sign, Round and the rarer
/// activations: computed in double, then stored as T.
template <typename T>
void unaryMath(UnaryOp op, int64_t n, const T* x, T* y, double alpha, double beta) {
  auto viaDouble = [&](auto f) {
    map(n, x, y, [&](T v) { return fromDouble<T>(f(static_cast<double>(v))); });
  };
  switch (op) {
    case UnaryOp::kCos:
      viaDouble([](double v) { return std::cos(v); });
      break;
    case UnaryOp::kSin:
      viaDouble([](double v) { return std::sin(v); });
      break;
    case UnaryOp::kTan:
      viaDouble([](double v) { return std::tan(v); });
      break;
    case UnaryOp::kAcos:
      viaDouble([](double v) { return std::acos(v); });
      break;
    case UnaryOp::kAsin:
      viaDouble([](double v) { return std::asin(v); });
      break;
    case UnaryOp::kAtan:
      viaDouble([](double v) { return std::atan(v); });
      break;
    case UnaryOp::kCosh:
      viaDouble([](double v) { return std::cosh(v); });
      break;
    case UnaryOp::kSinh:
      viaDouble([](double v) { return std::sinh(v); });
      break;
    case UnaryOp::kAcosh:
      viaDouble([](double v) { return std::acosh(v); });
      break;
    case UnaryOp::kAsinh:
      viaDouble([](double v) { return std::asinh(v); });
      break;
    case UnaryOp::kAtanh:
      viaDouble([](double v) { return std::atanh(v); });
      break;
    case UnaryOp::kSign:
      map(n, x, y, [](T v) { return static_cast<T>(v > T(0) ? 1 : v < T(0) ? -1 : 0); });
      break;
    case UnaryOp::kRound:
      // The default rounding mode rounds half to even, as ONNX asks.
      viaDouble([](double v) { return std::nearbyint(v); });
      break;
    case UnaryOp::kSelu:
      viaDouble([&](double v) { return beta * (v > 0 ? v : alpha * std::expm1(v)); });
      break;
    case UnaryOp::kThresholdedRelu:
      viaDouble([&](double v) { return v > alpha ? v : 0.0; });
      break;
    case UnaryOp::kShrink:
      viaDouble([&](double v) { return v < -alpha ? v + beta : v > alpha ? v - beta : 0.0; });
      break;
    default:
      break;
  }
}

}  // namespace

template <typename T>
void unary(const UnaryParams& p, const T* x, T* y, const Team& team) {
  const Range range = team.split(p.count, kLine<T>);
  const int64_t n = range.size();
  x += range.begin;
  y += range.begin;
  const double alpha = p.alpha, beta = p.beta;
  auto viaDouble = [&](auto f) {
    map(n, x, y, [&](T v) { return fromDouble<T>(f(static_cast<double>(v))); });
  };
  switch (p.op) {
    case UnaryOp::kRelu:
      map(n, x, y, [](T v) { return v > T(0) ? v : T(0); });
      break;
    case UnaryOp::kLeakyRelu:
      if constexpr (std::is_floating_point_v<T>)
        map(n, x, y, [&](T v) { return v >= T(0) ? v : static_cast<T>(alpha) * v; });
      else
        viaDouble([&](double v) { return v >= 0 ? v : alpha * v; });
      break;
    case UnaryOp::kClip: {
      // Bounds outside T's range (infinities) leave that side unbounded.
      if constexpr (std::is_floating_point_v<T>) {
        const T lo = static_cast<T>(p.alpha), hi = static_cast<T>(p.beta);
        map(n, x, y, [&](T v) { return std::min(std::max(v, lo), hi); });
      } else {
        // Compared in double (the bounds may be infinite), but values inside
        // are passed through so that int64 beyond 2^53 stays exact.
        const T lo = fromDouble<T>(alpha), hi = fromDouble<T>(beta);
        map(n, x, y, [&](T v) {
          const double d = static_cast<double>(v);
          return d < alpha ? lo : d > beta ? hi : v;
        });
      }
      break;
    }
    case UnaryOp::kSigmoid:
      if constexpr (std::is_same_v<T, float>)
        map(n, x, y, [](float v) { return detail::fastSigmoid(v); });
      else
        viaDouble([](double v) { return 1.0 / (1.0 + std::exp(-v)); });
      break;
    case UnaryOp::kTanh:
      if constexpr (std::is_same_v<T, float>)
        map(n, x, y, [](float v) { return detail::fastTanh(v); });
      else
        viaDouble([](double v) { return std::tanh(v); });
      break;
    case UnaryOp::kHardSigmoid:
      if constexpr (std::is_same_v<T, float>) {
        const float a = p.alpha, b = p.beta;
        map(n, x, y, [&](float v) { return std::max(0.0f, std::min(1.0f, a * v + b)); });
      } else {
        viaDouble([&](double v) { return std::max(0.0, std::min(1.0, alpha * v + beta)); });
      }
      break;
    case UnaryOp::kSqrt:
      if constexpr (std::is_same_v<T, float>)
        map(n, x, y, [](float v) { return std::sqrt(v); });
      else
        viaDouble([](double v) { return std::sqrt(v); });
      break;
    case UnaryOp::kExp:
      if constexpr (std::is_same_v<T, float>)
        map(n, x, y, [](float v) { return detail::fastExp(v); });
      else
        viaDouble([](double v) { return std::exp(v); });
      break;
    case UnaryOp::kLog:
      if constexpr (std::is_same_v<T, float>)
        map(n, x, y, [](float v) { return std::log(v); });
      else
        viaDouble([](double v) { return std::log(v); });
      break;
    case UnaryOp::kNeg:
      map(n, x, y, [](T v) { return wrapping(T(0), v, [](auto u, auto w) { return u - w; }); });
      break;
    case UnaryOp::kAbs:
      map(n, x, y, [](T v) {
        const auto minus = [](auto u, auto w) { return u - w; };
        return v < T(0) ? wrapping(T(0), v, minus) : v;
      });
      break;
    case UnaryOp::kReciprocal:
      viaDouble([](double v) { return 1.0 / v; });
      break;
    case UnaryOp::kFloor:
      viaDouble([](double v) { return std::floor(v); });
      break;
    case UnaryOp::kCeil:
      viaDouble([](double v) { return std::ceil(v); });
      break;
    case UnaryOp::kIdentity:
      map(n, x, y, [](T v) { return v; });
      break;
    case UnaryOp::kErf:
      if constexpr (std::is_same_v<T, float>)
        map(n, x, y, [](float v) { return detail::fastErf(v); });
      else
        viaDouble([](double v) { return std::erf(v); });
      break;
    case UnaryOp::kSoftplus:
      viaDouble([](double v) { return v > 30 ? v : std::log1p(std::exp(v)); });
      break;
    case UnaryOp::kElu:
      viaDouble([&](double v) { return v >= 0 ? v : alpha * std::expm1(v); });
      break;
    case UnaryOp::kSoftsign:
      viaDouble([](double v) { return v / (1.0 + std::fabs(v)); });
      break;
    case UnaryOp::kNot:
      map(n, x, y, [](T v) { return static_cast<T>(v == T(0)); });
      break;
    case UnaryOp::kPowConstant:
      powConstant(n, x, y, p.alpha);
      break;
    default:
      unaryMath(p.op, n, x, y, alpha, beta);
  }
}

template <typename T>
void binary(const BinaryParams& p, const T* a, const T* b, T* y, const Team& team) {
  // Every case below passes `team` as forEachBroadcast's last argument.
  auto forEachBroadcast = [&](const BroadcastParams& bc, const T* u, const T* v, T* out, auto f) {
    cgc::rt::forEachBroadcast(bc, u, v, out, f, team);
  };
  switch (p.op) {
    case BinaryOp::kAdd:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) {
        return wrapping(u, v, [](auto s, auto t) { return s + t; });
      });
      break;
    case BinaryOp::kSub:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) {
        return wrapping(u, v, [](auto s, auto t) { return s - t; });
      });
      break;
    case BinaryOp::kMul:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) {
        return wrapping(u, v, [](auto s, auto t) { return s * t; });
      });
      break;
    case BinaryOp::kDiv:
      // Integer division by zero gives 0 and MIN / -1 wraps to MIN: both
      // trap in hardware, and a model's data must not crash the process.
      if constexpr (std::is_integral_v<T>)
        forEachBroadcast(p.bc, a, b, y, [](T u, T v) {
          if (v == T(0)) return T(0);
          if (std::is_signed_v<T> && v == T(-1))
            return wrapping(T(0), u, [](auto s, auto t) { return s - t; });
          return static_cast<T>(u / v);
        });
      else
        forEachBroadcast(p.bc, a, b, y, [](T u, T v) { return u / v; });
      break;
    case BinaryOp::kMin:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) {
        if constexpr (std::is_floating_point_v<T>)
          if (std::isnan(u) || std::isnan(v)) return std::numeric_limits<T>::quiet_NaN();
        return std::min(u, v);
      });
      break;
    case BinaryOp::kMax:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) {
        if constexpr (std::is_floating_point_v<T>)
          if (std::isnan(u) || std::isnan(v)) return std::numeric_limits<T>::quiet_NaN();
        return std::max(u, v);
      });
      break;
    case BinaryOp::kPRelu:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) {
        return u < T(0) ? wrapping(u, v, [](auto s, auto t) { return s * t; }) : u;
      });
      break;
    case BinaryOp::kAnd:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) { return T(u != T(0) && v != T(0)); });
      break;
    case BinaryOp::kOr:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) { return T(u != T(0) || v != T(0)); });
      break;
    case BinaryOp::kXor:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) { return T((u != T(0)) != (v != T(0))); });
      break;
    case BinaryOp::kPow:
      if constexpr (std::is_same_v<T, float>)
        forEachBroadcast(p.bc, a, b, y, [](float u, float v) { return std::pow(u, v); });
      else
        forEachBroadcast(p.bc, a, b, y, [](T u, T v) {
          return fromDouble<T>(std::pow(static_cast<double>(u), static_cast<double>(v)));
        });
      break;
  }
}

template <typename T>
void compare(const CompareParams& p, const T* a, const T* b, uint8_t* y) {
  switch (p.op) {
    case CompareOp::kEqual:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) { return uint8_t(u == v); });
      break;
    case CompareOp::kGreater:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) { return uint8_t(u > v); });
      break;
    case CompareOp::kLess:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) { return uint8_t(u < v); });
      break;
    case CompareOp::kGreaterOrEqual:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) { return uint8_t(u >= v); });
      break;
    case CompareOp::kLessOrEqual:
      forEachBroadcast(p.bc, a, b, y, [](T u, T v) { return uint8_t(u <= v); });
      break;
  }
}

namespace {

template <typename W>
void whereWords(const WhereParams& p, const uint8_t* cond, const W* a, const W* b, W* y) {
  int64_t index[kMaxRank] = {};
  int64_t c = 0, ia = 0, ib = 0;
  for (int64_t i = 0; i < p.count; ++i) {
    y[i] = cond[c] ? a[ia] : b[ib];
    for (int d = p.rank - 1; d >= 0; --d) {
      c += p.cond_strides[d];
      ia += p.a_strides[d];
      ib += p.b_strides[d];
      if (++index[d] < p.shape[d]) break;
      c -= p.cond_strides[d] * p.shape[d];
      ia -= p.a_strides[d] * p.shape[d];
      ib -= p.b_strides[d] * p.shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace

void where(const WhereParams& p, const uint8_t* cond, const void* a, const void* b, void* y) {
  switch (p.elem_bytes) {
    case 1:
      whereWords(p, cond, static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b),
                 static_cast<uint8_t*>(y));
      break;
    case 2:
      whereWords(p, cond, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b),
                 static_cast<uint16_t*>(y));
      break;
    case 4:
      whereWords(p, cond, static_cast<const uint32_t*>(a), static_cast<const uint32_t*>(b),
                 static_cast<uint32_t*>(y));
      break;
    case 8:
      whereWords(p, cond, static_cast<const uint64_t*>(a), static_cast<const uint64_t*>(b),
                 static_cast<uint64_t*>(y));
      break;
    default:
      break;
  }
}

#define CGC_INSTANTIATE(T)                                                           \
  template void unary<T>(const UnaryParams&, const T*, T*, const Team&);             \
  template void binary<T>(const BinaryParams&, const T*, const T*, T*, const Team&); \
  template void compare<T>(const CompareParams&, const T*, const T*, uint8_t*);
CGC_INSTANTIATE(float)
CGC_INSTANTIATE(double)
CGC_INSTANTIATE(int32_t)
CGC_INSTANTIATE(int64_t)
CGC_INSTANTIATE(int8_t)
CGC_INSTANTIATE(uint8_t)
#undef CGC_INSTANTIATE

}  // namespace cgc::rt
