// The cgc subcommands. Each returns the process exit code; errors propagate
// as CompileError (exit 1) or InternalError (exit 2) to main.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "toolchain/model_session.h"

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
