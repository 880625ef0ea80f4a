// See build_cache.h.
#include "toolchain/build_cache.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cgc/machine.h"
#include "cgc/team.h"
#include "ir/diagnostics.h"
#include "onnx_frontend/external_data.h"
#include "pipeline/specializations.h"
#include "pipeline/targets.h"
#include "pipeline/tuned_profile.h"
#include "toolchain/model_runner.h"
#include "toolchain/target_library.h"

namespace cgc::cache {
namespace fs = std::filesystem;

namespace {

constexpr const char* kKeys = "compiled";    // key files: compiled/<key>.json
constexpr const char* kUsed = ".last_used";  // touched in a build's directory when used

uint64_t fnv1a(const std::string& bytes, uint64_t h) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// A file's bytes, "" when it cannot be read (the compile then fails, or
/// does without it, the same way each time).
std::string contents(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

/// A file's name, size and modification time: what identifies the compiler
/// and the runtime (too large to hash on every run; a rebuild changes them).
std::string identity(const std::string& path) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  const auto time = fs::last_write_time(path, error).time_since_epoch().count();
  return fmt::format("{} {} {}", path, error ? 0 : size, error ? 0 : time);
}

/// The file that holds this code: the cgc executable, or the Python module.
std::string compilerFile() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&compileKey), &info) && info.dli_fname)
    return fs::weakly_canonical(info.dli_fname).string();
  return "";
}

#if defined(__GLIBCXX__) && defined(__x86_64__)
// A field added to CompileOptions changes its size: add it to describe()
// when it changes what the compile makes, then update this size.
static_assert(sizeof(driver::CompileOptions) == 1112, "a new CompileOptions field: see describe()");
#endif

/// Every field of `o` that changes what the compile makes, and the bytes of
/// the files they name (not `quiet`: it changes only what is printed).
std::string describe(const driver::CompileOptions& o) {
  std::ostringstream out;
  const std::string model = contents(o.modelPath);
  out << o.modelPath << '\n' << model << '\n';
  // Tensors stored beside the model: their files' sizes and times (hashing
  // gigabytes of weights on every run would cost more than it saves).
  if (onnx::ModelProto proto;
      model.find("location") != std::string::npos && proto.ParseFromString(model))
    for (const auto& file : frontend::externalDataFiles(proto, o.modelPath))
      out << "external " << identity((fs::path(o.modelPath).parent_path() / file.location).string())
          << '\n';
  out << o.outDir << '|' << o.className << '|' << o.nameSpace << '|' << o.symbolPrefix << '\n';
  for (const auto& [name, shape] : o.load.shapes)
    out << "shape " << name << fmt::format("{}\n", shape);
  for (const auto& [name, file] : o.load.constantInputs)
    out << "constant " << name << ' ' << file << ' ' << contents(file) << '\n';
  out << fmt::format("bounds {} dims {} sized {} spelling {}\n", o.load.bounds, o.load.dims,
                     o.load.sizedValues, static_cast<int>(o.load.spelling));
  out << fmt::format("embed {} given {} passes-off {} target {} {}x{}\n", o.embedWeights,
                     o.weightsGiven, o.disabledPasses, driver::targetList(o.targets), o.executors,
                     o.threadsPerExecutor);
  if (!o.profilePath.empty()) out << "profile " << o.profilePath << contents(o.profilePath);
  out << fmt::format("section {} every {} variants {} alternatives {}\n",
                     o.overrides.profileSection, o.overrides.everyConvVariant,
                     o.overrides.convVariants, o.overrides.convAlternatives);
  const quant::QuantizeOptions& q = o.quantize;
  out << fmt::format("quantize {} {} {} {} {} {} weights-only {}\n", q.precision, q.method,
                     q.percentile, q.activations, q.keepFloat, q.calibration, q.weightsOnly);
  if (!q.keepBf16.empty()) out << fmt::format("keep-bf16 {}\n", q.keepBf16);
  out << fmt::format("precision {}\n", o.precision);
  if (!q.calibration.empty()) out << contents(q.calibration);
  out << fmt::format("observe {} profiled {}\n", o.observe, o.overrides.specializeProfiledSizes);
  out << fmt::format("cache-in-place {}\n", o.cacheInPlace);
  for (const auto& d : o.dims)
    out << fmt::format("dim {}={}..{}:{}\n", d.name, d.min, d.max, d.multiple);
  for (const auto& path : o.specialize) out << "specialize " << driver::describePath(path) << "\n";
  return out.str();
}

/// Bytes of the files under `dir`.
uint64_t bytesUnder(const fs::path& dir) {
  uint64_t bytes = 0;
  std::error_code error;
  for (fs::recursive_directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error))
    if (it->is_regular_file(error)) bytes += it->file_size(error);
  return bytes;
}

/// Whether `name` is a build's directory name: 16 hexadecimal digits.
bool isBuildName(const std::string& name) {
  return name.size() == 16 &&
         std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isxdigit(c); });
}

/// Removes the key files whose build is gone.
void removeStaleKeys(const fs::path& root) {
  std::error_code error;
  for (fs::directory_iterator it(root / kKeys, error), end; !error && it != end;
       it.increment(error)) {
    std::ifstream file(it->path());
    const auto key = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
    if (!key.is_object() || !fs::exists(key.value("library", std::string())))
      fs::remove(it->path(), error);
  }
}

}  // namespace

