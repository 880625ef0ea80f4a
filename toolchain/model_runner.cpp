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
#include <optional>

#include "codegen/clang_tools.h"
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

std::string generatedCodeOptions(const std::string& targetName, int optLevel) {
  return fmt::format("-std=c++20 -O{} {} -fPIC -Wall -Wextra", optLevel,
                     findTarget(targetName).flags);
}

std::string generatedCodeFlags(const std::string& targetName, int optLevel) {
  return findTarget(targetName).compiler() + " " + generatedCodeOptions(targetName, optLevel);
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
  const Target target = findTarget(options.target);
  if (std::string why = whyNotRunnableHere(target); target.arch != findTarget("native").arch)
    userError({options.modelPath, "", ""},
              "{}: cgc run and cgc tune load the model here; compile it with cgc compile "
              "--target {} and build it with {}",
              why, target.name, target.compiler());
  return target;
}

/// Compiles `source` (whose generated files, and their weights for
/// .incbin, are in `dirs`) with the target's runtime into the shared
/// library `library`, under a temporary name first: concurrent builds of
/// the same model race to the rename, never to a half-written library.
void compileShared(const fs::path& source, const std::vector<std::string>& dirs,
                   const fs::path& library, const Target& target, int optLevel,
                   const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  RuntimePaths runtime = runtimePaths(target.name);
  if (!fs::exists(runtime.library))
    userError({runtime.library, "", ""}, "the runtime for target {} is not installed", target.name);
  std::string includes;
  for (const auto& dir : dirs) includes += fmt::format(" -I{0} -Wa,-I{0}", shellQuote(dir));
  fs::path temporary = library.string() + fmt::format(".tmp{}", getpid());
  std::string command = fmt::format(
      // The runtime's GEMMs call LIBXSMM (static, PIC), which needs dl.
      "{} -shared -I{}{} {} {} {} -o {}", generatedCodeFlags(target.name, optLevel),
      shellQuote(runtime.includeDir), includes, shellQuote(source.string()),
      shellQuote(runtime.library), runtimeLinkLibraries(target.name),
      shellQuote(temporary.string()));
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

}  // namespace

std::string buildSharedLibrary(const WrittenFiles& files, const CompileOptions& options) {
  fs::path source = files.sourcePath;
  fs::path library = source.parent_path() / (files.emitted.baseName + ".so");
  if (fs::exists(library)) return library.string();
  compileShared(source, {source.parent_path().string()}, library, loadableTarget(options), 2,
                options);
  return library.string();
}

namespace {

/// The names a generated source says it declares (codegen::modelNamesLine,
/// among its first lines); nullopt for a source of an older cgc.
std::optional<codegen::ModelNames> namesOf(const std::string& source) {
  std::ifstream file(source);
  std::string line;
  for (int i = 0; i < 4 && std::getline(file, line); ++i)
    if (auto names = codegen::parseModelNamesLine(line)) return names;
  return std::nullopt;
}

/// Why models `a` and `b` cannot share one translation unit, with the flag
/// that fixes it; "" if they can.
std::string clash(const codegen::ModelNames& a, const codegen::ModelNames& b) {
  if (a.prefix == b.prefix)
    return fmt::format(
        "have the same C prefix '{}' (classes {} and {}), so the same symbols: recompile one "
        "with another --name",
        a.prefix, a.className, b.className);
  if (a.nameSpace == b.nameSpace)
    return fmt::format(
        "are both in namespace {} (classes {} and {}), whose generated constants and helpers "
        "clash in one library: recompile one with its own --namespace, e.g. --namespace {}::{}",
        a.nameSpace, a.className, b.className, b.nameSpace, b.prefix);
  for (const auto& [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    if (x->nameSpace + "::" + x->className == y->nameSpace)
      return fmt::format(
          "declare {}::{} both as a class and as a namespace: recompile one with "
          "another --namespace",
          y->nameSpace, x->className);
    if (x->prefix == y->nameSpace.substr(0, y->nameSpace.find("::")))
      return fmt::format(
          "declare the global name {} both as a C prefix (class {}) and as a "
          "namespace: recompile one with another --namespace or --name",
          x->prefix, x->className);
  }
  return "";
}

/// Every pair of `sources` that cannot share one translation unit is the
/// user's error, found before anything is compiled.
void checkNoClash(const std::vector<std::string>& sources) {
  std::vector<std::pair<std::string, codegen::ModelNames>> models;
  for (const auto& source : sources) {
    const auto names = namesOf(source);
    if (!names) continue;
    for (const auto& [other, known] : models) {
      if (fs::equivalent(other, source))
        userError({source, "", ""}, "the same source is given twice (also as {})", other);
      if (std::string why = clash(known, *names); !why.empty())
        throw CompileError(fmt::format("cgc: error: {} and {} {}", other, source, why));
    }
    models.emplace_back(source, *names);
  }
}

}  // namespace

void buildLibrary(const std::vector<std::string>& sources, const std::string& library, bool verify,
                  int optLevel, const CompileOptions& options) {
  if (sources.empty()) throw CompileError("cgc: error: build needs at least one source");
  for (const auto& name : sources)
    if (!fs::is_regular_file(name)) userError({name, "", ""}, "no such generated source");
  checkNoClash(sources);
  const Target target = loadableTarget(options);
  std::vector<std::string> dirs;
  std::string unity = "// Generated by cgc build: one translation unit for several models.\n";
  for (const auto& name : sources) {
    const fs::path source = fs::absolute(name);
    const std::string dir = source.parent_path().string();
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
    unity += fmt::format("#include \"{}\"\n", source.string());
  }
  const fs::path unityPath = library + ".unity.cpp";
  std::ofstream(unityPath) << unity;
  if (verify) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::string> includeDirs = {runtimePaths(target.name).includeDir};
    includeDirs.insert(includeDirs.end(), dirs.begin(), dirs.end());
    const auto result = codegen::verifyTranslationUnit(unityPath.string(), includeDirs);
    if (!result.ok)
      throw InternalError(
          fmt::format("{}: internal error: the generated code does not pass Clang ({} errors, {} "
                      "warnings):\n{}",
                      unityPath.string(), result.errors, result.warnings, result.diagnostics));
    progress(options,
             fmt::format(
                 "verified {} with Clang ({:.2f} s)", unityPath.string(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  }
  compileShared(unityPath, dirs, library, target, optLevel, options);
  // The unit stays beside the library only when it fails (the error names it).
  std::error_code ignored;
  fs::remove(unityPath, ignored);
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
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
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
