// Byte permutes across a 512-bit register for the int8 kernels: vpermb and
// vpermt2b (AVX-512 VBMI) where the build has VBMI, else the same result
// from AVX-512BW, so that the VNNI kernels also run on Cascade Lake and
// Cooper Lake (VNNI without VBMI). The emulation fetches the word that
// holds each output byte with two vpermw (vpermt2w), one for the even
// output bytes and one for the odd, and picks the byte within it with two
// vpshufb: 4 instructions, 2 of them once the index is prepared
// (ByteIndex). A permutation by a table known ahead (BytePermutation) takes
// 2 where every 128-bit lane of the result reads at most 4 dwords or 8
// words of the sources: a vpermd or vpermw (vpermt2d, vpermt2w) gathers
// them and a vpshufb picks the bytes.
#pragma once

#include "core/diagnostics.h"
#include "core/isa.h"

#if CGC_ISA_SKX
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

// GCC 12's permutes pass _mm512_undefined_* (bug 105593, as requant_skx.h).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED

namespace cgc::rt::detail {

#if !CGC_ISA_VBMI
/// A byte index prepared for the emulation: the words that hold the even
/// and the odd output bytes' sources (vpermw's and vpermt2w's indices),
/// and vpshufb's index of each output byte within its word's lane.
struct ByteIndex {
  __m512i even, odd, within;
};

inline ByteIndex byteIndex(__m512i index) {
  // within: (i & 14) | (index[i] & 1), i within the lane ((A & B) | C).
  const __m512i pairs = _mm512_set4_epi64(0x0E0E0C0C0A0A0808, 0x0606040402020000,
                                          0x0E0E0C0C0A0A0808, 0x0606040402020000);
  return {_mm512_srli_epi16(index, 1), _mm512_srli_epi16(index, 9),
          _mm512_ternarylogic_epi32(index, _mm512_set1_epi8(1), pairs, 0xEA)};
}

/// The bytes at odd positions.
inline constexpr __mmask64 kOddBytes = 0xAAAAAAAAAAAAAAAA;

/// The two vpshufb of the emulation, from the words of the even (e) and
/// the odd (o) output bytes; the bytes outside k are src's.
inline __m512i pickBytes(const ByteIndex& x, __m512i e, __m512i o) {
  return _mm512_mask_shuffle_epi8(_mm512_shuffle_epi8(e, x.within), kOddBytes, o, x.within);
}
inline __m512i pickBytes(__m512i src, __mmask64 k, const ByteIndex& x, __m512i e, __m512i o) {
  return _mm512_mask_shuffle_epi8(_mm512_mask_shuffle_epi8(src, k & ~kOddBytes, e, x.within),
                                  k & kOddBytes, o, x.within);
}

/// permuteBytes, permuteBytes2 and maskPermuteBytes by a prepared index.
inline __m512i permuteBytes(const ByteIndex& x, __m512i a) {
  return pickBytes(x, _mm512_permutexvar_epi16(x.even, a), _mm512_permutexvar_epi16(x.odd, a));
}
inline __m512i permuteBytes2(__m512i a, const ByteIndex& x, __m512i b) {
  return pickBytes(x, _mm512_permutex2var_epi16(a, x.even, b),
                   _mm512_permutex2var_epi16(a, x.odd, b));
}
inline __m512i maskPermuteBytes(__m512i src, __mmask64 k, const ByteIndex& x, __m512i a) {
  return pickBytes(src, k, x, _mm512_permutexvar_epi16(x.even, a),
                   _mm512_permutexvar_epi16(x.odd, a));
}
#endif

/// vpermb: byte i is a's byte index[i] & 63.
inline __m512i permuteBytes(__m512i index, __m512i a) {
#if CGC_ISA_VBMI
  return _mm512_permutexvar_epi8(index, a);
#else
  return permuteBytes(byteIndex(index), a);
#endif
}

/// vpermt2b: byte i is byte index[i] & 127 of a then b (bit 6: b's).
inline __m512i permuteBytes2(__m512i a, __m512i index, __m512i b) {
#if CGC_ISA_VBMI
  return _mm512_permutex2var_epi8(a, index, b);
#else
  return permuteBytes2(a, byteIndex(index), b);
#endif
}

/// Masked vpermb: permuteBytes(index, a) in the bytes of k, src's elsewhere.
inline __m512i maskPermuteBytes(__m512i src, __mmask64 k, __m512i index, __m512i a) {
#if CGC_ISA_VBMI
  return _mm512_mask_permutexvar_epi8(src, k, index, a);
#else
  return maskPermuteBytes(src, k, byteIndex(index), a);
#endif
}

/// A permutation by a table known ahead (made once, applied often): byte
/// i of the result is byte index[i] of a (index < 64), or of a then b
/// (index < 128), for the bytes of `used`; the others hold anything.
/// Without VBMI it is planned: where each 128-bit lane of the result reads
/// at most 4 dwords (or 8 words) of the sources, a vpermd (vpermw) gathers
/// them into the lane and a vpshufb picks the bytes; otherwise the
/// emulation (ByteIndex). Two vectors either way, so that flat mode's
/// tables (qconv_depthwise_vnni.h) stay small.
class BytePermutation {
 public:
  BytePermutation() = default;
  explicit BytePermutation(const uint8_t (&index)[64], __mmask64 used = ~__mmask64{0}) {
#if CGC_ISA_VBMI
    (void)used;
    index_ = _mm512_loadu_si512(index);
#else
    alignas(64) uint8_t gather[64], pick[64];
    Mode mode = kDwords;
    if (!plan(index, used, 4, gather, pick)) mode = kWords;
    if (mode == kWords && !plan(index, used, 2, gather, pick)) {
      mode = kGeneral;
      std::copy(index, index + 64, gather);
      _mm512_store_si512(pick, byteIndex(_mm512_load_si512(gather)).within);
    }
    pick[0] = static_cast<uint8_t>(pick[0] | mode << 4);  // bits vpshufb ignores
    first_ = _mm512_load_si512(gather);
    second_ = _mm512_load_si512(pick);
#endif
  }

