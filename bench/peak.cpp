// Measures one core's single-precision FMA throughput (GFLOP/s) for
// bench/bench.py: independent vector FMA chains, enough of them to hide the
// FMA latency; and, on AVX-512 VNNI, its int8 multiply-add throughput
// (GOP/s, two operations a multiply-add, so that the two compare): the same
// chains of vpdpbusd, 64 multiply-adds each. Built with -O2 -march=native,
// so the vector width is the machine's own, and with the runtime's
// generated core/isa.h for the tiers. Prints the FMA peak, then the int8
// peak (0 without VNNI).
#include <chrono>
#include <cstdio>

#include "core/isa.h"

#if CGC_ISA_VNNI
#include <immintrin.h>
#endif

#if CGC_ISA_SKX
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
typedef float Vec __attribute__((vector_size(kLanes * 4)));
constexpr int kChains = 12;  // c0..c11 below
constexpr long kIterations = 100'000'000;

/// The best of three timings of `loop` (kIterations steps of kChains
/// instructions, `ops` operations each), in operations per second.
template <typename Loop>
double bestRate(double ops, Loop loop) {
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) {
    auto start = std::chrono::steady_clock::now();
    loop();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double rate = ops * kChains * static_cast<double>(kIterations) / seconds;
    if (rate > best) best = rate;
  }
  return best;
}

double fmaPeak() {
  Vec a, b;
  for (int i = 0; i < kLanes; ++i) a[i] = 0.999f, b[i] = 0.001f;
  Vec c0 = a, c1 = a, c2 = a, c3 = a, c4 = a, c5 = a, c6 = a, c7 = a, c8 = a, c9 = a, c10 = a,
      c11 = a;
  double best = bestRate(2.0 * kLanes, [&] {
    for (long i = 0; i < kIterations; ++i) {
      c0 = c0 * a + b, c1 = c1 * a + b, c2 = c2 * a + b, c3 = c3 * a + b;
      c4 = c4 * a + b, c5 = c5 * a + b, c6 = c6 * a + b, c7 = c7 * a + b;
      c8 = c8 * a + b, c9 = c9 * a + b, c10 = c10 * a + b, c11 = c11 * a + b;
      // Keeps the chains in registers and stops the loop from being folded.
      asm volatile(""
                   : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6), "+x"(c7),
                     "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
    }
  });
  Vec sum = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;
  std::fprintf(stderr, "%g\n", sum[0]);
  return best / 1e9;
}

/// One core's vpdpbusd throughput in GOP/s; 0 without AVX-512 VNNI.
double int8Peak() {
#if CGC_ISA_VNNI
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
  __m512i c0 = a, c1 = a, c2 = a, c3 = a, c4 = a, c5 = a, c6 = a, c7 = a, c8 = a, c9 = a, c10 = a,
          c11 = a;
  double best = bestRate(2.0 * 64, [&] {
    for (long i = 0; i < kIterations; ++i) {
      c0 = _mm512_dpbusd_epi32(c0, a, b), c1 = _mm512_dpbusd_epi32(c1, a, b);
      c2 = _mm512_dpbusd_epi32(c2, a, b), c3 = _mm512_dpbusd_epi32(c3, a, b);
      c4 = _mm512_dpbusd_epi32(c4, a, b), c5 = _mm512_dpbusd_epi32(c5, a, b);
      c6 = _mm512_dpbusd_epi32(c6, a, b), c7 = _mm512_dpbusd_epi32(c7, a, b);
      c8 = _mm512_dpbusd_epi32(c8, a, b), c9 = _mm512_dpbusd_epi32(c9, a, b);
      c10 = _mm512_dpbusd_epi32(c10, a, b), c11 = _mm512_dpbusd_epi32(c11, a, b);
      asm volatile(""
                   : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7),
                     "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11));
    }
  });
  int lanes[16];
  _mm512_storeu_si512(lanes, c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11);
  std::fprintf(stderr, "%d\n", lanes[0]);
  return best / 1e9;
#else
  return 0;
#endif
}

int main() {
  const double fma = fmaPeak();
  std::printf("%.1f\n%.1f\n", fma, int8Peak());
}
