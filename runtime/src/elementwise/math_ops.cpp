// Math kernels beyond the plain elementwise ones (cgc/kernels/math.h):
// Clip with run-time bounds, Mod, BitShift, IsNaN/IsInf, Hardmax, CumSum,
// Det and LRN. Written for clarity: these ops are rare in hot paths. Integer
// arithmetic never divides by zero or overflows a signed type (the data
// comes from the model), and an axis read at run time is checked.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cgc/kernels.h"
#include "core/type_dispatch.h"

namespace cgc::rt {
namespace {

/// f(i, ia, ib) for every output index i with the operands' offsets.
template <typename F>
void forEachBroadcastIndex(const BroadcastParams& p, F f) {
  int64_t index[kMaxRank] = {};
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < p.count; ++i) {
    f(i, ia, ib);
    for (int d = p.rank - 1; d >= 0; --d) {
      ia += p.a_strides[d];
      ib += p.b_strides[d];
      if (++index[d] < p.shape[d]) break;
      ia -= p.a_strides[d] * p.shape[d];
      ib -= p.b_strides[d] * p.shape[d];
      index[d] = 0;
    }
  }
}

template <typename T>
T integerMod(T a, T b, bool fmod) {
  if (b == T(0)) return T(0);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);  // MIN % -1 traps
    T r = static_cast<T>(a % b);
    if (!fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r = static_cast<T>(r + b);
    return r;
  } else {
    return static_cast<T>(a % b);
  }
}

/// The type integer sums run in: unsigned, so that they wrap.
template <typename T, bool = std::is_integral_v<T>>
struct WrappingType {
  using type = T;
};
template <typename T>
struct WrappingType<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
T floatMod(T a, T b, bool fmod) {
  T r = std::fmod(a, b);
  if (!fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
  return r;
}

}  // namespace

template <typename T>
void clip(const ClipParams& p, const T* x, const T* lo, const T* hi, T* y, const Team& team) {
  const Range r = team.split(p.count, 16);
  if constexpr (std::is_floating_point_v<T>) {
    const T l = lo ? *lo : static_cast<T>(p.lo), h = hi ? *hi : static_cast<T>(p.hi);
    for (int64_t i = r.begin; i < r.end; ++i) y[i] = std::min(std::max(x[i], l), h);
  } else {
    // A bound from the parameters may be infinite: that side stays open.
    constexpr T kMin = std::numeric_limits<T>::min(), kMax = std::numeric_limits<T>::max();
    const T l = lo ? *lo : p.lo <= static_cast<double>(kMin) ? kMin : static_cast<T>(p.lo);
    const T h = hi ? *hi : p.hi >= static_cast<double>(kMax) ? kMax : static_cast<T>(p.hi);
    for (int64_t i = r.begin; i < r.end; ++i) y[i] = std::min(std::max(x[i], l), h);
  }
}

void mod(const ModParams& p, const void* a, const void* b, void* y) {
  const bool integer = detail::withIntegerType(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto *u = static_cast<const T*>(a), *v = static_cast<const T*>(b);
    auto* out = static_cast<T*>(y);
    forEachBroadcastIndex(p.bc, [&](int64_t i, int64_t ia, int64_t ib) {
      out[i] = integerMod(u[ia], v[ib], p.fmod);
    });
  });
  if (integer) return;
  if (p.dtype == DType::kF64) {
    const auto *u = static_cast<const double*>(a), *v = static_cast<const double*>(b);
    auto* out = static_cast<double*>(y);
    forEachBroadcastIndex(
        p.bc, [&](int64_t i, int64_t ia, int64_t ib) { out[i] = floatMod(u[ia], v[ib], p.fmod); });
    return;
  }
  // float, float16 and bfloat16 in float.
  forEachBroadcastIndex(p.bc, [&](int64_t i, int64_t ia, int64_t ib) {
    const float u = static_cast<float>(detail::loadDouble(p.dtype, a, ia));
    const float v = static_cast<float>(detail::loadDouble(p.dtype, b, ib));
    detail::storeDouble(p.dtype, y, i, floatMod(u, v, p.fmod));
  });
}

void bit_shift(const BitShiftParams& p, const void* a, const void* b, void* y) {
  detail::withIntegerType(p.dtype, [&](auto tag) {
    using T = std::make_unsigned_t<decltype(tag)>;
    const auto *u = static_cast<const T*>(a), *v = static_cast<const T*>(b);
    auto* out = static_cast<T*>(y);
    constexpr uint64_t kBits = sizeof(T) * 8;
    forEachBroadcastIndex(p.bc, [&](int64_t i, int64_t ia, int64_t ib) {
      const uint64_t shift = static_cast<uint64_t>(v[ib]);
      const uint64_t value = static_cast<uint64_t>(u[ia]);
      out[i] = shift >= kBits ? T(0) : static_cast<T>(p.left ? value << shift : value >> shift);
    });
  });
}

