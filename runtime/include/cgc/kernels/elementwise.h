// Elementwise kernels: unary and binary arithmetic, comparisons, Where and
// element type conversion.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

CGC_ENUM(UnaryOp, kRelu,
         kLeakyRelu,  // alpha
         kClip,       // alpha = min, beta = max
         kSigmoid, kTanh,
         kHardSigmoid,  // max(0, min(1, alpha * x + beta))
         kSqrt, kExp, kLog, kNeg, kAbs, kReciprocal, kFloor, kCeil, kIdentity, kErf, kSoftplus,
         kElu,  // alpha
         kSoftsign,
         kNot,  // logical not of a bool (stored as uint8)
         kCos, kSin, kTan, kAcos, kAsin, kAtan, kCosh, kSinh, kAcosh, kAsinh, kAtanh, kSign,
         kRound,            // half to even
         kSelu,             // alpha, beta = gamma
         kThresholdedRelu,  // x > alpha ? x : 0
         kShrink,           // alpha = lambd, beta = bias
         kPowConstant)      // x^alpha: Pow by a constant exponent (1, 2, 3, 4, 0.5, -1
                            // and -0.5 by multiplies, sqrt and division; others std::pow)

struct UnaryParams {
  UnaryOp op;
  int64_t count;
  float alpha;
  float beta;
  CGC_REFLECT(UnaryParams, op, count, alpha, beta)
};

/// y[i] = op(x[i]). In place (x == y) is allowed. Team-parallel.
template <typename T>
void unary(const UnaryParams& p, const T* x, T* y, const Team& team = Team::serial());

CGC_ENUM(BinaryOp, kAdd, kSub, kMul, kDiv, kPow, kMin, kMax,
         kPRelu,           // a < 0 ? b * a : a
         kAnd, kOr, kXor)  // on bools (uint8)

struct BinaryParams {
  BinaryOp op;
  BroadcastParams bc;
  CGC_REFLECT(BinaryParams, op, bc)
};

/// y = a op b with broadcasting. y may alias an operand of the output's size.
/// Team-parallel.
template <typename T>
void binary(const BinaryParams& p, const T* a, const T* b, T* y, const Team& team = Team::serial());

CGC_ENUM(CompareOp, kEqual, kGreater, kLess, kGreaterOrEqual, kLessOrEqual)

struct CompareParams {
  CompareOp op;
  BroadcastParams bc;
  CGC_REFLECT(CompareParams, op, bc)
};

/// y = a op b with broadcasting, as bools (one byte each, 0 or 1).
template <typename T>
void compare(const CompareParams& p, const T* a, const T* b, uint8_t* y);

/// Where: y = cond ? a : b, all three broadcast to `shape`. Elements are
/// moved as elem_bytes-byte words.
struct WhereParams {
  int32_t rank;
  int64_t count;
  int64_t elem_bytes;
  PerDim<int64_t> shape;
  PerDim<int64_t> cond_strides;
  PerDim<int64_t> a_strides;
  PerDim<int64_t> b_strides;
  CGC_REFLECT(WhereParams, rank, count, elem_bytes, shape, cond_strides, a_strides, b_strides)
};

void where(const WhereParams& p, const uint8_t* cond, const void* a, const void* b, void* y);

struct CastParams {
  DType from, to;
  int64_t count;
  CGC_REFLECT(CastParams, from, to, count)
};

/// Element type conversion (float to integer truncates toward zero, as C++;
/// float16 and bfloat16 go through float, cgc/float16.h).
void cast(const CastParams& p, const void* x, void* y);

}  // namespace cgc::rt
