// The int8 kernels' AVX-512 epilogue, 16 lanes at a time: finishQ on
// int32 sums in a register, and the masked loads and stores of the
// quantised tensors it reads (a residual) and writes. The direct and the
// depthwise convolutions of AVX-512 VNNI builds share it. Built with
// -ffp-contract=off like the rest of the int8 kernels, so that it rounds as
// finishQ does (quant_support.h).
#pragma once

#include "core/diagnostics.h"
#include "core/isa.h"

#if CGC_ISA_SKX
#include <immintrin.h>

#include "int8/quant_support.h"

// GCC 12's AVX-512 conversions and min/max pass _mm512_undefined_* as the
// masked-off source, which -Wmaybe-uninitialized reports once inlined (GCC
// bug 105593, a false positive).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED

namespace cgc::rt::detail {

/// A QEpilogue's constants as vectors, made once per kernel call: the
/// epilogue runs for every 16 outputs, and building them there (int to
/// float conversions and broadcasts) took as long as the requantisation.
struct Requant16 {
  QOutput kind;
  DType type;
  bool rSigned;
  __m512 low, high, midLow, midHigh, midRatio, rRatio;  // the ratios: addRatios
  __m512i zero, rZero;
  __m512i zero16, low8, high8;  // packBytes64's: y_zero as int16, y_min and y_max as bytes
  __m512i order;                // vpermd's index from packBytes64's order to vector order

  explicit Requant16(const QEpilogue& e)
      : kind(e.kind),
        type(e.y_type),
        rSigned(e.r_signed),
        low(_mm512_set1_ps(static_cast<float>(e.y_min - e.y_zero))),
        high(_mm512_set1_ps(static_cast<float>(e.y_max - e.y_zero))),
        midLow(_mm512_set1_ps(static_cast<float>(e.mid_min - e.mid_zero))),
        midHigh(_mm512_set1_ps(static_cast<float>(e.mid_max - e.mid_zero))),
        midRatio(_mm512_set1_ps(addRatios(e).mid)),
        rRatio(_mm512_set1_ps(addRatios(e).r)),
        zero(_mm512_set1_epi32(e.y_zero)),
        rZero(_mm512_set1_epi32(e.r_zero)),
        zero16(_mm512_set1_epi16(static_cast<int16_t>(e.y_zero))),
        low8(_mm512_set1_epi8(static_cast<char>(e.y_min))),
        high8(_mm512_set1_epi8(static_cast<char>(e.y_max))),
        order(packOrderIndex()) {}

  /// Byte 16 v + i: where packBytes64 put vector v's lane i.
  static constexpr uint8_t packOrderByte(int64_t i) {
    return static_cast<uint8_t>(16 * (i % 16 / 4) + 4 * (i / 16) + i % 4);
  }
  /// The same as dwords: packBytes64's order moves whole dwords (a 4x4
  /// transpose), so one vpermd (AVX-512F) undoes it.
  static __m512i packOrderIndex() {
    alignas(64) int32_t index[16];
    for (int64_t d = 0; d < 16; ++d) index[d] = packOrderByte(4 * d) / 4;
    return _mm512_load_si512(index);
  }
};

/// roundClamp on 16 lanes: clamp in float (NaN to low), round half to even.
inline __m512i roundClamp16(__m512 v, __m512 low, __m512 high, __m512i zero) {
  v = _mm512_min_ps(_mm512_max_ps(v, low), high);
  return _mm512_add_epi32(_mm512_cvtps_epi32(v), zero);
}

/// kRequantAdd's output before its rounding, from the scaled sums and the
/// residual r: (mid - mid_zero) mid_ratio + (r - r_zero) r_ratio. The
/// rounding of mid is vrndscaleps: the float of roundClamp16's integer.
inline __m512 residualSum16(const Requant16& e, __m512 scaled, __m512i r) {
  const __m512 mid = _mm512_roundscale_ps(_mm512_min_ps(_mm512_max_ps(scaled, e.midLow), e.midHigh),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 b = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(r, e.rZero)), e.rRatio);
  return _mm512_add_ps(_mm512_mul_ps(mid, e.midRatio), b);
}

