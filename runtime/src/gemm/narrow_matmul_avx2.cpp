// matmul_narrow's WidenAvx2 variant (cgc/kernels/narrow_variants.def), for
// AVX2 with FMA: the WidenSkx kernel (narrow_matmul_skx.cpp) in registers of
// 8 floats. Each step (two rows of W) is widened a quarter of the panel at a
// time (8 columns: bf16 pairs by a shift and a mask, int8 by vpmovsxbd and
// vcvtdq2ps), so that a tile of 2 rows x 32 columns (8 accumulators), the
// broadcast A elements and the quarter's weights fit the 16 registers.
#include "core/isa.h"
#include "gemm/narrow_strategies.h"

#if CGC_ISA_AVX2
#include <immintrin.h>
#endif

namespace cgc::rt::detail {

#if CGC_ISA_AVX2
namespace {

constexpr int kMaxRows = 2;

/// One quarter of a step, widened: the even row's 8 columns and the odd row's.
struct Quarter {
  __m256 even, odd;
};

Quarter bf16Quarter(const uint32_t* pairs) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs));
  return {
      _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)),
      _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))))};
}

__m256 widenBytes(const int8_t* bytes) {
  const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes));
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(raw));
}

/// sums[i][32] = A[i, :] W[:, panel] for R rows of A from `a` (row stride
/// k), the panel's weights (Bf16's format) from `base`.
template <int R, bool Bf16>
void widenTile(int64_t k, const float* a, const unsigned char* base,
               float (*sums)[kNarrowColumns]) {
  __m256 acc[R][4];
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < 4; ++c) acc[i][c] = _mm256_setzero_ps();
  const auto* pairs = reinterpret_cast<const uint32_t*>(base);
  const auto* bytes = reinterpret_cast<const int8_t*>(base);
  for (int64_t r = 0; r < (k + 1) / 2; ++r) {
    const bool odd = 2 * r + 1 < k;
    __m256 even[R], next[R];
    for (int i = 0; i < R; ++i) {
      even[i] = _mm256_set1_ps(a[i * k + 2 * r]);
      next[i] = _mm256_set1_ps(odd ? a[i * k + 2 * r + 1] : 0.0f);
    }
    for (int c = 0; c < 4; ++c) {
      Quarter w;
      if (Bf16) {
        w = bf16Quarter(pairs + r * kNarrowColumns + 8 * c);
      } else {
        const int8_t* row = bytes + 2 * r * kNarrowColumns + 8 * c;
        w = {widenBytes(row), odd ? widenBytes(row + kNarrowColumns) : _mm256_setzero_ps()};
      }
      for (int i = 0; i < R; ++i) {
        acc[i][c] = _mm256_fmadd_ps(even[i], w.even, acc[i][c]);
        acc[i][c] = _mm256_fmadd_ps(next[i], w.odd, acc[i][c]);
      }
    }
  }
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < 4; ++c) _mm256_storeu_ps(sums[i] + 8 * c, acc[i][c]);
}

}  // namespace

/// The kernel wherever AVX2 is and AVX-512 is not.
bool prefersWidenAvx2(const NarrowMatMulParams&) { return true; }

void narrowWidenAvx2(const NarrowMatMulParams& p, const float* a, const void* w, const float* scale,
                     const float* bias, float* y, const Team& team) {
  if (p.format != WeightFormat::kInt8) scale = nullptr;
  forEachNarrowShare(p, team, [&](int64_t panel, Range rows) {
    const unsigned char* base = narrowPanelStart(p, w, panel);
    const int64_t first = panel * kNarrowColumns;
    forEachRowTile<kMaxRows>(rows, [&]<int R>(int64_t row) {
      float sums[R][kNarrowColumns];
      if (p.format == WeightFormat::kBf16)
        widenTile<R, true>(p.k, a + row * p.k, base, sums);
      else
        widenTile<R, false>(p.k, a + row * p.k, base, sums);
      storeNarrowRows<R>(p, sums, scale, bias, y, first, row);
    });
  });
}
#else
bool prefersWidenAvx2(const NarrowMatMulParams&) { return false; }
void narrowWidenAvx2(const NarrowMatMulParams&, const float*, const void*, const float*,
                     const float*, float*, const Team&) {}  // never run: the build lacks its tier
#endif

}  // namespace cgc::rt::detail
