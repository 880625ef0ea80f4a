// The int8 product engine shared by qconv and qgemm: one tile of positions
// times blocks of output channels (quant_microkernels.h), then the
// requantising epilogue, vectorised with AVX2 where the positions are
// contiguous in y or staged so (the matrix product's rows), scalar
// (finishQ) otherwise. Both compute the same
// float operations in the same order (this file is built with
// -ffp-contract=off), so a tile's vector part and its tail agree.
#include <algorithm>
#include <cstring>

#include "core/diagnostics.h"
#include "core/isa.h"
#include "core/scratch.h"
#include "int8/quant_microkernels.h"
#include "int8/requant_skx.h"

namespace cgc::rt::detail {
namespace {

/// The sums of one block for `lanes` positions: the packing's kernel, or
/// the portable loops.
void blockSums(const QProduct& q, const uint8_t* a, int64_t block, int64_t lanes, int32_t* acc) {
  const int64_t nb = q.pack.nb;
  const QPackLayout l{0, (q.depth + kQuad - 1) / kQuad, 0, 0, 0, 0};
  const int64_t quads = l.quads;
  if (q.pack.packing == QPacking::kWide) {
    const auto* w = reinterpret_cast<const int16_t*>(q.packed) + block * quads * nb * kQuad;
    return productPortable(a, w, quads, nb, lanes, acc);
  }
  const auto* w = reinterpret_cast<const int8_t*>(q.packed) + block * quads * nb * kQuad;
#if CGC_ISA_VNNI
  if (nb == kVnniBlock && q.pack.packing == QPacking::kQuads) return productVnni(a, w, quads, acc);
#endif
#if CGC_ISA_AVX2
#if !CGC_ISA_AVXVNNI
  const bool exact = q.pack.packing == QPacking::kQuadsSplit;
#else
  const bool exact = true;
#endif
  if (nb == kAvx2Block && exact) {
    switch ((lanes + 7) / 8) {
      case 1:
        return productAvx2<1>(a, w, quads, acc);
      case 2:
        return productAvx2<2>(a, w, quads, acc);
      case 3:
        return productAvx2<3>(a, w, quads, acc);
      default:
        return productAvx2<4>(a, w, quads, acc);
    }
  }
#endif
  productPortable(a, w, quads, nb, lanes, acc);
}

void addSplits(const QProduct& q, const uint8_t* a, int64_t channel, int64_t lanes, int32_t* acc) {
  const int32_t first = q.splitOffsets[channel], last = q.splitOffsets[channel + 1];
  if (first == last) return;
#if CGC_ISA_AVX2
  addSplitEntries(a, q.splitEntries + 8 * first, last - first, lanes, acc);
#else
  addSplitEntriesPortable(a, q.splitEntries + 8 * first, last - first, lanes, acc);
#endif
}

#if CGC_ISA_AVX2
/// round_half_even(v) + zero clamped to [lo, hi], 8 lanes (roundClamp).
inline __m256i roundClamp8(__m256 v, int32_t zero, int32_t lo, int32_t hi) {
  v = _mm256_max_ps(v, _mm256_set1_ps(static_cast<float>(lo - zero)));
  v = _mm256_min_ps(v, _mm256_set1_ps(static_cast<float>(hi - zero)));
  return _mm256_add_epi32(_mm256_cvtps_epi32(v), _mm256_set1_epi32(zero));
}

inline __m256i loadResidual8(const void* r, bool isSigned) {
  const __m128i bytes = _mm_loadl_epi64(static_cast<const __m128i*>(r));
  return isSigned ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
}

/// Stores 8 int32 in [-128, 255] as bytes.
inline void storeBytes8(void* y, __m256i v) {
  const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
  const __m128i words = _mm_packs_epi32(lo, hi);
  const __m128i bytes = _mm_packus_epi16(_mm_and_si128(words, _mm_set1_epi16(0xff)), words);
  _mm_storel_epi64(static_cast<__m128i*>(y), bytes);
}

/// Eight contiguous results of channel c (finishQ on 8 lanes).
void finish8(const QEpilogue& e, const int32_t* acc, int32_t bias, float multiplier,
             const void* residual, void* y) {
  const __m256i sums = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc)),
                                        _mm256_set1_epi32(bias));
  if (e.kind == QOutput::kInt32) {
    _mm256_storeu_si256(static_cast<__m256i*>(y), sums);
    return;
  }
  const __m256 scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(sums), _mm256_set1_ps(multiplier));
  __m256i q;
  if (e.kind == QOutput::kRequant) {
    q = roundClamp8(scaled, e.y_zero, e.y_min, e.y_max);
  } else {
    const __m256i mid = roundClamp8(scaled, e.mid_zero, e.mid_min, e.mid_max);
    const AddRatios ratio = addRatios(e);
    const __m256 a =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(mid, _mm256_set1_epi32(e.mid_zero))),
                      _mm256_set1_ps(ratio.mid));
    const __m256i r =
        _mm256_sub_epi32(loadResidual8(residual, e.r_signed), _mm256_set1_epi32(e.r_zero));
    const __m256 b = _mm256_mul_ps(_mm256_cvtepi32_ps(r), _mm256_set1_ps(ratio.r));
    q = roundClamp8(_mm256_add_ps(a, b), e.y_zero, e.y_min, e.y_max);
  }
  storeBytes8(y, q);
}
#endif

