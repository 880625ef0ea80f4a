// float to bfloat16 as the packings of narrow weights (pack_narrow_weights,
// packConvWeights with bf16_weights) round it, in portable code: the
// compiler packs on whatever CPU it runs on.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace cgc::rt::detail {

/// float to bfloat16, rounded to nearest with ties to even (NaN stays NaN).
inline uint16_t roundToBf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

}  // namespace cgc::rt::detail
