// The cgc subcommands. Each returns the process exit code; errors propagate
// as CompileError (exit 1) or InternalError (exit 2) to main.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "onnx_frontend/tensor_proto.h"
#include "pipeline/pipeline.h"
#include "toolchain/model_runner.h"

namespace cgc::commands {

/// cgc compile; with a `depfile`, also writes the files the output was made
/// from there, in make's form (the model, its external data files, the
/// profile, constant inputs and calibration file), for a build system.
int compile(const driver::CompileOptions& options, const std::string& depfile = "");

struct RunOptions {
  driver::CompileOptions compile;
  std::string inputsDir;
  bool fillMissingInputs = false;  // --fill-missing-inputs
  std::string outputsDir;
  std::string checkDir;
  double rtol = 1e-3;
  double atol = 1e-4;
  int benchRuns = 0;
  /// --sweep: with --bench, the sizes of --dim dimensions to time, one
  /// combination each (compiler/specializations.h's parseSizeLists).
  std::vector<std::map<std::string, int64_t>> sweep;
  std::string profileOut;
  std::string traceOut;
  std::string statisticsOut;  // --statistics-out: the first run's, as a calibration file
  /// --library: run the model from this shared library (`cgc build` of the
  /// model's `cgc compile --name` output) instead of building it; the class
  /// name (--name) gives the symbols' prefix.
  std::string library;
  /// --oversubscribe: run executors x threads as compiled even beyond this
  /// machine's cores (sets CGC_OVERSUBSCRIBE=1 for the runtime).
  bool oversubscribe = false;
};

int run(const RunOptions& options);

struct BuildOptions {
  std::vector<std::string> sources;  // NAME.cpp files written by cgc compile
  std::string library;               // -o
  bool verify = false;
  bool quiet = false;
  int optLevel = 2;  // -O
};

/// `cgc build`: several compiled models into one shared library
/// (driver::buildLibrary).
int build(const BuildOptions& options);

/// A compiled model built into a shared library (cached by content under
/// driver::cacheDirectory()), ready for driver::LoadedModel.
struct BuiltModel {
  std::string library;
  std::string prefix;  // the C ABI's symbol prefix
};
BuiltModel buildCached(const driver::CompiledModel& model, const driver::CompileOptions& options);

/// What `cgc run` (and the Python module) compile and load: the model
/// compiled with `options` into `model` (for several targets, the first
/// target's) and built by buildCached, or for several targets into one
/// cached library of all of them.
BuiltModel compileAndBuild(const driver::CompileOptions& options, driver::CompiledModel& model);

/// compileAndBuild, unless the same compile (cache::compileKey) was made
/// before and its build is still in the cache: then only that build's
/// library. `onnxInputs`: the ONNX model's input names (for setInputs).
BuiltModel compileOnce(const driver::CompileOptions& options, std::vector<std::string>& onnxInputs);

/// Fills the model's inputs from DIR/input_N.pb (ONNX test-data numbering:
/// `onnxInputs`, the ONNX model's input names, counts inputs that
/// --constant made constants). A missing or empty directory or a missing
/// file is a CompileError, unless `fillMissing`: then the inputs without a
/// file get deterministic data and, with `note`, a note on stderr names
/// them. A file input_N.pb past the model's inputs is a CompileError too.
void setInputs(const std::vector<std::string>& onnxInputs, driver::LoadedModel& loaded,
               const std::string& inputsDir, bool fillMissing, bool note = true);
inline void setInputs(const driver::CompiledModel& model, driver::LoadedModel& loaded,
                      const std::string& inputsDir, bool fillMissing, bool note = true) {
  setInputs(model.graph.onnxInputNames, loaded, inputsDir, fillMissing, note);
}

/// Output `index` of the loaded model (after run()) as a dense tensor of its
/// actual shape: a data-dependent size is stored at the bound shape, its
/// elements at their places in it.
frontend::HostTensor outputTensor(const driver::LoadedModel& model, int index);

/// A tensor's elements as doubles, through the IR's constant reader.
std::vector<double> toDoubles(const frontend::HostTensor& t);

/// Runs the loaded model once; a failed run() is a CompileError naming the
/// model and the node (a problem in the model's data).
void runOnce(driver::LoadedModel& loaded, const std::string& modelPath);

/// What `cgc inspect --json` prints: the model's summary and, when it
/// compiles, its plan; a CompileError of the compile is reported in it
/// ("error", "hint"), one of reading the file is thrown.
nlohmann::json inspectReport(const driver::CompileOptions& options);
int inspect(const driver::CompileOptions& options, bool json);

struct ConfigOptions {
  bool cflags = false;    // -I for the runtime's headers (any file including a generated header)
  bool cxxflags = false;  // what compiling a generated NAME.cpp takes
  bool libs = false;      // the runtime archive and what it links
  std::string target = "native";
};

/// `cgc config`: the flags a build without CMake needs, on one line, for
/// this cgc's install or build tree; CompileError when none is asked for
/// or the target's runtime is missing.
int config(const ConfigOptions& options);

/// `cgc inspect --ops`: the supported ops as Markdown (docs/OPS.md).
int printSupportedOps();

/// "--shape" values "NAME=1x3x224x224" -> bindings; CompileError if malformed.
std::vector<std::pair<std::string, ir::Shape>> parseShapeBindings(
    const std::vector<std::string>& texts);

/// "--bound" values "NAME=N" -> bounds; CompileError if malformed.
std::map<std::string, int64_t> parseBounds(const std::vector<std::string>& texts);

/// "--constant" values "NAME=FILE" -> pairs; CompileError if malformed.
std::vector<std::pair<std::string, std::string>> parseNamedFiles(
    const std::vector<std::string>& texts);

}  // namespace cgc::commands
