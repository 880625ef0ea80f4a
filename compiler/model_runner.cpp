// See model_runner.h.
#include "compiler/model_runner.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "compiler/targets.h"
#include "compiler_config.h"

namespace cgc::driver {
namespace fs = std::filesystem;

namespace {

std::string shellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs a shell command, capturing stdout and stderr together.
int runCommand(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    output.append(buffer.data(), n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

template <typename F>
F symbol(void* handle, const std::string& name, const std::string& library) {
  void* address = dlsym(handle, name.c_str());
  if (!address)
    userError({library, "", ""}, "symbol {} is missing from the library", name);
  return reinterpret_cast<F>(address);
}

}  // namespace

std::string generatedCodeFlags(const std::string& targetName) {
  const Target target = findTarget(targetName);
  return fmt::format("{} -std=c++20 -O2 {} -fPIC -Wall -Wextra", target.compiler(), target.flags);
}

std::string cacheDirectory() {
  if (const char* dir = std::getenv("CGC_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return std::string(xdg) + "/cgc";
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/cgc";
  return "/tmp/cgc-cache";
}

std::string buildSharedLibrary(const WrittenFiles& files,
                               const CompileOptions& options) {
  fs::path source = files.sourcePath;
  fs::path library = source.parent_path() / (files.emitted.baseName + ".so");
  if (fs::exists(library)) return library.string();
  // Code for another processor family cannot be loaded here; code for a
  // CPU feature this one lacks can, and its ModelSpec check says so.
  const Target target = findTarget(options.target);
  if (std::string why = whyNotRunnableHere(target); target.arch != findTarget("native").arch)
    userError({options.modelPath, "", ""},
              "{}: cgc run and cgc tune load the model here; compile it with cgc compile "
              "--target {} and build it with {}",
              why, target.name, target.compiler());
  auto start = std::chrono::steady_clock::now();
  RuntimePaths runtime = runtimePaths(target.name);
  if (!fs::exists(runtime.library))
    userError({runtime.library, "", ""}, "the runtime for target {} is not installed",
              target.name);
  std::string dir = source.parent_path().string();
  // Build under a temporary name: concurrent runs of the same model race to
  // the rename, never to a half-written library.
  fs::path temporary = library.string() + fmt::format(".tmp{}", getpid());
  std::string command = fmt::format(
      // The runtime's GEMMs call LIBXSMM (static, PIC), which needs dl.
      "{} -shared -I{} -I{} -Wa,-I{} {} {} -lxsmm -lxsmmnoblas -lpthread -ldl "
      "-o {}",
      generatedCodeFlags(options.target),
      shellQuote(runtime.includeDir), shellQuote(dir), shellQuote(dir),
      shellQuote(source.string()), shellQuote(runtime.library),
      shellQuote(temporary.string()));
  std::string output;
  int status = runCommand(command, output);
  if (status != 0 || !output.empty()) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw InternalError(fmt::format(
        "internal error: the generated code does not build {}:\n{}\n{}",
        status != 0 ? "" : "warning-free", command, output));
  }
  fs::rename(temporary, library);
  progress(options, fmt::format("built {} ({:.2f} s)", library.string(),
                                std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - start)
                                    .count()));
  return library.string();
}

LoadedModel::LoadedModel(const std::string& library, const std::string& prefix) {
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) userError({library, "", ""}, "cannot load: {}", dlerror());
  auto create = symbol<void* (*)(const char*)>(handle_, prefix + "_create", library);
  auto lastError = symbol<const char* (*)()>(handle_, prefix + "_last_error", library);
  destroy_ = symbol<void (*)(void*)>(handle_, prefix + "_destroy", library);
  run_ = symbol<cgc_status (*)(void*)>(handle_, prefix + "_run", library);
  error_ = symbol<const char* (*)(const void*)>(handle_, prefix + "_error", library);
  input_ = symbol<void* (*)(void*, int)>(handle_, prefix + "_input", library);
  output_ = symbol<const void* (*)(const void*, int)>(handle_, prefix + "_output", library);
  outputShape_ =
      symbol<int (*)(const void*, int, int64_t*)>(handle_, prefix + "_output_shape", library);
  setProfiler_ = symbol<void (*)(void*, void*)>(handle_, prefix + "_set_profiler", library);
  placement_ = symbol<const char* (*)(const void*)>(handle_, prefix + "_placement", library);
  info_ = symbol<const cgc_model_info* (*)()>(handle_, prefix + "_info", library)();
  instance_ = create(nullptr);
  if (!instance_) userError({library, "", ""}, "cannot create the model: {}", lastError());
}

LoadedModel::~LoadedModel() {
  if (instance_) destroy_(instance_);
  if (handle_) dlclose(handle_);
}

}  // namespace cgc::driver
