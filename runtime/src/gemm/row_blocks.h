// Blocks of 16 outputs along a row, for the kernels that keep a row's
// outputs in AVX-512 registers and read the input rows straight from NCHW
// (3x3 max pooling at stride 1 or 2, alone or after a stem convolution, 3x3
// depthwise convolution): each block's
// loads are masked to the lanes inside the input row, the masks computed
// once per call (computed per load they cost more than the loads).
#pragma once

#include "core/isa.h"

#if CGC_ISA_SKX
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace cgc::rt::detail {

/// The lanes of the 16 columns [first, first + 16) that lie in [0, width).
inline __mmask16 lanesInside(int64_t first, int64_t width) {
  const int64_t a = std::clamp<int64_t>(-first, 0, 16);
  const int64_t b = std::clamp<int64_t>(width - first, 0, 16);
  return static_cast<__mmask16>(b > a ? ((1u << b) - 1) & ~((1u << a) - 1) : 0u);
}

/// A block of 16 outputs of a row: the first, the input column the first
/// reads, the lanes inside the input row of its three 16-column loads, and
/// the lanes it stores (all 16 but in a row of fewer outputs).
struct RowBlock {
  int64_t ow, first;
  __mmask16 lanes[3];
  __mmask16 outputs;
};

/// The blocks covering a row of wOut outputs at `stride`; the last overlaps
/// the one before it (its outputs are computed twice, the same), and a row
/// of fewer than 16 is one block that stores wOut lanes.
inline std::vector<RowBlock> rowBlocks(int64_t wOut, int64_t wIn, int64_t stride, int64_t padLeft) {
  std::vector<RowBlock> blocks;
  for (int64_t ow0 = 0; ow0 < wOut; ow0 += 16) {
    RowBlock b{std::max<int64_t>(0, std::min(ow0, wOut - 16)), 0, {}, 0};
    b.first = b.ow * stride - padLeft;
    for (int l = 0; l < 3; ++l) b.lanes[l] = lanesInside(b.first + 16 * l, wIn);
    b.outputs = lanesInside(0, wOut - b.ow);
    blocks.push_back(b);
  }
  return blocks;
}

/// For 16 outputs of a 3-wide window at stride 2 over the columns
/// v0 | v1 | v2 (48 from the first one read): the columns each output's
/// three taps read, 2i, 2i + 1 and 2i + 2.
inline void strideTwoTaps(__m512 v0, __m512 v1, __m512 v2, __m512& even, __m512& odd,
                          __m512& nextEven) {
  const __m512i evens =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  even = _mm512_permutex2var_ps(v0, evens, v1);
  odd = _mm512_permutex2var_ps(v0, _mm512_add_epi32(evens, _mm512_set1_epi32(1)), v1);
  nextEven = _mm512_castsi512_ps(
      _mm512_alignr_epi32(_mm512_castps_si512(v2), _mm512_castps_si512(even), 1));
}

/// One output row of a 3x3 max pooling at stride 2: out[ow] =
/// finish(max of the window) for the blocks of the row, over the `count`
/// (1 to 3) input rows inside the image; columns outside a row are -inf.
template <typename Finish>
void maxPoolRow3x3Stride2(const float* const* rows, int count, const std::vector<RowBlock>& blocks,
                          float* out, Finish finish) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (const RowBlock& b : blocks) {
    __m512 v0 = lowest, v1 = lowest, v2 = lowest;
    for (int r = 0; r < count; ++r) {
      v0 = _mm512_max_ps(v0, _mm512_mask_loadu_ps(lowest, b.lanes[0], rows[r] + b.first));
      v1 = _mm512_max_ps(v1, _mm512_mask_loadu_ps(lowest, b.lanes[1], rows[r] + b.first + 16));
      v2 = _mm512_max_ps(v2, _mm512_mask_loadu_ps(lowest, b.lanes[2], rows[r] + b.first + 32));
    }
    __m512 even, odd, nextEven;
    strideTwoTaps(v0, v1, v2, even, odd, nextEven);
    _mm512_mask_storeu_ps(out + b.ow, b.outputs,
                          finish(_mm512_max_ps(_mm512_max_ps(even, odd), nextEven)));
  }
}

/// The same at stride 1: the 18 columns under 16 outputs are two masked
/// loads per input row, the rows' maxima two, the next two columns two
/// aligns.
inline void maxPoolRow3x3Stride1(const float* const* rows, int count,
                                 const std::vector<RowBlock>& blocks, float* out) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (const RowBlock& b : blocks) {
    __m512 v0 = lowest, v1 = lowest;
    for (int r = 0; r < count; ++r) {
      v0 = _mm512_max_ps(v0, _mm512_mask_loadu_ps(lowest, b.lanes[0], rows[r] + b.first));
      v1 = _mm512_max_ps(v1, _mm512_mask_loadu_ps(lowest, b.lanes[1], rows[r] + b.first + 16));
    }
    const __m512i low = _mm512_castps_si512(v0), high = _mm512_castps_si512(v1);
    const __m512 next = _mm512_castsi512_ps(_mm512_alignr_epi32(high, low, 1));
    const __m512 afterNext = _mm512_castsi512_ps(_mm512_alignr_epi32(high, low, 2));
    _mm512_mask_storeu_ps(out + b.ow, b.outputs, _mm512_max_ps(_mm512_max_ps(v0, next), afterNext));
  }
}

}  // namespace cgc::rt::detail

#endif
