// Random kernels (cgc/kernels/random.h): a counter-based generator, each
// element a pure function of (seed, index), so runs repeat exactly and the
// constant folder agrees with generated code. SplitMix64's finaliser mixes
// the pair; the top 53 bits make a uniform double in [0, 1); normals come
// from the Box-Muller transform of two such uniforms.
#include <cmath>
#include <cstring>

#include "cgc/kernels.h"
#include "core/type_dispatch.h"

namespace cgc::rt {
namespace {

uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1): stream `stream` of element i.
double uniform(uint64_t seed, int64_t i, uint64_t stream) {
  const uint64_t bits = mix(seed ^ mix(static_cast<uint64_t>(i) * 2 + stream));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace

int64_t random_seed(float seed) {
  uint32_t bits;
  std::memcpy(&bits, &seed, sizeof bits);
  return static_cast<int64_t>(mix(bits) >> 1);
}

void random_fill(const RandomParams& p, const void* probabilities, void* y) {
  const uint64_t seed = static_cast<uint64_t>(p.seed);
  for (int64_t i = 0; i < p.count; ++i) {
    const double u = uniform(seed, i, 0);
    double value = 0;
    switch (p.distribution) {
      case RandomDistribution::kUniform:
        value = p.a + (p.b - p.a) * u;
        // Rounding to a float type may reach b itself; stay below it.
        if (value >= p.b && p.b > p.a) value = std::nextafter(p.b, p.a);
        break;
      case RandomDistribution::kNormal: {
        const double v = uniform(seed, i, 1);
        const double radius = std::sqrt(-2.0 * std::log(1.0 - u));  // 1 - u > 0
        value = p.a + p.b * radius * std::cos(6.283185307179586 * v);
        break;
      }
      case RandomDistribution::kBernoulli:
        value = u < detail::loadDouble(p.input_dtype, probabilities, i) ? 1.0 : 0.0;
        break;
    }
    detail::storeDouble(p.dtype, y, i, value);
  }
  if (p.distribution == RandomDistribution::kUniform && p.dtype == DType::kF32) {
    // nextafter in double can still round up to b in float.
    auto* out = static_cast<float*>(y);
    const float b = static_cast<float>(p.b);
    for (int64_t i = 0; i < p.count; ++i)
      if (out[i] >= b && p.b > p.a) out[i] = std::nextafter(b, static_cast<float>(p.a));
  }
}

}  // namespace cgc::rt
