// gemmRows: row-major GEMM on LIBXSMM's JIT micro-kernels (one row of Y,
// a batch-1 classifier head, on a streaming loop of its own), plus the team
// split of a GEMM output.
//
// LIBXSMM generates column-major C = A B with alpha 1 and beta 0 or 1. A
// row-major Y[m, n] = A[m, k] B[k, n] is, read column-major, Y^T = B^T A^T,
// where B^T is B's memory read column-major (ld = ldb) and A^T likewise. So
// each cache block calls the kernel with (m', n', k') = (n, m, k) and the
// operands swapped, with no copies; an A stored transposed (ConvTranspose's
// weights) is the kernel's B transposed, which LIBXSMM generates too.
// Blocks: at most kKc deep, so a block of the operand in the outer loop (the
// larger one) stays in L2 while the other one's blocks pass; the kernel is
// JIT-compiled once per block shape and cached per thread (no lock: every
// thread has its own small table; LIBXSMM's registry is itself
// thread-safe).
//
// Built with CGC_NO_LIBXSMM (targets LIBXSMM does not support: aarch64),
// every block runs on the portable packed sgemm (gemm.cpp) instead.
#ifndef CGC_NO_LIBXSMM
#include <libxsmm.h>
#endif

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "core/simd.h"
#include "gemm/gemm_core.h"

namespace cgc::rt::detail {
namespace {

constexpr int64_t kNc = 64;         // columns of Y per block (the kernel's m')
constexpr int64_t kMc = kRowBlock;  // rows of Y per block (the kernel's n')
constexpr int64_t kKc = 1024;       // most depth per block

struct KernelKey {
  int64_t m, n, k, lda, ldb, ldc;
  bool accumulate;
  bool transB = false;  // the kernel's B (our A) stored transposed
  bool operator==(const KernelKey&) const = default;
};

struct KernelKeyHash {
  size_t operator()(const KernelKey& key) const {
    size_t h = static_cast<size_t>(key.accumulate) * 2 + key.transB;
    for (int64_t v : {key.m, key.n, key.k, key.lda, key.ldb, key.ldc})
      h = h * 1000003u ^ static_cast<size_t>(v);
    return h;
  }
};

#ifdef CGC_NO_LIBXSMM
using BlockKernel = void (*)(const float*, const float*, float*);

BlockKernel kernelFor(const KernelKey&) { return nullptr; }
#else
/// The JIT kernel for a column-major block, or null where LIBXSMM has none.
libxsmm_smmfunction kernelFor(const KernelKey& key) {
  thread_local std::unordered_map<KernelKey, libxsmm_smmfunction, KernelKeyHash> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  initXsmm();
  const libxsmm_blasint lda = key.lda, ldb = key.ldb, ldc = key.ldc;
  const float alpha = 1.0f, beta = key.accumulate ? 1.0f : 0.0f;
  const int flags = key.transB ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
  const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
  libxsmm_smmfunction f =
      libxsmm_smmdispatch(key.m, key.n, key.k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch);
  cache.emplace(key, f);
  return f;
}
#endif

/// This part of [0, n) split in `parts` near-equal multiples of `grain`.
Range part(int64_t n, int parts, int index, int64_t grain) {
  return Team(index, parts, nullptr).split(n, grain);
}

/// The epilogue with its terms fixed at compile time, so each row is one
/// vectorised pass (a loop testing optional terms at run time compiled into
/// a loop-carried chain slower than the GEMM itself).
template <bool kRowBias, bool kColBias, bool kResidual, Activation kActivation>
void epilogueRows(const Epilogue& e, int64_t rows, int64_t cols, float* y, int64_t ldy) {
  const float lo = e.act_min, hi = e.act_max;
  for (int64_t i = 0; i < rows; ++i) {
    float* __restrict row = y + i * ldy;
    const float* __restrict colBias = e.col_bias;
    const float* __restrict residual = kResidual ? e.residual + i * e.ld_residual : nullptr;
    const float rowBias = kRowBias ? e.row_bias[i] : 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      float v = row[j];
      if constexpr (kRowBias) v += rowBias;
      if constexpr (kColBias) v += colBias[j];
      if constexpr (kResidual) v += residual[j];
      if constexpr (kActivation == Activation::kRelu) v = std::max(v, 0.0f);
      if constexpr (kActivation == Activation::kClip) v = std::min(std::max(v, lo), hi);
      row[j] = v;
    }
  }
}

using EpilogueFn = void (*)(const Epilogue&, int64_t, int64_t, float*, int64_t);

template <bool kRowBias, bool kColBias, bool kResidual>
EpilogueFn epilogueFor(Activation activation) {
  switch (activation) {
    case Activation::kRelu:
      return &epilogueRows<kRowBias, kColBias, kResidual, Activation::kRelu>;
    case Activation::kClip:
      return &epilogueRows<kRowBias, kColBias, kResidual, Activation::kClip>;
    default:
      return &epilogueRows<kRowBias, kColBias, kResidual, Activation::kNone>;
  }
}

}  // namespace

void initXsmm() {
#ifndef CGC_NO_LIBXSMM
  static const bool initialised = (libxsmm_init(), true);
  (void)initialised;
#endif
}