/// Channel c's results for positions [m0, m0 + lanes) from acc[lanes].
void finishChannel(const QProduct& q, int64_t c, int64_t m0, int64_t lanes, const int32_t* acc) {
  const QEpilogue& e = *q.out;
  const int32_t bias = q.terms.bias[c];
  const float multiplier = e.kind == QOutput::kInt32 ? 1.0f : q.terms.multiplier[c];
  const int64_t size = e.y_type == DType::kI32 ? 4 : 1;
  auto* y = static_cast<uint8_t*>(q.y) + (c * q.cStride) * size;
  const auto* r = static_cast<const uint8_t*>(q.residual) + (q.residual ? c * q.cStride : 0);
  if (q.mStride == 1)
    return finishRow(e, bias, multiplier, acc, lanes, r ? r + m0 : nullptr, y + m0 * size);
  for (int64_t m = 0; m < lanes; ++m) {
    const int64_t at = (m0 + m) * q.mStride;
    const int32_t residual = r ? loadQ(r, at, e.r_signed) : 0;
    storeQ(y, at, e.y_type, finishQ(e, acc[m], bias, multiplier, residual));
  }
}

}  // namespace

void finishRow(const QEpilogue& e, int32_t bias, float multiplier, const int32_t* acc,
               int64_t count, const void* residual, void* y) {
  [[maybe_unused]] const int64_t size = e.y_type == DType::kI32 ? 4 : 1;
  const auto* r = static_cast<const uint8_t*>(residual);
  auto* out = static_cast<uint8_t*>(y);
  int64_t m = 0;
#if CGC_ISA_AVX2
  for (; m + 8 <= count; m += 8)
    finish8(e, acc + m, bias, multiplier, r ? r + m : nullptr, out + m * size);
#endif
  for (; m < count; ++m)
    storeQ(out, m, e.y_type, finishQ(e, acc[m], bias, multiplier, r ? loadQ(r, m, e.r_signed) : 0));
}

namespace {

/// A block of channels of a row-major result (the matrix product's y[m][c]:
/// cStride 1): each channel finished by finishRow into a column of
/// `staged`, its residual gathered likewise, then stored row by row, so
/// that the epilogue runs on vectors rather than on one strided value at
/// a time.
void finishBlockRows(const QProduct& q, int64_t c0, int64_t channels, int64_t m0, int64_t valid,
                     const int32_t* acc) {
  const QEpilogue& e = *q.out;
  const int64_t size = e.y_type == DType::kI32 ? 4 : 1;
  alignas(64) uint8_t staged[kMaxBlock * kQTile * 4];
  alignas(64) uint8_t residual[kMaxBlock * kQTile];
  const auto* r = static_cast<const uint8_t*>(q.residual);
  auto* y = static_cast<uint8_t*>(q.y);
  for (int64_t j = 0; j < channels; ++j) {
    if (r)
      for (int64_t m = 0; m < valid; ++m)
        residual[j * kQTile + m] = r[(m0 + m) * q.mStride + c0 + j];
    const float multiplier = e.kind == QOutput::kInt32 ? 1.0f : q.terms.multiplier[c0 + j];
    finishRow(e, q.terms.bias[c0 + j], multiplier, acc + j * kQTile, valid,
              r ? residual + j * kQTile : nullptr, staged + j * kQTile * size);
  }
  if (size == 1 && channels == kMaxBlock) {
    // A block of 8 bytes a row: an interleaving store group GCC vectorises.
    for (int64_t m = 0; m < valid; ++m) {
      uint8_t row[kMaxBlock];
      for (int64_t j = 0; j < kMaxBlock; ++j) row[j] = staged[j * kQTile + m];
      std::memcpy(y + (m0 + m) * q.mStride + c0, row, kMaxBlock);
    }
    return;
  }
  for (int64_t m = 0; m < valid; ++m) {
    uint8_t* row = y + ((m0 + m) * q.mStride + c0) * size;
    for (int64_t j = 0; j < channels; ++j)
      std::memcpy(row + j * size, staged + (j * kQTile + m) * size, static_cast<size_t>(size));
  }
}

}  // namespace