  /// The permutation of a (every index < 64).
  __m512i operator()(__m512i a) const {
#if CGC_ISA_VBMI
    return _mm512_permutexvar_epi8(index_, a);
#else
    const Mode m = mode();
    if (m == kDwords) return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(first_, a), second_);
    if (m == kWords) return _mm512_shuffle_epi8(_mm512_permutexvar_epi16(first_, a), second_);
    return permuteBytes(general(), a);
#endif
  }

  /// The permutation of a then b.
  __m512i operator()(__m512i a, __m512i b) const {
#if CGC_ISA_VBMI
    return _mm512_permutex2var_epi8(a, index_, b);
#else
    const Mode m = mode();
    if (m == kDwords) return _mm512_shuffle_epi8(_mm512_permutex2var_epi32(a, first_, b), second_);
    if (m == kWords) return _mm512_shuffle_epi8(_mm512_permutex2var_epi16(a, first_, b), second_);
    return permuteBytes2(a, general(), b);
#endif
  }

  /// The permutation of a in the bytes of k, src's elsewhere.
  __m512i masked(__m512i src, __mmask64 k, __m512i a) const {
#if CGC_ISA_VBMI
    return _mm512_mask_permutexvar_epi8(src, k, index_, a);
#else
    const Mode m = mode();
    if (m == kDwords)
      return _mm512_mask_shuffle_epi8(src, k, _mm512_permutexvar_epi32(first_, a), second_);
    if (m == kWords)
      return _mm512_mask_shuffle_epi8(src, k, _mm512_permutexvar_epi16(first_, a), second_);
    return maskPermuteBytes(src, k, general(), a);
#endif
  }

 private:
#if CGC_ISA_VBMI
  __m512i index_;
#else
  enum Mode : uint8_t { kDwords, kWords, kGeneral };

  /// The gather (vpermd's or vpermw's index, elements of `size` bytes)
  /// and vpshufb's index, or false where some lane of the result reads
  /// more than 16 / size elements.
  static bool plan(const uint8_t (&index)[64], __mmask64 used, int size, uint8_t (&gather)[64],
                   uint8_t (&pick)[64]) {
    const int slots = 16 / size;  // elements a lane
    std::fill_n(gather, 64, 0);
    std::fill_n(pick, 64, 0);
    for (int lane = 0; lane < 4; ++lane) {
      int elements[8], count = 0;
      for (int i = 16 * lane; i < 16 * lane + 16; ++i) {
        if (!(used >> i & 1)) continue;
        const int element = (index[i] & 127) / size;
        int slot = 0;
        while (slot < count && elements[slot] != element) ++slot;
        if (slot == slots) return false;
        if (slot == count) {
          elements[count++] = element;
          gather[size * (slots * lane + slot)] = static_cast<uint8_t>(element);  // the low byte
        }
        pick[i] = static_cast<uint8_t>(size * slot + index[i] % size);
      }
    }
    return true;
  }

  Mode mode() const {
    return static_cast<Mode>(reinterpret_cast<const uint8_t*>(&second_)[0] >> 4);
  }

  /// kGeneral: the emulation's index, from the table (first_) and `within`
  /// (second_, the mode in bits 4-6 of its first byte, which vpshufb
  /// ignores).
  ByteIndex general() const {
    return {_mm512_srli_epi16(first_, 1), _mm512_srli_epi16(first_, 9), second_};
  }

  // kDwords and kWords: the gather's index and vpshufb's; kGeneral: the
  // table and ByteIndex's `within`. The mode in bits 4-6 of second_'s
  // first byte.
  __m512i first_, second_;
#endif
};

}  // namespace cgc::rt::detail

#pragma GCC diagnostic pop

#endif
