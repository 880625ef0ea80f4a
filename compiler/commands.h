// The cgc subcommands. Each returns the process exit code; errors propagate
// as CompileError (exit 1) or InternalError (exit 2) to main.
#pragma once

#include <string>
#include <vector>

#include "compiler/driver.h"

namespace cgc::commands {

int compile(const driver::CompileOptions& options);

struct RunOptions {
  driver::CompileOptions compile;
  std::string inputsDir;
  std::string outputsDir;
  std::string checkDir;
  double rtol = 1e-3;
  double atol = 1e-4;
  int benchRuns = 0;
  std::string profileOut;
  std::string traceOut;
};

int run(const RunOptions& options);

int inspect(const driver::CompileOptions& options, bool json);

/// "--shape" values "NAME=1x3x224x224" -> bindings; CompileError if malformed.
std::vector<std::pair<std::string, ir::Shape>> parseShapeBindings(
    const std::vector<std::string>& texts);

/// "--constant" values "NAME=FILE" -> pairs; CompileError if malformed.
std::vector<std::pair<std::string, std::string>> parseNamedFiles(
    const std::vector<std::string>& texts);

}  // namespace cgc::commands
