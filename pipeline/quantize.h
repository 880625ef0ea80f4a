// --quantize int8: the activation ranges the quantize pass reads, chosen
// from a `cgc calibrate` file by one of three methods:
//   minmax      the smallest and largest value seen;
//   percentile  the histogram's central --percentile percent (the tails
//               beyond it, half on each side, are clipped);
//   entropy     the clip threshold whose int8 histogram is nearest the
//               float one in Kullback-Leibler divergence (TensorRT's and
//               ONNX Runtime's calibration; below).
// Each range is widened to hold 0 by the pass.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "passes/pass_manager.h"

namespace cgc::quant {

/// --quantize and the options that go with it.
struct QuantizeOptions {
  std::string precision;    // --quantize: "" (float) or "int8"
  std::string calibration;  // --calibration FILE
  std::string method = "percentile";
  double percentile = 99.99;           // --percentile, for the percentile method
  std::string activations = "u8";      // --activations u8|s8
  std::vector<std::string> keepFloat;  // --keep-float NODE...: layers left in float
  /// --keep-bf16 NODE...: layers left out of int8 whose weights are stored
  /// as bfloat16 (those with a bf16 kernel; the rest stay float).
  std::vector<std::string> keepBf16;
  /// --weights-only: only the constant weights of matrix products become
  /// int8 (passes/narrow_weights.cpp), without a calibration file.
  bool weightsOnly = false;
  // The accuracy budget (compiler/accuracy_budget.h):
  double maxError = 0;                   // --max-error; 0: no budget
  std::vector<std::string> checkInputs;  // --check-inputs DIR...
  std::string report;                    // --quantize-report FILE.json
  int benchRuns = 20;                    // runs per timed round in the report
  bool enabled() const { return !precision.empty(); }
  /// Whether the quantize pass makes activations int8 (not --weights-only).
  bool activations8() const { return enabled() && !weightsOnly; }
  bool measured() const { return maxError > 0 || !checkInputs.empty() || !report.empty(); }
};

/// The methods --method takes, for --help and its check.
const std::vector<std::string>& methodNames();

/// One tensor of a calibration file.
struct TensorStats {
  double lo = 0, hi = 0;  // min and max; lo > hi when the tensor had no values
  int64_t count = 0;
  std::vector<int64_t> histogram;  // equal bins over [first, last]
  /// The histogram's range: [lo, hi] in cgc calibrate's files; wider in a
  /// profiler's (cgc::Profiler::write_calibration: it grew as values came).
  double first = 0, last = 0;
};

/// Reads a `cgc calibrate` file. CompileError naming the file where it is
/// not one.
std::map<std::string, TensorStats> readCalibration(const std::string& path);

/// The range `method` chooses for one tensor.
std::pair<float, float> chooseRange(const TensorStats& stats, const std::string& method,
                                    double percentile);

/// The quantize pass's ranges and types for these options (null when they
/// do not quantise; compileGraph adds keepFloat and the record), and into
/// `stats` (where given) the calibration file's statistics. CompileError
/// for an unknown method or activation type, a percentile outside
/// (0, 100], and a calibration file that cannot be read.
std::shared_ptr<const passes::QuantizeSpec> makeSpec(
    const QuantizeOptions& options, std::map<std::string, TensorStats>* stats = nullptr);

}  // namespace cgc::quant
