// The team-parallel elementwise, pooling and normalisation kernels against
// plain reference loops, each run serially and on 2- and 3-thread teams, on
// awkward sizes: one element, fewer elements than threads, sizes that are
// not multiples of a cache line or of the 16-lane blocks.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include "cgc/kernels.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::test::onTeam;
using cgc::test::randomFloats;
using cgc::test::requireClose;

namespace {

/// Calls kernel(team) on 1, 2 and 3 threads; checks each output.
template <typename Kernel, typename Check>
void onTeams(Kernel kernel, Check check) {
  for (int threads : {1, 2, 3}) {
    INFO("threads " << threads);
    if (threads == 1)
      kernel(Team::serial());
    else
      onTeam(threads, kernel);
    check();
  }
}

std::vector<float> scaled(std::vector<float> v, float s) {
  for (auto& x : v) x *= s;
  return v;
}

}  // namespace

TEST_CASE("team unary: fast sigmoid, tanh, exp and erf match libm") {
  struct Case {
    UnaryOp op;
    double (*ref)(double);
  };
  const Case cases[] = {
      {UnaryOp::kSigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }},
      {UnaryOp::kTanh, [](double v) { return std::tanh(v); }},
      {UnaryOp::kExp, [](double v) { return std::exp(v); }},
      {UnaryOp::kRelu, [](double v) { return v > 0 ? v : 0; }},
      {UnaryOp::kErf, [](double v) { return std::erf(v); }},
  };
  for (int64_t n : {1, 2, 17, 1000, 4099}) {
    // Spans saturation, the small-|x| branch of tanh and exp's overflow.
    std::vector<float> x = scaled(randomFloats(n, static_cast<uint32_t>(n)), 20.f);
    if (n > 3) x[0] = 100.f, x[1] = -110.f, x[2] = 1e-7f;
    if (n > 1000)  // dense around 0, where the approximations switch branches
      for (int64_t i = 3; i < 1000; ++i) x[i] = static_cast<float>(i - 500) / 400.f;
    for (const Case& c : cases) {
      INFO("op " << static_cast<int>(c.op) << " n " << n);
      std::vector<float> y(n, NAN), ref(n);
      for (int64_t i = 0; i < n; ++i) ref[i] = static_cast<float>(c.ref(x[i]));
      UnaryParams p{c.op, n, 0.f, 0.f};
      onTeams([&](const Team& t) { unary<float>(p, x.data(), y.data(), t); },
              [&] {
                for (int64_t i = 0; i < n; ++i) {
                  INFO("x " << x[i]);
                  REQUIRE(y[i] == Approx(ref[i]).epsilon(1e-6).margin(1e-37));
                }
                std::fill(y.begin(), y.end(), NAN);
              });
    }
  }
}

TEST_CASE("team binary: dense, scalar, inner and outer broadcasts") {
  struct Case {
    std::vector<int64_t> out, a, b;  // b's shape right-aligned, 1 = broadcast
  };
  const Case cases[] = {
      {{1}, {1}, {1}},
      {{4099}, {4099}, {4099}},
      {{4099}, {4099}, {1}},
      {{5, 33}, {1, 1}, {5, 33}},
      {{5, 33}, {5, 33}, {1, 33}},
      {{5, 33}, {5, 33}, {5, 1}},
      {{2, 3, 17}, {2, 3, 17}, {2, 1, 17}},
      {{3, 2, 1, 5}, {3, 1, 1, 5}, {1, 2, 1, 1}},
  };
  uint32_t seed = 40;
  for (const Case& c : cases) {
    BinaryParams p{};
    p.op = BinaryOp::kSub;
    p.bc.rank = static_cast<int32_t>(c.out.size());
    p.bc.count = 1;
    int64_t aStride = 1, bStride = 1;
    for (int d = p.bc.rank - 1; d >= 0; --d) {
      p.bc.shape[d] = c.out[d];
      p.bc.a_strides[d] = c.a[d] == 1 ? 0 : aStride;
      p.bc.b_strides[d] = c.b[d] == 1 ? 0 : bStride;
      aStride *= c.a[d];
      bStride *= c.b[d];
      p.bc.count *= c.out[d];
    }
    auto a = randomFloats(aStride, ++seed), b = randomFloats(bStride, ++seed);
    std::vector<float> y(p.bc.count, NAN), ref(p.bc.count);
    for (int64_t i = 0; i < p.bc.count; ++i) {
      int64_t rest = i, ai = 0, bi = 0;
      for (int d = p.bc.rank - 1; d >= 0; --d) {
        int64_t idx = rest % p.bc.shape[d];
        rest /= p.bc.shape[d];
        ai += idx * p.bc.a_strides[d];
        bi += idx * p.bc.b_strides[d];
      }
      ref[i] = a[ai] - b[bi];
    }
    INFO("count " << p.bc.count << " rank " << p.bc.rank);
    onTeams([&](const Team& t) { binary<float>(p, a.data(), b.data(), y.data(), t); },
            [&] {
              REQUIRE(y == ref);
              std::fill(y.begin(), y.end(), NAN);
            });
  }
}

