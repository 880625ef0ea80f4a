// See driver.h: writing the generated files and checking them with Clang
// (the pipeline itself is pipeline.cpp).
#include <fmt/ranges.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cgc/team.h"
#include "codegen/clang_tools.h"
#include "codegen/install_prefix.h"
#include "compiler_config.h"
#include "pipeline/pipeline.h"
#include "pipeline/targets.h"

namespace cgc::driver {
namespace fs = std::filesystem;

namespace {

/// Writes a temporary file beside `path` with write(stream), and renames it
/// over `path`: a program that maps the old weights file keeps its pages.
template <typename Write>
void writeFile(const fs::path& path, Write&& write) {
  fs::path temporary = path;
  temporary += ".partial";
  {
    std::ofstream file(temporary, std::ios::binary);
    write(file);
    if (!file) userError({path.string(), "", ""}, "cannot write the file");
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) userError({path.string(), "", ""}, "cannot write the file: {}", error.message());
}

void writeFile(const fs::path& path, const std::string& text) {
  writeFile(path, [&](std::ofstream& file) {
    file.write(text.data(), static_cast<std::streamsize>(text.size()));
  });
}

}  // namespace

RuntimePaths runtimePaths(const Target& target) {
  const std::string library = target.runtimeLibrary();
  const fs::path prefix = codegen::installPrefix(
      {"include/cgc/runtime.h", std::string(CGC_INSTALL_LIBDIR) + "/libcgc_runtime.a"});
  if (!prefix.empty())
    return {(prefix / "include").string(), (prefix / CGC_INSTALL_LIBDIR / library).string()};
  return {CGC_BUILD_RUNTIME_INCLUDE_DIR, (fs::path(CGC_BUILD_RUNTIME_DIR) / library).string()};
}

std::string runtimeLinkLibraries(const Target& target, bool cxxLibrary) {
  std::string libraries = CGC_SYSTEM_LIBRARIES;
  if (target.xsmmArch != "none" && *CGC_XSMM_LIBRARIES)
    libraries = CGC_XSMM_LIBRARIES " " + libraries;
  if (cxxLibrary && *CGC_CXX_LIBRARIES) libraries += " " CGC_CXX_LIBRARIES;
  return libraries;
}

WrittenFiles writeModel(codegen::EmittedModel emitted, const std::string& outDirName,
                        const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  fs::path outDir = outDirName;
  std::error_code error;
  fs::create_directories(outDir, error);
  if (error)
    userError({outDir.string(), "", ""}, "cannot create the output directory: {}", error.message());
  WrittenFiles files;
  files.emitted = std::move(emitted);
  const auto& e = files.emitted;
  files.headerPath = (outDir / (e.baseName + ".h")).string();
  files.sourcePath = (outDir / (e.baseName + ".cpp")).string();
  files.weightsPath = (outDir / (e.baseName + ".weights.bin")).string();
  writeFile(files.headerPath, e.header);
  writeFile(files.sourcePath, e.source);
  if (e.hasWeightsFile) {
    writeFile(files.weightsPath, [&](std::ofstream& file) {
      e.weights.forEachChunk([&](const uint8_t* data, size_t bytes) {
        file.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(bytes));
      });
    });
    progress(options, fmt::format("wrote {}, {} and {} ({} bytes of weights; {:.2f} s)",
                                  files.headerPath, files.sourcePath, files.weightsPath,
                                  e.weights.size(), secondsSince(start)));
  } else {
    files.weightsPath.clear();
    progress(options, fmt::format("wrote {} and {} ({:.2f} s)", files.headerPath, files.sourcePath,
                                  secondsSince(start)));
  }
  if (options.verify) {
    start = std::chrono::steady_clock::now();
    auto result = codegen::verifyTranslationUnit(files.sourcePath,
                                                 {runtimePaths().includeDir, outDir.string()});
    if (!result.ok)
      throw InternalError(
          fmt::format("{}: internal error: the generated code does not pass Clang ({} errors, {} "
                      "warnings):\n{}",
                      files.sourcePath, result.errors, result.warnings, result.diagnostics));
    progress(options, fmt::format("verified {} with Clang ({:.2f} s)", files.sourcePath,
                                  secondsSince(start)));
  }
  return files;
}

}  // namespace cgc::driver