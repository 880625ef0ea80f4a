// The portable packed single-precision GEMM (the fallback of gemmRows for
// blocks LIBXSMM cannot generate) and the Gemm and MatMul kernels on top of
// gemmRows: transposed operands are packed per thread, alpha/beta/C and the
// activation become the block epilogue where they can, and the output is
// split over the team (gemm_core.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include "cgc/kernels.h"
#include "gemm/gemm_core.h"

namespace cgc::rt {
namespace detail {
namespace {

#ifdef CGC_NO_LIBXSMM
// Without LIBXSMM (aarch64) every GEMM block runs here: a register tile of
// 8 rows x 3 vectors of 4 lanes, written with GCC's vector extensions (NEON
// and SSE registers): 24 sums, 3 vectors of B and a broadcast fit NEON's 32
// registers.
constexpr int64_t kMr = 8;
constexpr int64_t kNr = 12;
#else
constexpr int64_t kMr = 4;
constexpr int64_t kNr = 32;
#endif
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 64;

/// Writes (or adds) the rows x cols corner of the kMr x kNr tile `acc`.
void storeTile(const float (&acc)[kMr][kNr], float* y, int64_t ldy, int64_t rows, int64_t cols,
               bool add) {
  for (int64_t r = 0; r < rows; ++r) {
    float* out = y + r * ldy;
    if (add)
      for (int64_t c = 0; c < cols; ++c) out[c] += acc[r][c];
    else
      for (int64_t c = 0; c < cols; ++c) out[c] = acc[r][c];
  }
}

#ifdef CGC_NO_LIBXSMM
void microKernel(int64_t kc, const float* ap, const float* bp, float* y, int64_t ldy, int64_t rows,
                 int64_t cols, bool add) {
  typedef float Lanes __attribute__((vector_size(16)));
  constexpr int kVectors = kNr / 4;
  Lanes sum[kMr][kVectors] = {};
  for (int64_t p = 0; p < kc; ++p) {
    Lanes b[kVectors];
    std::memcpy(b, bp + p * kNr, sizeof b);
    for (int64_t r = 0; r < kMr; ++r) {
      const float av = ap[p * kMr + r];
      for (int v = 0; v < kVectors; ++v) sum[r][v] += av * b[v];
    }
  }
  float acc[kMr][kNr];
  std::memcpy(acc, sum, sizeof acc);
  storeTile(acc, y, ldy, rows, cols, add);
}
#else
void microKernel(int64_t kc, const float* ap, const float* bp, float* y, int64_t ldy, int64_t rows,
                 int64_t cols, bool add) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float* brow = bp + p * kNr;
    for (int64_t r = 0; r < kMr; ++r) {
      const float av = ap[p * kMr + r];
      for (int64_t c = 0; c < kNr; ++c) acc[r][c] += av * brow[c];
    }
  }
  storeTile(acc, y, ldy, rows, cols, add);
}
#endif

}  // namespace

void sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col,
           const float* b, int64_t b_row, int64_t b_col, float* y, int64_t ldy, bool accumulate) {
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
          microKernel(kc, aPack.data() + s * kc * kMr, bPack.data() + jp * kc * kNr,
                      y + i0 * ldy + j0, ldy, rows, cols, add);
        }
      }
    }
  }
}

}  // namespace detail