void limitXsmmTarget(const char* arch) {
#ifndef CGC_NO_LIBXSMM
  // Lower only: LIBXSMM's target is the process's, and another instance may
  // run on a narrower one. A kernel generated before stays in LIBXSMM's
  // registry and still runs here: LIBXSMM never goes past this CPU.
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  initXsmm();
  const int before = libxsmm_get_target_archid();
  libxsmm_set_target_arch(arch);
  if (libxsmm_get_target_archid() > before) libxsmm_set_target_archid(before);
#else
  (void)arch;
#endif
}

void applyEpilogue(const Epilogue& e, int64_t rows, int64_t cols, float* y, int64_t ldy) {
  if (e.empty()) return;
  static constexpr EpilogueFn (*kTable[8])(Activation) = {
      &epilogueFor<false, false, false>, &epilogueFor<false, false, true>,
      &epilogueFor<false, true, false>,  &epilogueFor<false, true, true>,
      &epilogueFor<true, false, false>,  &epilogueFor<true, false, true>,
      &epilogueFor<true, true, false>,   &epilogueFor<true, true, true>};
  const int terms = (e.row_bias ? 4 : 0) | (e.col_bias ? 2 : 0) | (e.residual ? 1 : 0);
  kTable[terms](e.activation)(e, rows, cols, y, ldy);
}

namespace {

/// The cache blocks gemmBlocks cuts an m x n output into, numbered in the
/// order it visits them. Columns: kNc at a time, a remainder narrower than
/// a vector joining the block before it (on its own, LIBXSMM's kernel for
/// it keeps some 30 rows of A in flight, which at a 4 KiB row stride share
/// one L1 set: ResNet-50's 196-column, 1024-deep layers lost 20% to a
/// 4-column block). The larger operand streams through once: its block
/// stays in cache while the inner loop passes the smaller one's blocks (a
/// 1000 x 169 classifier ran its 2 MB of weights past each column block:
/// 3 times). A team shares out these blocks, never cuts others: LIBXSMM
/// sums a narrow block (16 columns or fewer, or the last vector past 64,
/// with few rows) in another order than a wide one, so other cuts would
/// make the result depend on the team's size.
struct BlockGrid {
  int64_t m, n, rowBlocks, colBlocks;

  BlockGrid(int64_t rows, int64_t cols)
      : m(rows),
        n(cols),
        rowBlocks((rows + kMc - 1) / kMc),
        colBlocks(1 + std::max<int64_t>(0, (cols - 16) / kNc)) {}
  int64_t count() const { return rowBlocks * colBlocks; }
  /// Block b's first row and column, rows and columns.
  void at(int64_t b, int64_t& ic, int64_t& jc, int64_t& mc, int64_t& nc) const {
    const bool rowsOuter = m > n;
    const int64_t i = rowsOuter ? b / colBlocks : b % rowBlocks;
    const int64_t j = rowsOuter ? b % colBlocks : b / rowBlocks;
    ic = i * kMc, jc = j * kNc;
    mc = std::min(kMc, m - ic), nc = j == colBlocks - 1 ? n - jc : kNc;
  }
};

/// gemmRows over the blocks [blocks.begin, blocks.end) of BlockGrid(m, n),
/// with A stored transposed where aTransposed: A(i, p) = a[p * lda + i].
void gemmBlocks(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool aTransposed,
                const float* b, int64_t ldb, float* y, int64_t ldy, const Epilogue& e,
                Range blocks) {
  const BlockGrid grid(m, n);
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t blk = blocks.begin; blk < blocks.end; ++blk) {
      int64_t ic, jc, mc, nc;
      grid.at(blk, ic, jc, mc, nc);
      for (int64_t i = ic; i < ic + mc; ++i)
        std::fill(y + i * ldy + jc, y + i * ldy + jc + nc, 0.0f);
      applyEpilogue(e.at(ic, jc), mc, nc, y + ic * ldy + jc, ldy);
    }
    return;
  }
  const int64_t aRow = aTransposed ? 1 : lda, aCol = aTransposed ? lda : 1;
  // Equal depth steps (576 = one step, not 512 + 64): a short last step
  // would reload and rewrite all of Y for little work.
  const int64_t steps = (k + kKc - 1) / kKc, step = (k + steps - 1) / steps;
  for (int64_t pc = 0; pc < k; pc += step) {
    const int64_t kc = std::min(step, k - pc);
    const bool accumulate = pc > 0, last = pc + kc >= k;
    for (int64_t blk = blocks.begin; blk < blocks.end; ++blk) {
      int64_t ic, jc, mc, nc;
      grid.at(blk, ic, jc, mc, nc);
      const float* ablock = a + ic * aRow + pc * aCol;
      const float* bblock = b + pc * ldb + jc;
      float* yblock = y + ic * ldy + jc;
      if (auto f = kernelFor({nc, mc, kc, ldb, lda, ldy, accumulate, aTransposed}))
        f(bblock, ablock, yblock);
      else
        sgemm(mc, nc, kc, ablock, aRow, aCol, bblock, ldb, 1, yblock, ldy, accumulate);
      if (last) applyEpilogue(e.at(ic, jc), mc, nc, yblock, ldy);
    }
  }
}

