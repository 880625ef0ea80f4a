// Memory for generated models: arenas, and weights files read once per
// process and shared by every instance that names the same file (by its
// canonical path), so that N instances of a model hold one copy of its
// weights.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <mutex>
#include <string>

#include "cgc/runtime.h"

namespace cgc {
namespace {

/// What is allocated for `bytes`: a multiple of 64, at least 64.
size_t roundedSize(int64_t bytes) {
  return static_cast<size_t>(std::max<int64_t>((bytes + 63) / 64 * 64, 64));
}

/// roundedSize(bytes) bytes, 64-byte aligned, not zeroed.
unsigned char* alignedBytes(int64_t bytes) {
  auto* memory = static_cast<unsigned char*>(std::aligned_alloc(64, roundedSize(bytes)));
  if (!memory)
    throw Error(CGC_ERROR_OUT_OF_MEMORY,
                "cgc: cannot allocate " + std::to_string(bytes) + " bytes");
  return memory;
}

/// Reads the whole file, which must hold exactly `bytes` bytes.
std::shared_ptr<const unsigned char> readWeights(const std::string& path, int64_t bytes) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file)
    throw Error(CGC_ERROR_WEIGHTS,
                "cgc: cannot open weights file " + path + " (" + std::strerror(errno) + ")");
  std::shared_ptr<unsigned char> buffer;
  try {
    buffer.reset(alignedBytes(bytes), std::free);
  } catch (...) {
    std::fclose(file);
    throw;
  }
  size_t got = std::fread(buffer.get(), 1, static_cast<size_t>(bytes), file);
  bool extra = std::fgetc(file) != EOF;
  std::fclose(file);
  if (static_cast<int64_t>(got) != bytes || extra)
    throw Error(CGC_ERROR_WEIGHTS, "cgc: weights file " + path + " does not hold " +
                                       std::to_string(bytes) + " bytes (recompile the model?)");
  return buffer;
}

}  // namespace

unsigned char* allocate_arena(int64_t bytes) {
  unsigned char* arena = alignedBytes(bytes);
  std::memset(arena, 0, roundedSize(bytes));
  return arena;
}

std::shared_ptr<const unsigned char> shared_weights(const std::string& path, int64_t bytes) {
  struct Entry {
    std::weak_ptr<const unsigned char> weights;
    int64_t bytes;
  };
  // Never destroyed: an instance in a static object may release its weights
  // after any static here is gone.
  static std::mutex* mutex = new std::mutex;
  static auto* cache = new std::map<std::string, Entry>;
  std::error_code error;
  std::string key = std::filesystem::weakly_canonical(path, error).string();
  if (error || key.empty()) key = path;
  // Reading under the lock: a second instance naming the same file waits for
  // the first's copy instead of reading its own.
  std::lock_guard<std::mutex> lock(*mutex);
  auto it = cache->find(key);
  if (it != cache->end() && it->second.bytes == bytes)
    if (auto weights = it->second.weights.lock()) return weights;
  std::shared_ptr<const unsigned char> weights = readWeights(path, bytes);
  for (auto stale = cache->begin(); stale != cache->end();)  // files no instance holds
    stale = stale->second.weights.expired() ? cache->erase(stale) : std::next(stale);
  (*cache)[key] = Entry{weights, bytes};
  return weights;
}

}  // namespace cgc
