// Matrix products: Gemm and batched MatMul, with fused epilogues.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

/// Y[m, n] = act(alpha * op(A) op(B) + beta * C), op = transpose when asked.
/// A is [m, k] ([k, m] when trans_a), B is [k, n] ([n, k] when trans_b). C may
/// be null; otherwise C[i, j] is read at i * c_stride_m + j * c_stride_n
/// (strides of 0 broadcast).
struct GemmParams {
  int64_t m, n, k;
  bool trans_a, trans_b;
  float alpha, beta;
  int64_t c_stride_m, c_stride_n;
  Activation activation = Activation::kNone;
  float act_min = 0.0f, act_max = 0.0f;
  CGC_REFLECT(GemmParams, m, n, k, trans_a, trans_b, alpha, beta, c_stride_m, c_stride_n,
              activation, act_min, act_max)
};

/// Team split of the output: see detail::splitOutput in gemm_core.h.
void gemm(const GemmParams& p, const float* a, const float* b, const float* c, float* y,
          const Team& team = Team::serial());

/// Batched MatMul with broadcast batch dimensions: for every batch index,
/// Y[m, n] = act(A[m, k] B[k, n] + bias[n]). Batch strides are in elements
/// (0 broadcasts).
struct MatMulParams {
  int32_t batch_rank;
  PerDim<int64_t> batch_shape;
  PerDim<int64_t> a_batch_strides;
  PerDim<int64_t> b_batch_strides;
  int64_t m, n, k;
  Activation activation = Activation::kNone;
  float act_min = 0.0f, act_max = 0.0f;
  CGC_REFLECT(MatMulParams, batch_rank, batch_shape, a_batch_strides, b_batch_strides, m, n, k,
              activation, act_min, act_max)
};

/// bias ([n]) may be null. float: splits batches over the team when there
/// are at least as many as threads, otherwise each batch's output; double:
/// plain loops on the team's first thread.
template <typename T>
void matmul(const MatMulParams& p, const T* a, const T* b, const T* bias, T* y,
            const Team& team = Team::serial());

}  // namespace cgc::rt