/// Every block of the grid.
void gemmBlocks(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool aTransposed,
                const float* b, int64_t ldb, float* y, int64_t ldy, const Epilogue& e) {
  gemmBlocks(m, n, k, a, lda, aTransposed, b, ldb, y, ldy, e, {0, BlockGrid(m, n).count()});
}

/// y[0, n) = a[0, k) B for one row of Y (batch-1 classifier heads, a
/// decoder's one-token step): B streamed row by row, four rows at a time,
/// each read once in address order (what the hardware prefetchers follow
/// best when the weights come from memory), y kept in the cache between
/// them. Each column still sums its k products in order, as a column-wise
/// loop would.
void gemvRow(int64_t n, int64_t k, const float* __restrict a, const float* __restrict b,
             int64_t ldb, float* __restrict y) {
  constexpr int kLanes = simd::kLanes;
  std::fill(y, y + n, 0.0f);
  int64_t q = 0;
  for (; q + 4 <= k; q += 4) {
    const float *r0 = b + q * ldb, *r1 = r0 + ldb, *r2 = r1 + ldb, *r3 = r2 + ldb;
    const float a0 = a[q], a1 = a[q + 1], a2 = a[q + 2], a3 = a[q + 3];
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes) {
      simd::Floats sum = simd::load(y + j);
      sum += a0 * simd::load(r0 + j);
      sum += a1 * simd::load(r1 + j);
      sum += a2 * simd::load(r2 + j);
      sum += a3 * simd::load(r3 + j);
      simd::store(y + j, sum);
    }
    for (; j < n; ++j) {
      float sum = y[j];
      sum += a0 * r0[j];
      sum += a1 * r1[j];
      sum += a2 * r2[j];
      sum += a3 * r3[j];
      y[j] = sum;
    }
  }
  for (; q < k; ++q)
    for (int64_t j = 0; j < n; ++j) y[j] += a[q] * b[q * ldb + j];
}

}  // namespace

void gemmRows(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
              int64_t ldb, float* y, int64_t ldy, const Epilogue& e) {
  // LIBXSMM's blocks read B 64 columns of every row at a time: slower on a
  // 1024 x 1000 head, most where its weights come from memory.
  if (m == 1) {
    gemvRow(n, k, a, b, ldb, y);
    applyEpilogue(e, 1, n, y, ldy);
    return;
  }
  gemmBlocks(m, n, k, a, lda, false, b, ldb, y, ldy, e);
}

void gemmRowsTransposedA(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float* y, int64_t ldy) {
  gemmBlocks(m, n, k, a, lda, true, b, ldb, y, ldy, {});
}

// DeepCPU's rule for splitting a GEMM over threads that share a cache: a
// thread computing a (m / ti) x (n / tj) block reads m / ti rows of A and
// n / tj columns of B, so the team moves tj |A| + ti |B| through the shared
// cache; pick the factorisation ti * tj = threads that minimises it (blocks
// that would be empty cost as if the team were larger). Splitting k as well
// only pays when m and n are both tiny and needs a reduction of partial C
// blocks (+2 tk |C|); at the team sizes used here those GEMMs are too small
// to be worth the extra barrier, so k is never split.
OutputSplit splitOutput(int64_t m, int64_t n, int64_t k, int threads) {
  OutputSplit best{threads, 1};
  double bestCost = -1.0;
  const double sizeA = static_cast<double>(m) * k, sizeB = static_cast<double>(k) * n;
  const int64_t colBlocks = (n + 15) / 16;
  for (int ti = 1; ti <= threads; ++ti) {
    if (threads % ti != 0) continue;
    const int tj = threads / ti;
    double cost = tj * sizeA + ti * sizeB;
    // Threads without work: charge the idle share as if recomputing it.
    const double idle = static_cast<double>(std::max<int64_t>(0, ti - m)) / ti +
                        static_cast<double>(std::max<int64_t>(0, tj - colBlocks)) / tj;
    cost *= 1.0 + 4.0 * idle;
    if (bestCost < 0 || cost < bestCost) {
      bestCost = cost;
      best = {ti, tj};
    }
  }
  return best;
}

Block blockOf(const OutputSplit& split, int64_t m, int64_t n, int thread) {
  return {part(m, split.ti, thread / split.tj, 1), part(n, split.tj, thread % split.tj, 16)};
}

void gemmRowsTeam(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float* y, int64_t ldy, const Epilogue& e, const Team& team) {
  if (m != 1)
    return gemmBlocks(m, n, k, a, lda, false, b, ldb, y, ldy, e,
                      team.split(BlockGrid(m, n).count()));
  // One row: gemvRow sums each column in order whatever its block, so the
  // columns split in vectors.
  const Range cols = team.split(n, 16);
  if (cols.size() <= 0) return;
  gemmRows(1, cols.size(), k, a, lda, b + cols.begin, ldb, y + cols.begin, ldy,
           e.at(0, cols.begin));
}

}  // namespace cgc::rt::detail
