// The depthwise int8 convolution's AVX-512 VNNI planes (with VBMI's
// vpermb, or its emulation: byte_permute_skx.h), for qconv_depthwise.cpp:
// one object per kernel call holds the layout of its planes, decided once,
// and runs one channel plane at a time: the DepthwiseVnni variant
// (qconv_variants.def). Builds without AVX-512 VNNI do not define
// CGC_DEPTHWISE_VNNI and lack the variant (every build has its predicate,
// depthwiseVnniFits, for the compiler's choice).
#pragma once

#include "cgc/kernels/quant.h"
#include "core/isa.h"

namespace cgc::rt::detail {

/// Whether a window's 16 outputs fit one vpermb of 64 bytes (stride and
/// dilation): the layers DepthwiseVnni takes (every build asks).
inline bool depthwiseVnniFits(const QConvParams& p) {
  return p.stride_w * 15 + p.dilation_w * 3 < 64;
}

}  // namespace cgc::rt::detail

#if CGC_ISA_VNNI
#define CGC_DEPTHWISE_VNNI 1
#include <immintrin.h>

#include <vector>

#include "int8/byte_permute_skx.h"
#include "int8/requant_skx.h"

namespace cgc::rt::detail {

/// Row mode: each input row built into quads of column taps, 16 output
/// columns a chunk.
struct VnniRows {
  int64_t groups;         // quads of column taps
  int64_t chunks;         // 16 outputs each, per output row
  int64_t rowBytes;       // one built row: [groups][chunks][16][4]
  int64_t paddedLength;   // the zero-point-padded input row
  BytePermutation index;  // byte 4i + l of a chunk: column stride * i + dilation * l of its window
  __mmask64 past[4];      // per group, the bytes whose tap lies past the window (at most 16 taps)
};

/// How flat mode builds 16 quads straight from the input plane: one
/// vpermt2b of two windows of 64 bytes from from[0] and from[1] (masked to
/// the plane), the zero point where `inside` is clear.
struct FlatChunk {
  BytePermutation index;
  int64_t from[2];
  __mmask64 inside, load0, load1;
};

/// Flat mode's plan for a band of output rows: laid end to end, `wrow`
/// positions a row, so that 64 consecutive outputs are one block of four
/// vpdpbusd chains whatever the width (see qconv_depthwise_vnni.cpp).
inline constexpr int64_t kFlatBlocks = 16;
struct FlatPlanes {
  int64_t geometry[12] = {};   // the QConvParams it was planned for (see flatPlanes)
  int64_t wrow = 0;            // flat positions an output row (w_out of them are outputs)
  int64_t rowBytes = 0;        // a padded input row: stride_w * wrow
  int64_t quads = 0;           // quads built per row phase and group
  int64_t blocks = 0;          // of 64 flat positions
  int64_t inputBytes = 0;      // the input rows the plan reads: h_in x w_in
  int64_t taps = 0;            // k_h x groups quads of taps
  int64_t tapOffset[64] = {};  // where tap quad t's quads start in the built bytes
  // Direct (stride and dilation 1, k_w <= 4): no quads are built; the
  // band's padded input rows are laid end to end, wrow bytes apart (one
  // byte a position where the quads took four), and sum vector r of block
  // b reads the dwords at 64 b + r + tapOffset[t]: its lane j is flat
  // position 64 b + 4 j + r, whose window row's quad they are (compact and
  // expand read that order).
  bool direct = false;
  int64_t blockBytes = 256;  // from one block's bytes to the next's
  int64_t vectorStep = 64;   // and from one of its sum vectors' to the next's
  int64_t builtBytes = 0;    // the scratch buildFlat fills
  int64_t first[kFlatBlocks] = {}, count[kFlatBlocks] = {};  // each block's outputs in y
  BytePermutation compact[kFlatBlocks];  // y byte j of a block: its flat byte compact[j]
  BytePermutation expand[kFlatBlocks];   // the inverse, for the residual
  std::vector<FlatChunk> chunks;         // [phase][group][quads / 16]
};

class DepthwiseVnni {
 public:
  explicit DepthwiseVnni(const QConvParams& p);

  /// Whether a window's 16 outputs fit one vpermb (stride and dilation).
  bool usable() const { return usable_; }

  /// Channel taps (int16 w - w_zero, [k_h][k_w]) as int8 quads
  /// ([k_h][groups], zero past k_w) and their sum; false where some tap
  /// does not fit int8 (the caller runs the AVX2 loops).
  bool quadTaps(const int16_t* taps, int32_t* quads, int32_t& sum) const;

  /// One channel plane: x's plane in, y's (and the residual's) plane out;
  /// bias already holds the compensation for x's zero point.
  void plane(const uint8_t* x, const int32_t* quads, int32_t bias, float multiplier,
             const uint8_t* residual, uint8_t* y) const;

 private:
  void padRow(const uint8_t* row, uint8_t* padded) const;
  void buildRow(const uint8_t* padded, uint8_t* out) const;
  void planeRows(const uint8_t* x, const int32_t* quads, int32_t bias, float multiplier,
                 const uint8_t* residual, uint8_t* y) const;
  bool planBands();
  void buildFlat(const FlatPlanes& f, const uint8_t* x) const;
  void flatBand(const FlatPlanes& f, const int32_t* quads, int32_t bias, float multiplier,
                const uint8_t* residual, uint8_t* y) const;

  const QConvParams& p_;
  Requant16 epilogue_;
  bool usable_;
  uint8_t flip_, zero_;  // int8 activations run as uint8: x ^ 0x80, and their zero point
  VnniRows rows_;
  bool fewTaps_;  // k_h, k_w <= 4: quadTaps in one permutation
  __mmask16 tapLoad_, tapLanes_;
  __m256i tapIndex_;  // lane 4 kh + l: tap kh k_w + l
  // Flat mode runs a plane in bands of bandRows_ output rows, at most
  // kFlatBlocks blocks each: the first, the middle ones (all alike) and the
  // last have a plan each (a per-thread cache's). No bands: row mode.
  int64_t bands_, bandRows_;
  const FlatPlanes* bandPlans_[3];
  uint8_t* built_;   // per-thread scratch: the built quads
  uint8_t* padded_;  // and row mode's padded input
};

}  // namespace cgc::rt::detail

#endif
