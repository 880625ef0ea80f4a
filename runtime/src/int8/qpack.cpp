// Packing of int8 weights for qconv and qgemm (at compile time, by the
// pack-quantized-weights pass, or into scratch when a model's weights are
// not constants), and which packing each tier's kernels read fastest.
//
// The packed weights hold w - w_zero for each output channel, so the
// micro-kernels multiply uint8 activations by int8 weights and subtract the
// activations' zero point as one term per channel: sum_k (a_k - za) w_k =
// sum_k a_k w_k - za * sum_k w_k, the weight sums stored after the weights
// (MLAS's qgemm precomputes the same compensation when it packs B).
//
// AVX2 has no int8 dot product into int32: vpmaddubsw multiplies uint8 by
// int8 and adds adjacent pairs into int16 with saturation, which a pair
// like (a, a) x (100, 100) exceeds for a > 163. kQuadsSplit keeps it exact:
// a pair whose positive (or negative) weights sum beyond 128 in magnitude
// is split into main weights clamped to [-64, 64] (255 x 128 fits int16)
// and the rest (|rest| <= 64), listed per channel as (quad, 4 weights)
// entries that the kernel adds with a second vpmaddubsw. In trained and
// random networks a few percent of the quads need an entry.
#include <iterator>
#include <vector>

#include "cgc/isa_tiers.h"
#include "cgc/runtime.h"
#include "int8/quant_support.h"

