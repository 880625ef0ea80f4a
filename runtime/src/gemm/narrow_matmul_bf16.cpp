// matmul_narrow's Bf16Dot variant (cgc/kernels/narrow_variants.def), for
// AVX512_BF16: vdpbf16ps multiplies a pair of A's elements, rounded to
// bfloat16 (vcvtne2ps2bf16, nearest even) and broadcast as one 32-bit pair,
// by a 32-bit pair of each column's weights (the packed layout's pairs are
// its operand as they are) and adds both products to a float lane: two
// products per lane and instruction where the widening kernel
// (narrow_matmul_skx.cpp) spends a shift or mask and an FMA on each. A tile
// of up to 8 rows x 32 columns. A is rounded once per call, into the
// thread's scratch, for the rows the thread computes.
#include "core/isa.h"
#include "core/scratch.h"
#include "gemm/narrow_strategies.h"

#if CGC_ISA_BF16
#include <immintrin.h>
#endif

namespace cgc::rt::detail {

#if CGC_ISA_BF16
namespace {

constexpr int kMaxRows = 8;

/// rows x (k + 1) / 2 pairs: A's rows `rows` rounded to bfloat16, the even
/// element in each pair's low half (an odd k's last pair padded with zero).
void roundRows(const NarrowMatMulParams& p, const float* a, Range rows, uint32_t* out) {
  const int64_t k = p.k, stride = (k + 1) / 2;
  for (int64_t i = rows.begin; i < rows.end; ++i) {
    const float* row = a + i * k;
    uint32_t* to = out + (i - rows.begin) * stride;
    for (int64_t q = 0; q < k; q += 32) {
      const int64_t left = k - q;
      const __mmask16 lo = left >= 16 ? 0xffff : static_cast<__mmask16>((1u << left) - 1);
      const __mmask16 hi = left >= 32   ? 0xffff
                           : left <= 16 ? 0
                                        : static_cast<__mmask16>((1u << (left - 16)) - 1);
      const __m512bh both = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, row + q + 16),
                                                _mm512_maskz_loadu_ps(lo, row + q));
      const int64_t pairs = std::min<int64_t>(16, (left + 1) / 2);
      _mm512_mask_storeu_epi32(to + q / 2, static_cast<__mmask16>((1u << pairs) - 1),
                               (__m512i)both);
    }
  }
}

/// sums[i][32] = A[i, :] W[:, panel] for R rows of rounded A (`pairs`
/// pairs a row) and the panel's weights from `base`. The one-row tile
/// keeps the even steps' sums apart from the odd ones', for two chains.
/// acc[i] += the products of rounded A's pair r with the weights' pair row r.
template <int R, int Split>
inline void dotStep(__m512 (&acc)[R][2][Split], int s, const uint32_t* a, int64_t pairs,
                    const uint32_t* w, int64_t r) {
  const __m512i w0 = _mm512_loadu_si512(w + r * kNarrowColumns);
  const __m512i w1 = _mm512_loadu_si512(w + r * kNarrowColumns + 16);
  for (int i = 0; i < R; ++i) {
    const __m512i pair = _mm512_set1_epi32(static_cast<int>(a[i * pairs + r]));
    acc[i][0][s] = _mm512_dpbf16_ps(acc[i][0][s], (__m512bh)pair, (__m512bh)w0);
    acc[i][1][s] = _mm512_dpbf16_ps(acc[i][1][s], (__m512bh)pair, (__m512bh)w1);
  }
}

/// sums[i][32] = A[i, :] W[:, panel] for R rows of rounded A (`pairs`
/// pairs a row) and the panel's weights from `w`. The one-row tile keeps
/// the odd steps' sums apart from the even ones', for two chains each.
template <int R>
void dotTile(int64_t pairs, const uint32_t* a, const uint32_t* w, float (*sums)[kNarrowColumns]) {
  constexpr int Split = R == 1 ? 2 : 1;
  __m512 acc[R][2][Split];
  for (int i = 0; i < R; ++i)
    for (int s = 0; s < Split; ++s) acc[i][0][s] = acc[i][1][s] = _mm512_setzero_ps();
  int64_t r = 0;
  for (; r + 1 < pairs; r += 2) {
    dotStep<R, Split>(acc, 0, a, pairs, w, r);
    dotStep<R, Split>(acc, Split - 1, a, pairs, w, r + 1);
  }
  if (r < pairs) dotStep<R, Split>(acc, 0, a, pairs, w, r);
  for (int i = 0; i < R; ++i)
    for (int h = 0; h < 2; ++h) {
      __m512 v = acc[i][h][0];
      if (Split > 1) v = _mm512_add_ps(v, acc[i][h][Split - 1]);
      _mm512_storeu_ps(sums[i] + 16 * h, v);
    }
}

/// Rows `rows` of one panel (A rounded from row rows.begin), in tiles of
/// kMaxRows and one tile of the rest.
void dotPanel(const NarrowMatMulParams& p, const uint32_t* rounded, const void* w,
              const float* bias, float* y, int64_t panel, Range rows) {
  const auto* base = reinterpret_cast<const uint32_t*>(narrowPanelStart(p, w, panel));
  const int64_t first = panel * kNarrowColumns, pairs = (p.k + 1) / 2;
  forEachRowTile<kMaxRows>(rows, [&]<int R>(int64_t row) {
    float sums[R][kNarrowColumns];
    dotTile<R>(pairs, rounded + (row - rows.begin) * pairs, base, sums);
    storeNarrowRows<R>(p, sums, nullptr, bias, y, first, row);
  });
}

}  // namespace

/// At every m where the CPU has it: one vdpbf16ps per 32 products, where
/// the widening kernels spend a shift or mask and an FMA on every 16, so it
/// is the faster where the product is compute-bound (many rows), and where
/// it is memory-bound (one row, each weight read once) its shorter loop
/// keeps more loads in flight (bench/history/2026-12-07-narrow-weights.md).
/// Rounding A to bfloat16 is within the format's contract (gemm.h).
bool prefersBf16Dot(const NarrowMatMulParams&) { return true; }

void narrowBf16Dot(const NarrowMatMulParams& p, const float* a, const void* w, const float*,
                   const float* bias, float* y, const Team& team) {
  uint32_t* rounded = nullptr;
  Range roundedRows{0, 0};
  forEachNarrowShare(p, team, [&](int64_t panel, Range rows) {
    if (!rounded || rows.begin != roundedRows.begin || rows.end != roundedRows.end) {
      rounded = scratch<uint32_t>(rows.size() * ((p.k + 1) / 2));
      roundRows(p, a, rows, rounded);
      roundedRows = rows;
    }
    dotPanel(p, rounded, w, bias, y, panel, rows);
  });
}
#else
bool prefersBf16Dot(const NarrowMatMulParams&) { return false; }
void narrowBf16Dot(const NarrowMatMulParams&, const float*, const void*, const float*, const float*,
                   float*, const Team&) {}  // never run: the build lacks its tier
#endif

}  // namespace cgc::rt::detail
