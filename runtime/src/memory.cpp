// Arena allocation and weight-file loading for generated models.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "cgc/runtime.h"

namespace cgc {

unsigned char* allocate_arena(int64_t bytes) {
  size_t rounded = static_cast<size_t>((bytes + 63) / 64 * 64);
  if (rounded == 0) rounded = 64;
  auto* arena = static_cast<unsigned char*>(std::aligned_alloc(64, rounded));
  if (!arena) throw std::bad_alloc();
  std::memset(arena, 0, rounded);
  return arena;
}

unsigned char* load_weights(const char* path, int64_t bytes) {
  std::FILE* file = std::fopen(path, "rb");
  if (!file)
    throw std::runtime_error(std::string("cgc: cannot open weights file ") +
                             path);
  unsigned char* buffer = allocate_arena(bytes);
  size_t got = std::fread(buffer, 1, static_cast<size_t>(bytes), file);
  bool extra = std::fgetc(file) != EOF;
  std::fclose(file);
  if (static_cast<int64_t>(got) != bytes || extra) {
    std::free(buffer);
    throw std::runtime_error(std::string("cgc: weights file ") + path +
                             " does not hold " + std::to_string(bytes) +
                             " bytes (recompile the model?)");
  }
  return buffer;
}

}  // namespace cgc
