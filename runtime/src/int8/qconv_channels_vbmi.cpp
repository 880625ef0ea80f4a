// The int8 direct convolution's product along output channels on vpdpbusd
// (qconv_channels_vnni.h), with AVX-512 VBMI (Ice Lake and later, Zen 4):
// its epilogue's transposes on vpermt2b.
#include "core/isa.h"

#if CGC_ISA_VBMI
#include "int8/qconv_channels_vnni.h"

namespace cgc::rt::detail {
namespace channels {

/// The vpermt2b indices between packBytes64's order and rows of 8
/// positions: toRows[h] gathers channels 8h .. 8h + 7 of positions 0-3
/// (packBytes64 of them: the first table) and 4-7 (the second) as [8
/// channels][8 positions]; toPositions[h] gathers positions 4h .. 4h + 3
/// of two such row tables as [4 positions][16 channels].
struct VbmiTransposes {
  __m512i toRows[2], toPositions[2];

  VbmiTransposes() {
    alignas(64) uint8_t rows[2][64], positions[2][64];
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 64; ++i) {
        const int ch = 8 * h + i / 8, p = i % 8;  // rows: byte 8 (ch % 8) + p
        const int packed = 16 * (ch / 4) + 4 * (p % 4) + ch % 4;
        rows[h][i] = static_cast<uint8_t>(p < 4 ? packed : 64 + packed);
        const int q = 4 * h + i / 16, c = i % 16;  // positions: byte 16 (q % 4) + c
        positions[h][i] = static_cast<uint8_t>(c < 8 ? 8 * c + q : 64 + 8 * (c - 8) + q);
      }
    for (int h = 0; h < 2; ++h) {
      toRows[h] = _mm512_load_si512(rows[h]);
      toPositions[h] = _mm512_load_si512(positions[h]);
    }
  }

  /// The first of the two channels that lane `lane` of storeRows' row table h holds.
  static int rowChannel(int h, int lane) { return 8 * h + 2 * lane; }

  /// Two channels' residual rows as [2][8 positions].
  static __m512i residualPair(__m128i lo, __m128i hi) {
    return _mm512_castsi128_si512(_mm_unpacklo_epi64(lo, hi));
  }
  __m512i residualPositions(const __m512i (&rows)[2], int h) const {
    return _mm512_permutex2var_epi8(rows[0], toPositions[h], rows[1]);
  }
  void rowTables(__m512i a, __m512i b, __m512i (&rows)[2]) const {
    for (int h = 0; h < 2; ++h) rows[h] = _mm512_permutex2var_epi8(a, toRows[h], b);
  }
};

}  // namespace channels

void channelTilesVbmi(const QConvParams& p, const DirectGeometry& g, const uint8_t* planes,
                      const int64_t* offsets, const uint8_t* packed, const int32_t* weightSums,
                      const float* w_scale, const int32_t* bias, const void* residual, void* y,
                      const Team& team) {
  channels::channelTilesWith<channels::VbmiTransposes>(p, g, planes, offsets, packed, weightSums,
                                                       w_scale, bias, residual, y, team);
}

}  // namespace cgc::rt::detail
#endif
