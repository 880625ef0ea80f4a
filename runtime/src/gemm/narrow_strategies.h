// The variants of matmul_narrow (cgc/kernels/narrow_variants.def), each in
// a file named by its tier: narrow_matmul_bf16.cpp (vdpbf16ps),
// narrow_matmul_skx.cpp and narrow_matmul_avx2.cpp (the weights widened to
// float in registers), narrow_matmul.cpp (the portable loops): the
// declarations of their functions, which narrow_matmul.cpp's dispatch table
// lists, and what they share: where a panel's weights start, the split of
// the work over the team, and the epilogue.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cgc/kernels.h"

namespace cgc::rt::detail {

inline constexpr int64_t kNarrowColumns = kNarrowPanel;

inline int64_t narrowPanels(int64_t n) { return (n + kNarrowColumns - 1) / kNarrowColumns; }

/// Where panel `panel`'s packed weights start.
inline const unsigned char* narrowPanelStart(const NarrowMatMulParams& p, const void* w,
                                             int64_t panel) {
  return static_cast<const unsigned char*>(w) +
         panel * narrow_weights_bytes(p.format, p.k, kNarrowColumns);
}

/// Calls body(panel, rows) for this thread's share of the product: panels
/// of columns split over the team where there are as many as threads or
/// the rows are fewer than the threads (a decoder's one row), else rows.
template <typename Body>
void forEachNarrowShare(const NarrowMatMulParams& p, const Team& team, Body body) {
  const int64_t count = narrowPanels(p.n);
  if (count >= team.size() || p.m < team.size()) {
    const Range mine = team.split(count);
    for (int64_t panel = mine.begin; panel < mine.end; ++panel) body(panel, Range{0, p.m});
    return;
  }
  const Range rows = team.split(p.m);
  for (int64_t panel = 0; panel < count; ++panel) body(panel, rows);
}

/// Stores one row of a panel: y[first + j] = act(sums[j] * scale + bias)
/// for the panel's `width` columns (scale: kInt8's, else null).
inline void storeNarrowRow(const NarrowMatMulParams& p, const float* sums, const float* scale,
                           const float* bias, float* y, int64_t first) {
  const int64_t width = std::min(kNarrowColumns, p.n - first);
  float lo = -__builtin_inff(), hi = __builtin_inff();
  if (p.activation == Activation::kRelu) lo = 0.0f;
  if (p.activation == Activation::kClip) lo = p.act_min, hi = p.act_max;
  for (int64_t j = 0; j < width; ++j) {
    float v = sums[j];
    if (scale) v *= scale[first + j];
    if (bias) v += bias[first + j];
    y[first + j] = std::min(std::max(v, lo), hi);
  }
}

/// Calls tile.template operator()<R>(row) over rows: tiles of Max rows,
/// then one tile of the R < Max rows left.
template <int Max, typename Tile>
void forEachRowTile(Range rows, Tile&& tile) {
  int64_t row = rows.begin;
  for (; row + Max <= rows.end; row += Max) tile.template operator()<Max>(row);
  if constexpr (Max > 1)
    if (row < rows.end) forEachRowTile<Max - 1>(Range{row, rows.end}, tile);
}

/// Stores R rows of a panel's sums, from row `row` of Y (storeNarrowRow).
template <int R>
void storeNarrowRows(const NarrowMatMulParams& p, const float (*sums)[kNarrowColumns],
                     const float* scale, const float* bias, float* y, int64_t first, int64_t row) {
  for (int i = 0; i < R; ++i) storeNarrowRow(p, sums[i], scale, bias, y + (row + i) * p.n, first);
}

/// Each variant's functions: prefers<Name> (whether it should run p rather
/// than the variants after it) and narrow<Name> (matmul_narrow's
/// signature). In a build without the variant's tier, prefers<Name> is
/// false and narrow<Name> is never run.
#define CGC_NARROW_VARIANT(name, tier, bf16, int8)                              \
  bool prefers##name(const NarrowMatMulParams& p);                              \
  void narrow##name(const NarrowMatMulParams& p, const float* a, const void* w, \
                    const float* scale, const float* bias, float* y, const Team& team);
#include "cgc/kernels/narrow_variants.def"
#undef CGC_NARROW_VARIANT

}  // namespace cgc::rt::detail
