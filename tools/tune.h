// `cgc tune`: searches the executor configuration (E executors x T threads,
// E*T <= the cores available) and then per-op thread counts (Liu et al.,
// "Optimizing CNN model inference on CPUs") for the lowest measured latency,
// and writes the winner as a profile that `cgc compile/run --profile` use.
// Measuring beats modelling here: the best split between inter-op and
// intra-op parallelism depends on the graph's width, the ops' sizes and the
// machine, and each try is one cached build and a few runs.
#pragma once

#include <string>

#include "pipeline/pipeline.h"

namespace cgc::tune {

struct TuneOptions {
  driver::CompileOptions compile;
  std::string outDir = ".";    // where <model>.profile.json goes
  std::string inputsDir;       // input_N.pb; deterministic data if empty
  int rounds = 5;              // timed rounds per try (median)
  double budgetSeconds = 120;  // no new try starts after this
  /// --runs: with --dim, a profile of runs (cgc run --profile-out, a
  /// deployment's profiler) whose "sizes" the tuned profile keeps, so that
  /// a compile with it specialises their buckets (printed).
  std::string runsProfile;
};

/// The model's name for the profile file: the file's stem, or its
/// directory's name for the usual DIR/model.onnx layout.
std::string modelName(const std::string& modelPath);

/// Runs the search and writes outDir/<model>.profile.json: the measured
/// profile of the best configuration plus "executors", "threads",
/// "node_threads" ({node name: threads}), "variants", "float_layers" (the
/// narrow layers that run faster in float), "tuned_ms" and "final_check"
/// (the tuned build against the untuned one, alternated: the profile is
/// kept only if faster by more than the spread, else the default
/// configuration is written). Returns the exit code.
int tune(const TuneOptions& options);

}  // namespace cgc::tune
