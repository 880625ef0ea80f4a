// See alternated_timing.h.
#include "tools/alternated_timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cgc::tune {
namespace {

/// The value at fraction `q` of the sorted `values`, interpolated.
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(at));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (at - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

}  // namespace

double medianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return quantile(values, 0.5);
}

double spreadOf(std::vector<double> values) {
  if (values.size() < 2) return 0;
  std::sort(values.begin(), values.end());
  return quantile(values, 0.75) - quantile(values, 0.25);
}

AlternatedTiming judgeAlternated(const std::vector<double>& baseline,
                                 const std::vector<double>& candidate) {
  AlternatedTiming t;
  t.baselineMs = medianOf(baseline);
  t.candidateMs = medianOf(candidate);
  t.spreadMs = std::max(spreadOf(baseline), spreadOf(candidate));
  t.rounds = static_cast<int>(std::min(baseline.size(), candidate.size()));
  t.faster = t.rounds > 0 && t.baselineMs - t.candidateMs > t.spreadMs;
  return t;
}

std::string describeTiming(const AlternatedTiming& t, const std::string& candidate,
                           const std::string& baseline) {
  return fmt::format("{} {:.3f} ms, {} {:.3f} ms, spread {:.3f} ms ({} rounds alternated)",
                     candidate, t.candidateMs, baseline, t.baselineMs, t.spreadMs, t.rounds);
}

bool beatsBeyondNoise(double bestMs, double bestSpread, double candidateMs, double candidateSpread,
                      double margin) {
  const double gain = bestMs - candidateMs;
  return gain > std::max(bestSpread, candidateSpread) && gain > margin * bestMs;
}

}  // namespace cgc::tune
