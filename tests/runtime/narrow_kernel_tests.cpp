// matmul_narrow's variants (cgc/kernels/narrow_variants.def) against a
// double-precision loop over the weights as the packing rounds them
// (bfloat16, or int8 levels times their column's scale), computed here from
// the float weights; and pack_narrow_weights' rounding and layout.
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cgc/isa_tiers.h"
#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::test::onTeam;
using cgc::test::randomFloats;
using cgc::test::roundedToBf16;

namespace {

/// The packed bfloat16 of W[q, j] (n columns).
uint16_t packedBf16(const std::vector<uint8_t>& packed, int64_t k, int64_t q, int64_t j) {
  const int64_t panelBytes = narrow_weights_bytes(WeightFormat::kBf16, k, kNarrowPanel);
  const int64_t offset = (j / kNarrowPanel) * panelBytes +
                         ((q / 2) * kNarrowPanel + j % kNarrowPanel) * 4 + (q % 2) * 2;
  uint16_t half;
  std::memcpy(&half, packed.data() + offset, 2);
  return half;
}

int8_t packedInt8(const std::vector<uint8_t>& packed, int64_t k, int64_t q, int64_t j) {
  const int64_t panelBytes = narrow_weights_bytes(WeightFormat::kInt8, k, kNarrowPanel);
  return static_cast<int8_t>(
      packed[(j / kNarrowPanel) * panelBytes + q * kNarrowPanel + j % kNarrowPanel]);
}

struct Packed {
  std::vector<uint8_t> bytes;
  std::vector<float> scale;
};

Packed pack(WeightFormat format, int64_t k, int64_t n, const std::vector<float>& w) {
  Packed out{std::vector<uint8_t>(narrow_weights_bytes(format, k, n), 0xee),
             std::vector<float>(n, -1.0f)};
  pack_narrow_weights(format, k, n, w.data(), out.bytes.data(), out.scale.data());
  return out;
}

/// The weights as the packing rounds them: bf16, or per column the levels
/// round(w / scale) (ties to even, within +-127) times scale.
std::vector<double> roundedWeights(WeightFormat format, int64_t k, int64_t n,
                                   const std::vector<float>& w) {
  std::vector<double> out(w.size());
  for (int64_t j = 0; j < n; ++j) {
    float largest = 0.0f;
    for (int64_t q = 0; q < k; ++q) largest = std::max(largest, std::fabs(w[q * n + j]));
    const float scale = largest > 0.0f ? largest / 127.0f : 1.0f;
    for (int64_t q = 0; q < k; ++q) {
      const float v = w[q * n + j];
      out[q * n + j] =
          format == WeightFormat::kBf16
              ? roundedToBf16(v)
              : std::clamp(std::nearbyint(v / scale), -127.0f, 127.0f) * static_cast<double>(scale);
    }
  }
  return out;
}

struct NarrowCase {
  int64_t m, k, n;
  Activation activation;
  bool bias;
};

/// Every variant this runtime has that takes `format`, on c, against the
/// double loop, on one thread and on two. Returns how many variants ran.
int checkVariants(WeightFormat format, const NarrowCase& c, uint32_t seed) {
  const std::vector<float> a = randomFloats(c.m * c.k, seed);
  std::vector<float> w = randomFloats(c.k * c.n, seed + 1);
  const std::vector<float> bias = randomFloats(c.n, seed + 2);
  const Packed packed = pack(format, c.k, c.n, w);
  const std::vector<double> rounded = roundedWeights(format, c.k, c.n, w);
  NarrowMatMulParams p{c.m, c.n, c.k, format, c.activation, -0.25f, 0.5f};
  // Expected values, and the bound: bf16's unit roundoff (A may be rounded
  // too) or float's over the k sums, times sum |a w|.
  std::vector<double> expected(c.m * c.n), bound(c.m * c.n);
  const double unit = format == WeightFormat::kBf16 ? std::ldexp(1.0, -8) : 0.0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = c.bias ? bias[j] : 0.0, magnitude = c.bias ? std::fabs(bias[j]) : 0.0;
      for (int64_t q = 0; q < c.k; ++q) {
        sum += a[i * c.k + q] * rounded[q * c.n + j];
        magnitude += std::fabs(a[i * c.k + q] * rounded[q * c.n + j]);
      }
      if (c.activation == Activation::kRelu) sum = std::max(sum, 0.0);
      if (c.activation == Activation::kClip) sum = std::clamp(sum, -0.25, 0.5);
      expected[i * c.n + j] = sum;
      bound[i * c.n + j] = (unit + (c.k + 3) * std::ldexp(1.0, -23)) * magnitude + 1e-30;
    }
  int ran = 0;
  for (const NarrowVariantInfo& v : kNarrowVariants) {
    if (!narrowVariantTakes(v.variant, p)) continue;
    ++ran;
    for (int threads : {1, 2}) {
      std::vector<float> y(c.m * c.n, std::numeric_limits<float>::quiet_NaN());
      onTeam(threads, [&](const Team& team) {
        matmul_narrow_variant(v.variant, p, a.data(), packed.bytes.data(), packed.scale.data(),
                              c.bias ? bias.data() : nullptr, y.data(), team);
      });
      for (int64_t e = 0; e < c.m * c.n; ++e) {
        INFO("variant " << v.name << " " << enumName(format) << " m=" << c.m << " k=" << c.k
                        << " n=" << c.n << " threads=" << threads << " element " << e);
        REQUIRE(std::fabs(y[e] - expected[e]) <= bound[e]);
      }
    }
  }
  return ran;
}

}  // namespace