TEST_CASE("team pooling splits planes") {
  // planes of 7 x 9, window 3 x 2, stride 2, pads 1 / 0; 32 planes go 16 to
  // a vector for max pooling.
  for (int64_t n_c : {5, 32}) {
    INFO(n_c << " planes");
    PoolParams p{n_c, 1, 7, 9, 1, 4, 4, 1, 3, 2, 1, 2, 2, 0, 1, 0, 1, 1, 1, false};
    auto x = randomFloats(n_c * 7 * 9, 3);
    std::vector<float> maxRef(n_c * 16), avgRef(n_c * 16);
    for (int64_t c = 0; c < n_c; ++c)
      for (int64_t oh = 0; oh < 4; ++oh)
        for (int64_t ow = 0; ow < 4; ++ow) {
          float m = -std::numeric_limits<float>::infinity();
          double s = 0;
          int count = 0;
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 2; ++kw) {
              int64_t ih = oh * 2 - 1 + kh, iw = ow * 2 + kw;
              if (ih < 0 || ih >= 7 || iw >= 9) continue;
              m = std::max(m, x[(c * 7 + ih) * 9 + iw]);
              s += x[(c * 7 + ih) * 9 + iw];
              ++count;
            }
          maxRef[c * 16 + oh * 4 + ow] = m;
          avgRef[c * 16 + oh * 4 + ow] = static_cast<float>(s / count);
        }
    std::vector<float> y(n_c * 16, NAN);
    onTeams([&](const Team& t) { max_pool(p, x.data(), y.data(), t); },
            [&] { requireClose(y, maxRef, 1e-6); });
    onTeams([&](const Team& t) { avg_pool(p, x.data(), y.data(), t); },
            [&] { requireClose(y, avgRef, 1e-6); });
  }

  for (int64_t planes : {1, 37}) {
    auto gx = randomFloats(planes * 13, 4);
    std::vector<float> g(planes, NAN), gRef(planes);
    for (int64_t c = 0; c < planes; ++c) {
      double s = 0;
      for (int i = 0; i < 13; ++i) s += gx[c * 13 + i];
      gRef[c] = static_cast<float>(s / 13);
    }
    onTeams(
        [&](const Team& t) {
          global_avg_pool({planes, 13}, gx.data(), g.data(), t);
        },
        [&] { requireClose(g, gRef, 1e-6); });
  }
}

TEST_CASE("team softmax and log-softmax along contiguous and strided axes") {
  struct Shape {
    int64_t outer, axis, inner;
  };
  for (Shape s :
       {Shape{1, 1, 1}, Shape{5, 37, 1}, Shape{2, 1000, 1}, Shape{3, 6, 19}, Shape{2, 5, 300}}) {
    for (bool log : {false, true}) {
      INFO("shape " << s.outer << "x" << s.axis << "x" << s.inner << " log " << log);
      int64_t n = s.outer * s.axis * s.inner;
      auto x = scaled(randomFloats(n, 9), 10.f);
      std::vector<float> y(n, NAN), ref(n);
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          auto at = [&](int64_t a) { return (o * s.axis + a) * s.inner + i; };
          double m = -INFINITY, sum = 0;
          for (int64_t a = 0; a < s.axis; ++a) m = std::max<double>(m, x[at(a)]);
          for (int64_t a = 0; a < s.axis; ++a) sum += std::exp(x[at(a)] - m);
          for (int64_t a = 0; a < s.axis; ++a)
            ref[at(a)] = static_cast<float>(log ? x[at(a)] - m - std::log(sum)
                                                : std::exp(x[at(a)] - m) / sum);
        }
      SoftmaxParams p{s.outer, s.axis, s.inner, log};
      onTeams([&](const Team& t) { softmax(p, x.data(), y.data(), t); },
              [&] {
                for (int64_t i = 0; i < n; ++i)
                  REQUIRE(y[i] == Approx(ref[i]).epsilon(1e-5).margin(1e-7));
                std::fill(y.begin(), y.end(), NAN);
              });
    }
  }
}

