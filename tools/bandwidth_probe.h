// The machine's memory read bandwidth as a loop that streams a buffer far
// larger than the last-level cache sees it: each of `threads` threads sums
// its contiguous share of 512 MiB of 64-bit words (eight independent sums,
// which the compiler vectorises), the best of ten passes. What a product
// that reads each weight once (a decoder's one-token step) can at best
// reach: cgc tune records it in a profile's machine description ("cpu"),
// bench/micro/bandwidth_micro.cpp prints it, narrow_micro.cpp measures the
// products against it.
//
// Times are each thread's CPU time (the slowest thread's), not the wall
// clock: on a machine that other processes share, a thread that waits for
// a core does not count as reading slowly. A thread stalled on memory is
// running, so on an idle machine the two agree.
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace cgc::probe {

/// The CPU time the calling thread has run, in seconds.
inline double threadSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// Sums words [begin, end) of `data`.
inline uint64_t streamSum(const uint64_t* data, int64_t begin, int64_t end) {
  uint64_t sums[8] = {};
  int64_t i = begin;
  for (; i + 8 <= end; i += 8)
    for (int j = 0; j < 8; ++j) sums[j] += data[i + j];
  for (; i < end; ++i) sums[0] += data[i];
  uint64_t total = 0;
  for (uint64_t s : sums) total += s;
  return total;
}

/// Bytes per second that `threads` threads read together.
inline double readBandwidth(int threads, int64_t bytes = int64_t{512} << 20) {
  const int64_t words = bytes / 8;
  std::vector<uint64_t> buffer(static_cast<size_t>(words));
  for (int64_t i = 0; i < words; ++i) buffer[i] = static_cast<uint64_t>(i);
  double best = 1e30;
  std::atomic<uint64_t> sink{0};
  for (int pass = 0; pass < 10; ++pass) {
    std::vector<double> seconds(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const int64_t begin = words * t / threads, end = words * (t + 1) / threads;
        const double start = threadSeconds();
        sink.fetch_add(streamSum(buffer.data(), begin, end));
        seconds[static_cast<size_t>(t)] = threadSeconds() - start;
      });
    for (auto& t : pool) t.join();
    best = std::min(best, *std::max_element(seconds.begin(), seconds.end()));
  }
  return sink.load() == 1 ? 0.0 : static_cast<double>(words * 8) / best;  // sink: keep the sums
}

}  // namespace cgc::probe
