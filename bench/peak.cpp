// Measures one core's single-precision FMA throughput (GFLOP/s) for
// bench/bench.py: independent vector FMA chains, enough of them to hide the
// FMA latency. Built with -O2 -march=native, so the vector width is the
// machine's own.
#include <chrono>
#include <cstdio>

#ifdef __AVX512F__
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
typedef float Vec __attribute__((vector_size(kLanes * 4)));
constexpr int kChains = 12;  // c0..c11 below

int main() {
  Vec a, b;
  for (int i = 0; i < kLanes; ++i) a[i] = 0.999f, b[i] = 0.001f;
  Vec c0 = a, c1 = a, c2 = a, c3 = a, c4 = a, c5 = a, c6 = a, c7 = a, c8 = a, c9 = a, c10 = a,
      c11 = a;
  const long iterations = 200'000'000;
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) {
    auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < iterations; ++i) {
      c0 = c0 * a + b, c1 = c1 * a + b, c2 = c2 * a + b, c3 = c3 * a + b;
      c4 = c4 * a + b, c5 = c5 * a + b, c6 = c6 * a + b, c7 = c7 * a + b;
      c8 = c8 * a + b, c9 = c9 * a + b, c10 = c10 * a + b, c11 = c11 * a + b;
      // Keeps the chains in registers and stops the loop from being folded.
      asm volatile(""
                   : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6), "+x"(c7),
                     "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double flops = 2.0 * kLanes * kChains * static_cast<double>(iterations);
    if (flops / seconds > best) best = flops / seconds;
  }
  float sink = c0[0] + c1[0] + c2[0] + c3[0] + c4[0] + c5[0] + c6[0] + c7[0] + c8[0] + c9[0] +
               c10[0] + c11[0];
  std::printf("%.1f\n%g\n", best / 1e9, sink);
}
