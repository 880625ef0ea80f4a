// gemm and matmul (the LIBXSMM paths, their fallbacks, the team splits and
// the fused epilogues) against plain reference loops in double, over awkward
// shapes, each run serially and by teams of 2 and 3 threads.
#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "cgc/kernels.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::test::Act;
using cgc::test::activate;
using cgc::test::kActs;
using cgc::test::onTeam;
using cgc::test::randomFloats;
using cgc::test::requireClose;

namespace {

std::vector<float> referenceGemm(const GemmParams& p, const std::vector<float>& a,
                                 const std::vector<float>& b, const float* c) {
  std::vector<float> y(p.m * p.n);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = 0;
      for (int64_t q = 0; q < p.k; ++q)
        sum += double{p.trans_a ? a[q * p.m + i] : a[i * p.k + q]} *
               (p.trans_b ? b[j * p.k + q] : b[q * p.n + j]);
      sum *= p.alpha;
      if (c) sum += double{p.beta} * c[i * p.c_stride_m + j * p.c_stride_n];
      y[i * p.n + j] = static_cast<float>(activate(p.activation, p.act_min, p.act_max, sum));
    }
  return y;
}

}  // namespace

TEST_CASE("gemm matches a reference loop: shapes, transposes, C forms, epilogues, teams") {
  struct Shape {
    int64_t m, n, k;
  };
  // Odd sizes, M = 1, N = 1, K = 1, and sizes past every cache block
  // (64 rows, 64 columns, 1024 deep) so edge blocks and k steps run.
  const Shape shapes[] = {{1, 1, 1},       {1, 37, 5},   {7, 1, 9},    {5, 9, 1},   {3, 17, 33},
                          {33, 130, 1100}, {70, 20, 64}, {130, 70, 9}, {2, 300, 40}};
  for (Shape s : shapes)
    for (int trans = 0; trans < 4; ++trans)
      for (int cForm = 0; cForm < 5; ++cForm) {
        // C: none, row [n], column [m, 1], full [m, n], scalar.
        const int64_t strides[5][2] = {{0, 0}, {0, 1}, {1, 0}, {s.n, 1}, {0, 0}};
        for (float alpha : {1.0f, 0.5f})
          for (const Act& act : kActs) {
            GemmParams p{s.m,
                         s.n,
                         s.k,
                         (trans & 1) != 0,
                         (trans & 2) != 0,
                         alpha,
                         cForm == 3 ? 1.0f : 0.75f,
                         strides[cForm][0],
                         strides[cForm][1],
                         act.kind,
                         act.lo,
                         act.hi};
            auto a = randomFloats(s.m * s.k, 1), b = randomFloats(s.k * s.n, 2);
            auto c = randomFloats(s.m * s.n, 3);
            const float* cp = cForm == 0 ? nullptr : c.data();
            auto expected = referenceGemm(p, a, b, cp);
            for (int threads : {1, 2, 3}) {
              INFO("m " << s.m << " n " << s.n << " k " << s.k << " trans " << trans << " C "
                        << cForm << " alpha " << alpha << " act " << static_cast<int>(act.kind)
                        << " threads " << threads);
              std::vector<float> y(s.m * s.n, 123.0f);
              onTeam(threads,
                     [&](const Team& team) { gemm(p, a.data(), b.data(), cp, y.data(), team); });
              requireClose(y, expected, 1e-4);
            }
          }
      }
}

TEST_CASE("matmul with broadcast batches, bias and activation, teams") {
  struct Case {
    std::vector<int64_t> batch, aStride, bStride;
    int64_t m, n, k;
  };
  // aStride / bStride in units of one matrix (0 broadcasts).
  const Case cases[] = {
      {{}, {}, {}, 1, 1000, 64},             // a vector times a matrix
      {{3}, {1}, {0}, 5, 19, 7},             // stacks into one GEMM
      {{2, 3}, {3, 1}, {0, 0}, 4, 33, 130},  // stacks, rank 2
      {{4}, {1}, {1}, 6, 9, 11},             // one GEMM per batch
      {{5}, {0}, {1}, 3, 40, 8},             // A broadcast
      {{2, 2}, {0, 1}, {2, 1}, 2, 3, 1},     // K = 1
  };
  for (const Case& c : cases)
    for (bool withBias : {false, true})
      for (const Act& act : kActs) {
        MatMulParams p{};
        p.batch_rank = static_cast<int32_t>(c.batch.size());
        int64_t batches = 1, aMats = 1, bMats = 1;
        for (size_t d = 0; d < c.batch.size(); ++d) {
          p.batch_shape[d] = c.batch[d];
          p.a_batch_strides[d] = c.aStride[d] * c.m * c.k;
          p.b_batch_strides[d] = c.bStride[d] * c.k * c.n;
          batches *= c.batch[d];
          if (c.aStride[d]) aMats = std::max(aMats, c.aStride[d] * c.batch[d]);
          if (c.bStride[d]) bMats = std::max(bMats, c.bStride[d] * c.batch[d]);
        }
        p.m = c.m;
        p.n = c.n;
        p.k = c.k;
        p.activation = act.kind;
        p.act_min = act.lo;
        p.act_max = act.hi;
        auto a = randomFloats(aMats * c.m * c.k, 4), b = randomFloats(bMats * c.k * c.n, 5);
        auto bias = randomFloats(c.n, 6);
        std::vector<float> expected(batches * c.m * c.n);
        for (int64_t batch = 0; batch < batches; ++batch) {
          int64_t aOff = 0, bOff = 0, rest = batch;
          for (int d = p.batch_rank - 1; d >= 0; --d) {
            aOff += rest % p.batch_shape[d] * p.a_batch_strides[d];
            bOff += rest % p.batch_shape[d] * p.b_batch_strides[d];
            rest /= p.batch_shape[d];
          }
          for (int64_t i = 0; i < c.m; ++i)
            for (int64_t j = 0; j < c.n; ++j) {
              double sum = withBias ? bias[j] : 0.0;
              for (int64_t q = 0; q < c.k; ++q)
                sum += double{a[aOff + i * c.k + q]} * b[bOff + q * c.n + j];
              expected[(batch * c.m + i) * c.n + j] =
                  static_cast<float>(activate(act.kind, act.lo, act.hi, sum));
            }
        }
        for (int threads : {1, 2, 3}) {
          INFO("case m " << c.m << " n " << c.n << " k " << c.k << " bias " << withBias << " act "
                         << static_cast<int>(act.kind) << " threads " << threads);
          std::vector<float> y(expected.size(), 123.0f);
          onTeam(threads, [&](const Team& team) {
            matmul(p, a.data(), b.data(), withBias ? bias.data() : nullptr, y.data(), team);
          });
          requireClose(y, expected, 1e-4);
        }
      }
}
