// The fused attention kernel (rt::attention) against a plain reference loop
// in double: softmax(scale * q . K^T + mask) . V per batch, head and query
// row, on K and V stored with room for a cache's capacity (strides over it),
// broadcast heads, an additive mask and a condition with its fill, one key,
// no key, and rows fewer than threads (each row's keys split into chunks and
// combined), on teams of 1, 2 and 3 threads.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "cgc/kernels.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::test::onTeam;
using cgc::test::randomFloats;

namespace {

struct Case {
  int64_t batch, heads, rows, keys, depth, depth_v;
  int64_t capacity;            // positions K and V hold room for (>= keys)
  bool kvHeadsShared = false;  // K and V of one head for all (stride 0)
  enum { kNone, kAdd, kFill, kFillFalse } mask = kNone;
};

/// The element offsets of K or V stored [batch, heads, capacity, depth].
struct Layout {
  int64_t batch, head, key;
};
Layout layoutOf(const Case& c, int64_t depth) {
  const int64_t heads = c.kvHeadsShared ? 1 : c.heads;
  return {heads * c.capacity * depth, c.kvHeadsShared ? 0 : c.capacity * depth, depth};
}

std::vector<double> reference(const Case& c, const AttentionParams& p, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& add,
                              const std::vector<uint8_t>& condition) {
  std::vector<double> y(static_cast<size_t>(c.batch * c.heads * c.rows * c.depth_v), 0.0);
  std::vector<double> s(static_cast<size_t>(c.keys));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.rows; ++i) {
        const int64_t row = (b * c.heads + h) * c.rows + i;
        const int64_t m = b * p.mask_batch_stride + h * p.mask_head_stride + i * p.mask_row_stride;
        double maximum = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < c.keys; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.depth; ++d)
            dot += static_cast<double>(q[row * c.depth + d]) *
                   k[b * p.k_batch_stride + h * p.k_head_stride + j * p.k_key_stride + d];
          s[j] = dot * p.scale;
          if (!add.empty()) s[j] += add[m + j * p.mask_key_stride];
          if (!condition.empty() && (condition[m + j * p.mask_key_stride] != 0) == p.fill_when)
            s[j] = p.fill;
          maximum = std::max(maximum, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < c.keys; ++j) sum += s[j] = std::exp(s[j] - maximum);
        for (int64_t j = 0; j < c.keys; ++j)
          for (int64_t d = 0; d < c.depth_v; ++d)
            y[row * c.depth_v + d] +=
                s[j] / sum * v[b * p.v_batch_stride + h * p.v_head_stride + j * p.v_key_stride + d];
      }
  return y;
}

