// The machine's memory read bandwidth (tools/bandwidth_probe.h) on 1 to N
// threads (N: the CPUs this process may use, or the first argument), in
// GB/s: the limit that a decoder step's products (narrow_micro.cpp) are
// measured against. Built by bench/micro/run.sh.
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "tools/bandwidth_probe.h"

int main(int argc, char** argv) {
  const int most =
      argc > 1 ? std::atoi(argv[1]) : static_cast<int>(std::thread::hardware_concurrency());
  for (int threads = 1; threads <= most; ++threads)
    std::printf("%d thread%s: %.2f GB/s\n", threads, threads > 1 ? "s" : "",
                cgc::probe::readBandwidth(threads) / 1e9);
}
