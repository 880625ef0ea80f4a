// The rule cgc tune keeps a choice by (tools/alternated_timing.h): faster
// than the baseline by more than the rounds' spread, else dropped.
#include "tools/alternated_timing.h"

#include <catch2/catch.hpp>

using cgc::tune::beatsBeyondNoise;
using cgc::tune::judgeAlternated;
using cgc::tune::medianOf;
using cgc::tune::spreadOf;

TEST_CASE("median and interquartile spread") {
  CHECK(medianOf({3, 1, 2}) == 2);
  CHECK(medianOf({4, 1, 3, 2}) == 2.5);
  CHECK(medianOf({}) == 0);
  CHECK(spreadOf({5}) == 0);
  CHECK(spreadOf({1, 2, 3, 4, 5}) == Approx(2.0));  // 4 - 2
  CHECK(spreadOf({10, 10, 10, 10}) == 0);
}

TEST_CASE("a tuned build within the spread of the default is dropped") {
  // SqueezeNet's case: a per-op thread count that is a tie at noise level.
  const std::vector<double> untuned = {2.62, 2.69, 2.65, 2.71, 2.60, 2.66};
  const std::vector<double> tuned = {2.61, 2.70, 2.58, 2.72, 2.64, 2.63};
  const auto t = judgeAlternated(untuned, tuned);
  CHECK(t.candidateMs < t.baselineMs);
  CHECK(t.baselineMs - t.candidateMs < t.spreadMs);
  CHECK_FALSE(t.faster);
  CHECK(t.rounds == 6);
}

TEST_CASE("a slower tuned build is dropped, a clearly faster one kept") {
  const std::vector<double> untuned = {3.59, 3.65, 3.73, 3.61, 3.68};
  CHECK_FALSE(judgeAlternated(untuned, {4.32, 4.40, 4.42, 4.35, 4.38}).faster);
  const auto t = judgeAlternated(untuned, {3.40, 3.45, 3.42, 3.47, 3.41});
  CHECK(t.faster);
  CHECK(t.candidateMs == Approx(3.42));
  CHECK(t.baselineMs == Approx(3.65));
}

TEST_CASE("no rounds: never faster") { CHECK_FALSE(judgeAlternated({}, {}).faster); }

TEST_CASE("a single try wins only beyond both spreads and the margin") {
  CHECK(beatsBeyondNoise(4.0, 0.05, 3.8, 0.05, 0.02));
  CHECK_FALSE(beatsBeyondNoise(4.0, 0.30, 3.8, 0.05, 0.02));  // within the best's spread
  CHECK_FALSE(beatsBeyondNoise(4.0, 0.05, 3.8, 0.25, 0.02));  // within the try's spread
  CHECK_FALSE(beatsBeyondNoise(4.0, 0.0, 3.95, 0.0, 0.02));   // below the margin
  CHECK_FALSE(beatsBeyondNoise(4.0, 0.0, 4.1, 0.0, 0.02));    // slower
}
