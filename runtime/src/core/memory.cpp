// Memory for generated models: arenas, and weights files mapped read-only
// once per process and shared by every instance that names the same file
// (by its canonical path). Mapped, the weights are the page cache's pages:
// N instances in a process, and N processes on a machine, hold one copy,
// and creating an instance reads nothing. Where a file cannot be mapped it
// is read into memory instead.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

Error weightsError(const std::string& path, const std::string& what) {
  return Error(CGC_ERROR_WEIGHTS, "cgc: weights file " + path + " " + what);
}

/// Reads the open file `fd` (`bytes` bytes) into aligned memory.
std::shared_ptr<const unsigned char> readWeights(int fd, const std::string& path, int64_t bytes) {
  std::shared_ptr<unsigned char> buffer(alignedBytes(bytes), std::free);
  for (int64_t done = 0; done < bytes;) {
    const ssize_t got = ::pread(fd, buffer.get() + done, static_cast<size_t>(bytes - done),
                                static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw weightsError(path, std::string("cannot be read (") + std::strerror(errno) + ")");
    done += got;
  }
  return buffer;
}

/// The whole file, which must hold exactly `bytes` bytes: mapped read-only
/// (page-aligned, so every section keeps the 64-byte alignment the
/// generated code gives it), else read.
std::shared_ptr<const unsigned char> loadWeights(const std::string& path, int64_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(CGC_ERROR_WEIGHTS,
                "cgc: cannot open weights file " + path + " (" + std::strerror(errno) + ")");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_size != bytes)
    throw weightsError(path,
                       "does not hold " + std::to_string(bytes) + " bytes (recompile the model?)");
  void* mapped = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ, MAP_PRIVATE, fd, 0);
  if (mapped == MAP_FAILED) return readWeights(fd, path, bytes);
  ::madvise(mapped, static_cast<size_t>(bytes), MADV_WILLNEED);  // read ahead, without waiting
  return std::shared_ptr<const unsigned char>(
      static_cast<const unsigned char*>(mapped), [bytes](const unsigned char* p) {
        ::munmap(const_cast<unsigned char*>(p), static_cast<size_t>(bytes));
      });
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
  // Loading under the lock: a second instance naming the same file waits for
  // the first's mapping instead of making its own.
  std::lock_guard<std::mutex> lock(*mutex);
  auto it = cache->find(key);
  if (it != cache->end() && it->second.bytes == bytes)
    if (auto weights = it->second.weights.lock()) return weights;
  std::shared_ptr<const unsigned char> weights = loadWeights(path, bytes);
  for (auto stale = cache->begin(); stale != cache->end();)  // files no instance holds
    stale = stale->second.weights.expired() ? cache->erase(stale) : std::next(stale);
  (*cache)[key] = Entry{weights, bytes};
  return weights;
}

}  // namespace cgc
