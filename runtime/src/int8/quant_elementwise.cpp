// The elementwise and pooling int8 kernels: QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, the quantised Add, table
// lookups, int8 max pooling and the requantising global average pool.
// Plain loops the compiler vectorises, and AVX-512 forms of the lookup and
// the 3x3 max pool (quant_elementwise_skx.cpp, quant_elementwise_vbmi.cpp)
// where the build has them; built with -ffp-contract=off, so every float
// step rounds as ONNX's definition (and the float emulation the fusion
// replaces) does.
#include "int8/quant_elementwise.h"

#include <limits>
#include <type_traits>
#include <vector>

#include "cgc/kernels.h"
#include "core/build_tier.h"
#include "int8/quant_support.h"

namespace cgc::rt {
namespace {

using detail::qmax;
using detail::qmin;

template <typename Q>
void quantizeRun(const float* x, int64_t count, float scale, int32_t zero, Q* y) {
  constexpr float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  const float below = lo - static_cast<float>(zero), above = hi - static_cast<float>(zero);
  for (int64_t i = 0; i < count; ++i) {
    const float v = detail::clampToRange(x[i] / scale, below, above);
    y[i] = static_cast<Q>(static_cast<int32_t>(std::nearbyint(v)) + zero);
  }
}

template <typename Q>
void dequantizeRun(const Q* x, int64_t count, float scale, int32_t zero, float* y) {
  for (int64_t i = 0; i < count; ++i)
    y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zero) * scale;
}

/// Calls f(begin, end, axis index) for this thread's runs of one scale.
template <typename F>
void forEachRun(const QuantizeParams& p, const Team& team, F f) {
  if (!p.per_axis) {
    const Range r = team.split(p.outer * p.axis_size * p.inner, 64);
    if (r.size() > 0) f(r.begin, r.end, int64_t{0});
    return;
  }
  const Range rows = team.split(p.outer * p.axis_size);
  for (int64_t row = rows.begin; row < rows.end; ++row)
    f(row * p.inner, (row + 1) * p.inner, row % p.axis_size);
}

template <typename Q>
void maxPoolPlane(const PoolParams& p, const Q* x, Q* y) {
  for (int64_t oy = 0; oy < p.h_out; ++oy)
    for (int64_t ox = 0; ox < p.w_out; ++ox) {
      Q best = std::numeric_limits<Q>::min();
      for (int64_t kh = 0; kh < p.k_h; ++kh) {
        const int64_t iy = oy * p.stride_h - p.pad_top + kh * p.dilation_h;
        if (iy < 0 || iy >= p.h_in) continue;
        for (int64_t kw = 0; kw < p.k_w; ++kw) {
          const int64_t ix = ox * p.stride_w - p.pad_left + kw * p.dilation_w;
          if (ix >= 0 && ix < p.w_in) best = std::max(best, x[iy * p.w_in + ix]);
        }
      }
      y[oy * p.w_out + ox] = best;
    }
}

/// out[ox] = the max of row[ox * kStride + 0, ..., kTaps - 1]: a stride
/// and window the compiler knows, so that it vectorises the strided reads
/// (ResNet-18's 3x3 stride-2 pool on 64 planes of 112x112 runs several
/// times faster).
template <int kTaps, int kStride, typename Q>
void columnMax(const Q* __restrict row, int64_t count, Q* __restrict out) {
  for (int64_t ox = 0; ox < count; ++ox) {
    const Q* w = row + ox * kStride;
    Q m = w[0];
    for (int t = 1; t < kTaps; ++t) m = std::max(m, w[t]);
    out[ox] = m;
  }
}

/// kTaps x kTaps windows (2x2 or 3x3, dilation 1): the max of the rows
/// first (contiguous, vectorised), then of kTaps columns of that row at
/// the stride.
template <int kTaps, typename Q>
void maxPoolRowsPlane(const PoolParams& p, const Q* x, Q* y, Q* rowMax) {
  const Q lowest = std::numeric_limits<Q>::min();
  // rowMax[j] is input column j - pad_left.
  const int64_t width = (p.w_out - 1) * p.stride_w + kTaps;
  for (int64_t oy = 0; oy < p.h_out; ++oy) {
    std::fill(rowMax, rowMax + width, lowest);
    for (int64_t kh = 0; kh < kTaps; ++kh) {
      const int64_t iy = oy * p.stride_h - p.pad_top + kh;
      if (iy < 0 || iy >= p.h_in) continue;
      const Q* row = x + iy * p.w_in;
      const int64_t first = std::max<int64_t>(0, p.pad_left);
      const int64_t last = std::min<int64_t>(width, p.w_in + p.pad_left);
      for (int64_t j = first; j < last; ++j) rowMax[j] = std::max(rowMax[j], row[j - p.pad_left]);
    }
    Q* out = y + oy * p.w_out;
    if (p.stride_w == 2)
      columnMax<kTaps, 2>(rowMax, p.w_out, out);
    else if (p.stride_w == 1)
      columnMax<kTaps, 1>(rowMax, p.w_out, out);
    else
      for (int64_t ox = 0; ox < p.w_out; ++ox) {
        const Q* w = rowMax + ox * p.stride_w;
        out[ox] = *std::max_element(w, w + kTaps);
      }
  }
}

}  // namespace

void quantize_linear(const QuantizeParams& p, const float* x, const float* scale,
                     const void* zero_point, void* y, const Team& team) {
  forEachRun(p, team, [&](int64_t begin, int64_t end, int64_t axis) {
    const int32_t zero = detail::zeroPoint(zero_point, p.type, axis);
    if (p.type == DType::kI8)
      quantizeRun(x + begin, end - begin, scale[axis], zero, static_cast<int8_t*>(y) + begin);
    else
      quantizeRun(x + begin, end - begin, scale[axis], zero, static_cast<uint8_t*>(y) + begin);
  });
}