/// finishQ on 16 sums that already hold their bias (r: the residual,
/// kRequantAdd), a multiplier per lane (the product along channels) or one
/// for all.
inline __m512i requant16(const Requant16& e, __m512i sums, __m512 multiplier, __m512i r) {
  if (e.kind == QOutput::kInt32) return sums;
  const __m512 scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(sums), multiplier);
  if (e.kind == QOutput::kRequant) return roundClamp16(scaled, e.low, e.high, e.zero);
  return roundClamp16(residualSum16(e, scaled, r), e.low, e.high, e.zero);
}

/// kRequant's 16 sums (bias included) scaled and rounded, before the zero
/// point and the clamp, which packBytes64 adds on 64 lanes at once
/// (packsToBytes must hold).
inline __m512i scaleRound16(__m512i sums, __m512 multiplier) {
  return _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(sums), multiplier));
}
inline __m512i scaleRound16(__m512i sums, float multiplier) {
  return scaleRound16(sums, _mm512_set1_ps(multiplier));
}

/// kRequantAdd's 16 outputs rounded, before the zero point and the clamp
/// (packsToBytes must hold).
inline __m512i residualRound16(const Requant16& e, __m512i sums, __m512 multiplier, __m512i r) {
  const __m512 scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(sums), multiplier);
  return _mm512_cvtps_epi32(residualSum16(e, scaled, r));
}

/// Four vectors of 16 int32 as 64 bytes of y's type (int8 or uint8): plus
/// `zero16` (int16 lanes) and clamped to [y_min, y_max], with saturation
/// at every narrowing, which keeps out-of-range values on their side. In
/// pack order: byte 16 L + 4 v + k is vector v's lane 4 L + k
/// (a vpermd by Requant16::order puts them in order). Half the instructions of
/// narrow16 per vector: the epilogue is most of a shallow layer's time.
inline __m512i packBytes64(const Requant16& e, __m512i v0, __m512i v1, __m512i v2, __m512i v3,
                           __m512i zero16) {
  const __m512i low = _mm512_adds_epi16(_mm512_packs_epi32(v0, v1), zero16);
  const __m512i high = _mm512_adds_epi16(_mm512_packs_epi32(v2, v3), zero16);
  if (e.type == DType::kI8)
    return _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(low, high), e.low8), e.high8);
  return _mm512_min_epu8(_mm512_max_epu8(_mm512_packus_epi16(low, high), e.low8), e.high8);
}

inline __m512i requant16(const Requant16& e, __m512i sums, float multiplier, __m512i r) {
  return requant16(e, sums, _mm512_set1_ps(multiplier), r);
}

/// finishQ on 16 lanes.
inline __m512i finish16(const Requant16& e, __m512i acc, int32_t bias, float multiplier,
                        __m512i r) {
  return requant16(e, _mm512_add_epi32(acc, _mm512_set1_epi32(bias)), multiplier, r);
}

/// The first `count` of 64 bytes (none for count <= 0, all from 64 on).
inline __mmask64 firstBytes(int64_t count) {
  return count >= 64 ? ~__mmask64{0} : count <= 0 ? 0 : (__mmask64{1} << count) - 1;
}

/// The lanes [first, first + count) of 16 (count <= 16 - first).
inline __mmask16 lanes16(int64_t first, int64_t count) {
  return static_cast<__mmask16>(((uint32_t{1} << count) - 1) << first);
}

/// 16 int8 or uint8 values as int32, the lanes outside `mask` kept from
/// `into` (p: lane 0's address; only the masked lanes are read).
inline __m128i loadBytes16(__m128i into, __mmask16 mask, const void* p) {
  return _mm_mask_loadu_epi8(into, mask, p);
}
inline __m512i widen16(__m128i bytes, bool isSigned) {
  return isSigned ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
}

/// 16 lanes within an int8 or uint8 range as bytes of that type.
inline __m128i narrow16(DType type, __m512i q) {
  return type == DType::kI8 ? _mm512_cvtsepi32_epi8(q) : _mm512_cvtusepi32_epi8(q);
}

/// Stores the masked lanes of q as y's type (p: lane 0's address; only the
/// masked lanes are written). q is already within the type's range.
inline void storeQ16(void* p, __mmask16 mask, DType type, __m512i q) {
  if (type == DType::kI32) return _mm512_mask_storeu_epi32(p, mask, q);
  _mm_mask_storeu_epi8(p, mask, narrow16(type, q));
}

}  // namespace cgc::rt::detail

#pragma GCC diagnostic pop

#endif