void qProductTile(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                  int64_t b1) {
  alignas(64) int32_t acc[kMaxBlock * kQTile];
  const int64_t nb = q.pack.nb;
  for (int64_t b = b0; b < b1; ++b) {
    blockSums(q, a, b, valid, acc);
    const int64_t channels = std::min(nb, q.channels - b * nb);
    if (q.pack.packing == QPacking::kQuadsSplit)
      for (int64_t j = 0; j < channels; ++j) addSplits(q, a, b * nb + j, valid, acc + j * kQTile);
    if (q.mStride != 1 && q.cStride == 1) {
      finishBlockRows(q, b * nb, channels, m0, valid, acc);
      continue;
    }
    for (int64_t j = 0; j < channels; ++j)
      finishChannel(q, b * nb + j, m0, valid, acc + j * kQTile);
  }
}

namespace {

/// Columns the scalar loop interleaves: [from, q.count) of row i.
void interleaveTail(const QuadRows& q, int64_t i, int64_t from, uint8_t flip, uint8_t* out) {
  const int64_t at = i * q.srcStep;
  uint8_t* o = out + i * q.outStep;
  for (int64_t j = from; j < q.count; ++j)
    for (int r = 0; r < kQuad; ++r) o[4 * j + r] = q.src[r][at + j * q.stride] ^ flip;
}

}  // namespace

#if CGC_ISA_SKX
// GCC 12's permutes pass _mm512_undefined_* (bug 105593, as requant_skx.h).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED

namespace {

/// interleaveQuad on AVX-512. Stride 1: 64 columns at a time, byte and
/// word unpacks of the 4 rows (as the AVX2 loop) and a transpose of their
/// 128-bit lanes, 16 shuffles. Then 32 at a time, the last masked: lane L
/// of a pair of rows holds the words (row 0's byte, row 1's) of columns
/// 4L .. 4L + 3 then 16 + 4L .. 16 + 4L + 3 (stride 1: a vpermd of each
/// row and a byte unpack; stride 2: each row's even bytes, and a vpermq of
/// the words), so that the word unpacks of the two pairs are the quads of
/// columns 0-15 and 16-31: 8 shuffles. Masked loads and stores only where
/// needed: they made rows of 32 columns (qconv.cpp's tiles) a quarter
/// slower than the AVX2 loop, on Zen 5. (Four vpermt2b per 32 columns, with
/// VBMI, ran slower there.)
template <int kStride>
void interleaveQuads(const QuadRows& q, uint8_t flip, uint8_t* out) {
  const __m512i f = _mm512_set1_epi8(static_cast<char>(flip));
  const __m512i spread = _mm512_set_epi32(0, 0, 7, 3, 0, 0, 6, 2, 0, 0, 5, 1, 0, 0, 4, 0);
  const __m512i halves = _mm512_set_epi64(7, 3, 6, 2, 5, 1, 4, 0);
  const __m512i low = _mm512_set1_epi16(0xFF);
  const int64_t count = q.count;  // a local: the stores could alias q
  for (int64_t i = 0; i < q.rows; ++i) {
    const int64_t at = i * q.srcStep;
    uint8_t* o = out + i * q.outStep;
    int64_t j = 0;
    for (; kStride == 1 && j + 64 <= count; j += 64) {
      const auto load = [&](int r) {
        return _mm512_xor_si512(_mm512_loadu_si512(q.src[r] + at + j), f);
      };
      const __m512i a = load(0), b = load(1), c = load(2), d = load(3);
      const __m512i abLo = _mm512_unpacklo_epi8(a, b), abHi = _mm512_unpackhi_epi8(a, b);
      const __m512i cdLo = _mm512_unpacklo_epi8(c, d), cdHi = _mm512_unpackhi_epi8(c, d);
      // Lane L of qk: the quads of columns 16L + 4k .. 16L + 4k + 3.
      const __m512i q0 = _mm512_unpacklo_epi16(abLo, cdLo), q1 = _mm512_unpackhi_epi16(abLo, cdLo);
      const __m512i q2 = _mm512_unpacklo_epi16(abHi, cdHi), q3 = _mm512_unpackhi_epi16(abHi, cdHi);
      const __m512i t0 = _mm512_shuffle_i64x2(q0, q1, 0x44),
                    t1 = _mm512_shuffle_i64x2(q0, q1, 0xEE);
      const __m512i t2 = _mm512_shuffle_i64x2(q2, q3, 0x44),
                    t3 = _mm512_shuffle_i64x2(q2, q3, 0xEE);
      _mm512_storeu_si512(o + 4 * j, _mm512_shuffle_i64x2(t0, t2, 0x88));
      _mm512_storeu_si512(o + 4 * j + 64, _mm512_shuffle_i64x2(t0, t2, 0xDD));
      _mm512_storeu_si512(o + 4 * j + 128, _mm512_shuffle_i64x2(t1, t3, 0x88));
      _mm512_storeu_si512(o + 4 * j + 192, _mm512_shuffle_i64x2(t1, t3, 0xDD));
    }
    for (; j < count; j += 32) {
      const int64_t n = std::min<int64_t>(32, count - j);
      const __mmask64 in = firstBytes((n - 1) * kStride + 1);
      const auto load = [&](int r) {
        const uint8_t* from = q.src[r] + at + j * kStride;
        if (kStride == 1 && n == 32)
          return _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(from)));
        return _mm512_maskz_loadu_epi8(in, from);
      };
      const auto pair = [&](int r) {
        if constexpr (kStride == 1)
          return _mm512_unpacklo_epi8(_mm512_permutexvar_epi32(spread, load(r)),
                                      _mm512_permutexvar_epi32(spread, load(r + 1)));
        else  // (a & low) | b << 8: A & C | B
          return _mm512_permutexvar_epi64(
              halves,
              _mm512_ternarylogic_epi32(load(r), _mm512_slli_epi16(load(r + 1), 8), low, 0xEC));
      };
      const __m512i p01 = pair(0), p23 = pair(2);
      const __m512i lo = _mm512_xor_si512(_mm512_unpacklo_epi16(p01, p23), f);
      const __m512i hi = _mm512_xor_si512(_mm512_unpackhi_epi16(p01, p23), f);
      if (n == 32) {
        _mm512_storeu_si512(o + 4 * j, lo);
        _mm512_storeu_si512(o + 4 * j + 64, hi);
      } else {
        _mm512_mask_storeu_epi8(o + 4 * j, firstBytes(4 * n), lo);
        _mm512_mask_storeu_epi8(o + 4 * j + 64, firstBytes(4 * n - 64), hi);
      }
    }
  }
}

}  // namespace

