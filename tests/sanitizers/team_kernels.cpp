// Team kernels that share memory between the threads of a team inside one
// call, built with ThreadSanitizer: the packed convolution, whose threads
// pad the input together into thread 0's scratch when they split only
// output channels (Team::shareFromFirst). Runs each shape on teams of 2 and
// 3 threads and checks the result against one thread.
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "cgc/kernels.h"
#include "cgc/team.h"

using namespace cgc::rt;

namespace {

std::vector<float> run(const ConvParams& p, const std::vector<float>& x,
                       const std::vector<float>& w, const std::vector<float>& b, int threads) {
  std::vector<float> y(static_cast<size_t>(p.n * p.c_out * p.h_out * p.w_out));
  SpinBarrier barrier(threads);
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      const Team part(t, threads, &barrier);
      for (int repeat = 0; repeat < 3; ++repeat) {  // scratch reused across calls
        conv(p, x.data(), w.data(), b.data(), nullptr, y.data(), part);
        part.barrier();
      }
    });
  for (auto& thread : team) thread.join();
  return y;
}

}  // namespace

int main() {
  // n cin h w cout k pad stride: many channels on few positions (split by
  // channels, so the padding is shared), and the other way round.
  struct Shape {
    int64_t n, cin, h, w, cout, k, pad, stride;
  };
  const Shape shapes[] = {{1, 32, 5, 6, 128, 3, 1, 1}, {2, 24, 7, 7, 96, 3, 1, 2},
                          {1, 16, 20, 18, 32, 3, 1, 1}};
  for (const Shape& s : shapes) {
    const int64_t ho = (s.h + 2 * s.pad - s.k) / s.stride + 1;
    const int64_t wo = (s.w + 2 * s.pad - s.k) / s.stride + 1;
    ConvParams p{s.n, s.cin, 1, s.h, s.w, s.cout, 1, ho, wo, 1, 1, s.k, s.k, 1, s.stride,
                 s.stride, 0, s.pad, s.pad, 1, 1, 1};
    std::vector<float> x(static_cast<size_t>(s.n * s.cin * s.h * s.w));
    std::vector<float> w(static_cast<size_t>(s.cout * s.cin * s.k * s.k)), b(s.cout);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13) / 13.0f - 0.5f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) / 5.0f;
    std::vector<float> packed(static_cast<size_t>(packedConvWeightCount(p)));
    packConvWeights(p, w.data(), packed.data());
    p.packed_weights = true;
    const std::vector<float> one = run(p, x, packed, b, 1);
    for (int threads : {2, 3}) {
      const std::vector<float> many = run(p, x, packed, b, threads);
      for (size_t i = 0; i < one.size(); ++i)
        if (one[i] != many[i]) {
          std::fprintf(stderr, "packed conv %ldx%ld on %d threads: element %zu differs\n",
                       static_cast<long>(s.h), static_cast<long>(s.w), threads, i);
          return EXIT_FAILURE;
        }
    }
  }
  std::puts("team kernels: packed convolution on teams of 1 to 3 threads");
  return EXIT_SUCCESS;
}
