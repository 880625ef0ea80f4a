// Inputs and comparisons shared by the kernel tests.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "cgc/kernels/common.h"
#include "cgc/team.h"

namespace cgc::test {

/// Deterministic values in [-1, 1) (an LCG, so every platform agrees).
inline std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
  }
  return v;
}

/// float to bfloat16 and back, nearest with ties to even: the rounding of
/// the bf16 packings and of vcvtneps2bf16, written from the definition.
inline float roundedToBf16(float v) {
  const double magnitude = std::fabs(static_cast<double>(v));
  if (magnitude == 0.0 || std::isinf(v)) return v;
  int exponent = 0;
  std::frexp(magnitude, &exponent);                                  // magnitude in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, std::max(exponent, -125) - 8);  // 8 significant bits
  const double rounded = std::nearbyint(magnitude / ulp) * ulp;      // ties to even
  return static_cast<float>(std::copysign(rounded, static_cast<double>(v)));
}

/// Deterministic integers in [lo, hi].
template <typename T>
std::vector<T> randomIntegers(size_t n, uint32_t seed, int64_t lo, int64_t hi) {
  std::vector<T> v(n);
  uint32_t s = seed * 2246822519u + 7u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<T>(lo + static_cast<int64_t>(s >> 8) % (hi - lo + 1));
  }
  return v;
}

inline void requireClose(const std::vector<float>& actual, const std::vector<float>& expected,
                         double margin = 1e-4) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i);
    REQUIRE(actual[i] == Approx(expected[i]).epsilon(1e-4).margin(margin));
  }
}

/// Runs body(team) on `threads` std::threads forming one team, as the
/// generated code does for a team-parallel kernel. REQUIREs must stay out of
/// `body` (Catch is not thread-safe): collect results, check afterwards.
template <typename Body>
void onTeam(int threads, Body body) {
  cgc::rt::SpinBarrier barrier(threads);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] { body(cgc::rt::Team(i, threads, &barrier)); });
  for (auto& t : pool) t.join();
}

/// The reference of a fused activation, in double.
inline double activate(rt::Activation a, float lo, float hi, double v) {
  if (a == rt::Activation::kRelu) return std::max(v, 0.0);
  if (a == rt::Activation::kClip) return std::min(std::max(v, double{lo}), double{hi});
  return v;
}

/// The activations the kernels fuse, each tested: none, Relu, a Clip.
struct Act {
  rt::Activation kind;
  float lo, hi;
};
inline constexpr Act kActs[] = {{rt::Activation::kNone, 0, 0},
                                {rt::Activation::kRelu, 0, 0},
                                {rt::Activation::kClip, -0.25f, 0.5f}};

}  // namespace cgc::test
