// The int8 product engine shared by qconv and qgemm: one tile of positions
// times blocks of output channels (quant_microkernels.h), then the
// requantising epilogue, vectorised with AVX2 where the positions are
// contiguous in y, scalar (finishQ) otherwise. Both compute the same
// float operations in the same order (this file is built with
// -ffp-contract=off), so a tile's vector part and its tail agree.
#include "quant_avx512.h"
#include "quant_microkernels.h"
#include "scratch.h"

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
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
  if (nb == kVnniBlock && q.pack.packing == QPacking::kQuads) return productVnni(a, w, quads, acc);
#endif
#if defined(__AVX2__)
#if !defined(__AVXVNNI__)
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
#if defined(__AVX2__)
  addSplitEntries(a, q.splitEntries + 8 * first, last - first, lanes, acc);
#else
  addSplitEntriesPortable(a, q.splitEntries + 8 * first, last - first, lanes, acc);
#endif
}

#if defined(__AVX2__)
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
    const __m256 a =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(mid, _mm256_set1_epi32(e.mid_zero))),
                      _mm256_set1_ps(e.mid_scale));
    const __m256i r =
        _mm256_sub_epi32(loadResidual8(residual, e.r_signed), _mm256_set1_epi32(e.r_zero));
    const __m256 b = _mm256_mul_ps(_mm256_cvtepi32_ps(r), _mm256_set1_ps(e.r_scale));
    q = roundClamp8(_mm256_div_ps(_mm256_add_ps(a, b), _mm256_set1_ps(e.y_scale)), e.y_zero,
                    e.y_min, e.y_max);
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
#if defined(__AVX2__)
  for (; m + 8 <= count; m += 8)
    finish8(e, acc + m, bias, multiplier, r ? r + m : nullptr, out + m * size);
#endif
  for (; m < count; ++m)
    storeQ(out, m, e.y_type, finishQ(e, acc[m], bias, multiplier, r ? loadQ(r, m, e.r_signed) : 0));
}

void qProductTile(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                  int64_t b1) {
  alignas(64) int32_t acc[kMaxBlock * kQTile];
  const int64_t nb = q.pack.nb;
  for (int64_t b = b0; b < b1; ++b) {
    blockSums(q, a, b, valid, acc);
    for (int64_t j = 0; j < nb; ++j) {
      const int64_t c = b * nb + j;
      if (c >= q.channels) break;
      if (q.pack.packing == QPacking::kQuadsSplit) addSplits(q, a, c, valid, acc + j * kQTile);
      finishChannel(q, c, m0, valid, acc + j * kQTile);
    }
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

#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, as quant_avx512.h
namespace {

/// interleaveQuad's permutations at stride s (1 or 2): bytes 2j + h of a
/// pair are column j of row h of two; bytes 4j + k of a quad (half 0 or
/// 1 of 32 columns) are byte 2j + k % 2 of pair k / 2.
struct QuadIndex {
  __m512i pair, quad[2];
  explicit QuadIndex(int64_t s) {
    alignas(64) uint8_t pair[64], quad[2][64];
    for (int j = 0; j < 32; ++j)
      for (int h = 0; h < 2; ++h) pair[2 * j + h] = static_cast<uint8_t>(j * s + 64 * h);
    for (int half = 0; half < 2; ++half)
      for (int j = 0; j < 16; ++j)
        for (int k = 0; k < 4; ++k)
          quad[half][4 * j + k] = static_cast<uint8_t>(64 * (k / 2) + 2 * (16 * half + j) + k % 2);
    this->pair = _mm512_load_si512(pair);
    this->quad[0] = _mm512_load_si512(quad[0]);
    this->quad[1] = _mm512_load_si512(quad[1]);
  }
};

}  // namespace

void interleaveQuad(const QuadRows& q, uint8_t flip, uint8_t* out) {
  static const QuadIndex indices[2] = {QuadIndex(1), QuadIndex(2)};
  if (q.stride > 2) {
    for (int64_t i = 0; i < q.rows; ++i) interleaveTail(q, i, 0, flip, out);
    return;
  }
  // 32 columns at a time, the last masked: two vpermt2b pair the rows,
  // two more interleave the pairs.
  const QuadIndex& x = indices[q.stride - 1];
  const __m512i f = _mm512_set1_epi8(static_cast<char>(flip));
  for (int64_t i = 0; i < q.rows; ++i) {
    const int64_t at = i * q.srcStep;
    uint8_t* o = out + i * q.outStep;
    for (int64_t j = 0; j < q.count; j += 32) {
      const int64_t n = std::min<int64_t>(32, q.count - j);
      const __mmask64 in = firstBytes((n - 1) * q.stride + 1);
      const auto load = [&](int r) {
        return _mm512_maskz_loadu_epi8(in, q.src[r] + at + j * q.stride);
      };
      const __m512i p01 = _mm512_permutex2var_epi8(load(0), x.pair, load(1));
      const __m512i p23 = _mm512_permutex2var_epi8(load(2), x.pair, load(3));
      for (int half = 0; half < 2; ++half)
        _mm512_mask_storeu_epi8(
            o + 4 * j + 64 * half, firstBytes(4 * n - 64 * half),
            _mm512_xor_si512(_mm512_permutex2var_epi8(p01, x.quad[half], p23), f));
    }
  }
}
#pragma GCC diagnostic pop
#else
void interleaveQuad(const QuadRows& q, uint8_t flip, uint8_t* out) {
  for (int64_t i = 0; i < q.rows; ++i) {
    int64_t j = 0;
#if defined(__AVX2__)
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