TEST_CASE("every matmul_narrow variant this runtime has matches a double loop on both formats") {
  const char* tier = cgc::runtime_isa_tier();
  std::string ran, skipped;
  for (const NarrowVariantInfo& v : kNarrowVariants)
    if (!cgc::isaTierIncludes(tier, v.tier))
      skipped += std::string(" ") + v.name + " (tier " + v.tier + ")";
    else
      ran += std::string(" ") + v.name;
  const Activation activations[] = {Activation::kNone, Activation::kRelu, Activation::kClip};
  uint32_t seed = 1;
  for (WeightFormat format : {WeightFormat::kBf16, WeightFormat::kInt8})
    for (int64_t m : {1, 2, 5, 17, 64})
      for (int64_t k : {1, 2, 31, 64, 257})
        for (int64_t n : {1, 31, 32, 33, 100}) {
          const NarrowCase c{m, k, n, activations[seed % 3], seed % 2 == 0};
          CHECK(checkVariants(format, c, seed++) > 0);
        }
  std::printf("matmul_narrow variants run on tier %s:%s; skipped for want of a tier:%s\n", tier,
              ran.c_str(), skipped.empty() ? " none" : skipped.c_str());
}

TEST_CASE("matmul_narrow's variants on empty products: no rows, no columns, no depth (y = bias)") {
  uint32_t seed = 900;
  for (WeightFormat format : {WeightFormat::kBf16, WeightFormat::kInt8})
    for (const NarrowCase& c : {NarrowCase{0, 5, 33, Activation::kNone, true},
                                NarrowCase{3, 5, 0, Activation::kNone, true},
                                NarrowCase{3, 0, 33, Activation::kRelu, true},
                                NarrowCase{1, 0, 70, Activation::kNone, false}})
      CHECK(checkVariants(format, c, seed++) > 0);
}

TEST_CASE("matmul_narrow chooses the first variant of the table this runtime has for the format") {
  for (WeightFormat format : {WeightFormat::kBf16, WeightFormat::kInt8})
    for (int64_t m : {1, 2, 64}) {
      const NarrowMatMulParams p{m, 768, 768, format};
      NarrowVariant first = NarrowVariant::kNone;
      for (const NarrowVariantInfo& v : kNarrowVariants)
        if (first == NarrowVariant::kNone && narrowVariantTakes(v.variant, p)) first = v.variant;
      INFO(enumName(format) << " m=" << m);
      CHECK(chooseNarrowVariant(p) == first);
    }
}