void check(const Case& c) {
  INFO("batch " << c.batch << " heads " << c.heads << " rows " << c.rows << " keys " << c.keys
                << " depth " << c.depth << "/" << c.depth_v << " capacity " << c.capacity
                << " shared heads " << c.kvHeadsShared << " mask " << c.mask);
  AttentionParams p{};
  p.batch = c.batch, p.heads = c.heads, p.rows = c.rows, p.keys = c.keys;
  p.depth = c.depth, p.depth_v = c.depth_v;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.depth));
  const Layout kl = layoutOf(c, c.depth), vl = layoutOf(c, c.depth_v);
  p.k_batch_stride = kl.batch, p.k_head_stride = kl.head, p.k_key_stride = kl.key;
  p.v_batch_stride = vl.batch, p.v_head_stride = vl.head, p.v_key_stride = vl.key;
  const int64_t kvHeads = c.kvHeadsShared ? 1 : c.heads;
  const auto seed = static_cast<uint32_t>(c.keys * 31 + c.depth * 7 + c.rows);
  auto q = randomFloats(static_cast<size_t>(c.batch * c.heads * c.rows * c.depth), seed);
  for (auto& x : q) x *= 4.0f;  // peaked softmaxes, not only flat ones
  const auto k =
      randomFloats(static_cast<size_t>(c.batch * kvHeads * c.capacity * c.depth), seed + 1);
  const auto v =
      randomFloats(static_cast<size_t>(c.batch * kvHeads * c.capacity * c.depth_v), seed + 2);
  // The mask: [batch, 1, rows, keys] (broadcast over heads).
  std::vector<float> add;
  std::vector<uint8_t> condition;
  if (c.mask != Case::kNone) {
    p.mask_batch_stride = c.rows * c.keys, p.mask_row_stride = c.keys, p.mask_key_stride = 1;
    const size_t n = static_cast<size_t>(c.batch * c.rows * c.keys);
    if (c.mask == Case::kAdd) {
      add = randomFloats(n, seed + 3);
      for (size_t i = 0; i < n; i += 3) add[i] = -1e30f;
    } else {
      condition.resize(n);
      for (size_t i = 0; i < n; ++i) condition[i] = (i * 7 % 5) < 2;
      p.fill = -1e30f;
      p.fill_when = c.mask == Case::kFill;
    }
  }
  const auto expected = reference(c, p, q, k, v, add, condition);
  for (int threads : {1, 2, 3}) {
    INFO("threads " << threads);
    std::vector<float> y(expected.size(), NAN);
    auto run = [&](const Team& team) {
      attention(p, q.data(), k.data(), v.data(), add.empty() ? nullptr : add.data(),
                condition.empty() ? nullptr : condition.data(), y.data(), team);
    };
    if (threads == 1)
      run(Team::serial());
    else
      onTeam(threads, run);
    for (size_t i = 0; i < y.size(); ++i) {
      INFO("element " << i);
      REQUIRE(y[i] == Approx(expected[i]).epsilon(1e-4).margin(1e-5));
    }
  }
}

}  // namespace

TEST_CASE("attention: one query row over a cache, heads split over the team") {
  for (int64_t keys : {1, 2, 17, 64, 300})
    for (int64_t depth : {1, 7, 16, 64, 80}) check({1, 3, 1, keys, depth, depth, keys});
  check({1, 12, 1, 1024, 64, 64, 1024});
}

TEST_CASE("attention: K and V strided over a cache's capacity, shared heads, batches") {
  check({1, 2, 1, 37, 32, 32, 64});
  check({2, 3, 1, 100, 24, 40, 128});
  check({2, 4, 1, 50, 16, 16, 50, true});
  check({3, 2, 2, 9, 8, 8, 20, true});
}

TEST_CASE("attention: several query rows with a mask added or a condition filled") {
  for (auto mask : {Case::kAdd, Case::kFill, Case::kFillFalse}) {
    Case c{2, 2, 5, 33, 16, 16, 40};
    c.mask = mask;
    check(c);
    Case one{1, 1, 1, 200, 64, 64, 256};
    one.mask = mask;
    check(one);
  }
}

TEST_CASE("attention: fewer rows than threads splits the keys into combined chunks") {
  // One row: 2 and 3 threads each take chunks of its keys (at least 64).
  for (int64_t keys : {63, 64, 65, 128, 129, 1000}) check({1, 1, 1, keys, 64, 64, keys + 3});
  Case masked{1, 1, 1, 500, 32, 32, 512};
  masked.mask = Case::kAdd;
  check(masked);
  check({1, 2, 1, 700, 16, 48, 700});
}

TEST_CASE("attention: no keys gives zeros, no rows writes nothing") {
  AttentionParams p{1, 2, 1, 0, 4, 4, 1.0f, 0, 0, 4, 0, 0, 4};
  std::vector<float> q(8, 1.0f), y(8, NAN);
  attention(p, q.data(), nullptr, nullptr, nullptr, nullptr, y.data());
  for (float x : y) CHECK(x == 0.0f);
  p.keys = 3, p.rows = 0;
  std::vector<float> untouched(1, 5.0f);
  attention(p, q.data(), q.data(), q.data(), nullptr, nullptr, untouched.data());
  CHECK(untouched[0] == 5.0f);
}
