// cgc tune's trials: a model compiled for one configuration and profile,
// built through the cache, timed (the median of rounds of at least a few
// runs each, optionally profiled per node) and two builds timed in
// alternation (tools/alternated_timing.h). tune.cpp's search decides what
// to try; this file only builds and measures.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "pipeline/pipeline.h"
#include "toolchain/model_session.h"
#include "tools/alternated_timing.h"
#include "tools/tune.h"

namespace cgc::tune {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point start);

nlohmann::json readJson(const std::string& path);
void writeJson(const std::string& path, const nlohmann::json& value);

/// A compiled and built model, ready to load and time.
struct Build {
  driver::CompileOptions compile;
  driver::CompiledModel model;
  driver::BuiltModel built;                     // empty until built
  std::map<std::string, std::string> variants;  // each float Conv's variant, by node name
  /// The layers stored narrow (driver::layerPrecision: "bf16", "int8
  /// weights", "int8"), by node name.
  std::map<std::string, std::string> precisions;
};

struct Measurement {
  double ms = std::numeric_limits<double>::infinity();
  double spread = 0;                              // the interquartile range of the rounds
  nlohmann::json profile;                         // the profiler's per-node medians of this build
  std::map<std::string, std::string> variants;    // the build's convolution variants
  std::map<std::string, std::string> precisions;  // the build's narrow layers
  int64_t weightBytes = 0;                        // the build's weights
};

/// What a trial's profile fixes beside the measured costs.
struct TrialChoices {
  std::map<std::string, int> nodeThreads;
  std::map<std::string, std::string> variants;
  std::set<std::string> floatLayers;
};

/// What a trial compile fixes besides E x T and its profile.
struct TrialCompile {
  std::string every;  // this convolution variant on every layer that takes it
  std::map<std::string, std::string> variants;  // by layer, where no profile gives them
  std::set<std::string> floatLayers;            // kept float, as --keep-float
  bool compileOnly = false;                     // not built: to see the variants chosen
  bool floatModel = false;                      // every layer float: no --quantize, fp32
};

class Tuner {
 public:
  Tuner(const TuneOptions& options, std::filesystem::path workDir)
      : options_(options), work_(std::move(workDir)) {}

  /// Compiles the model for E x T with the profile at `profilePath` (if
  /// any) and `trial`'s choices; builds it unless trial.compileOnly.
  Build build(int executors, int threads, const std::string& profilePath,
              const TrialCompile& trial = {});
  /// Builds a compiled model's library.
  void finish(Build& b);
  /// Times one instance of `b` (the median of `rounds` rounds) and, with
  /// `profile`, profiles it.
  Measurement time(const Build& b, int rounds, bool profile);
  Measurement measure(int executors, int threads, const std::string& profilePath);
  /// A trial whose graph no measured profile describes (layers moved to
  /// float change it): compiled on estimated costs and profiled, then
  /// compiled on those measured costs with `choices`, timed and profiled,
  /// as each configuration is.
  Measurement measureNewGraph(int executors, int threads, const TrialChoices& choices);
  /// Writes `profile` with `choices` for a build to read.
  std::string writeProfile(nlohmann::json profile, const TrialChoices& choices);
  /// Writes `profile` as it is for a build to read.
  std::string writeProfile(const nlohmann::json& profile);
  /// `baseline` and `candidate` timed in `rounds` alternated rounds (each
  /// round a fresh instance, so that neither's threads wait beside the
  /// other's).
  AlternatedTiming alternate(const Build& baseline, const Build& candidate, int rounds);

 private:
  const TuneOptions& options_;
  std::filesystem::path work_;
  int files_ = 0;
  bool filledNoted_ = false;
};

}  // namespace cgc::tune