TEST_CASE("pack_narrow_weights rounds to bfloat16 nearest even, keeps NaN and infinities") {
  const float one = 1.0f, step = std::ldexp(1.0f, -8);  // half a bf16 ulp at 1
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float big = std::numeric_limits<float>::max();
  // W [k = 9, n = 1]: ties to the even neighbour either way, just above a
  // tie, negatives, NaN, infinity, and a float past bf16's largest finite.
  const std::vector<float> w = {one + step,
                                one + 3 * step,
                                one + step * 1.0001f,
                                -(one + step),
                                -(one + 3 * step),
                                nan,
                                -inf,
                                big,
                                0.0f};
  const std::vector<uint16_t> expected = {0x3f80, 0x3f82, 0x3f81, 0xbf80, 0xbf82,
                                          0,      0xff80, 0x7f80, 0x0000};
  const Packed packed = pack(WeightFormat::kBf16, 9, 1, w);
  for (int64_t q = 0; q < 9; ++q) {
    INFO("row " << q);
    const uint16_t half = packedBf16(packed.bytes, 9, q, 0);
    if (q == 5) {
      CHECK(std::isnan(std::bit_cast<float>(static_cast<uint32_t>(half) << 16)));
      continue;
    }
    CHECK(half == expected[q]);
    CHECK(std::bit_cast<float>(static_cast<uint32_t>(half) << 16) == roundedToBf16(w[q]));
  }
}

TEST_CASE("pack_narrow_weights' layout: panels of 32 columns, bf16 pairs, zero padding") {
  // k odd (the last pair's odd half is padding), n past one panel.
  const int64_t k = 3, n = 33;
  std::vector<float> w(k * n);
  for (int64_t q = 0; q < k; ++q)
    for (int64_t j = 0; j < n; ++j) w[q * n + j] = static_cast<float>(q * 100 + j + 1);
  const Packed bf16 = pack(WeightFormat::kBf16, k, n, w);
  REQUIRE(bf16.bytes.size() == static_cast<size_t>((k + 1) / 2 * 64 * 4));
  for (int64_t q = 0; q < k + 1; ++q)
    for (int64_t j = 0; j < 64; ++j) {
      INFO("bf16 row " << q << " column " << j);
      const float v =
          std::bit_cast<float>(static_cast<uint32_t>(packedBf16(bf16.bytes, k, q, j)) << 16);
      CHECK(v == (q < k && j < n ? roundedToBf16(w[q * n + j]) : 0.0f));
    }
  const Packed int8 = pack(WeightFormat::kInt8, k, n, w);
  REQUIRE(int8.bytes.size() == static_cast<size_t>(k * 64));
  for (int64_t q = 0; q < k; ++q)
    for (int64_t j = 0; j < 64; ++j) {
      INFO("int8 row " << q << " column " << j);
      const int8_t level = packedInt8(int8.bytes, k, q, j);
      if (j >= n) {
        CHECK(level == 0);
        continue;
      }
      CHECK(level == std::nearbyint(w[q * n + j] / int8.scale[j]));
    }
}

TEST_CASE(
    "pack_narrow_weights int8: per-column scales, ties to even, an all-zero column, clamping") {
  // Column 0: largest |w| 127, so scale 1 and levels round(w) with ties to
  // even; column 1 all zero (scale 1, levels 0); column 2 of subnormals
  // whose scale 180 x the smallest subnormal / 127 rounds down to that
  // subnormal, so 180 levels clamp to 127.
  const float tiny = std::numeric_limits<float>::denorm_min();
  const std::vector<float> column0 = {127.0f, -127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f};
  const int64_t k = static_cast<int64_t>(column0.size()), n = 3;
  std::vector<float> w(k * n, 0.0f);
  for (int64_t q = 0; q < k; ++q) {
    w[q * n] = column0[q];
    w[q * n + 2] = q % 2 ? -180 * tiny : 180 * tiny;
  }
  const Packed packed = pack(WeightFormat::kInt8, k, n, w);
  CHECK(packed.scale[0] == 1.0f);
  CHECK(packed.scale[1] == 1.0f);
  CHECK(packed.scale[2] == tiny);
  const int expected0[] = {127, -127, 0, 2, 2, 0, -2};
  for (int64_t q = 0; q < k; ++q) {
    INFO("row " << q);
    CHECK(packedInt8(packed.bytes, k, q, 0) == expected0[q]);
    CHECK(packedInt8(packed.bytes, k, q, 1) == 0);
    CHECK(packedInt8(packed.bytes, k, q, 2) == (q % 2 ? -127 : 127));
  }
}
