// GEMM and batched MatMul on a packed, register-blocked core: B is packed in
// panels of kNr columns, A in slivers of kMr rows, and a kMr x kNr block of
// Y stays in registers across the k loop (fixed trip counts let the compiler
// vectorise it at -march=native).
#include <algorithm>
#include <cstring>
#include <vector>

#include "cgc/kernels.h"
#include "gemm_core.h"

namespace cgc::rt {
namespace detail {
namespace {

constexpr int64_t kMr = 4;
constexpr int64_t kNr = 32;
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 64;

void microKernel(int64_t kc, const float* ap, const float* bp, float* y,
                 int64_t ldy, int64_t rows, int64_t cols, bool add) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float* brow = bp + p * kNr;
    for (int64_t r = 0; r < kMr; ++r) {
      const float av = ap[p * kMr + r];
      for (int64_t c = 0; c < kNr; ++c) acc[r][c] += av * brow[c];
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* out = y + r * ldy;
    if (add)
      for (int64_t c = 0; c < cols; ++c) out[c] += acc[r][c];
    else
      for (int64_t c = 0; c < cols; ++c) out[c] = acc[r][c];
  }
}

}  // namespace

void sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row,
           int64_t a_col, const float* b, int64_t b_row, int64_t b_col,
           float* y, int64_t ldy, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(y + i * ldy, y + i * ldy + n, 0.0f);
    return;
  }
  thread_local std::vector<float> bPack, aPack;
  const int64_t panels = (n + kNr - 1) / kNr;
  for (int64_t pc = 0; pc < k; pc += kKc) {
    const int64_t kc = std::min(kKc, k - pc);
    bPack.assign(static_cast<size_t>(panels * kc * kNr), 0.0f);
    for (int64_t jp = 0; jp < panels; ++jp) {
      float* dst = bPack.data() + jp * kc * kNr;
      const int64_t j0 = jp * kNr, cols = std::min(kNr, n - j0);
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b + (pc + p) * b_row + j0 * b_col;
        if (b_col == 1)
          std::memcpy(dst + p * kNr, src, static_cast<size_t>(cols) * sizeof(float));
        else
          for (int64_t c = 0; c < cols; ++c) dst[p * kNr + c] = src[c * b_col];
      }
    }
    const bool add = accumulate || pc > 0;
    for (int64_t ic = 0; ic < m; ic += kMc) {
      const int64_t mc = std::min(kMc, m - ic);
      const int64_t slivers = (mc + kMr - 1) / kMr;
      aPack.assign(static_cast<size_t>(slivers * kc * kMr), 0.0f);
      for (int64_t s = 0; s < slivers; ++s) {
        float* dst = aPack.data() + s * kc * kMr;
        for (int64_t r = 0; r < kMr && s * kMr + r < mc; ++r) {
          const float* src = a + (ic + s * kMr + r) * a_row + pc * a_col;
          for (int64_t p = 0; p < kc; ++p) dst[p * kMr + r] = src[p * a_col];
        }
      }
      for (int64_t jp = 0; jp < panels; ++jp) {
        const int64_t j0 = jp * kNr, cols = std::min(kNr, n - j0);
        for (int64_t s = 0; s < slivers; ++s) {
          const int64_t i0 = ic + s * kMr, rows = std::min(kMr, m - i0);
          microKernel(kc, aPack.data() + s * kc * kMr,
                      bPack.data() + jp * kc * kNr, y + i0 * ldy + j0, ldy,
                      rows, cols, add);
        }
      }
    }
  }
}

}  // namespace detail

void gemm(const GemmParams& p, const float* a, const float* b, const float* c,
          float* y) {
  const int64_t a_row = p.trans_a ? 1 : p.k, a_col = p.trans_a ? p.m : 1;
  const int64_t b_row = p.trans_b ? 1 : p.n, b_col = p.trans_b ? p.k : 1;
  detail::sgemm(p.m, p.n, p.k, a, a_row, a_col, b, b_row, b_col, y, p.n, false);
  const bool scale = p.alpha != 1.0f;
  const bool bias = c != nullptr && p.beta != 0.0f;
  if (!scale && !bias) return;
  for (int64_t i = 0; i < p.m; ++i) {
    float* row = y + i * p.n;
    if (scale)
      for (int64_t j = 0; j < p.n; ++j) row[j] *= p.alpha;
    if (bias) {
      const float* crow = c + i * p.c_stride_m;
      for (int64_t j = 0; j < p.n; ++j) row[j] += p.beta * crow[j * p.c_stride_n];
    }
  }
}

namespace {

/// Calls f(a offset, b offset, batch index) for every batch of a MatMul.
template <typename F>
void forEachBatch(const MatMulParams& p, F&& f) {
  int64_t batches = 1;
  for (int d = 0; d < p.batch_rank; ++d) batches *= p.batch_shape[d];
  int64_t index[kMaxRank] = {};
  for (int64_t batch = 0; batch < batches; ++batch) {
    int64_t aOff = 0, bOff = 0;
    for (int d = 0; d < p.batch_rank; ++d) {
      aOff += index[d] * p.a_batch_strides[d];
      bOff += index[d] * p.b_batch_strides[d];
    }
    f(aOff, bOff, batch);
    for (int d = p.batch_rank - 1; d >= 0; --d) {
      if (++index[d] < p.batch_shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

void matmul(const MatMulParams& p, const float* a, const float* b, float* y) {
  forEachBatch(p, [&](int64_t aOff, int64_t bOff, int64_t batch) {
    detail::sgemm(p.m, p.n, p.k, a + aOff, p.k, 1, b + bOff, p.n, 1,
                  y + batch * p.m * p.n, p.n, false);
  });
}

// float64 models are rare (test and scientific graphs): plain loops suffice.
void matmul(const MatMulParams& p, const double* a, const double* b, double* y) {
  forEachBatch(p, [&](int64_t aOff, int64_t bOff, int64_t batch) {
    double* out = y + batch * p.m * p.n;
    std::fill(out, out + p.m * p.n, 0.0);
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t q = 0; q < p.k; ++q) {
        const double av = a[aOff + i * p.k + q];
        for (int64_t j = 0; j < p.n; ++j) out[i * p.n + j] += av * b[bOff + q * p.n + j];
      }
  });
}

}  // namespace cgc::rt
