// What the int8 kernels share: value ranges of the quantised types, the
// scalar quantise and requantise steps (the reference the vector code
// matches), and the int8 product engine that qconv and qgemm both run:
// activations packed into tiles of 32 positions x 4 depths of uint8,
// weights packed by packQWeights, a micro-kernel per instruction set
// (quant_microkernels.h) and the requantising epilogue.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cgc/kernels/quant.h"

namespace cgc::rt::detail {

/// Positions per activation tile, depths per quad, the most output
/// channels per packed block.
inline constexpr int64_t kQTile = 32;
inline constexpr int64_t kQuad = 4;
inline constexpr int64_t kMaxBlock = 8;
/// The blocks of output channels of the VNNI and the AVX2 kernels.
inline constexpr int64_t kVnniBlock = 8;
inline constexpr int64_t kAvx2Block = 3;

inline int32_t qmin(DType t) { return t == DType::kI8 ? -128 : t == DType::kU8 ? 0 : INT32_MIN; }
inline int32_t qmax(DType t) { return t == DType::kI8 ? 127 : t == DType::kU8 ? 255 : INT32_MAX; }

/// An int8 or uint8 element as int32.
inline int32_t loadQ(const void* p, int64_t i, bool isSigned) {
  return isSigned ? static_cast<const int8_t*>(p)[i] : static_cast<const uint8_t*>(p)[i];
}

/// A zero point (null: 0) of type `t`, element i.
inline int32_t zeroPoint(const void* zero, DType t, int64_t i) {
  if (!zero) return 0;
  switch (t) {
    case DType::kI8:
      return static_cast<const int8_t*>(zero)[i];
    case DType::kU8:
      return static_cast<const uint8_t*>(zero)[i];
    case DType::kI32:
      return static_cast<const int32_t*>(zero)[i];
    default:
      return 0;
  }
}

inline void storeQ(void* p, int64_t i, DType t, int32_t v) {
  switch (t) {
    case DType::kI8:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
      break;
    case DType::kU8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      break;
    default:
      static_cast<int32_t*>(p)[i] = v;
      break;
  }
}

/// v clamped to [below, above], NaN to below: std::fmin(std::fmax(v, below),
/// above), written as compares so that loops over it vectorise (GCC keeps
/// fmin and fmax scalar: QuantizeLinear ran far slower than ONNX Runtime's).
inline float clampToRange(float v, float below, float above) {
  v = v >= below ? v : below;
  return v <= above ? v : above;
}

/// round_half_even(v) + zero clamped to [lo, hi], NaN to lo (as MLAS:
/// clamp in float, then convert).
inline int32_t roundClamp(float v, int32_t zero, int32_t lo, int32_t hi) {
  v = clampToRange(v, static_cast<float>(lo - zero), static_cast<float>(hi - zero));
  return static_cast<int32_t>(std::nearbyint(v)) + zero;
}

/// kRequantAdd's multipliers of mid - mid_zero and r - r_zero (quant.h).
struct AddRatios {
  float mid, r;
};
inline AddRatios addRatios(const QEpilogue& e) {
  return {e.mid_scale / e.y_scale, e.r_scale / e.y_scale};
}

/// The epilogue of one sum, scalar (the vector epilogues compute the same).
/// `bias` already holds the zero-point compensation; `r` is the residual.
inline int32_t finishQ(const QEpilogue& e, int32_t acc, int32_t bias, float multiplier, int32_t r) {
  if (e.kind == QOutput::kInt32) return acc + bias;
  const float scaled = static_cast<float>(acc + bias) * multiplier;
  if (e.kind == QOutput::kRequant) return roundClamp(scaled, e.y_zero, e.y_min, e.y_max);
  const int32_t mid = roundClamp(scaled, e.mid_zero, e.mid_min, e.mid_max);
  const AddRatios ratio = addRatios(e);
  const float a = static_cast<float>(mid - e.mid_zero) * ratio.mid;
  const float b = static_cast<float>(r - e.r_zero) * ratio.r;
  return roundClamp(a + b, e.y_zero, e.y_min, e.y_max);
}

/// Whether the epilogue may round before it adds the zero point and
/// clamps, and narrow to bytes with saturation (requant_skx.h's
/// packBytes64): the clamp bounds are integers, so clamp-then-round and
/// round-then-clamp agree wherever the rounding stays within int32. So it
/// does for an int8 or uint8 y where kRequant's multipliers (`count` of
/// them) are at most 1/2, which any int32 sum then keeps within int32
/// (quantised models' are about 1e-2 to 1e-4), and where kRequantAdd's
/// output, at most 255 (mid_scale + r_scale) / y_scale in magnitude (mid
/// and r are 8-bit), is within 2^30.
inline bool packsToBytes(const QEpilogue& e, const float* multipliers, int64_t count) {
  if (e.y_type == DType::kI32) return false;
  if (e.kind == QOutput::kRequantAdd) {
    const double bound = 255.0 * (std::abs(e.mid_scale) + std::abs(e.r_scale)) / e.y_scale;
    return std::isfinite(bound) && bound <= 0x1p30;
  }
  return e.kind == QOutput::kRequant &&
         std::all_of(multipliers, multipliers + count, [](float m) { return std::abs(m) <= 0.5f; });
}

/// Per output channel: the int32 added to every sum (the bias minus the
/// activations' zero point times the channel's weight sum) and the
/// requantisation multiplier.
struct ChannelTerms {
  const int32_t* bias;
  const float* multiplier;
};

/// Where the product engine reads its weights and writes its results.
struct QProduct {
  int64_t depth;     // K: depths per output channel
  int64_t channels;  // N: output channels of this group
  const uint8_t* packed;
  QPackInfo pack;
  const int32_t* splitOffsets;  // kQuadsSplit: per channel, into splitEntries
  const uint8_t* splitEntries;
  ChannelTerms terms;
  const QEpilogue* out;
  // y (and the residual) at channel c, position m: base + c * cStride + m * mStride.
  void* y;
  const void* residual;
  int64_t cStride, mStride;
};

/// The offsets of the parts of packQWeights' output.
struct QPackLayout {
  int64_t blocks, quads, weightBytes, sumsOffset, splitOffset, entriesOffset;
};
QPackLayout qPackLayout(const QWeightShape& s, const QPackInfo& info);

/// Runs the product for one tile of `valid` (<= kQTile) positions starting
/// at m0, over the output-channel blocks [b0, b1): `a` is the tile as
/// [quads][kQTile][4] uint8 (packed by the caller, padded with the zero
/// point).
void qProductTile(const QProduct& q, const uint8_t* a, int64_t m0, int64_t valid, int64_t b0,
                  int64_t b1);

/// finishQ over `count` contiguous sums of one channel (the residual and y
/// contiguous too; residual may be null).
void finishRow(const QEpilogue& e, int32_t bias, float multiplier, const int32_t* acc,
               int64_t count, const void* residual, void* y);

/// 4 channels' rows that interleaveQuad reads: `rows` rows of `count`
/// columns, column j of row i at src[r] + i * srcStep + j * stride.
struct QuadRows {
  const uint8_t* src[kQuad];
  int64_t count, stride = 1, rows = 1, srcStep = 0, outStep = 0;
};

/// Interleaves q's 4 channels (xor `flip`) into [count][4] a row, row i at
/// out + i * q.outStep; vectorised at strides 1 and 2 (AVX2: 1). One call
/// for a plane's rows: a call per row of 28 columns cost more than the
/// row.
void interleaveQuad(const QuadRows& q, uint8_t flip, uint8_t* out);

/// The epilogue terms for `channels` output channels of one group
/// (`first`: the group's first channel among all) into per-thread scratch,
/// followed by kMaxBlock zeros.
ChannelTerms channelTerms(const QEpilogue& e, int64_t first, int64_t channels,
                          const int32_t* weightSums, int32_t activationZero, const float* w_scale,
                          bool perChannel, const int32_t* bias);

}  // namespace cgc::rt::detail
