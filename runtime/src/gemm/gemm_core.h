// The single-precision GEMM core shared by gemm, matmul and the convolutions.
//
// gemmRows is the fast path: row-major Y = epilogue(A B) through LIBXSMM's JIT
// micro-kernels on cache blocks (see xsmm_gemm.cpp), falling back to the
// portable packed sgemm below for blocks LIBXSMM cannot generate. The
// epilogue (bias, residual, activation) is applied to each block of Y right
// after its last k step, while the block is still in cache.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <utility>

#include "cgc/kernels.h"

namespace cgc::rt::detail {

/// The portable packed core: A(i, p) = a[i * a_row + p * a_col];
/// B(p, j) = b[p * b_row + j * b_col]; Y(i, j) = y[i * ldy + j]. With
/// accumulate, adds to Y instead of storing.
void sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col,
           const float* b, int64_t b_row, int64_t b_col, float* y, int64_t ldy, bool accumulate);

/// What is applied to Y(i, j) after the product, in this order:
/// + row_bias[i] + col_bias[j] + residual[i * ld_residual + j], activation.
struct Epilogue {
  const float* row_bias = nullptr;
  const float* col_bias = nullptr;
  const float* residual = nullptr;
  int64_t ld_residual = 0;
  Activation activation = Activation::kNone;
  float act_min = 0.0f, act_max = 0.0f;

  bool empty() const {
    return !row_bias && !col_bias && !residual && activation == Activation::kNone;
  }
  /// The same epilogue for the block of Y starting at (i, j).
  Epilogue at(int64_t i, int64_t j) const {
    Epilogue e = *this;
    if (e.row_bias) e.row_bias += i;
    if (e.col_bias) e.col_bias += j;
    if (e.residual) e.residual += i * ld_residual + j;
    return e;
  }
};

/// LIBXSMM's one-time set-up (a model's first GEMM paid it: start-up in
/// docs/PERFORMANCE.md), idempotent and thread-safe; nothing without LIBXSMM.
void initXsmm();

/// Lowers the ISA LIBXSMM may JIT for to `arch` (a libxsmm_set_target_arch
/// name), never raises it; ModelRuntime calls it with the ModelSpec's
/// xsmm_target. Nothing without LIBXSMM (CGC_NO_LIBXSMM).
void limitXsmmTarget(const char* arch);

/// Applies `e` to the rows x cols block y (rows ldy apart).
void applyEpilogue(const Epilogue& e, int64_t rows, int64_t cols, float* y, int64_t ldy);

/// Rows of Y per cache block of gemmRows: a caller that cuts a GEMM's rows
/// at multiples of it makes the same kernel calls as the whole GEMM.
constexpr int64_t kRowBlock = 64;

/// Y[m, n] = epilogue(A[m, k] B[k, n]); rows of A, B and Y are lda, ldb and
/// ldy elements apart, columns contiguous. One thread.
void gemmRows(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
              int64_t ldb, float* y, int64_t ldy, const Epilogue& e = {});

/// Output channels per panel of weights packed by packConvWeights.
constexpr int64_t kPackedPanel = 64;

/// Where gemmPacked's results go: output channel o0 + 16 v + l at
/// position j is y[j * ld_position + v * ld_vector + l], stored as
/// clamp(sum + bias[16 v + l] + residual[same index], low, high) (bias and
/// residual may be null). ld_vector 16 with ld_position o1 - o0 is a
/// [position][channel] block; ld_position 16 with ld_vector 16 x positions
/// is the channel-blocked activation layout itself (ConvParams).
struct PackedOutput {
  float* y = nullptr;
  int64_t ld_position = 0, ld_vector = 16;
  const float* bias = nullptr;
  const float* residual = nullptr;
  float low = -std::numeric_limits<float>::infinity();
  float high = std::numeric_limits<float>::infinity();
};

