// The matrix products of a decoder's one-token step against the memory
// bandwidth: for each weight shape K x N, Y[M, N] = A[M, K] W[K, N] with W
// in float (rt::matmul), bfloat16 and int8 (rt::matmul_narrow, the variant
// it chooses, and each other variant this runtime has), on 1 and 2
// threads, with the weights read from memory, not the caches (copies of W
// that together exceed the last-level cache, called in turn). Prints the
// time per product, the weight bytes per second, and their ratio to the
// read bandwidth that bandwidth_micro.cpp's loop measures here on as many
// threads. Times are the slowest thread's CPU time (tools/bandwidth_probe.h),
// the best of 5 sweeps (CGC_MICRO_RUNS=N for N). A micro-benchmark: model-level claims come from
// bench/bench.py.
//
//   narrow_micro [M] [K N ...]   (default: M = 1, GPT-2 small's shapes)
//
// Built by bench/micro/run.sh against build/runtime.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "tools/bandwidth_probe.h"

using namespace cgc::rt;

namespace {

constexpr double kColdBytes = 256e6;  // weights read per sweep: well past any L3

int sweeps() {
  const char* runs = std::getenv("CGC_MICRO_RUNS");
  return runs ? std::max(1, std::atoi(runs)) : 5;
}

/// The best over `sweeps` of the time one sweep of `calls` calls takes,
/// divided by `calls`, on a team of `threads` (kept across the sweeps): the
/// slowest thread's CPU time (bandwidth_probe.h says why).
template <typename F>
double secondsPerCall(int threads, int sweeps, int64_t calls, F call) {
  SpinBarrier barrier(threads);
  std::vector<double> seconds(static_cast<size_t>(threads));
  double best = 1e30;
  auto body = [&](const Team& team) {
    for (int s = 0; s < sweeps; ++s) {
      team.barrier();
      const double start = cgc::probe::threadSeconds();
      for (int64_t c = 0; c < calls; ++c) call(c, team);
      team.barrier();
      seconds[static_cast<size_t>(team.thread())] = cgc::probe::threadSeconds() - start;
      team.barrier();
      if (team.thread() == 0)
        best = std::min(
            best, *std::max_element(seconds.begin(), seconds.end()) / static_cast<double>(calls));
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back([&, t] { body(Team(t, threads, &barrier)); });
  body(Team(0, threads, &barrier));
  for (auto& t : pool) t.join();
  return best;
}

struct Row {
  std::string what;
  double seconds, bytes;
};

void report(const Row& r, double bandwidth) {
  const double rate = r.bytes / r.seconds / 1e9;
  std::printf("  %-22s %9.1f us %7.2f GB/s %5.0f%% of the probe\n", r.what.c_str(), r.seconds * 1e6,
              rate, 100.0 * rate * 1e9 / bandwidth);
}

void shape(int64_t m, int64_t k, int64_t n, const double* bandwidths) {
  std::vector<float> w(static_cast<size_t>(k * n)), a(static_cast<size_t>(m * k));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>((i * 104729) % 2001) / 1000.0f - 1.0f;
  std::vector<float> y(static_cast<size_t>(m * n));
  std::printf("m=%lld k=%lld n=%lld\n", static_cast<long long>(m), static_cast<long long>(k),
              static_cast<long long>(n));
  for (int threads = 1; threads <= 2; ++threads) {
    const double bandwidth = bandwidths[threads - 1];
    std::printf(" %d thread%s (probe %.2f GB/s)\n", threads, threads > 1 ? "s" : "",
                bandwidth / 1e9);
    // float: rt::matmul over copies of W.
    const double floatBytes = 4.0 * static_cast<double>(k * n);
    const int64_t floatCopies = std::max<int64_t>(2, static_cast<int64_t>(kColdBytes / floatBytes));
    {
      std::vector<float> copies(static_cast<size_t>(floatCopies) * w.size());
      for (int64_t c = 0; c < floatCopies; ++c)
        std::copy(w.begin(), w.end(), copies.begin() + c * k * n);
      MatMulParams p{};
      p.m = m, p.n = n, p.k = k;
      const double s =
          secondsPerCall(threads, sweeps(), floatCopies, [&](int64_t c, const Team& team) {
            matmul<float>(p, a.data(), copies.data() + c * k * n, nullptr, y.data(), team);
          });
      report({"fp32 matmul", s, floatBytes}, bandwidth);
    }
    for (WeightFormat format : {WeightFormat::kBf16, WeightFormat::kInt8}) {
      const int64_t bytes = narrow_weights_bytes(format, k, n);
      const int64_t copies =
          std::max<int64_t>(2, static_cast<int64_t>(kColdBytes / static_cast<double>(bytes)));
      std::vector<unsigned char> packed(static_cast<size_t>(copies * bytes));
      std::vector<float> scale(static_cast<size_t>(n));
      pack_narrow_weights(format, k, n, w.data(), packed.data(), scale.data());
      for (int64_t c = 1; c < copies; ++c)
        std::memcpy(packed.data() + c * bytes, packed.data(), static_cast<size_t>(bytes));
      const NarrowMatMulParams p{m, n, k, format};
      const NarrowVariant chosen = chooseNarrowVariant(p);
      for (const NarrowVariantInfo& v : kNarrowVariants) {
        if (!narrowVariantTakes(v.variant, p)) continue;
        const double s =
            secondsPerCall(threads, sweeps(), copies, [&](int64_t c, const Team& team) {
              matmul_narrow_variant(v.variant, p, a.data(), packed.data() + c * bytes, scale.data(),
                                    nullptr, y.data(), team);
            });
        const char* name = format == WeightFormat::kBf16 ? "bf16" : "int8";
        report({std::string(name) + " " + v.name + (v.variant == chosen ? " *" : ""), s,
                static_cast<double>(bytes)},
               bandwidth);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t m = argc > 1 ? std::atoll(argv[1]) : 1;
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int i = 2; i + 1 < argc; i += 2)
    shapes.emplace_back(std::atoll(argv[i]), std::atoll(argv[i + 1]));
  if (shapes.empty())  // GPT-2 small: QKV, attention output, MLP up, MLP down, logits
    shapes = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}, {768, 50257}};
  double bandwidths[2];
  for (int threads = 1; threads <= 2; ++threads)
    bandwidths[threads - 1] = cgc::probe::readBandwidth(threads);
  std::printf(
      "runtime tier %s; read bandwidth %.2f GB/s on 1 thread, %.2f on 2; * = matmul_narrow's "
      "choice\n",
      cgc::runtime_isa_tier(), bandwidths[0] / 1e9, bandwidths[1] / 1e9);
  for (const auto& [k, n] : shapes) shape(m, k, n, bandwidths);
}