std::optional<uint64_t> compileKey(const driver::CompileOptions& options) {
  if ((options.overrides.model && options.overrides.model->edited()) ||
      !options.printIrAfter.empty() || options.verify || options.overrides.quantizeSpec ||
      options.quantize.measured() || driver::namesSeveralTargets(options))
    return std::nullopt;
  uint64_t key = 1469598103934665603ull;
  key = fnv1a(describe(options), key);
  const driver::Target& target = options.target();
  key = fnv1a(identity(compilerFile()), key);
  key = fnv1a(identity(driver::runtimePaths(target).library), key);
  key = fnv1a(driver::generatedCodeFlags(target), key);
  // The schedule and the kernels' choices follow the cores and caches.
  key = fnv1a(rt::describeMachine(rt::hostMachine(0)) + std::to_string(available_cpus()), key);
  return fnv1a(driver::thisCpu().str(), key);
}

std::optional<Compiled> lookup(uint64_t key) {
  const fs::path path =
      fs::path(driver::cacheDirectory()) / kKeys / fmt::format("{:016x}.json", key);
  std::ifstream file(path);
  if (!file) return std::nullopt;
  const auto json = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("library") || !json.contains("prefix") ||
      !json.contains("onnx_inputs"))
    return std::nullopt;
  Compiled compiled{json["library"].get<std::string>(), json["prefix"].get<std::string>(),
                    json["onnx_inputs"].get<std::vector<std::string>>()};
  if (!fs::exists(compiled.library)) return std::nullopt;
  markUsed(fs::path(compiled.library).parent_path());
  return compiled;
}

void remember(uint64_t key, const Compiled& compiled) {
  const fs::path dir = fs::path(driver::cacheDirectory()) / kKeys;
  std::error_code error;
  fs::create_directories(dir, error);
  const fs::path path = dir / fmt::format("{:016x}.json", key);
  const fs::path temporary = path.string() + fmt::format(".tmp{}", getpid());
  std::ofstream(temporary) << nlohmann::json{
      {"library", compiled.library},
      {"prefix", compiled.prefix},
      {"onnx_inputs",
       compiled.onnxInputs}}.dump();
  fs::rename(temporary, path, error);
  evict(fs::path(compiled.library).parent_path());
}

void markUsed(const fs::path& entry) { std::ofstream(entry / kUsed).put('\n'); }

uint64_t sizeLimit() {
  const char* text = std::getenv("CGC_CACHE_MAX_SIZE");
  if (!text || !*text) return uint64_t{2} << 30;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  const std::string unit = end ? end : "";
  const double scale = unit.empty()  ? 1
                       : unit == "K" ? 1 << 10
                       : unit == "M" ? 1 << 20
                       : unit == "G" ? double(1 << 30)
                                     : -1;
  if (end == text || scale < 0 || value < 0)
    userError({"CGC_CACHE_MAX_SIZE", "", ""},
              "'{}' is no size: give bytes, or a number with K, M or G (2G)", text);
  return static_cast<uint64_t>(value * scale);
}

std::vector<Entry> entries() {
  std::vector<Entry> out;
  std::error_code error;
  for (fs::directory_iterator it(driver::cacheDirectory(), error), end; !error && it != end;
       it.increment(error)) {
    if (!it->is_directory(error) || !isBuildName(it->path().filename().string())) continue;
    Entry e{it->path(), bytesUnder(it->path()), {}};
    std::error_code missing;
    e.used = fs::last_write_time(it->path() / kUsed, missing);
    if (missing) e.used = fs::last_write_time(it->path(), missing);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  return out;
}

int evict(const fs::path& keep) {
  const uint64_t limit = sizeLimit();
  std::vector<Entry> all = entries();
  uint64_t total = 0;
  for (const Entry& e : all) total += e.bytes;
  int removed = 0;
  std::error_code error;
  for (const Entry& e : all) {
    if (total <= limit) break;
    if (!keep.empty() && fs::equivalent(e.dir, keep, error)) continue;
    fs::remove_all(e.dir, error);
    if (error) continue;
    total -= e.bytes;
    ++removed;
  }
  if (removed > 0) removeStaleKeys(driver::cacheDirectory());
  return removed;
}

uint64_t clear() {
  uint64_t freed = 0;
  std::error_code error;
  for (const Entry& e : entries()) {
    fs::remove_all(e.dir, error);
    if (!error) freed += e.bytes;
  }
  fs::remove_all(fs::path(driver::cacheDirectory()) / kKeys, error);
  return freed;
}

int command(bool clear) {
  const std::string dir = driver::cacheDirectory();
  auto mib = [](uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  if (clear) {
    const size_t builds = entries().size();
    const uint64_t freed = cache::clear();
    std::cout << fmt::format("removed {} build(s), {:.1f} MiB, from {}\n", builds, mib(freed), dir);
    return 0;
  }
  const std::vector<Entry> all = entries();
  uint64_t total = 0;
  for (const Entry& e : all) total += e.bytes;
  std::cout << fmt::format("{}: {} build(s), {:.1f} MiB; limit {:.1f} MiB (CGC_CACHE_MAX_SIZE)\n",
                           dir, all.size(), mib(total), mib(sizeLimit()));
  const auto now = fs::file_time_type::clock::now();
  for (const Entry& e : all) {
    const auto age = std::chrono::duration_cast<std::chrono::minutes>(now - e.used).count();
    std::cout << fmt::format("  {}  {:>9.1f} MiB  used {} min ago\n", e.dir.filename().string(),
                             mib(e.bytes), age);
  }
  return 0;
}

TrialBuilds::TrialBuilds(const std::string& what)
    : dir_(fs::temp_directory_path() / fmt::format("cgc-{}-{}", what, getpid())) {
  fs::create_directories(dir_);
  previous_ = driver::setCacheDirectoryOverride(dir_.string());
}

TrialBuilds::~TrialBuilds() {
  driver::setCacheDirectoryOverride(previous_);
  std::error_code error;
  fs::remove_all(dir_, error);
}

}  // namespace cgc::cache
