// The activation ranges --method chooses from calibration statistics
// (pipeline/quantize.h: chooseRange), on histograms whose answer is known
// by hand: minmax's extremes, percentile's central share of a uniform
// histogram, entropy's clipping of a far outlier.
#include <catch2/catch.hpp>
#include <cmath>

#include "pipeline/quantize.h"

using cgc::quant::chooseRange;
using cgc::quant::TensorStats;

namespace {

/// `bins` equal bins over [lo, hi] holding `counts` (the rest empty).
TensorStats histogram(double lo, double hi, size_t bins, const std::vector<int64_t>& counts) {
  TensorStats s;
  s.lo = s.first = lo;
  s.hi = s.last = hi;
  s.histogram.assign(bins, 0);
  for (size_t k = 0; k < counts.size() && k < bins; ++k) s.histogram[k] = counts[k];
  for (int64_t c : s.histogram) s.count += c;
  return s;
}

}  // namespace

TEST_CASE("minmax keeps the extremes; an empty tensor's range is left as it is") {
  const TensorStats s = histogram(-2, 5, 16, std::vector<int64_t>(16, 3));
  CHECK(chooseRange(s, "minmax", 99.99) == std::pair<float, float>{-2, 5});
  TensorStats empty;
  empty.lo = 1, empty.hi = 0;
  CHECK(chooseRange(empty, "percentile", 99.99) == std::pair<float, float>{1, 0});
}

TEST_CASE("percentile keeps the central share of a uniform histogram") {
  // 10 values in each of 1000 bins over [0, 10]: 99.8 % leaves 10 values
  // (one bin) out at each end.
  const TensorStats s = histogram(0, 10, 1000, std::vector<int64_t>(1000, 10));
  const auto [lo, hi] = chooseRange(s, "percentile", 99.8);
  CHECK(lo == Approx(0.01));
  CHECK(hi == Approx(9.99));
  const auto whole = chooseRange(s, "percentile", 100);
  CHECK(whole.first == 0.0f);
  CHECK(whole.second == Approx(10));
}

TEST_CASE("entropy clips a far outlier that minmax keeps") {
  // A decaying bulk over [0, 10] and one value at 100, 2048 bins: the
  // threshold lands at or just above the bulk (no fewer than 256 of the
  // folded bins: 12.5), far below the outlier.
  std::vector<int64_t> counts(2048, 0);
  for (size_t k = 0; k < 205; ++k) counts[k] = static_cast<int64_t>(1000 * std::exp(-0.02 * k));
  counts[2047] = 1;
  const TensorStats s = histogram(0, 100, 2048, counts);
  const auto [lo, hi] = chooseRange(s, "entropy", 99.99);
  CHECK(lo == 0.0f);
  CHECK(hi >= 12.5f - 1e-4f);
  CHECK(hi < 30.0f);
  CHECK(chooseRange(s, "minmax", 99.99).second == 100.0f);
}
