// The cache of compiled and built models under driver::cacheDirectory()
// (what `cgc run` and the Python module load instead of compiling again):
// one directory per build (its generated files and shared library, named
// by the hash of the emitted code), and for each compile that made one a
// key file (compiled/<key>.json, the key a hash of everything the compile
// reads: the model's bytes, the options, the files they name, the compiler,
// the runtime and this machine) naming the build, so that a model compiled
// before with the same options only loads. Entries are evicted least
// recently used first once the cache is above its limit (CGC_CACHE_MAX_SIZE).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace cgc::cache {

/// What a compile made: its library, C prefix and the ONNX model's input
/// names (test-data numbering: commands::setInputs).
struct Compiled {
  std::string library;
  std::string prefix;
  std::vector<std::string> onnxInputs;
};

/// The key of a compile with `options`, before it runs; nullopt when it
/// is not to be cached (a model given as bytes, --print-ir-after, --verify,
/// an accuracy budget's search or ranges made by a caller, several targets).
std::optional<uint64_t> compileKey(const driver::CompileOptions& options);

/// The compile of `key` made before, if its build is still in the cache
/// (marked used).
std::optional<Compiled> lookup(uint64_t key);

/// Records that the compile of `key` made `compiled`, then evicts (evict).
void remember(uint64_t key, const Compiled& compiled);

/// Marks a build's directory used now (its place in the eviction order).
void markUsed(const std::filesystem::path& entry);

/// The cache's size limit in bytes: CGC_CACHE_MAX_SIZE (bytes, or with a
/// K, M or G suffix), else 2 GiB. A malformed value is the user's error.
uint64_t sizeLimit();

/// One build in the cache.
struct Entry {
  std::filesystem::path dir;
  uint64_t bytes = 0;
  std::filesystem::file_time_type used;  // last marked used
};

/// The builds in the cache, the least recently used first.
std::vector<Entry> entries();

/// Removes the least recently used builds (never `keep`) until the cache
/// is within sizeLimit(), and the key files of builds that are gone.
/// Returns how many builds it removed.
int evict(const std::filesystem::path& keep = {});

/// Removes every build and key file; returns the bytes freed.
uint64_t clear();

/// `cgc cache`: the cache's directory, size, limit and builds (least
/// recently used first); with `clear`, removes them. Returns the exit code.
int command(bool clear);

/// For a search's trial builds (cgc tune, --max-error): while it lives,
/// driver::cacheDirectory() is a fresh temporary directory, removed with it.
class TrialBuilds {
 public:
  explicit TrialBuilds(const std::string& what);
  ~TrialBuilds();
  TrialBuilds(const TrialBuilds&) = delete;
  TrialBuilds& operator=(const TrialBuilds&) = delete;

 private:
  std::filesystem::path dir_;
  std::string previous_;
};

}  // namespace cgc::cache
