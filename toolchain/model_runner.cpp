// See model_runner.h.
#include "toolchain/model_runner.h"

#include <dlfcn.h>
#include <elf.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "compiler_config.h"
#include "pipeline/targets.h"

namespace cgc::driver {
namespace fs = std::filesystem;

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
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

namespace {

template <typename F>
F symbol(void* handle, const std::string& name, const std::string& library) {
  void* address = dlsym(handle, name.c_str());
  if (!address) userError({library, "", ""}, "symbol {} is missing from the library", name);
  return reinterpret_cast<F>(address);
}

}  // namespace

std::string generatedCodeOptions(const Target& target, int optLevel) {
  return fmt::format("-std=c++20 -O{} {} -fPIC -Wall -Wextra", optLevel, target.flags);
}

std::string generatedCodeFlags(const Target& target, int optLevel) {
  return target.compiler() + " " + generatedCodeOptions(target, optLevel);
}

namespace {
std::string& cacheDirectoryOverride() {
  static std::string dir;
  return dir;
}
}  // namespace

std::string setCacheDirectoryOverride(std::string dir) {
  std::swap(cacheDirectoryOverride(), dir);
  return dir;
}

std::string cacheDirectory() {
  if (!cacheDirectoryOverride().empty()) return cacheDirectoryOverride();
  if (const char* dir = std::getenv("CGC_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return std::string(xdg) + "/cgc";
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/cgc";
  return "/tmp/cgc-cache";
}

namespace {

/// The target of `options`, if code built for it can be loaded here.
Target loadableTarget(const CompileOptions& options) {
  // Code for another processor family cannot be loaded here; code for a
  // CPU feature this one lacks can, and its ModelSpec check says so.
  const Target& target = options.target();
  if (std::string why = whyNotRunnableHere(target); target.arch != nativeTarget().arch)
    userError({options.modelPath, "", ""},
              "{}: cgc run and cgc tune load the model here; compile it with cgc compile "
              "--target {} and build it with {}",
              why, target.name, target.compiler());
  return target;
}

}  // namespace

RuntimePaths installedRuntime(const Target& target) {
  RuntimePaths runtime = runtimePaths(target);
  if (!fs::exists(runtime.library))
    userError({runtime.library, "", ""}, "the runtime for target {} is not installed", target.name);
  return runtime;
}

void compileShared(const fs::path& source, const std::vector<std::string>& dirs,
                   const fs::path& library, const Target& target, int optLevel,
                   const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  const RuntimePaths runtime = installedRuntime(target);
  std::string includes;
  for (const auto& dir : dirs) includes += fmt::format(" -I{0} -Wa,-I{0}", shellQuote(dir));
  fs::path temporary = library.string() + fmt::format(".tmp{}", getpid());
  std::string command = fmt::format(
      // The runtime's GEMMs call LIBXSMM (static, PIC), which needs dl.
      "{} -shared -I{}{} {} {} {} -o {}", generatedCodeFlags(target, optLevel),
      shellQuote(runtime.includeDir), includes, shellQuote(source.string()),
      shellQuote(runtime.library), runtimeLinkLibraries(target), shellQuote(temporary.string()));
  std::string output;
  int status = runCommand(command, output);
  if (status != 0 || !output.empty()) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw InternalError(fmt::format("internal error: the generated code does not build {}:\n{}\n{}",
                                    status != 0 ? "" : "warning-free", command, output));
  }
  fs::rename(temporary, library);
  progress(
      options,
      fmt::format("built {} ({:.2f} s)", library.string(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
}

std::string buildSharedLibrary(const WrittenFiles& files, const CompileOptions& options) {
  fs::path source = files.sourcePath;
  fs::path library = source.parent_path() / (files.emitted.baseName + ".so");
  if (fs::exists(library)) return library.string();
  compileShared(source, {source.parent_path().string()}, library, loadableTarget(options), 2,
                options);
  return library.string();
}

namespace {

/// The defined symbols of the ELF file `path`'s dynamic symbol table that
/// end in `suffix`, without it; empty when the file is no 64-bit ELF file.
std::vector<std::string> dynamicSymbolsEndingIn(const std::string& path,
                                                const std::string& suffix) {
  std::ifstream file(path, std::ios::binary);
  auto read = [&file](void* into, uint64_t offset, uint64_t bytes) {
    file.seekg(static_cast<std::streamoff>(offset));
    return static_cast<bool>(
        file.read(static_cast<char*>(into), static_cast<std::streamsize>(bytes)));
  };
  Elf64_Ehdr header{};
  if (!read(&header, 0, sizeof header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr))
    return {};
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  if (!read(sections.data(), header.e_shoff, sections.size() * sizeof(Elf64_Shdr))) return {};
  std::vector<std::string> names;
  for (const Elf64_Shdr& table : sections) {
    if (table.sh_type != SHT_DYNSYM || table.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings = sections[table.sh_link];
    std::vector<Elf64_Sym> symbols(table.sh_size / sizeof(Elf64_Sym));
    std::string text(strings.sh_size, '\0');
    if (!read(symbols.data(), table.sh_offset, symbols.size() * sizeof(Elf64_Sym)) ||
        !read(text.data(), strings.sh_offset, text.size()))
      return {};
    for (const Elf64_Sym& symbol : symbols) {
      if (symbol.st_shndx == SHN_UNDEF || symbol.st_name >= text.size()) continue;
      const std::string name = text.c_str() + symbol.st_name;
      if (name.size() > suffix.size() && name.ends_with(suffix))
        names.push_back(name.substr(0, name.size() - suffix.size()));
    }
  }
  return names;
}

}  // namespace

std::vector<std::string> modelsInLibrary(void* handle, const std::string& library) {
  std::vector<std::string> models;
  for (const std::string& prefix : dynamicSymbolsEndingIn(library, "_api")) {
    // A model's <prefix>_info returns its description (a static), nothing else.
    auto info =
        reinterpret_cast<const cgc_model_info* (*)()>(dlsym(handle, (prefix + "_info").c_str()));
    const cgc_model_info* model = info ? info() : nullptr;
    if (model && model->name &&
        std::find(models.begin(), models.end(), model->name) == models.end())
      models.push_back(model->name);
  }
  std::sort(models.begin(), models.end());
  return models;
}

LoadedModel::LoadedModel(const std::string& library, const std::string& prefix) {
  // A path, never a name for dlopen to search for ("lib.so": ./lib.so).
  handle_ = dlopen(fs::absolute(library).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) userError({library, "", ""}, "cannot load: {}", dlerror());
  if (!dlsym(handle_, (prefix + "_api").c_str())) {
    const std::vector<std::string> models = modelsInLibrary(handle_, library);
    dlclose(handle_);
    handle_ = nullptr;
    userError({library, "", ""}, "holds no model of C prefix '{}' ({}_api); {}", prefix, prefix,
              models.empty()
                  ? std::string("it holds no cgc model")
                  : fmt::format("the models it holds (--name): {}", fmt::join(models, ", ")));
  }
  api_ = symbol<const cgc_model_api* (*)()>(handle_, prefix + "_api", library)();
  info_ = api_->info();
  for (int i = 0; i < info_->num_inputs; ++i)
    inputShapes_.emplace_back(info_->inputs[i].shape,
                              info_->inputs[i].shape + info_->inputs[i].rank);
  instance_ = api_->create_with_arena(nullptr, nullptr, 0);
  if (!instance_) userError({library, "", ""}, "cannot create the model: {}", api_->last_error());
}

int LoadedModel::threadsPerExecutor() const {
  // "1 executor(s) x 2 thread(s): ..."
  int executors = 0, threads = 0;
  if (std::sscanf(api_->placement(instance_), "%d executor(s) x %d thread(s)", &executors,
                  &threads) == 2)
    return threads;
  return info_->threads_per_executor;
}

LoadedModel::~LoadedModel() {
  if (instance_) api_->destroy(instance_);
  if (handle_) dlclose(handle_);
}

}  // namespace cgc::driver
