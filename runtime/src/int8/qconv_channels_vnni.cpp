// The int8 direct convolution's product along output channels on vpdpbusd
// (qconv_channels_vnni.h), on AVX-512 VNNI without VBMI (Cascade Lake,
// Cooper Lake): its epilogue's transposes on vpshufb, dword unpacks and
// vpermt2w.
#include "core/isa.h"

#if CGC_ISA_VNNI
#include "int8/qconv_channels_vnni.h"

namespace cgc::rt::detail {
namespace channels {

/// packBytes64's lanes hold [4 positions][4 channels], which
/// one vpshufb (`transpose`) turns into [4 channels][4 positions], and a
/// dword unpack of positions 0-3 and 4-7 into rows of 8 positions: row
/// table h's lane L holds channels 4L + 2h and 4L + 2h + 1 (rowChannel).
/// The residual's row tables hold [8 positions][2 channels] a lane (byte
/// unpacks of its rows, loadResidual), words that the vpermt2w indices
/// toPositions[h] gather as [4 positions][16 channels], positions 4h ..
/// 4h + 3.
struct VnniTransposes {
  __m512i transpose, toPositions[2];

  VnniTransposes() {
    alignas(64) uint8_t bytes[64];
    alignas(64) uint16_t positions[2][32];
    for (int i = 0; i < 64; ++i) bytes[i] = static_cast<uint8_t>(i % 4 * 4 + i % 16 / 4);
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 32; ++i)  // word k of lane j: channels 2k, 2k + 1 at position 4h + j
        positions[h][i] = static_cast<uint16_t>(8 * (i % 8) + 4 * h + i / 8);
    transpose = _mm512_load_si512(bytes);
    for (int h = 0; h < 2; ++h) toPositions[h] = _mm512_load_si512(positions[h]);
  }

  static int rowChannel(int h, int lane) { return 4 * lane + 2 * h; }

  /// Two channels' residual rows as [8 positions][2].
  static __m512i residualPair(__m128i lo, __m128i hi) {
    return _mm512_castsi128_si512(_mm_unpacklo_epi8(lo, hi));
  }
  __m512i residualPositions(const __m512i (&rows)[2], int h) const {
    return _mm512_permutex2var_epi16(rows[0], toPositions[h], rows[1]);
  }
  void rowTables(__m512i a, __m512i b, __m512i (&rows)[2]) const {
    a = _mm512_shuffle_epi8(a, transpose);
    b = _mm512_shuffle_epi8(b, transpose);
    rows[0] = _mm512_unpacklo_epi32(a, b);
    rows[1] = _mm512_unpackhi_epi32(a, b);
  }
};

}  // namespace channels

void channelTilesVnni(const QConvParams& p, const DirectGeometry& g, const uint8_t* planes,
                      const int64_t* offsets, const uint8_t* packed, const int32_t* weightSums,
                      const float* w_scale, const int32_t* bias, const void* residual, void* y,
                      const Team& team) {
  channels::channelTilesWith<channels::VnniTransposes>(p, g, planes, offsets, packed, weightSums,
                                                       w_scale, bias, residual, y, team);
}

}  // namespace cgc::rt::detail
#endif
