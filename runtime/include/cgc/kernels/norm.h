// Normalisations, softmax and reductions.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

/// Inference BatchNormalization over NC(spatial) data. In place (x == y) is
/// allowed.
struct BatchNormParams {
  int64_t n, c, spatial;
  float epsilon;
  CGC_REFLECT(BatchNormParams, n, c, spatial, epsilon)
};

void batch_norm(const BatchNormParams& p, const float* x, const float* scale, const float* bias,
                const float* mean, const float* var, float* y, const Team& team = Team::serial());

/// Softmax over the middle axis of [outer, axis, inner]; log_softmax when log.
/// Team-parallel over outer (and blocks of inner).
struct SoftmaxParams {
  int64_t outer, axis, inner;
  bool log;
  CGC_REFLECT(SoftmaxParams, outer, axis, inner, log)
};

void softmax(const SoftmaxParams& p, const float* x, float* y, const Team& team = Team::serial());

/// InstanceNormalization over NC(spatial) data: every (n, c) plane is
/// normalised by its own mean and variance, then scaled and shifted per
/// channel.
struct InstanceNormParams {
  int64_t n, c, spatial;
  float epsilon;
  CGC_REFLECT(InstanceNormParams, n, c, spatial, epsilon)
};

void instance_norm(const InstanceNormParams& p, const float* x, const float* scale,
                   const float* bias, float* y);

/// LayerNormalization of x viewed as [outer, inner]: each row is normalised,
/// then y = normalised * scale + bias with scale and bias of `inner` values
/// (bias may be null). mean and inv_std_dev (outer values each) may be null.
struct LayerNormParams {
  int64_t outer, inner;
  float epsilon;
  CGC_REFLECT(LayerNormParams, outer, inner, epsilon)
};

void layer_norm(const LayerNormParams& p, const float* x, const float* scale, const float* bias,
                float* y, float* mean, float* inv_std_dev, const Team& team = Team::serial());

CGC_ENUM(ReduceOp, kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSumExp)

/// Reduction of x (shape `shape`) into y: element i of x accumulates into
/// y[sum_d index_d * out_strides[d]], where out_strides is 0 on reduced axes.
/// `reduced` is the number of x elements per y element (for Mean).
struct ReduceParams {
  ReduceOp op;
  int32_t rank;
  int64_t count;
  int64_t out_count;
  int64_t reduced;
  PerDim<int64_t> shape;
  PerDim<int64_t> out_strides;
  CGC_REFLECT(ReduceParams, op, rank, count, out_count, reduced, shape, out_strides)
};

template <typename T>
void reduce(const ReduceParams& p, const T* x, T* y);

/// ArgMax / ArgMin over the middle axis of [outer, axis, inner]; ties pick the
/// first index, or the last with select_last.
struct ArgParams {
  int64_t outer, axis, inner;
  bool max, select_last;
  CGC_REFLECT(ArgParams, outer, axis, inner, max, select_last)
};

void arg_reduce(const ArgParams& p, const float* x, int64_t* y);

}  // namespace cgc::rt