void dequantize_linear(const QuantizeParams& p, const void* x, const float* scale,
                       const void* zero_point, float* y, const Team& team) {
  forEachRun(p, team, [&](int64_t begin, int64_t end, int64_t axis) {
    const int32_t zero = detail::zeroPoint(zero_point, p.type, axis);
    const int64_t count = end - begin;
    if (p.type == DType::kI8)
      dequantizeRun(static_cast<const int8_t*>(x) + begin, count, scale[axis], zero, y + begin);
    else if (p.type == DType::kU8)
      dequantizeRun(static_cast<const uint8_t*>(x) + begin, count, scale[axis], zero, y + begin);
    else
      dequantizeRun(static_cast<const int32_t*>(x) + begin, count, scale[axis], zero, y + begin);
  });
}

void dynamic_quantize_linear(const DynamicQuantizeParams& p, const float* x, uint8_t* y,
                             float* y_scale, uint8_t* y_zero_point) {
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < p.count; ++i) {
    lo = std::fmin(lo, x[i]);
    hi = std::fmax(hi, x[i]);
  }
  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float initial = 0.0f - lo / scale;
  const int32_t zero =
      static_cast<int32_t>(std::nearbyint(std::fmin(std::fmax(initial, 0.0f), 255.0f)));
  *y_scale = scale;
  *y_zero_point = static_cast<uint8_t>(zero);
  quantizeRun(x, p.count, scale, zero, y);
}

void qadd(const QAddParams& p, const void* a, const void* b, void* y, const Team& team) {
  const Range r = team.split(p.count, 64);
  for (int64_t i = r.begin; i < r.end; ++i) {
    const float fa = static_cast<float>(detail::loadQ(a, i, p.a_signed) - p.a_zero) * p.a_scale;
    const float fb = static_cast<float>(detail::loadQ(b, i, p.b_signed) - p.b_zero) * p.b_scale;
    detail::storeQ(y, i, p.y_type,
                   detail::roundClamp((fa + fb) / p.y_scale, p.y_zero, p.y_min, p.y_max));
  }
}

void qlookup(const QLookupParams& p, const void* x, const uint8_t* table, void* y,
             const Team& team) {
  const Range r = team.split(p.count, 256);
  const auto* in = static_cast<const uint8_t*>(x);
  auto* out = static_cast<uint8_t*>(y);
  if constexpr (detail::buildHasTier("skx"))
    detail::lookupBytesSkx(table, in + r.begin, out + r.begin, r.end - r.begin);
  else
    for (int64_t i = r.begin; i < r.end; ++i) out[i] = table[in[i]];
}

template <typename T>
void max_pool_int8(const PoolParams& p, const T* x, T* y, const Team& team) {
  const Range planes = team.split(p.n_c);
  const bool square =
      p.d_in == 1 && p.k_d == 1 && p.k_h == p.k_w && p.dilation_h == 1 && p.dilation_w == 1;
  const bool small3x3 = square && p.k_h == 3, small2x2 = square && p.k_h == 2;
  // The vector form reads whole vectors past the row's end (a tail of 63,
  // and 66 + 63 at stride 2).
  std::vector<T> rowMax(small3x3 || small2x2 ? static_cast<size_t>(p.w_out * p.stride_w + 2 + 192)
                                             : 0);
  const int64_t inPlane = p.d_in * p.h_in * p.w_in, outPlane = p.d_out * p.h_out * p.w_out;
  for (int64_t c = planes.begin; c < planes.end; ++c) {
    if constexpr (detail::buildHasTier("skx"))
      if (small3x3 && p.stride_w <= 2) {
        if constexpr (detail::buildHasTier("vbmi"))
          detail::maxPool3x3Vbmi(p, x + c * inPlane, y + c * outPlane, rowMax.data());
        else
          detail::maxPool3x3Skx(p, x + c * inPlane, y + c * outPlane, rowMax.data());
        continue;
      }
    if constexpr (detail::buildHasTier("skx"))
      if (small2x2 && p.stride_w <= 2) {
        detail::maxPool2x2Skx(p, x + c * inPlane, y + c * outPlane, rowMax.data());
        continue;
      }
    if (small3x3)
      maxPoolRowsPlane<3>(p, x + c * inPlane, y + c * outPlane, rowMax.data());
    else if (small2x2)
      maxPoolRowsPlane<2>(p, x + c * inPlane, y + c * outPlane, rowMax.data());
    else
      maxPoolPlane(p, x + c * inPlane, y + c * outPlane);
  }
}

template void max_pool_int8<int8_t>(const PoolParams&, const int8_t*, int8_t*, const Team&);
template void max_pool_int8<uint8_t>(const PoolParams&, const uint8_t*, uint8_t*, const Team&);

void qglobal_avg_pool(const QGlobalPoolParams& p, const void* x, void* y, const Team& team) {
  const Range planes = team.split(p.n_c);
  const float scale = p.x_scale / (static_cast<float>(p.spatial) * p.y_scale);
  for (int64_t c = planes.begin; c < planes.end; ++c) {
    int32_t sum = 0;
    for (int64_t i = 0; i < p.spatial; ++i) sum += detail::loadQ(x, c * p.spatial + i, p.x_signed);
    const int32_t centred = sum - static_cast<int32_t>(p.spatial) * p.x_zero;
    detail::storeQ(y, c, p.y_type,
                   detail::roundClamp(static_cast<float>(centred) * scale, p.y_zero, qmin(p.y_type),
                                      qmax(p.y_type)));
  }
}

}  // namespace cgc::rt