namespace cgc::rt {
namespace {

using detail::kQuad;

/// w - w_zero of channel c (of group g) at depth d.
int32_t weightAt(const QWeightShape& s, const void* w, const void* w_zero, int64_t g, int64_t c,
                 int64_t d) {
  const int64_t channel = g * s.channels + c;
  const int64_t index = s.transposed ? channel * s.depth + d : d * s.groups * s.channels + channel;
  const int32_t zero =
      detail::zeroPoint(w_zero, s.w_signed ? DType::kI8 : DType::kU8, s.per_channel ? channel : 0);
  return detail::loadQ(w, index, s.w_signed) - zero;
}

/// Whether vpmaddubsw can saturate on the pair (w0, w1) for some uint8 a.
bool pairMaySaturate(int32_t w0, int32_t w1) {
  const int32_t pos = std::max(w0, 0) + std::max(w1, 0);
  const int32_t neg = std::min(w0, 0) + std::min(w1, 0);
  return pos > 128 || neg < -128;
}

/// The main part of a weight whose pair is split.
int32_t mainPart(int32_t w) { return std::clamp(w, -64, 64); }

/// Whether quad q of channel c needs a split entry, filling main and rest.
bool splitQuad(const int32_t (&quad)[kQuad], int32_t (&main)[kQuad], int32_t (&rest)[kQuad]) {
  bool split = false;
  for (int pair = 0; pair < 2; ++pair) {
    const int32_t w0 = quad[2 * pair], w1 = quad[2 * pair + 1];
    const bool saturates = pairMaySaturate(w0, w1);
    main[2 * pair] = saturates ? mainPart(w0) : w0;
    main[2 * pair + 1] = saturates ? mainPart(w1) : w1;
    rest[2 * pair] = w0 - main[2 * pair];
    rest[2 * pair + 1] = w1 - main[2 * pair + 1];
    split = split || saturates;
  }
  return split;
}

/// Quad q of channel c in the packing's depth order: the weights' own
/// (OIHW: input channel, then tap), or kTapQuads' tap by tap.
void readQuad(const QWeightShape& s, QPacking packing, const void* w, const void* w_zero, int64_t g,
              int64_t c, int64_t q, int32_t (&quad)[kQuad]) {
  const int64_t inputs = s.depth / s.taps, channelQuads = (inputs + kQuad - 1) / kQuad;
  for (int64_t r = 0; r < kQuad; ++r) {
    int64_t d = q * kQuad + r;
    bool inside = d < s.depth;
    if (packing == QPacking::kTapQuads) {
      const int64_t tap = q / channelQuads, input = q % channelQuads * kQuad + r;
      d = input * s.taps + tap;
      inside = input < inputs;
    }
    quad[r] = c < s.channels && inside ? weightAt(s, w, w_zero, g, c, d) : 0;
  }
}

}  // namespace

namespace detail {

QPackLayout qPackLayout(const QWeightShape& s, const QPackInfo& info) {
  QPackLayout l{};
  l.blocks = (s.channels + info.nb - 1) / info.nb;
  l.quads = info.packing == QPacking::kTapQuads ? s.taps * ((s.depth / s.taps + kQuad - 1) / kQuad)
                                                : (s.depth + kQuad - 1) / kQuad;
  const int64_t element = info.packing == QPacking::kWide ? 2 : 1;
  l.weightBytes = s.groups * l.blocks * l.quads * info.nb * kQuad * element;
  l.sumsOffset = l.weightBytes;
  l.splitOffset = l.sumsOffset + s.groups * s.channels * 4;
  const int64_t offsets = info.packing == QPacking::kQuadsSplit ? s.groups * s.channels + 1 : 0;
  l.entriesOffset = l.splitOffset + offsets * 4;
  return l;
}

}  // namespace detail

namespace {

/// The int8 products' kernels by tier, best first (quant_microkernels.h):
/// the packing each reads fastest and its block of output channels. A
/// tier has the first whose tier it includes.
struct QKernelTier {
  const char* tier;
  QPacking packing;
  int64_t nb;
};
constexpr QKernelTier kQKernelTiers[] = {
    {"vnni", QPacking::kQuads, detail::kVnniBlock},
    {"avx2", QPacking::kQuadsSplit, detail::kAvx2Block},
    {"", QPacking::kQuads, 4},
};

const QKernelTier& qKernelTier(const char* tier) {
  for (const QKernelTier& k : kQKernelTiers)
    if (isaTierIncludes(tier, k.tier)) return k;
  return kQKernelTiers[std::size(kQKernelTiers) - 1];
}

}  // namespace

QPacking preferredQPacking(const char* tier) { return qKernelTier(tier).packing; }

int64_t preferredQBlock(QPacking packing, const char* tier) {
  if (packing == QPacking::kTapQuads) return detail::kMaxBlock;
  const QKernelTier& kernels = qKernelTier(tier);
  if (packing == kernels.packing) return kernels.nb;
  return packing == QPacking::kWide ? 3 : 4;
}

QPackInfo planQWeights(const QWeightShape& s, const void* w, const void* w_zero, QPacking preferred,
                       const char* tier) {
  bool fits = preferred != QPacking::kWide;
  for (int64_t g = 0; g < s.groups && fits; ++g)
    for (int64_t c = 0; c < s.channels && fits; ++c)
      for (int64_t d = 0; d < s.depth && fits; ++d) {
        const int32_t v = weightAt(s, w, w_zero, g, c, d);
        fits = v >= -128 && v <= 127;
      }
  QPackInfo info{};
  info.packing = fits ? preferred : QPacking::kWide;
  // The direct kernel's blocks are always whole (zero channels past the end).
  info.nb = info.packing == QPacking::kTapQuads
                ? detail::kMaxBlock
                : std::min(preferredQBlock(info.packing, tier), std::max<int64_t>(s.channels, 1));
  const detail::QPackLayout l = detail::qPackLayout(s, info);
  if (info.packing == QPacking::kQuadsSplit) {
    int32_t quad[kQuad], main[kQuad], rest[kQuad];
    for (int64_t g = 0; g < s.groups; ++g)
      for (int64_t c = 0; c < s.channels; ++c)
        for (int64_t q = 0; q < l.quads; ++q) {
          readQuad(s, info.packing, w, w_zero, g, c, q, quad);
          info.split_entries += splitQuad(quad, main, rest);
        }
  }
  info.bytes = l.entriesOffset + info.split_entries * 8;
  return info;
}

void packQWeights(const QWeightShape& s, const QPackInfo& info, const void* w, const void* w_zero,
                  uint8_t* packed) {
  const detail::QPackLayout l = detail::qPackLayout(s, info);
  std::memset(packed, 0, static_cast<size_t>(info.bytes));
  auto* sums = reinterpret_cast<int32_t*>(packed + l.sumsOffset);
  auto* offsets = reinterpret_cast<int32_t*>(packed + l.splitOffset);
  uint8_t* entry = packed + l.entriesOffset;
  int32_t quad[kQuad], main[kQuad], rest[kQuad];
  int32_t entries = 0;
  for (int64_t g = 0; g < s.groups; ++g)
    for (int64_t c = 0; c < s.channels; ++c) {
      const int64_t channel = g * s.channels + c;
      const int64_t block = g * l.blocks + c / info.nb, lane = c % info.nb;
      if (info.packing == QPacking::kQuadsSplit) offsets[channel] = entries;
      int32_t sum = 0;
      for (int64_t q = 0; q < l.quads; ++q) {
        readQuad(s, info.packing, w, w_zero, g, c, q, quad);
        for (int32_t v : quad) sum += v;
        const bool split = info.packing == QPacking::kQuadsSplit && splitQuad(quad, main, rest);
        const int64_t at = ((block * l.quads + q) * info.nb + lane) * kQuad;
        for (int64_t r = 0; r < kQuad; ++r) {
          const int32_t v = split ? main[r] : quad[r];
          if (info.packing == QPacking::kWide)
            reinterpret_cast<int16_t*>(packed)[at + r] = static_cast<int16_t>(v);
          else
            packed[at + r] = static_cast<uint8_t>(static_cast<int8_t>(v));
        }
        if (!split) continue;
        const int32_t index = static_cast<int32_t>(q);
        std::memcpy(entry, &index, 4);
        for (int64_t r = 0; r < kQuad; ++r)
          entry[4 + r] = static_cast<uint8_t>(static_cast<int8_t>(rest[r]));
        entry += 8;
        ++entries;
      }
      sums[channel] = sum;
    }
  if (info.packing == QPacking::kQuadsSplit) offsets[s.groups * s.channels] = entries;
}

}  // namespace cgc::rt