TEST_CASE("team batch_norm and layer_norm split planes and rows") {
  BatchNormParams bp{2, 3, 11, 1e-5f};
  auto x = randomFloats(2 * 3 * 11, 21);
  auto scale = randomFloats(3, 22), bias = randomFloats(3, 23), mean = randomFloats(3, 24);
  std::vector<float> var = {0.5f, 1.5f, 0.1f};
  std::vector<float> y(x.size(), NAN), ref(x.size());
  for (int64_t i = 0; i < 66; ++i) {
    int64_t c = (i / 11) % 3;
    ref[i] = static_cast<float>((x[i] - mean[c]) / std::sqrt(var[c] + 1e-5) * scale[c] + bias[c]);
  }
  onTeams(
      [&](const Team& t) {
        batch_norm(bp, x.data(), scale.data(), bias.data(), mean.data(), var.data(), y.data(), t);
      },
      [&] { requireClose(y, ref, 1e-5); });

  for (int64_t outer : {1, 7}) {
    const int64_t inner = 29;
    auto lx = randomFloats(outer * inner, 30);
    auto ls = randomFloats(inner, 31), lb = randomFloats(inner, 32);
    std::vector<float> ly(lx.size(), NAN), lref(lx.size()), lmean(outer), lmeanRef(outer);
    for (int64_t o = 0; o < outer; ++o) {
      double m = 0, v = 0;
      for (int64_t i = 0; i < inner; ++i) m += lx[o * inner + i];
      m /= inner;
      for (int64_t i = 0; i < inner; ++i) v += (lx[o * inner + i] - m) * (lx[o * inner + i] - m);
      v /= inner;
      lmeanRef[o] = static_cast<float>(m);
      for (int64_t i = 0; i < inner; ++i)
        lref[o * inner + i] =
            static_cast<float>((lx[o * inner + i] - m) / std::sqrt(v + 1e-5) * ls[i] + lb[i]);
    }
    LayerNormParams lp{outer, inner, 1e-5f};
    onTeams(
        [&](const Team& t) {
          layer_norm(lp, lx.data(), ls.data(), lb.data(), ly.data(), lmean.data(), nullptr, t);
        },
        [&] {
          requireClose(ly, lref, 1e-5);
          requireClose(lmean, lmeanRef, 1e-6);
        });
  }
}

TEST_CASE("team strided_copy splits rows at any starting multi-index") {
  // A [3, 50, 40] slice of a [4, 60, 90] input: offset, steps 1 / 1 / 2,
  // rows of 160 bytes, so the 16 KB chunks start in the middle of dimension 1.
  const int64_t in0 = 4, in1 = 60, in2 = 90;
  auto x = randomFloats(in0 * in1 * in2, 5);
  StridedCopyParams p{3, 4, (1 * in1 + 2) * in2 + 1, {3, 50, 40}, {in1 * in2, in2, 2}};
  std::vector<float> expected;
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 50; ++b)
      for (int64_t c = 0; c < 40; ++c)
        expected.push_back(x[p.offset + a * in1 * in2 + b * in2 + 2 * c]);
  std::vector<float> y(expected.size(), NAN);
  onTeams([&](const Team& t) { strided_copy(p, x.data(), y.data(), t); },
          [&] { requireClose(y, expected, 0); });
  StridedCopyParams contiguous{2, 4, 0, {in0 * in1, in2}, {in2, 1}};
  std::vector<float> whole(x.size(), NAN);
  onTeams([&](const Team& t) { strided_copy(contiguous, x.data(), whole.data(), t); },
          [&] { requireClose(whole, x, 0); });
}