void interleaveQuad(const QuadRows& q, uint8_t flip, uint8_t* out) {
  if (q.stride > 2) {
    for (int64_t i = 0; i < q.rows; ++i) interleaveTail(q, i, 0, flip, out);
    return;
  }
  if (q.stride == 1)
    interleaveQuads<1>(q, flip, out);
  else
    interleaveQuads<2>(q, flip, out);
}
#pragma GCC diagnostic pop
#else
void interleaveQuad(const QuadRows& q, uint8_t flip, uint8_t* out) {
  for (int64_t i = 0; i < q.rows; ++i) {
    int64_t j = 0;
#if CGC_ISA_AVX2
    const __m256i f = _mm256_set1_epi8(static_cast<char>(flip));
    const int64_t at = i * q.srcStep;
    auto load = [&](int r) {
      return _mm256_xor_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q.src[r] + at + j)), f);
    };
    for (; q.stride == 1 && j + 32 <= q.count; j += 32) {
      const __m256i a = load(0), b = load(1), c = load(2), d = load(3);
      const __m256i abLo = _mm256_unpacklo_epi8(a, b), abHi = _mm256_unpackhi_epi8(a, b);
      const __m256i cdLo = _mm256_unpacklo_epi8(c, d), cdHi = _mm256_unpackhi_epi8(c, d);
      const __m256i q0 = _mm256_unpacklo_epi16(abLo, cdLo), q1 = _mm256_unpackhi_epi16(abLo, cdLo);
      const __m256i q2 = _mm256_unpacklo_epi16(abHi, cdHi), q3 = _mm256_unpackhi_epi16(abHi, cdHi);
      auto* o = reinterpret_cast<__m256i*>(out + i * q.outStep + 4 * j);
      _mm256_storeu_si256(o, _mm256_permute2x128_si256(q0, q1, 0x20));
      _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(q2, q3, 0x20));
      _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(q0, q1, 0x31));
      _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(q2, q3, 0x31));
    }
#endif
    interleaveTail(q, i, j, flip, out);
  }
}
#endif

ChannelTerms channelTerms(const QEpilogue& e, int64_t first, int64_t channels,
                          const int32_t* weightSums, int32_t activationZero, const float* w_scale,
                          bool perChannel, const int32_t* bias) {
  // A block of kMaxBlock past the last channel reads zeros.
  int32_t* sums = scratch<int32_t>(channels + kMaxBlock);
  float* multipliers = scratch<float>(channels + kMaxBlock);
  std::fill_n(sums + channels, kMaxBlock, 0);
  std::fill_n(multipliers + channels, kMaxBlock, 0.0f);
  const float divisor = e.kind == QOutput::kRequantAdd ? e.mid_scale : e.y_scale;
  for (int64_t c = 0; c < channels; ++c) {
    const int64_t channel = first + c;
    sums[c] = (bias ? bias[channel] : 0) - activationZero * weightSums[channel];
    if (e.kind != QOutput::kInt32)
      multipliers[c] = e.x_scale * w_scale[perChannel ? channel : 0] / divisor;
  }
  return {sums, multipliers};
}

}  // namespace cgc::rt::detail
