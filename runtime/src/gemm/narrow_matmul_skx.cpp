// matmul_narrow's WidenSkx variant (cgc/kernels/narrow_variants.def), for
// AVX-512: each step of the panel's rows (two rows of W, 32 columns) is
// widened to four float vectors in registers (bf16 pairs: a shift and a
// mask of the 32-bit pairs; int8: vpmovsxbd and vcvtdq2ps) and multiplied
// by broadcast A elements into a tile of up to 8 rows x 32 columns. A stays
// float: the sums are as exact as the widened weights allow. Its one-row
// tile (a decoder's step) keeps the even and odd rows' sums apart, so that
// four independent chains of FMAs keep up with the stream of weights.
#include "core/diagnostics.h"
#include "core/isa.h"
#include "gemm/narrow_strategies.h"

#if CGC_ISA_SKX
#include <immintrin.h>
#endif

namespace cgc::rt::detail {

#if CGC_ISA_SKX
// GCC 12's shift and sign-extension intrinsics pass _mm512_undefined_epi32()
// as the masked-off source, which -Wmaybe-uninitialized reports once
// inlined (GCC bug 105593, a false positive).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED
namespace {

constexpr int kMaxRows = 8;

/// The weights of one step, widened: the even row's columns 0-15 and
/// 16-31, then the odd row's.
struct Step {
  __m512 even0, even1, odd0, odd1;
};

Step bf16Step(const uint32_t* pairs) {
  const __m512i lo = _mm512_loadu_si512(pairs), hi = _mm512_loadu_si512(pairs + 16);
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  return {_mm512_castsi512_ps(_mm512_slli_epi32(lo, 16)),
          _mm512_castsi512_ps(_mm512_slli_epi32(hi, 16)),
          _mm512_castsi512_ps(_mm512_and_si512(lo, high)),
          _mm512_castsi512_ps(_mm512_and_si512(hi, high))};
}

__m512 widenBytes(const int8_t* bytes) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(raw));
}

/// Rows q and q + 1 of an int8 panel (32 bytes a row); `odd`: whether row
/// q + 1 exists (else its weights are zero).
Step int8Step(const int8_t* row, bool odd) {
  const __m512 zero = _mm512_setzero_ps();
  return {widenBytes(row), widenBytes(row + 16), odd ? widenBytes(row + 32) : zero,
          odd ? widenBytes(row + 48) : zero};
}

/// The one-row tile and the two-row one keep the odd rows' sums apart
/// (Split), for enough independent chains of FMAs.
template <int R>
constexpr int kSplit = R <= 2 ? 2 : 1;

/// acc[i] += A[i, 2r] * w.even + A[i, 2r + 1] * w.odd (Odd: whether row
/// 2r + 1 is in the product) for R rows of A from `a` (row stride k).
template <int R, bool Odd>
inline void accumulate(__m512 (&acc)[R][2][kSplit<R>], const Step& w, const float* a, int64_t k,
                       int64_t r) {
  constexpr int s = kSplit<R> - 1;
  for (int i = 0; i < R; ++i) {
    const float* row = a + i * k + 2 * r;
    const __m512 even = _mm512_set1_ps(row[0]);
    acc[i][0][0] = _mm512_fmadd_ps(even, w.even0, acc[i][0][0]);
    acc[i][1][0] = _mm512_fmadd_ps(even, w.even1, acc[i][1][0]);
    if (Odd) {
      const __m512 next = _mm512_set1_ps(row[1]);
      acc[i][0][s] = _mm512_fmadd_ps(next, w.odd0, acc[i][0][s]);
      acc[i][1][s] = _mm512_fmadd_ps(next, w.odd1, acc[i][1][s]);
    }
  }
}

/// sums[i][32] = A[i, :] W[:, panel] for R rows of A from `a` (row stride
/// k), the panel's weights (Bf16's format) from `base`.
template <int R, bool Bf16>
void widenTile(int64_t k, const float* a, const unsigned char* base,
               float (*sums)[kNarrowColumns]) {
  constexpr int Split = kSplit<R>;
  __m512 acc[R][2][Split];
  for (int i = 0; i < R; ++i)
    for (int s = 0; s < Split; ++s) acc[i][0][s] = acc[i][1][s] = _mm512_setzero_ps();
  auto step = [&](int64_t r, bool odd) {
    if (Bf16) return bf16Step(reinterpret_cast<const uint32_t*>(base) + r * kNarrowColumns);
    return int8Step(reinterpret_cast<const int8_t*>(base) + 2 * r * kNarrowColumns, odd);
  };
  const int64_t pairs = k / 2;
  for (int64_t r = 0; r < pairs; ++r) accumulate<R, true>(acc, step(r, true), a, k, r);
  if (k % 2) accumulate<R, false>(acc, step(pairs, false), a, k, pairs);
  for (int i = 0; i < R; ++i)
    for (int h = 0; h < 2; ++h) {
      __m512 v = acc[i][h][0];
      if (Split > 1) v = _mm512_add_ps(v, acc[i][h][Split - 1]);
      _mm512_storeu_ps(sums[i] + 16 * h, v);
    }
}

/// Rows `rows` of one panel, in tiles of kMaxRows and one tile of the rest.
void widenPanel(const NarrowMatMulParams& p, const float* a, const void* w, const float* scale,
                const float* bias, float* y, int64_t panel, Range rows) {
  const unsigned char* base = narrowPanelStart(p, w, panel);
  const int64_t first = panel * kNarrowColumns;
  if (p.format != WeightFormat::kInt8) scale = nullptr;
  forEachRowTile<kMaxRows>(rows, [&]<int R>(int64_t row) {
    float sums[R][kNarrowColumns];
    if (p.format == WeightFormat::kBf16)
      widenTile<R, true>(p.k, a + row * p.k, base, sums);
    else
      widenTile<R, false>(p.k, a + row * p.k, base, sums);
    storeNarrowRows<R>(p, sums, scale, bias, y, first, row);
  });
}

}  // namespace

/// Wherever AVX-512 is: int8 weights, and bfloat16 ones on CPUs without
/// AVX512_BF16.
bool prefersWidenSkx(const NarrowMatMulParams&) { return true; }

void narrowWidenSkx(const NarrowMatMulParams& p, const float* a, const void* w, const float* scale,
                    const float* bias, float* y, const Team& team) {
  forEachNarrowShare(p, team, [&](int64_t panel, Range rows) {
    widenPanel(p, a, w, scale, bias, y, panel, rows);
  });
}
#pragma GCC diagnostic pop
#else
bool prefersWidenSkx(const NarrowMatMulParams&) { return false; }
void narrowWidenSkx(const NarrowMatMulParams&, const float*, const void*, const float*,
                    const float*, float*, const Team&) {}  // never run: the build lacks its tier
#endif

}  // namespace cgc::rt::detail
