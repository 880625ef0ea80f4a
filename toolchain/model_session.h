// A model as the tools that compile and run it see it (cgc run, cgc tune,
// the accuracy budget, calibration and the Python module): compiled and
// built into a shared library kept in the build cache, its inputs filled
// from ONNX test-data files or with deterministic data, run once, and its
// outputs read densely. Below the command line, so that the tools need
// nothing of compiler/.
#pragma once

#include <string>
#include <vector>

#include "onnx_frontend/tensor_proto.h"
#include "pipeline/pipeline.h"
#include "toolchain/model_runner.h"

namespace cgc::driver {

/// A compiled model built into a shared library (cached by content under
/// cacheDirectory()), ready for LoadedModel.
struct BuiltModel {
  std::string library;
  std::string prefix;  // the C ABI's symbol prefix
};
BuiltModel buildCached(const CompiledModel& model, const CompileOptions& options);

/// What `cgc run` (and the Python module) compile and load: the model
/// compiled with `options` into `model` (for several targets, the first
/// target's) and built by buildCached, or for several targets into one
/// cached library of all of them.
BuiltModel compileAndBuild(const CompileOptions& options, CompiledModel& model);

/// compileAndBuild, unless the same compile (cache::compileKey) was made
/// before and its build is still in the cache: then only that build's
/// library. `onnxInputs`: the ONNX model's input names (for setInputs).
BuiltModel compileOnce(const CompileOptions& options, std::vector<std::string>& onnxInputs);

/// Fills the model's inputs from DIR/input_N.pb (ONNX test-data numbering:
/// `onnxInputs`, the ONNX model's input names, counts inputs that
/// --constant made constants). A missing or empty directory or a missing
/// file is a CompileError, unless `fillMissing`: then the inputs without a
/// file get deterministic data and, with `note`, a note on stderr names
/// them. A file input_N.pb past the model's inputs is a CompileError too.
void setInputs(const std::vector<std::string>& onnxInputs, LoadedModel& loaded,
               const std::string& inputsDir, bool fillMissing, bool note = true);
inline void setInputs(const CompiledModel& model, LoadedModel& loaded, const std::string& inputsDir,
                      bool fillMissing, bool note = true) {
  setInputs(model.graph.onnxInputNames, loaded, inputsDir, fillMissing, note);
}

/// Output `index` of the loaded model (after run()) as a dense tensor of its
/// actual shape: a data-dependent size is stored at the bound shape, its
/// elements at their places in it.
frontend::HostTensor outputTensor(const LoadedModel& model, int index);

/// A tensor's elements as doubles, through the IR's constant reader.
std::vector<double> toDoubles(const frontend::HostTensor& t);

/// Runs the loaded model once; a failed run() is a CompileError naming the
/// model and the node (a problem in the model's data).
void runOnce(LoadedModel& loaded, const std::string& modelPath);

/// Deterministic input data: uniform in [-1, 1) for floats, 0..9 for
/// integers, alternating for bool (seeded by the input's name).
void fillDeterministic(const cgc_tensor_info& info, void* data);

}  // namespace cgc::driver