namespace {

/// Per-thread scratch that only grows: no allocation once a model has run.
float* scratch(std::vector<float>& buffer, int64_t count) {
  if (static_cast<int64_t>(buffer.size()) < count) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

float activate(const GemmParams& p, float v) {
  switch (p.activation) {
    case Activation::kRelu:
      return v > 0.0f ? v : 0.0f;
    case Activation::kClip:
      return std::min(std::max(v, p.act_min), p.act_max);
    default:
      return v;
  }
}

}  // namespace

void gemm(const GemmParams& p, const float* a, const float* b, const float* c, float* y,
          const Team& team) {
  // Operands transposed at run time (constant weights were stored
  // transposed by pretranspose-gemm-weights) are copied once, the team
  // sharing the copy, so that the product is gemmRowsTeam's whatever the
  // team's size.
  thread_local std::vector<float> pack;
  const bool shares = p.trans_a || p.trans_b;
  float* packed = nullptr;
  if (shares)
    packed = team.shareFromFirst(
        scratch(pack, (p.trans_a ? p.m * p.k : 0) + (p.trans_b ? p.k * p.n : 0)));
  // Each thread transposes a share of the columns of `from` ([rows, cols]).
  auto transposed = [&](const float* from, int64_t rows, int64_t cols, float* to) {
    const Range mine = team.split(cols);
    if (mine.size() > 0)
      detail::transpose(from + mine.begin, cols, rows, mine.size(), to + mine.begin * rows, rows);
    return to;
  };
  const float* ap = p.trans_a ? transposed(a, p.k, p.m, packed) : a;  // A is [k, m]
  const float* bp =
      p.trans_b ? transposed(b, p.n, p.k, packed + (p.trans_a ? p.m * p.k : 0)) : b;  // [n, k]
  if (shares) team.barrier();
  // The common forms of C (bias row, bias column, full matrix) fold into the
  // block epilogue; anything else is applied after the product.
  const bool bias = c != nullptr && p.beta != 0.0f;
  detail::Epilogue e;
  e.activation = p.activation;
  e.act_min = p.act_min;
  e.act_max = p.act_max;
  bool fused = p.alpha == 1.0f && (!bias || p.beta == 1.0f);
  if (fused && bias) {
    if (p.c_stride_m == 0 && p.c_stride_n == 1) {
      e.col_bias = c;
    } else if (p.c_stride_m == 1 && p.c_stride_n == 0) {
      e.row_bias = c;
    } else if (p.c_stride_m == p.n && p.c_stride_n == 1) {
      e.residual = c;
      e.ld_residual = p.n;
    } else {
      fused = false;
    }
  }
  detail::gemmRowsTeam(p.m, p.n, p.k, ap, p.k, bp, p.n, y, p.n, fused ? e : detail::Epilogue{},
                       team);
  if (!fused) {
    team.barrier();
    const Range rows = team.split(p.m);
    for (int64_t i = rows.begin; i < rows.end; ++i) {
      float* row = y + i * p.n;
      const float* crow = bias ? c + i * p.c_stride_m : nullptr;
      for (int64_t j = 0; j < p.n; ++j) {
        float v = p.alpha * row[j];
        if (crow) v += p.beta * crow[j * p.c_stride_n];
        row[j] = activate(p, v);
      }
    }
  }
  // Thread 0's copies stay in use until every thread is done with them.
  if (shares) team.barrier();
}

namespace {

int64_t batchCount(const MatMulParams& p) {
  int64_t batches = 1;
  for (int d = 0; d < p.batch_rank; ++d) batches *= p.batch_shape[d];
  return batches;
}

/// Element offsets of batch `batch` in A and B.
void batchOffsets(const MatMulParams& p, int64_t batch, int64_t& aOff, int64_t& bOff) {
  aOff = bOff = 0;
  for (int d = p.batch_rank - 1; d >= 0; --d) {
    const int64_t index = batch % p.batch_shape[d];
    batch /= p.batch_shape[d];
    aOff += index * p.a_batch_strides[d];
    bOff += index * p.b_batch_strides[d];
  }
}

/// Whether every batch shares B and A's batches are consecutive, so the
/// batches stack into one GEMM of batches * m rows (the [B, S, K] x [K, N]
/// of linear layers).
bool stacksIntoOneGemm(const MatMulParams& p) {
  int64_t expected = p.m * p.k;
  for (int d = p.batch_rank - 1; d >= 0; --d) {
    if (p.b_batch_strides[d] != 0 && p.batch_shape[d] != 1) return false;
    if (p.a_batch_strides[d] != expected && p.batch_shape[d] != 1) return false;
    expected *= p.batch_shape[d];
  }
  return true;
}

template <typename F>
void forEachBatch(const MatMulParams& p, F&& f) {
  const int64_t batches = batchCount(p);
  for (int64_t batch = 0; batch < batches; ++batch) {
    int64_t aOff, bOff;
    batchOffsets(p, batch, aOff, bOff);
    f(aOff, bOff, batch);
  }
}

}  // namespace

template <>
void matmul(const MatMulParams& p, const float* a, const float* b, const float* bias, float* y,
            const Team& team) {
  detail::Epilogue e;
  e.col_bias = bias;
  e.activation = p.activation;
  e.act_min = p.act_min;
  e.act_max = p.act_max;
  const int64_t batches = batchCount(p);
  if (stacksIntoOneGemm(p)) {
    detail::gemmRowsTeam(batches * p.m, p.n, p.k, a, p.k, b, p.n, y, p.n, e, team);
    return;
  }
  if (team.size() > 1 && batches >= team.size()) {
    const Range mine = team.split(batches);
    for (int64_t batch = mine.begin; batch < mine.end; ++batch) {
      int64_t aOff, bOff;
      batchOffsets(p, batch, aOff, bOff);
      detail::gemmRows(p.m, p.n, p.k, a + aOff, p.k, b + bOff, p.n, y + batch * p.m * p.n, p.n, e);
    }
    return;
  }
  forEachBatch(p, [&](int64_t aOff, int64_t bOff, int64_t batch) {
    detail::gemmRowsTeam(p.m, p.n, p.k, a + aOff, p.k, b + bOff, p.n, y + batch * p.m * p.n, p.n, e,
                         team);
  });
}
// float64 models are rare (test and scientific graphs): plain loops on one
// thread suffice.
template <>
void matmul(const MatMulParams& p, const double* a, const double* b, const double* bias, double* y,
            const Team& team) {
  if (team.thread() != 0) return;
  forEachBatch(p, [&](int64_t aOff, int64_t bOff, int64_t batch) {
    double* out = y + batch * p.m * p.n;
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) out[i * p.n + j] = bias ? bias[j] : 0.0;
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t q = 0; q < p.k; ++q) {
        const double av = a[aOff + i * p.k + q];
        for (int64_t j = 0; j < p.n; ++j) out[i * p.n + j] += av * b[bOff + q * p.n + j];
      }
  });
}

}  // namespace cgc::rt
