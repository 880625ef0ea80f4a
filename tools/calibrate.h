// `cgc calibrate`: per-tensor statistics (min, max, count, histogram) of a
// float model's activations over calibration inputs, written as JSON for
// int8 quantisation to choose activation scales from later. The tensors are
// observed without touching the runtime: every float tensor a top-level node
// computes from the graph inputs becomes a graph output of a copy of the
// model, compiled and run as `cgc run` does (separate outputs keep fusion
// from erasing them and leave the float numerics as they are).
#pragma once

#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace cgc::commands {

struct CalibrateOptions {
  driver::CompileOptions compile;
  std::vector<std::string> inputDirs;  // --inputs, each in the ONNX test-data layout
  std::string output;                  // -o; default: <model dir>/<model stem>.calib.json
  int bins = 2048;                     // --bins
  /// How errors name each input set: its directory when empty; Python's
  /// calibrate() gives "input set N" (its directories are temporary).
  std::vector<std::string> inputNames;
};

/// The default -o: "dir/model.onnx" -> "dir/model.calib.json".
std::string defaultCalibrationPath(const std::string& modelPath);

/// Runs the model twice over every input set (pass 1: min, max and count per
/// tensor; pass 2: a histogram of `bins` equal bins over [min, max]) and
/// writes the JSON atomically. CompileError (nothing written) for no input
/// sets, an input file that is missing or does not match the model, and a
/// NaN or infinite value (naming the tensor and the input set).
int calibrate(const CalibrateOptions& options);

}  // namespace cgc::commands
