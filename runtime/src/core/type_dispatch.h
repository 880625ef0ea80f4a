// Element-type dispatch for the kernels that take their element type as a
// parameter (DType) rather than as a template argument: the rare ops that
// must cover every ONNX type (Mod on uint16, IsNaN on float16, a scatter's
// reduction on int8) without an instance per type in the kernel table.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "cgc/float16.h"
#include "cgc/types.h"

namespace cgc::rt::detail {

/// Calls f(T{}) for the C++ type of an integer `dtype` (bool as uint8);
/// returns false for any other type.
template <typename F>
bool withIntegerType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kI8:
      f(int8_t{});
      return true;
    case DType::kU8:
    case DType::kBool:
      f(uint8_t{});
      return true;
    case DType::kI16:
      f(int16_t{});
      return true;
    case DType::kU16:
      f(uint16_t{});
      return true;
    case DType::kI32:
      f(int32_t{});
      return true;
    case DType::kU32:
      f(uint32_t{});
      return true;
    case DType::kI64:
      f(int64_t{});
      return true;
    case DType::kU64:
      f(uint64_t{});
      return true;
    default:
      return false;
  }
}

/// Calls f(T{}) for float and double and every integer type; float16 and
/// bfloat16 are not included (see loadDouble/storeDouble).
template <typename F>
bool withNativeType(DType dtype, F&& f) {
  if (dtype == DType::kF32) {
    f(float{});
    return true;
  }
  if (dtype == DType::kF64) {
    f(double{});
    return true;
  }
  return withIntegerType(dtype, f);
}

/// Element i of a tensor of `dtype`, as a double (int64 beyond 2^53 rounds).
inline double loadDouble(DType dtype, const void* data, int64_t i) {
  const auto* half = static_cast<const uint16_t*>(data);
  if (dtype == DType::kF16) return half_to_float(half[i]);
  if (dtype == DType::kBF16) return bfloat16_to_float(half[i]);
  double value = 0;
  withNativeType(dtype, [&](auto tag) {
    value = static_cast<double>(static_cast<const decltype(tag)*>(data)[i]);
  });
  return value;
}

/// Stores v as element i of `dtype`: floats round, integers truncate toward
/// zero and saturate (NaN gives 0).
inline void storeDouble(DType dtype, void* data, int64_t i, double v) {
  auto* half = static_cast<uint16_t*>(data);
  if (dtype == DType::kF16) {
    half[i] = float_to_half(static_cast<float>(v));
    return;
  }
  if (dtype == DType::kBF16) {
    half[i] = float_to_bfloat16(static_cast<float>(v));
    return;
  }
  withNativeType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T out;
    if constexpr (std::is_floating_point_v<T>) {
      out = static_cast<T>(v);
    } else {
      constexpr double kLo = static_cast<double>(std::numeric_limits<T>::min());
      constexpr double kHi = static_cast<double>(std::numeric_limits<T>::max());
      out = v != v     ? T(0)
            : v <= kLo ? std::numeric_limits<T>::min()
            : v >= kHi ? std::numeric_limits<T>::max()
                       : static_cast<T>(v);
    }
    static_cast<T*>(data)[i] = out;
  });
}

}  // namespace cgc::rt::detail
