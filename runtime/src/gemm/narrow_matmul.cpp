// matmul_narrow: a matrix product whose constant weights are stored as
// bfloat16 or int8 (cgc/kernels/gemm.h), for products that read their
// weights more than they compute (a decoder's one-token step reads every
// weight once): half or a quarter of the bytes. This file holds the packing,
// the choice among the variants (cgc/kernels/narrow_variants.def) and the
// last of them, the portable loops, which widen each weight to float and
// keep A in float.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "cgc/isa_tiers.h"
#include "cgc/kernels/gemm.h"
#include "cgc/runtime.h"
#include "core/bf16.h"
#include "gemm/narrow_strategies.h"

namespace cgc::rt {
namespace {

using detail::roundToBf16;

constexpr int64_t kPanel = kNarrowPanel;

int64_t panels(int64_t n) { return (n + kPanel - 1) / kPanel; }

float bf16ToFloat(uint32_t half) { return std::bit_cast<float>(half << 16); }

/// Rows [rows.begin, rows.end) of Y for panel `panel`: sums in float over
/// the widened weights.
void panelRows(const NarrowMatMulParams& p, const float* a, const void* w, const float* scale,
               const float* bias, float* y, int64_t panel, Range rows) {
  const int64_t first = panel * kPanel;
  const unsigned char* base = detail::narrowPanelStart(p, w, panel);
  for (int64_t i = rows.begin; i < rows.end; ++i) {
    float sums[kPanel] = {};
    const float* row = a + i * p.k;
    if (p.format == WeightFormat::kBf16) {
      const auto* pairs = reinterpret_cast<const uint32_t*>(base);
      for (int64_t q = 0; q < p.k; ++q) {
        const uint32_t* line = pairs + (q / 2) * kPanel;
        const int shift = q % 2 ? 0 : 16;
        for (int64_t j = 0; j < kPanel; ++j)
          sums[j] += row[q] * bf16ToFloat((line[j] << shift) >> 16);
      }
    } else {
      const auto* bytesRow = reinterpret_cast<const int8_t*>(base);
      for (int64_t q = 0; q < p.k; ++q)
        for (int64_t j = 0; j < kPanel; ++j)
          sums[j] += row[q] * static_cast<float>(bytesRow[q * kPanel + j]);
    }
    detail::storeNarrowRow(p, sums, p.format == WeightFormat::kInt8 ? scale : nullptr, bias,
                           y + i * p.n, first);
  }
}

}  // namespace

int64_t narrow_weights_bytes(WeightFormat format, int64_t k, int64_t n) {
  const int64_t columns = panels(n) * kPanel;
  if (format == WeightFormat::kBf16) return (k + 1) / 2 * columns * 4;
  return k * columns;
}

void pack_narrow_weights(WeightFormat format, int64_t k, int64_t n, const float* w, void* packed,
                         float* scale) {
  auto* out = static_cast<unsigned char*>(packed);
  const int64_t bytes = narrow_weights_bytes(format, k, n);
  if (bytes > 0) std::memset(out, 0, static_cast<size_t>(bytes));  // empty W: packed may be null
  const int64_t panelBytes = narrow_weights_bytes(format, k, kPanel);
  if (format == WeightFormat::kInt8) {
    for (int64_t j = 0; j < n; ++j) {
      float largest = 0.0f;
      for (int64_t q = 0; q < k; ++q) largest = std::max(largest, std::fabs(w[q * n + j]));
      scale[j] = largest > 0.0f ? largest / 127.0f : 1.0f;
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    unsigned char* panel = out + (j / kPanel) * panelBytes;
    const int64_t column = j % kPanel;
    for (int64_t q = 0; q < k; ++q) {
      const float v = w[q * n + j];
      if (format == WeightFormat::kBf16) {
        auto* pair = reinterpret_cast<uint16_t*>(panel) + ((q / 2) * kPanel + column) * 2;
        pair[q % 2] = roundToBf16(v);
      } else {
        const float level = std::nearbyint(v / scale[j]);
        reinterpret_cast<int8_t*>(panel)[q * kPanel + column] =
            static_cast<int8_t>(std::clamp(level, -127.0f, 127.0f));
      }
    }
  }
}

namespace detail {

bool prefersPortable(const NarrowMatMulParams&) { return true; }

void narrowPortable(const NarrowMatMulParams& p, const float* a, const void* w, const float* scale,
                    const float* bias, float* y, const Team& team) {
  forEachNarrowShare(
      p, team, [&](int64_t panel, Range rows) { panelRows(p, a, w, scale, bias, y, panel, rows); });
}

}  // namespace detail

namespace {

using NarrowFunction = void (*)(const NarrowMatMulParams&, const float*, const void*, const float*,
                                const float*, float*, const Team&);

/// The variants' functions, in kNarrowVariants' order.
struct VariantFunctions {
  bool (*prefers)(const NarrowMatMulParams&);
  NarrowFunction run;
};
constexpr VariantFunctions kFunctions[] = {
#define CGC_NARROW_VARIANT(name, tier, bf16, int8) {detail::prefers##name, detail::narrow##name},
#include "cgc/kernels/narrow_variants.def"
#undef CGC_NARROW_VARIANT
};

size_t indexOf(NarrowVariant v) { return static_cast<size_t>(v) - 1; }

}  // namespace

bool narrowVariantTakes(NarrowVariant v, const NarrowMatMulParams& p) {
  if (v == NarrowVariant::kNone) return false;
  const NarrowVariantInfo& info = kNarrowVariants[indexOf(v)];
  return isaTierIncludes(runtime_isa_tier(), info.tier) && info.takes(p.format);
}

NarrowVariant chooseNarrowVariant(const NarrowMatMulParams& p) {
  NarrowVariant fallback = NarrowVariant::kNone;
  for (size_t i = 0; i < std::size(kNarrowVariants); ++i) {
    const NarrowVariant v = kNarrowVariants[i].variant;
    if (!narrowVariantTakes(v, p)) continue;
    if (kFunctions[i].prefers(p)) return v;
    if (fallback == NarrowVariant::kNone) fallback = v;
  }
  return fallback;
}

void matmul_narrow_variant(NarrowVariant v, const NarrowMatMulParams& p, const float* a,
                           const void* w, const float* scale, const float* bias, float* y,
                           const Team& team) {
  if (!narrowVariantTakes(v, p)) {  // a caller's fault: tests and benchmarks ask first
    std::fprintf(stderr, "cgc runtime: matmul_narrow variant %d does not take this product\n",
                 static_cast<int>(v));
    std::abort();
  }
  kFunctions[indexOf(v)].run(p, a, w, scale, bias, y, team);
}

void matmul_narrow(const NarrowMatMulParams& p, const float* a, const void* w, const float* scale,
                   const float* bias, float* y, const Team& team) {
  kFunctions[indexOf(chooseNarrowVariant(p))].run(p, a, w, scale, bias, y, team);
}

}  // namespace cgc::rt