/// A register tile of gemmPacked: out(j, o) (+)= sum_p B(p, j) A(o, p)
/// for j < J positions and o < 16 V channels over depth k (A's rows lda
/// apart, B(p, j) = b[offsets[p] + positions[j]]), into `out` (the
/// epilogue applied when `last`, added to what is there when
/// `accumulate`), prefetching `lines` cache lines from `prefetch`.
using PackedTile = void (*)(int64_t k, const float* a, int64_t lda, const float* b,
                            const int64_t* offsets, const int64_t* positions,
                            const PackedOutput& out, bool accumulate, bool last,
                            const char* prefetch, int64_t lines);
/// Positions per register tile, and tiles by vectors of channels and
/// positions: tiles[V - 1][J - 1] (V up to 4 on AVX-512 and NEON, 2 on
/// AVX2 and SSE).
constexpr int kPackedTilePositions = 6;
using PackedTiles = std::array<std::array<PackedTile, kPackedTilePositions>, 4>;

namespace packed_tiles {
template <typename Kernel, int V, int... J>
constexpr std::array<PackedTile, kPackedTilePositions> row(std::integer_sequence<int, J...>) {
  return {Kernel::template at<V, J + 1>...};
}
template <typename Kernel, int... V>
constexpr PackedTiles rows(std::integer_sequence<int, V...>) {
  return {row<Kernel, V + 1>(std::make_integer_sequence<int, kPackedTilePositions>{})...};
}
}  // namespace packed_tiles

/// The tiles of a tile kernel: tiles[V - 1][J - 1] = Kernel::at<V, J> (its
/// tile of V vectors of channels x J positions) for V <= kVectors, null
/// above. Kernel: a struct whose `template <int V, int J> static constexpr
/// PackedTile at` names the kernel's forms (gemmPacked's float tiles,
/// PackedBf16's).
template <typename Kernel, int kVectors>
inline constexpr PackedTiles kPackedTileTable =
    packed_tiles::rows<Kernel>(std::make_integer_sequence<int, kVectors>{});

/// The GEMM of packed convolution weights, vectorised along output
/// channels: for output channels o in [o0, o1) (multiples of 16, inside one
/// panel) and positions j < n, out(j, o) = sum_p A(o, p) B(p, j), where A is
/// the m x k matrix that packConvWeights stored in `packed` and B is read
/// in place, B(p, j) = b[offsets[p] + positions[j]] (im2col without the
/// copy), `depthStep` rows of A at a time (packedDepthStep). One thread.
/// `tiles`: other tiles than the float ones on the same layout of 32-bit
/// elements (PackedBf16's, whose elements are bfloat16 pairs).
void gemmPacked(int64_t m, int64_t k, const float* packed, int64_t o0, int64_t o1, int64_t n,
                const float* b, const int64_t* offsets, const int64_t* positions,
                const PackedOutput& out, int64_t depthStep, const PackedTiles* tiles = nullptr);

/// The depth gemmPacked takes per pass on `machine` (its lanes: the
/// runtime's that runs it).
int64_t packedDepthStep(const MachineInfo& machine);

/// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols (16 x 16
/// tiles in registers where the CPU has AVX-512), then `e` applied to the
/// cols x rows block dst, in the same registers. Turns gemmPacked's result
/// back into rows of channels, and planes into vectors of channels.
void transpose(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd,
               const Epilogue& e = {});

/// gemmRows with A stored transposed, A(i, p) = a[p * lda + i] (LIBXSMM's
/// transposed-B kernels, with the operands swapped as in gemmRows).
void gemmRowsTransposedA(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float* y, int64_t ldy);

/// How a team of `threads` splits an m x n output (inner dimension k):
/// ti row blocks x tj column blocks, ti * tj = threads.
struct OutputSplit {
  int ti, tj;
};
OutputSplit splitOutput(int64_t m, int64_t n, int64_t k, int threads);

/// This thread's block of an m x n output under splitOutput: rows
/// [rows.begin, rows.end), columns [cols.begin, cols.end) (columns in
/// multiples of 16 floats so blocks keep whole vectors).
struct Block {
  Range rows, cols;
};
Block blockOf(const OutputSplit& split, int64_t m, int64_t n, int thread);

/// gemmRows with the output split over the team (no barrier at the end).
void gemmRowsTeam(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float* y, int64_t ldy, const Epilogue& e, const Team& team);

}  // namespace cgc::rt::detail
