// The compile pipeline behind every cgc command: load, passes, schedule,
// memory plan, codegen, format, write, and optionally verify with Clang.
#pragma once

#include <string>
#include <vector>

#include "codegen/model_emitter.h"
#include "ir/graph.h"
#include "onnx_frontend/onnx_loader.h"
#include "passes/memory_plan.h"
#include "passes/schedule.h"

namespace cgc::driver {

struct CompileOptions {
  std::string modelPath;
  std::string outDir = ".";
  std::string className;  // --name
  std::string nameSpace = "cgc_models";
  frontend::LoadOptions load;
  bool embedWeights = true;
  bool verify = false;
  std::vector<std::string> disabledPasses;
  int executors = 0;        // --executors; 0: chosen from the machine's cores
  int threadsPerExecutor = 0;  // --threads; 0: the cores left per executor
  std::string profilePath;  // --profile: measured costs for levels/partition
  bool quiet = false;  // no progress lines on stderr
};

/// The compiled model in memory (before anything is written).
struct CompiledModel {
  ir::Graph graph;
  passes::Schedule schedule;
  passes::MemoryPlan plan;
  int importedNodes = 0;
};

struct WrittenFiles {
  codegen::EmittedModel emitted;
  std::string headerPath, sourcePath, weightsPath;
};

/// Where the runtime's headers and library are: the install tree next to the
/// cgc executable if there is one, else the build tree cgc was built in.
struct RuntimePaths {
  std::string includeDir;
  std::string library;  // libcgc_runtime.a
};
RuntimePaths runtimePaths();

/// Frontend + passes + schedule + plan, each verified.
CompiledModel compileGraph(const CompileOptions& options);

/// Generates and formats NAME.h / NAME.cpp and the weights blob in memory.
/// `weightsDir` is where a `--weights file` model looks for its weights.
codegen::EmittedModel emitModel(const CompiledModel& model,
                                const CompileOptions& options,
                                const std::string& weightsDir);

/// Writes the emitted files into `outDir`; with options.verify, parses the
/// result with Clang and throws CompileError carrying Clang's diagnostics if
/// it is not clean.
WrittenFiles writeModel(codegen::EmittedModel emitted,
                        const std::string& outDir,
                        const CompileOptions& options);

/// Progress line on stderr unless quiet: "cgc: <text>".
void progress(const CompileOptions& options, const std::string& text);

}  // namespace cgc::driver
