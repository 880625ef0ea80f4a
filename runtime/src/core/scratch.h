// Per-thread scratch memory for kernels: grows to the largest request and
// never shrinks, so once a model has run, its kernels allocate nothing. One
// buffer per element type and thread, shared by every kernel: a kernel must
// not hold a pointer across a call to another kernel that takes scratch.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace cgc::rt::detail {

/// `count` elements starting on a cache line: kernels that read whole
/// vectors at multiples of 64 bytes from the start never split a load over
/// two lines (malloc aligns to 16; the channel-vector depthwise kernel ran
/// slower on the split loads).
template <typename T = float>
T* scratch(int64_t count) {
  constexpr size_t kAlign = 64;
  thread_local std::vector<T> buffer;
  const size_t needed = static_cast<size_t>(count) + kAlign / sizeof(T);
  if (buffer.size() < needed) buffer.resize(needed);
  void* start = buffer.data();
  size_t space = buffer.size() * sizeof(T);
  return static_cast<T*>(std::align(kAlign, static_cast<size_t>(count) * sizeof(T), start, space));
}

}  // namespace cgc::rt::detail
