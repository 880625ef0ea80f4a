// Per-thread scratch memory for kernels: grows to the largest request and
// never shrinks, so once a model has run, its kernels allocate nothing. One
// buffer per element type and thread, shared by every kernel: a kernel must
// not hold a pointer across a call to another kernel that takes scratch.
#pragma once

#include <cstdint>
#include <vector>

namespace cgc::rt::detail {

template <typename T = float>
T* scratch(int64_t count) {
  thread_local std::vector<T> buffer;
  if (static_cast<int64_t>(buffer.size()) < count) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

}  // namespace cgc::rt::detail
