// Team kernels that share memory between the threads of a team inside one
// call, built with ThreadSanitizer: the packed convolution, whose threads
// pad the input together into thread 0's scratch when they split only
// output channels (Team::shareFromFirst), the Winograd convolution, whose
// threads always do, a small LSTM, whose thread 1 projects the input
// into thread 0's buffer while thread 0 runs the steps, and one-row
// attention, whose threads leave each chunk of keys' partial sums in thread
// 0's scratch and combine them.
// Runs each on teams of 2 and 3 threads and checks the result against one
// thread.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "cgc/kernels.h"
#include "cgc/team.h"

using namespace cgc::rt;

namespace {

/// call(team) on every thread of a team, three times (scratch is reused
/// across calls).
template <typename Call>
void onTeam(int threads, Call call) {
  SpinBarrier barrier(threads);
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      const Team part(t, threads, &barrier);
      for (int repeat = 0; repeat < 3; ++repeat) {
        call(part);
        part.barrier();
      }
    });
  for (auto& thread : team) thread.join();
}

std::vector<float> pattern(size_t n, int period, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = scale * (static_cast<float>(i % period) / static_cast<float>(period) - 0.5f);
  return v;
}

std::vector<float> run(const ConvParams& p, const std::vector<float>& x,
                       const std::vector<float>& w, const std::vector<float>& b, int threads) {
  std::vector<float> y(static_cast<size_t>(p.n * p.c_out * p.h_out * p.w_out));
  onTeam(threads,
         [&](const Team& team) { conv(p, x.data(), w.data(), b.data(), nullptr, y.data(), team); });
  return y;
}

/// A bidirectional LSTM small enough to be pipelined; its Y on `threads`.
std::vector<float> runLstm(int threads) {
  RnnParams p{};
  p.cell = RnnCell::kLstm;
  p.seq_length = 21;
  p.batch = 2;
  p.input_size = 5;
  p.hidden_size = 12;
  p.num_directions = 2;
  for (int d = 0; d < 2; ++d) {
    p.activations[3 * d] = {RnnActivation::kSigmoid, 0.f, 0.f};
    p.activations[3 * d + 1] = p.activations[3 * d + 2] = {RnnActivation::kTanh, 0.f, 0.f};
  }
  const int64_t g = 4 * p.hidden_size;
  const std::vector<float> x = pattern(p.seq_length * p.batch * p.input_size, 17, 1.0f);
  const std::vector<float> w = pattern(2 * g * p.input_size, 13, 0.5f);
  const std::vector<float> r = pattern(2 * g * p.hidden_size, 11, 0.5f);
  const std::vector<float> b = pattern(2 * 2 * g, 7, 0.2f);
  std::vector<float> y(static_cast<size_t>(p.seq_length * 2 * p.batch * p.hidden_size));
  onTeam(threads, [&](const Team& team) {
    rnn(p, x.data(), w.data(), r.data(), b.data(), nullptr, nullptr, nullptr, nullptr, y.data(),
        nullptr, nullptr, team);
  });
  return y;
}

/// One head's attention over 300 keys in chunks; its output on `threads`.
std::vector<float> runAttention(int threads) {
  AttentionParams p{1, 1, 1, 300, 64, 64, 0.125f, 0, 0, 64, 0, 0, 64};
  const std::vector<float> q = pattern(64, 7, 1.0f), k = pattern(300 * 64, 13, 1.0f);
  const std::vector<float> v = pattern(300 * 64, 11, 1.0f);
  std::vector<float> y(64);
  onTeam(threads, [&](const Team& team) {
    attention(p, q.data(), k.data(), v.data(), nullptr, nullptr, y.data(), team);
  });
  return y;
}

}  // namespace

int main() {
  // n cin h w cout k pad stride: many channels on few positions (split by
  // channels, so the padding is shared), and the other way round.
  struct Shape {
    int64_t n, cin, h, w, cout, k, pad, stride;
  };
  const Shape shapes[] = {
      {1, 32, 5, 6, 128, 3, 1, 1}, {2, 24, 7, 7, 96, 3, 1, 2}, {1, 16, 20, 18, 32, 3, 1, 1}};
  for (const Shape& s : shapes) {
    const int64_t ho = (s.h + 2 * s.pad - s.k) / s.stride + 1;
    const int64_t wo = (s.w + 2 * s.pad - s.k) / s.stride + 1;
    ConvParams p{s.n, s.cin, 1, s.h,      s.w,      s.cout, 1,     ho,    wo, 1, 1,
                 s.k, s.k,   1, s.stride, s.stride, 0,      s.pad, s.pad, 1,  1, 1};
    const std::vector<float> x = pattern(s.n * s.cin * s.h * s.w, 17, 1.0f);
    const std::vector<float> w = pattern(s.cout * s.cin * s.k * s.k, 13, 1.0f);
    const std::vector<float> b = pattern(s.cout, 5, 1.0f);
    for (bool winograd : {false, true}) {
      ConvParams q = p;
      if (winograd && !convTakesWinograd(q)) continue;
      std::vector<float> packed(
          static_cast<size_t>(winograd ? winogradWeightCount(q) : packedConvWeightCount(q)));
      if (winograd)
        winogradWeights(q, w.data(), packed.data());
      else
        packConvWeights(q, w.data(), packed.data());
      q.winograd = winograd;
      q.packed_weights = !winograd;
      const std::vector<float> one = run(q, x, packed, b, 1);
      for (int threads : {2, 3}) {
        const std::vector<float> many = run(q, x, packed, b, threads);
        for (size_t i = 0; i < one.size(); ++i)
          if (std::fabs(one[i] - many[i]) > 1e-5f * (1.0f + std::fabs(one[i]))) {
            std::fprintf(stderr, "%s conv %ldx%ld on %d threads: element %zu differs\n",
                         winograd ? "Winograd" : "packed", static_cast<long>(s.h),
                         static_cast<long>(s.w), threads, i);
            return EXIT_FAILURE;
          }
      }
    }
  }
  const std::vector<float> one = runLstm(1);
  for (int threads : {2, 3}) {
    const std::vector<float> many = runLstm(threads);
    for (size_t i = 0; i < one.size(); ++i)
      if (std::fabs(one[i] - many[i]) > 1e-5f) {
        std::fprintf(stderr, "pipelined LSTM on %d threads: element %zu differs\n", threads, i);
        return EXIT_FAILURE;
      }
  }
  const std::vector<float> single = runAttention(1);
  for (int threads : {2, 3}) {
    const std::vector<float> many = runAttention(threads);
    for (size_t i = 0; i < single.size(); ++i)
      if (std::fabs(single[i] - many[i]) > 1e-5f) {
        std::fprintf(stderr, "attention on %d threads: element %zu differs\n", threads, i);
        return EXIT_FAILURE;
      }
  }
  std::puts(
      "team kernels: packed and Winograd convolutions, pipelined LSTM and attention in chunks "
      "on teams of 1 to 3 threads");
  return EXIT_SUCCESS;
}