TEST_CASE("team matmul: the same bits on every team size") {
  // A 2-row GEMM split over two threads gives each one row; a one-row block
  // must not take another summation order than the whole GEMM does.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{2, 6, 48},
                         {1, 40, 300},
                         {5, 33, 129},
                         {64, 64, 64}}) {
    INFO("m " << m << " n " << n << " k " << k);
    MatMulParams p{};
    p.m = m, p.n = n, p.k = k;
    const std::vector<float> a = randomFloats(m * k, 1), b = randomFloats(k * n, 2);
    std::vector<float> serial(m * n), y(m * n);
    matmul<float>(p, a.data(), b.data(), nullptr, serial.data(), Team::serial());
    for (int threads : {2, 3, 4}) {
      INFO("threads " << threads);
      std::fill(y.begin(), y.end(), NAN);
      onTeam(threads, [&](const Team& team) {
        matmul<float>(p, a.data(), b.data(), nullptr, y.data(), team);
      });
      REQUIRE(std::memcmp(y.data(), serial.data(), y.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("team gemm, grouped and transposed conv: the same bits on every team size") {
  // LIBXSMM (AVX-512) sums a block of 16 columns or fewer with few rows in
  // another order than a wide block: a team must cut these GEMMs where the
  // whole one is cut.
  for (auto [m, n, k, transA, transB] :
       {std::tuple<int64_t, int64_t, int64_t, bool, bool>{4, 8, 8, false, false},
        {5, 33, 129, true, false},
        {7, 16, 40, false, true},
        {70, 90, 65, true, true}}) {
    INFO("m " << m << " n " << n << " k " << k << " transA " << transA << " transB " << transB);
    GemmParams p{};
    p.m = m, p.n = n, p.k = k, p.trans_a = transA, p.trans_b = transB;
    p.alpha = transA ? 0.5f : 1.0f, p.beta = 1.0f, p.c_stride_n = 1;
    const std::vector<float> a = randomFloats(m * k, 3), b = randomFloats(k * n, 4),
                             c = randomFloats(n, 5);
    std::vector<float> serial(m * n), y(m * n);
    gemm(p, a.data(), b.data(), c.data(), serial.data(), Team::serial());
    for (int threads : {2, 3, 4}) {
      INFO("threads " << threads);
      std::fill(y.begin(), y.end(), NAN);
      onTeam(threads,
             [&](const Team& team) { gemm(p, a.data(), b.data(), c.data(), y.data(), team); });
      REQUIRE(std::memcmp(y.data(), serial.data(), y.size() * sizeof(float)) == 0);
    }
  }
  ConvParams p{};  // grouped, strided: the im2col path
  p.n = 2, p.c_in = 8, p.h_in = 9, p.w_in = 8, p.c_out = 16, p.h_out = 5, p.w_out = 4;
  p.groups = 2, p.k_h = 3, p.k_w = 3, p.stride_h = 2, p.stride_w = 2, p.pad_top = 1, p.pad_left = 1;
  const std::vector<float> x = randomFloats(2 * 8 * 9 * 8, 6), w = randomFloats(16 * 4 * 9, 7);
  std::vector<float> serial(2 * 16 * 5 * 4), y(serial.size());
  conv(p, x.data(), w.data(), nullptr, nullptr, serial.data(), Team::serial());
  for (int threads : {2, 3, 4}) {
    INFO("conv, threads " << threads);
    std::fill(y.begin(), y.end(), NAN);
    onTeam(threads, [&](const Team& team) {
      conv(p, x.data(), w.data(), nullptr, nullptr, y.data(), team);
    });
    REQUIRE(std::memcmp(y.data(), serial.data(), y.size() * sizeof(float)) == 0);
  }
  // The transposed convolution's GEMM: each thread's output channels are
  // its rows (9 a channel), so teams make GEMMs of other row counts.
  ConvParams t{};
  t.n = 1, t.c_in = 24, t.h_in = 9, t.w_in = 9, t.c_out = 7, t.h_out = 17, t.w_out = 17;
  t.k_h = 3, t.k_w = 3, t.stride_h = 2, t.stride_w = 2, t.pad_top = 1, t.pad_left = 1;
  const std::vector<float> tx = randomFloats(24 * 81, 8), tw = randomFloats(24 * 7 * 9, 9),
                           tb = randomFloats(7, 10);
  std::vector<float> tSerial(7 * 17 * 17), ty(tSerial.size());
  conv_transpose(t, tx.data(), tw.data(), tb.data(), tSerial.data(), Team::serial());
  for (int threads : {2, 3, 4}) {
    INFO("conv_transpose, threads " << threads);
    std::fill(ty.begin(), ty.end(), NAN);
    onTeam(threads, [&](const Team& team) {
      conv_transpose(t, tx.data(), tw.data(), tb.data(), ty.data(), team);
    });
    REQUIRE(std::memcmp(ty.data(), tSerial.data(), ty.size() * sizeof(float)) == 0);
  }
}