void classify(const ClassifyParams& p, const void* x, uint8_t* y) {
  for (int64_t i = 0; i < p.count; ++i) {
    const double v = detail::loadDouble(p.dtype, x, i);
    if (p.op == ClassifyOp::kIsNaN)
      y[i] = std::isnan(v);
    else
      y[i] = std::isinf(v) && (v > 0 ? p.detect_positive : p.detect_negative);
  }
}

template <typename T>
void hardmax(const HardmaxParams& p, const T* x, T* y) {
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t i = 0; i < p.inner; ++i) {
      const int64_t base = o * p.axis * p.inner + i;
      int64_t best = 0;
      for (int64_t a = 0; a < p.axis; ++a) {
        y[base + a * p.inner] = T(0);
        if (x[base + a * p.inner] > x[base + best * p.inner]) best = a;
      }
      if (p.axis > 0) y[base + best * p.inner] = T(1);
    }
}

template <typename T>
Status cumsum(const CumSumParams& p, const T* x, const void* axisTensor, T* y) {
  int64_t count = 1;
  for (int d = 0; d < p.rank; ++d) count *= p.shape[d];
  int64_t axis = p.axis_type == DType::kI32 ? *static_cast<const int32_t*>(axisTensor)
                                            : *static_cast<const int64_t*>(axisTensor);
  if (axis < 0) axis += p.rank;
  if (axis < 0 || axis >= p.rank) {
    if (count > 0) std::memcpy(y, x, static_cast<size_t>(count) * sizeof(T));
    return Status::kIndexOutOfRange;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= p.shape[d];
  for (int64_t d = axis + 1; d < p.rank; ++d) inner *= p.shape[d];
  const int64_t len = p.shape[axis];
  // Integers wrap, as elementwise Add does, instead of overflowing.
  using Acc = typename WrappingType<T>::type;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      Acc sum = Acc(0);
      for (int64_t s = 0; s < len; ++s) {
        const int64_t a = p.reverse ? len - 1 - s : s;
        const int64_t at = (o * len + a) * inner + i;
        const Acc v = static_cast<Acc>(x[at]);
        if (!p.exclusive) sum = static_cast<Acc>(sum + v);
        y[at] = static_cast<T>(sum);
        if (p.exclusive) sum = static_cast<Acc>(sum + v);
      }
    }
  return Status::kOk;
}

template <typename T>
void det(const DetParams& p, const T* x, T* y) {
  const int64_t n = p.n;
  std::vector<double> m(static_cast<size_t>(n * n));
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t i = 0; i < n * n; ++i) m[i] = static_cast<double>(x[b * n * n + i]);
    double result = 1.0;
    for (int64_t c = 0; c < n && result != 0.0; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(m[r * n + c]) > std::fabs(m[pivot * n + c])) pivot = r;
      if (m[pivot * n + c] == 0.0) {
        result = 0.0;
        break;
      }
      if (pivot != c) {
        for (int64_t k = 0; k < n; ++k) std::swap(m[c * n + k], m[pivot * n + k]);
        result = -result;
      }
      result *= m[c * n + c];
      for (int64_t r = c + 1; r < n; ++r) {
        const double f = m[r * n + c] / m[c * n + c];
        for (int64_t k = c; k < n; ++k) m[r * n + k] -= f * m[c * n + k];
      }
    }
    y[b] = static_cast<T>(result);
  }
}

void lrn(const LrnParams& p, const float* x, float* y) {
  const int64_t before = (p.size - 1) / 2, after = p.size - 1 - before;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t c = 0; c < p.channels; ++c)
      for (int64_t i = 0; i < p.inner; ++i) {
        double sum = 0;
        const int64_t first = std::max<int64_t>(0, c - before);
        const int64_t last = std::min<int64_t>(p.channels - 1, c + after);
        for (int64_t k = first; k <= last; ++k) {
          const double v = x[(b * p.channels + k) * p.inner + i];
          sum += v * v;
        }
        const int64_t at = (b * p.channels + c) * p.inner + i;
        const double scale = p.bias + p.alpha / static_cast<double>(p.size) * sum;
        y[at] = static_cast<float>(x[at] / std::pow(scale, static_cast<double>(p.beta)));
      }
}

#define CGC_INSTANTIATE(T)                                                                 \
  template void clip<T>(const ClipParams&, const T*, const T*, const T*, T*, const Team&); \
  template Status cumsum<T>(const CumSumParams&, const T*, const void*, T*);
CGC_INSTANTIATE(float)
CGC_INSTANTIATE(double)
CGC_INSTANTIATE(int32_t)
CGC_INSTANTIATE(int64_t)
CGC_INSTANTIATE(int8_t)
CGC_INSTANTIATE(uint8_t)
#undef CGC_INSTANTIATE

template void hardmax<float>(const HardmaxParams&, const float*, float*);
template void hardmax<double>(const HardmaxParams&, const double*, double*);
template void det<float>(const DetParams&, const float*, float*);
template void det<double>(const DetParams&, const double*, double*);

}  // namespace cgc::rt
