// Math kernels beyond the plain elementwise ones: Clip with bounds read at
// run time, Mod and BitShift on every integer and float type, IsNaN/IsInf,
// Hardmax, CumSum (axis read at run time), Det, LRN. These ops are rare in
// hot paths: the kernels are written for clarity and never read or write
// out of bounds, whatever the data.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

/// Clip whose bounds are tensors: y = min(max(x, *lo), *hi). A null bound
/// pointer takes the parameter's bound instead (infinite: that side open).
struct ClipParams {
  int64_t count;
  double lo;
  double hi;
  CGC_REFLECT(ClipParams, count, lo, hi)
};

/// In place (x == y) is allowed. Team-parallel.
template <typename T>
void clip(const ClipParams& p, const T* x, const T* lo, const T* hi, T* y,
          const Team& team = Team::serial());

/// Mod with broadcasting on elements of `dtype` (any integer type, float16,
/// float, double). fmod: the C fmod (the result has the dividend's sign);
/// otherwise the result has the divisor's sign (Python's %). An integer
/// divisor of zero gives 0.
struct ModParams {
  BroadcastParams bc;
  DType dtype;
  bool fmod;
  CGC_REFLECT(ModParams, bc, dtype, fmod)
};

void mod(const ModParams& p, const void* a, const void* b, void* y);

/// BitShift with broadcasting on unsigned integers of `dtype`; a shift by
/// the type's width or more gives 0.
struct BitShiftParams {
  BroadcastParams bc;
  DType dtype;
  bool left;
  CGC_REFLECT(BitShiftParams, bc, dtype, left)
};

void bit_shift(const BitShiftParams& p, const void* a, const void* b, void* y);

CGC_ENUM(ClassifyOp, kIsNaN, kIsInf)

/// IsNaN, IsInf (detect_positive / detect_negative) on float16, bfloat16,
/// float or double elements of `dtype`; y is bool (one byte each).
struct ClassifyParams {
  ClassifyOp op;
  DType dtype;
  int64_t count;
  bool detect_positive;
  bool detect_negative;
  CGC_REFLECT(ClassifyParams, op, dtype, count, detect_positive, detect_negative)
};

void classify(const ClassifyParams& p, const void* x, uint8_t* y);

/// Hardmax over the middle axis of [outer, axis, inner]: 1 at the first
/// maximum, 0 elsewhere.
struct HardmaxParams {
  int64_t outer, axis, inner;
  CGC_REFLECT(HardmaxParams, outer, axis, inner)
};

template <typename T>
void hardmax(const HardmaxParams& p, const T* x, T* y);

/// CumSum of a tensor of `shape` along the axis held by the `axis` tensor
/// (one int32 or int64 element, of axis_type; negative counts from the end),
/// read at run time. An axis out of range fails with kIndexOutOfRange (and
/// y is x).
struct CumSumParams {
  int32_t rank;
  PerDim<int64_t> shape;
  DType axis_type;
  bool exclusive;
  bool reverse;
  CGC_REFLECT(CumSumParams, rank, shape, axis_type, exclusive, reverse)
};

template <typename T>
Status cumsum(const CumSumParams& p, const T* x, const void* axis, T* y);

/// Determinants of `batch` n x n matrices (LU with partial pivoting, in
/// double).
struct DetParams {
  int64_t batch, n;
  CGC_REFLECT(DetParams, batch, n)
};

template <typename T>
void det(const DetParams& p, const T* x, T* y);

/// Local response normalisation across channels of [batch, channels, inner]:
/// y = x / (bias + alpha / size * sum of x^2 over the channels
/// c - floor((size-1)/2) .. c + ceil((size-1)/2))^beta.
struct LrnParams {
  int64_t batch, channels, inner, size;
  float alpha, beta, bias;
  CGC_REFLECT(LrnParams, batch, channels, inner, size, alpha, beta, bias)
};

void lrn(const LrnParams& p, const float* x, float* y);

}  // namespace cgc::rt
