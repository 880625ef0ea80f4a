// The verdict of two builds timed in alternated rounds (A B A B ...): the
// rule every choice of `cgc tune` must pass before it is kept. Alternation
// gives both builds the same load from other processes; a candidate is
// faster only by more than the rounds' spread, so a win at noise level is
// not kept (a tuned model slower than the default is what it prevents).
#pragma once

#include <string>
#include <vector>

namespace cgc::tune {

/// Milliseconds per round of a baseline and a candidate, alternated.
struct AlternatedTiming {
  double baselineMs = 0;   // median
  double candidateMs = 0;  // median
  /// The larger interquartile range of the two series: what one round
  /// varies by on this machine now.
  double spreadMs = 0;
  int rounds = 0;
  /// The candidate's median is below the baseline's by more than spreadMs.
  bool faster = false;
};

/// The median of `values` (0 when empty).
double medianOf(std::vector<double> values);

/// The interquartile range of `values` (linear interpolation between
/// ranks; 0 for fewer than two).
double spreadOf(std::vector<double> values);

/// Judges the rounds `baseline[i]`, `candidate[i]` (alternated).
AlternatedTiming judgeAlternated(const std::vector<double>& baseline,
                                 const std::vector<double>& candidate);

/// The line tune prints: each side's median, the spread and the rounds,
/// for `candidate` (e.g. "tuned") against `baseline` ("untuned").
std::string describeTiming(const AlternatedTiming& timing, const std::string& candidate,
                           const std::string& baseline);

/// Whether a single try at `candidateMs` (spread `candidateSpread`) beats
/// the best so far at `bestMs` (spread `bestSpread`) by more than the
/// larger spread and by `margin` (a fraction of bestMs).
bool beatsBeyondNoise(double bestMs, double bestSpread, double candidateMs, double candidateSpread,
                      double margin);

}  // namespace cgc::tune
