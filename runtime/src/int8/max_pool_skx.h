// The int8 3x3 and 2x2 max pools in 64-byte vectors (max_pool_int8's
// AVX-512 forms), for the tier files that include it: quant_elementwise_skx.cpp
// and quant_elementwise_vbmi.cpp, which differ in how the 3x3 pool's stride 2
// picks a row's even and odd columns (`Columns`); the 2x2 pool's is the same
// in both (quant_elementwise_skx.cpp).
#pragma once

#include "core/isa.h"

#if CGC_ISA_SKX
#include <limits>
#include <type_traits>

#include "cgc/kernels.h"
#include "int8/requant_skx.h"

// GCC 12's vpermq passes _mm512_undefined_* (bug 105593, as requant_skx.h).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED

namespace cgc::rt::detail {

/// The larger of each byte of a and b, int8 or uint8.
template <typename Q>
inline __m512i maxBytes(__m512i a, __m512i b) {
  return std::is_signed_v<Q> ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
}

/// maxPool3x3Plane in 64-byte vectors with masked tails, strides 1 and 2:
/// the compiler's loops ran the 50-byte tails of a 112-column plane byte
/// by byte (ResNet's 64 planes of 112x112 at stride 2). At stride 2,
/// Columns{}.stride2<Q>(a, b, c, d) is the max of the 64 windows of 3
/// columns that start at the even bytes of a then b (c and d: a and b two
/// bytes on).
template <typename Q, typename Columns>
void maxPool3x3Vectors(const PoolParams& p, const Q* x, Q* y, Q* rowMax) {
  const __m512i lowest = _mm512_set1_epi8(static_cast<char>(std::numeric_limits<Q>::min()));
  const auto max = [](__m512i a, __m512i b) { return maxBytes<Q>(a, b); };
  const Columns columns{};
  const int64_t width = p.w_out * p.stride_w + 2;  // rowMax[j] is input column j - pad_left
  for (int64_t oy = 0; oy < p.h_out; ++oy) {
    for (int64_t j = 0; j < width; j += 64) {
      // The lanes inside the image: input columns j - pad_left on.
      const __mmask64 inside = firstBytes(p.w_in + p.pad_left - j) & ~firstBytes(p.pad_left - j);
      __m512i m = lowest;
      for (int64_t kh = 0; kh < 3; ++kh) {
        const int64_t iy = oy * p.stride_h - p.pad_top + kh;
        if (iy < 0 || iy >= p.h_in) continue;
        m = max(m, _mm512_mask_loadu_epi8(lowest, inside, x + iy * p.w_in + j - p.pad_left));
      }
      _mm512_storeu_si512(rowMax + j, m);
    }
    Q* out = y + oy * p.w_out;
    for (int64_t ox = 0; ox < p.w_out; ox += 64) {
      const __mmask64 store = firstBytes(p.w_out - ox);
      const Q* r = rowMax + ox * p.stride_w;
      __m512i v;
      if (p.stride_w == 1) {
        v = max(max(_mm512_loadu_si512(r), _mm512_loadu_si512(r + 1)), _mm512_loadu_si512(r + 2));
      } else {
        const __m512i a = _mm512_loadu_si512(r), b = _mm512_loadu_si512(r + 64);
        const __m512i c = _mm512_loadu_si512(r + 2), d = _mm512_loadu_si512(r + 66);
        v = columns.template stride2<Q>(a, b, c, d);
      }
      _mm512_mask_storeu_epi8(out + ox, store, v);
    }
  }
}

/// 2x2 windows of one plane at strides 1 and 2 (dilation 1) in 64-byte
/// vectors: the max of the two rows, then of each column and the next. At
/// stride 2 a vector of 64 columns is 32 outputs, each 16-bit word's two
/// bytes, narrowed by vpmovwb in registers: a plane of 32 columns is one
/// vector a row where the compiler's loops ran byte by byte.
template <typename Q>
void maxPool2x2Vectors(const PoolParams& p, const Q* x, Q* y, Q* rowMax) {
  const __m512i lowest = _mm512_set1_epi8(static_cast<char>(std::numeric_limits<Q>::min()));
  const int64_t width = (p.w_out - 1) * p.stride_w + 2;  // column j: input column j - pad_left
  for (int64_t oy = 0; oy < p.h_out; ++oy) {
    Q* out = y + oy * p.w_out;
    for (int64_t j = 0; j < width; j += 64) {
      const __mmask64 inside = firstBytes(p.w_in + p.pad_left - j) & ~firstBytes(p.pad_left - j);
      __m512i m = lowest;
      for (int64_t kh = 0; kh < 2; ++kh) {
        const int64_t iy = oy * p.stride_h - p.pad_top + kh;
        if (iy < 0 || iy >= p.h_in) continue;
        m = maxBytes<Q>(m,
                        _mm512_mask_loadu_epi8(lowest, inside, x + iy * p.w_in + j - p.pad_left));
      }
      if (p.stride_w == 1) {
        _mm512_storeu_si512(rowMax + j, m);
        continue;
      }
      // The low byte of word i: the max of columns j + 2i and j + 2i + 1.
      const __m256i pairs = _mm512_cvtepi16_epi8(maxBytes<Q>(m, _mm512_srli_epi16(m, 8)));
      const auto store = static_cast<__mmask32>(firstBytes(p.w_out - j / 2));
      _mm256_mask_storeu_epi8(out + j / 2, store, pairs);
    }
    if (p.stride_w == 1)
      for (int64_t ox = 0; ox < p.w_out; ox += 64) {
        const __m512i v =
            maxBytes<Q>(_mm512_loadu_si512(rowMax + ox), _mm512_loadu_si512(rowMax + ox + 1));
        _mm512_mask_storeu_epi8(out + ox, firstBytes(p.w_out - ox), v);
      }
  }
}

}  // namespace cgc::rt::detail

#pragma GCC diagnostic pop
#endif
