// See driver.h.
#include "compiler/driver.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cgc/team.h"
#include "codegen/clang_tools.h"
#include "compiler_config.h"
#include "passes/pass_manager.h"

namespace cgc::driver {
namespace fs = std::filesystem;

namespace {

void writeFile(const fs::path& path, const void* data, size_t bytes) {
  std::ofstream file(path, std::ios::binary);
  file.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!file) userError({path.string(), "", ""}, "cannot write the file");
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

void progress(const CompileOptions& options, const std::string& text) {
  if (!options.quiet) std::cerr << "cgc: " << text << std::endl;
}

RuntimePaths runtimePaths() {
  std::error_code error;
  fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    fs::path prefix = exe.parent_path().parent_path();
    if (fs::exists(prefix / "include/cgc/runtime.h") &&
        fs::exists(prefix / CGC_INSTALL_LIBDIR / "libcgc_runtime.a"))
      return {(prefix / "include").string(),
              (prefix / CGC_INSTALL_LIBDIR / "libcgc_runtime.a").string()};
  }
  return {CGC_BUILD_RUNTIME_INCLUDE_DIR, CGC_BUILD_RUNTIME_LIBRARY};
}

CompiledModel compileGraph(const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  CompiledModel model{frontend::loadOnnx(options.modelPath, options.load), {}, {}, 0};
  model.importedNodes = static_cast<int>(model.graph.liveNodes().size());
  progress(options, fmt::format("loaded {}: {} nodes after import ({:.2f} s)",
                                options.modelPath, model.importedNodes,
                                secondsSince(start)));
  passes::PipelineOptions pipeline;
  pipeline.disabled = options.disabledPasses;
  passes::runPipeline(model.graph, pipeline);
  model.schedule = passes::scheduleSequential(model.graph);
  model.schedule.threadsPerExecutor =
      options.threadsPerExecutor > 0 ? options.threadsPerExecutor : cgc::available_cpus();
  passes::verifySchedule(model.graph, model.schedule);
  model.plan = passes::planMemory(model.graph, model.schedule);
  passes::verifyMemoryPlan(model.graph, model.schedule, model.plan);
  progress(options,
           fmt::format("planned {} kernels; arena {} bytes ({} without reuse), "
                       "weights {} bytes",
                       model.graph.liveNodes().size(), model.plan.arenaBytes,
                       model.plan.bytesWithoutReuse,
                       ir::constantBytes(model.graph)));
  return model;
}

codegen::EmittedModel emitModel(const CompiledModel& model,
                                const CompileOptions& options,
                                const std::string& weightsDir) {
  codegen::EmitOptions emit;
  emit.className = options.className;
  if (!options.className.empty())
    emit.symbolPrefix = codegen::toSymbolPrefix(options.className);
  emit.nameSpace = options.nameSpace;
  emit.embedWeights = options.embedWeights;
  std::string prefix =
      emit.symbolPrefix.empty()
          ? codegen::toSymbolPrefix(codegen::toClassName(model.graph.name))
          : emit.symbolPrefix;
  emit.weightsPath =
      fs::absolute(fs::path(weightsDir) / (prefix + ".weights.bin")).string();
  auto emitted =
      codegen::emitModel(model.graph, model.schedule, model.plan, emit);
  emitted.header = codegen::formatCpp(emitted.header, emitted.baseName + ".h");
  emitted.source = codegen::formatCpp(emitted.source, emitted.baseName + ".cpp");
  return emitted;
}

WrittenFiles writeModel(codegen::EmittedModel emitted,
                        const std::string& outDirName,
                        const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  fs::path outDir = outDirName;
  std::error_code error;
  fs::create_directories(outDir, error);
  if (error)
    userError({outDir.string(), "", ""},
              "cannot create the output directory: {}", error.message());
  WrittenFiles files;
  files.emitted = std::move(emitted);
  const auto& e = files.emitted;
  files.headerPath = (outDir / (e.baseName + ".h")).string();
  files.sourcePath = (outDir / (e.baseName + ".cpp")).string();
  files.weightsPath = (outDir / (e.baseName + ".weights.bin")).string();
  writeFile(files.headerPath, e.header.data(), e.header.size());
  writeFile(files.sourcePath, e.source.data(), e.source.size());
  writeFile(files.weightsPath, e.weights.data(), e.weights.size());
  progress(options, fmt::format("wrote {}, {} and {} ({:.2f} s)",
                                files.headerPath, files.sourcePath,
                                files.weightsPath, secondsSince(start)));
  if (options.verify) {
    start = std::chrono::steady_clock::now();
    auto result = codegen::verifyTranslationUnit(
        files.sourcePath, {runtimePaths().includeDir, outDir.string()});
    if (!result.ok)
      userError({files.sourcePath, "", ""},
                "the generated code does not pass Clang ({} errors, {} "
                "warnings):\n{}",
                result.errors, result.warnings, result.diagnostics);
    progress(options, fmt::format("verified {} with Clang ({:.2f} s)",
                                  files.sourcePath, secondsSince(start)));
  }
  return files;
}

}  // namespace cgc::driver
