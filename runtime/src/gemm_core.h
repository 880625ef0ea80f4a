// The packed single-precision GEMM core shared by gemm, matmul and the
// convolutions: Y[m, n] (+)= op(A) op(B) with operands given by strides.
#pragma once

#include <cstdint>

namespace cgc::rt::detail {

/// A(i, p) = a[i * a_row + p * a_col]; B(p, j) = b[p * b_row + j * b_col];
/// Y(i, j) = y[i * ldy + j]. With accumulate, adds to Y instead of storing.
void sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row,
           int64_t a_col, const float* b, int64_t b_row, int64_t b_col,
           float* y, int64_t ldy, bool accumulate);

}  // namespace cgc::rt::detail
