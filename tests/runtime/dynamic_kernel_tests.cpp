// The kernels of data-dependent output size (cgc/kernels/dynamic.h) against
// plain reference loops: the results inside the actual extent, zeros past
// it up to the bound, the extent written, and a bound smaller than the data
// needs: kSizeBeyondBound, the first `bound` results, and nothing written
// past the buffers (a guard of sentinel values after each).
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <vector>

#include "cgc/kernels.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::test::randomFloats;

namespace {

constexpr int64_t kGuard = 16;
constexpr int64_t kSentinel = -777;

/// A buffer of `n` elements followed by kGuard sentinels.
template <typename T>
std::vector<T> guarded(int64_t n) {
  std::vector<T> v(static_cast<size_t>(n + kGuard), T(7));
  std::fill(v.end() - kGuard, v.end(), static_cast<T>(kSentinel));
  return v;
}

template <typename T>
void requireGuardIntact(const std::vector<T>& v) {
  for (size_t i = v.size() - kGuard; i < v.size(); ++i) REQUIRE(v[i] == static_cast<T>(kSentinel));
}

Extents* extentsOf(int64_t& slot) { return reinterpret_cast<Extents*>(&slot); }

/// Integers in [0, range) from the shared random floats.
std::vector<int64_t> randomInts(size_t n, int64_t range, uint32_t seed) {
  std::vector<int64_t> v;
  for (float f : randomFloats(n, seed)) v.push_back(static_cast<int64_t>((f + 1) / 2 * range));
  return v;
}

}  // namespace

TEST_CASE("non_zero lists coordinates column by column, up to its bound") {
  const std::vector<int64_t> shape = {3, 4, 5};
  std::vector<float> x(60);
  auto picks = randomInts(60, 3, 11);
  for (size_t i = 0; i < x.size(); ++i) x[i] = picks[i] == 0 ? 1.5f : 0.0f;
  std::vector<std::vector<int64_t>> ref;  // coordinates of each nonzero
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = 0; c < 5; ++c)
        if (x[(a * 4 + b) * 5 + c] != 0) ref.push_back({a, b, c});
  REQUIRE(!ref.empty());
  for (int64_t bound : {int64_t{60}, static_cast<int64_t>(ref.size()), int64_t{3}}) {
    NonZeroParams p{};
    p.rank = 3;
    p.count = 60;
    p.shape = {3, 4, 5};
    p.bound = bound;
    auto y = guarded<int64_t>(3 * bound);
    int64_t extent = -1;
    const Status status = non_zero<float>(p, x.data(), y.data(), extentsOf(extent));
    const int64_t kept = std::min<int64_t>(bound, ref.size());
    INFO("bound " << bound);
    REQUIRE(status ==
            (bound < static_cast<int64_t>(ref.size()) ? Status::kSizeBeyondBound : Status::kOk));
    REQUIRE(extent == kept);
    for (int64_t d = 0; d < 3; ++d)
      for (int64_t j = 0; j < bound; ++j) REQUIRE(y[d * bound + j] == (j < kept ? ref[j][d] : 0));
    requireGuardIntact(y);
  }
}

TEST_CASE("non_zero of a scalar and of all zeros") {
  NonZeroParams p{};
  p.rank = 0;
  p.count = 1;
  p.bound = 1;
  const uint8_t one = 1;
  int64_t y[1] = {9}, extent = -1;
  REQUIRE(non_zero<uint8_t>(p, &one, y, extentsOf(extent)) == Status::kOk);
  REQUIRE(extent == 1);
  REQUIRE(y[0] == 0);
  std::vector<int32_t> zeros(6, 0);
  p.rank = 2;
  p.count = 6;
  p.shape = {2, 3};
  p.bound = 6;
  auto out = guarded<int64_t>(12);
  REQUIRE(non_zero<int32_t>(p, zeros.data(), out.data(), extentsOf(extent)) == Status::kOk);
  REQUIRE(extent == 0);
  for (int i = 0; i < 12; ++i) REQUIRE(out[i] == 0);
  requireGuardIntact(out);
}

TEST_CASE("compress keeps the selected slices, with and without an axis") {
  // x [2, 5, 3] along axis 1; the condition is shorter than the axis.
  const auto x = randomFloats(30, 21);
  const std::vector<uint8_t> cond = {1, 0, 1, 1};
  for (int64_t bound : {int64_t{4}, int64_t{3}, int64_t{2}}) {
    CompressParams p{2, 5, 3 * 4, 4, bound};
    auto y = guarded<float>(2 * bound * 3);
    int64_t extent = -1;
    const Status status = compress(p, x.data(), cond.data(), y.data(), extentsOf(extent));
    INFO("bound " << bound);
    REQUIRE(status == (bound < 3 ? Status::kSizeBeyondBound : Status::kOk));
    REQUIRE(extent == std::min<int64_t>(3, bound));
    const int64_t picked[] = {0, 2, 3};
    for (int64_t o = 0; o < 2; ++o)
      for (int64_t j = 0; j < bound; ++j)
        for (int64_t i = 0; i < 3; ++i)
          REQUIRE(y[(o * bound + j) * 3 + i] ==
                  (j < extent ? x[(o * 5 + picked[j]) * 3 + i] : 0.0f));
    requireGuardIntact(y);
  }
  // Flattened: a condition longer than the input is cut to its length.
  const std::vector<uint8_t> longCond = {0, 1, 1, 0, 0, 1, 1};
  CompressParams p{1, 6, 4, 7, 6};
  auto y = guarded<float>(6);
  int64_t extent = -1;
  REQUIRE(compress(p, x.data(), longCond.data(), y.data(), extentsOf(extent)) == Status::kOk);
  REQUIRE(extent == 3);
  REQUIRE(y[0] == x[1]);
  REQUIRE(y[1] == x[2]);
  REQUIRE(y[2] == x[5]);
  REQUIRE(y[3] == 0.0f);
  requireGuardIntact(y);
}

namespace {

/// Unique by brute force: slices as vectors, first occurrences in order,
/// then sorted by std::map when asked.
struct UniqueRef {
  std::vector<std::vector<int64_t>> values;
  std::vector<int64_t> indices, inverse, counts;
};

UniqueRef uniqueReference(const std::vector<int64_t>& x, int64_t outer, int64_t axis, int64_t inner,
                          bool sorted) {
  std::vector<std::vector<int64_t>> slices(static_cast<size_t>(axis));
  for (int64_t s = 0; s < axis; ++s)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) slices[s].push_back(x[(o * axis + s) * inner + i]);
  UniqueRef ref;
  std::vector<size_t> order;  // unique slice -> first occurrence, in the output order
  std::map<std::vector<int64_t>, int64_t> first;
  for (int64_t s = 0; s < axis; ++s)
    if (first.emplace(slices[s], s).second) order.push_back(static_cast<size_t>(s));
  if (sorted) {
    order.clear();
    for (const auto& [slice, s] : first) order.push_back(static_cast<size_t>(s));
  }
  for (size_t u : order) {
    ref.values.push_back(slices[u]);
    ref.indices.push_back(static_cast<int64_t>(u));
    ref.counts.push_back(std::count(slices.begin(), slices.end(), slices[u]));
  }
  for (int64_t s = 0; s < axis; ++s)
    ref.inverse.push_back(std::find(ref.values.begin(), ref.values.end(), slices[s]) -
                          ref.values.begin());
  return ref;
}

}  // namespace

TEST_CASE("unique matches a brute-force reference, sorted and unsorted, with an axis") {
  struct Case {
    int64_t outer, axis, inner, range;
  };
  for (Case c : {Case{1, 40, 1, 7}, Case{2, 9, 2, 2}, Case{3, 6, 1, 2}, Case{1, 1, 1, 3}}) {
    for (bool sorted : {true, false}) {
      const auto x = randomInts(static_cast<size_t>(c.outer * c.axis * c.inner), c.range, 31);
      const UniqueRef ref = uniqueReference(x, c.outer, c.axis, c.inner, sorted);
      const int64_t found = static_cast<int64_t>(ref.values.size());
      for (int64_t bound : {c.axis, found, std::max<int64_t>(found - 1, 0)}) {
        UniqueParams p{c.outer, c.axis, c.inner, bound, sorted};
        auto y = guarded<int64_t>(c.outer * bound * c.inner);
        auto indices = guarded<int64_t>(bound), counts = guarded<int64_t>(bound);
        auto inverse = guarded<int64_t>(c.axis);
        int64_t extent = -1;
        const Status status = unique<int64_t>(p, x.data(), nullptr, y.data(), indices.data(),
                                              inverse.data(), counts.data(), extentsOf(extent));
        INFO("axis " << c.axis << " inner " << c.inner << " sorted " << sorted << " bound "
                     << bound);
        REQUIRE(status == (bound < found ? Status::kSizeBeyondBound : Status::kOk));
        REQUIRE(extent == std::min(bound, found));
        for (int64_t u = 0; u < bound; ++u) {
          REQUIRE(indices[u] == (u < extent ? ref.indices[u] : 0));
          REQUIRE(counts[u] == (u < extent ? ref.counts[u] : 0));
          for (int64_t o = 0; o < c.outer; ++o)
            for (int64_t i = 0; i < c.inner; ++i)
              REQUIRE(y[(o * bound + u) * c.inner + i] ==
                      (u < extent ? ref.values[u][o * c.inner + i] : 0));
        }
        if (bound >= found)
          for (int64_t s = 0; s < c.axis; ++s) REQUIRE(inverse[s] == ref.inverse[s]);
        for (const auto* v : {&y, &indices, &counts, &inverse}) requireGuardIntact(*v);
      }
    }
  }
}

TEST_CASE("top_k_dynamic takes k at run time: values in order, ties by index, k checked") {
  // x [2, 7, 3], ties from few distinct values.
  std::vector<float> x;
  for (int64_t v : randomInts(42, 4, 41)) x.push_back(static_cast<float>(v));
  for (bool largest : {true, false})
    for (auto [k, bound] : {std::pair<int64_t, int64_t>{0, 7},
                            {1, 7},
                            {4, 7},
                            {7, 7},
                            {8, 7},
                            {-1, 7},
                            {5, 4},
                            {4, 4}}) {
      TopKDynamicParams p{2, 7, 3, bound, largest};
      auto values = guarded<float>(2 * bound * 3);
      auto indices = guarded<int64_t>(2 * bound * 3);
      int64_t extent = -1;
      const Status status =
          top_k_dynamic<float>(p, x.data(), &k, values.data(), indices.data(), extentsOf(extent));
      INFO("k " << k << " largest " << largest);
      REQUIRE(status == (k < 0 || k > 7 ? Status::kValueOutOfRange
                         : k > bound    ? Status::kSizeBeyondBound
                                        : Status::kOk));
      REQUIRE(extent == std::clamp<int64_t>(k, 0, bound));
      for (int64_t o = 0; o < 2; ++o)
        for (int64_t i = 0; i < 3; ++i) {
          std::vector<std::pair<float, int64_t>> column;
          for (int64_t a = 0; a < 7; ++a) column.push_back({x[(o * 7 + a) * 3 + i], a});
          std::stable_sort(column.begin(), column.end(), [&](const auto& l, const auto& r) {
            return largest ? l.first > r.first : l.first < r.first;
          });
          for (int64_t j = 0; j < bound; ++j) {
            const int64_t at = (o * bound + j) * 3 + i;
            REQUIRE(values[at] == (j < extent ? column[j].first : 0.0f));
            REQUIRE(indices[at] == (j < extent ? column[j].second : 0));
          }
        }
      requireGuardIntact(values);
      requireGuardIntact(indices);
    }
}

TEST_CASE("top_k with a constant k matches a stable-sort reference, int64 and float") {
  // x [3, 6, 2] of few distinct values (ties), k along the middle axis.
  const std::vector<int64_t> raw = randomInts(36, 3, 43);
  std::vector<float> xf(raw.begin(), raw.end());
  for (bool largest : {true, false})
    for (int64_t k : {0, 1, 3, 6}) {
      TopKParams p{3, 6, 2, k, largest};
      auto values = guarded<int64_t>(3 * k * 2);
      auto valuesF = guarded<float>(3 * k * 2);
      auto indices = guarded<int64_t>(3 * k * 2);
      auto indicesF = guarded<int64_t>(3 * k * 2);
      top_k<int64_t>(p, raw.data(), values.data(), indices.data());
      top_k<float>(p, xf.data(), valuesF.data(), indicesF.data());
      INFO("k " << k << " largest " << largest);
      for (int64_t o = 0; o < 3; ++o)
        for (int64_t i = 0; i < 2; ++i) {
          std::vector<std::pair<int64_t, int64_t>> column;
          for (int64_t a = 0; a < 6; ++a) column.push_back({raw[(o * 6 + a) * 2 + i], a});
          std::stable_sort(column.begin(), column.end(), [&](const auto& l, const auto& r) {
            return largest ? l.first > r.first : l.first < r.first;
          });
          for (int64_t j = 0; j < k; ++j) {
            const int64_t at = (o * k + j) * 2 + i;
            REQUIRE(values[at] == column[j].first);
            REQUIRE(indices[at] == column[j].second);
            REQUIRE(valuesF[at] == static_cast<float>(column[j].first));
            REQUIRE(indicesF[at] == column[j].second);
          }
        }
      requireGuardIntact(values);
      requireGuardIntact(indices);
      requireGuardIntact(valuesF);
    }
}

namespace {

float iou(const float* a, const float* b, bool center) {
  auto box = [&](const float* v) {
    std::array<float, 4> r;  // x0, y0, x1, y1
    if (center)
      r = {v[0] - v[2] / 2, v[1] - v[3] / 2, v[0] + v[2] / 2, v[1] + v[3] / 2};
    else
      r = {std::min(v[1], v[3]), std::min(v[0], v[2]), std::max(v[1], v[3]), std::max(v[0], v[2])};
    return r;
  };
  const auto p = box(a), q = box(b);
  const float w = std::min(p[2], q[2]) - std::max(p[0], q[0]);
  const float h = std::min(p[3], q[3]) - std::max(p[1], q[1]);
  if (w <= 0 || h <= 0) return 0;
  const float inter = w * h;
  const float areaP = (p[2] - p[0]) * (p[3] - p[1]), areaQ = (q[2] - q[0]) * (q[3] - q[1]);
  if (areaP <= 0 || areaQ <= 0) return 0;
  return inter / (areaP + areaQ - inter);
}

/// Greedy NMS written the slow way: repeatedly the best remaining box,
/// then every remaining box it suppresses removed.
std::vector<std::array<int64_t, 3>> nmsReference(const std::vector<float>& boxes,
                                                 const std::vector<float>& scores, int64_t batches,
                                                 int64_t classes, int64_t n, int64_t maxOut,
                                                 float iouThreshold, float scoreThreshold,
                                                 bool center) {
  std::vector<std::array<int64_t, 3>> rows;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = scores.data() + (b * classes + c) * n;
      std::vector<int64_t> left;
      for (int64_t i = 0; i < n; ++i)
        if (s[i] > scoreThreshold) left.push_back(i);
      int64_t taken = 0;
      while (!left.empty() && taken < maxOut) {
        auto best = std::min_element(left.begin(), left.end(), [&](int64_t x, int64_t y) {
          return s[x] > s[y] || (s[x] == s[y] && x < y);
        });
        const int64_t i = *best;
        left.erase(best);
        rows.push_back({b, c, i});
        ++taken;
        const float* bi = boxes.data() + (b * n + i) * 4;
        left.erase(std::remove_if(left.begin(), left.end(),
                                  [&](int64_t j) {
                                    return iou(boxes.data() + (b * n + j) * 4, bi, center) >
                                           iouThreshold;
                                  }),
                   left.end());
      }
    }
  return rows;
}

}  // namespace

TEST_CASE("non_max_suppression matches a greedy reference in both box formats") {
  const int64_t batches = 2, classes = 3, n = 12;
  std::vector<float> boxes(batches * n * 4);
  const auto corners = randomFloats(boxes.size(), 51);
  for (size_t i = 0; i < boxes.size(); i += 4) {
    boxes[i] = corners[i] * 4;
    boxes[i + 1] = corners[i + 1] * 4;
    boxes[i + 2] = boxes[i] + (corners[i + 2] + 1.2f) * 3;  // width or y2
    boxes[i + 3] = boxes[i + 1] + (corners[i + 3] + 1.2f) * 3;
  }
  std::vector<float> scores = randomFloats(batches * classes * n, 52);
  scores[3] = scores[5];  // a tie
  for (bool center : {false, true})
    for (int64_t maxOut : {int64_t{2}, int64_t{100}})
      for (float iouThreshold : {0.0f, 0.3f, 0.7f}) {
        const float scoreThreshold = -0.5f;
        const auto ref = nmsReference(boxes, scores, batches, classes, n, maxOut, iouThreshold,
                                      scoreThreshold, center);
        const int64_t found = static_cast<int64_t>(ref.size());
        for (int64_t bound : {batches * classes * n, found, found / 2}) {
          NmsParams p{batches, classes, n, bound, center};
          auto selected = guarded<int64_t>(bound * 3);
          int64_t extent = -1;
          const Status status =
              non_max_suppression(p, boxes.data(), nullptr, scores.data(), &maxOut, &iouThreshold,
                                  &scoreThreshold, selected.data(), extentsOf(extent));
          INFO("center " << center << " max " << maxOut << " iou " << iouThreshold << " bound "
                         << bound);
          REQUIRE(status == (bound < found ? Status::kSizeBeyondBound : Status::kOk));
          REQUIRE(extent == std::min(bound, found));
          for (int64_t r = 0; r < bound; ++r)
            for (int64_t k = 0; k < 3; ++k)
              REQUIRE(selected[r * 3 + k] == (r < extent ? ref[r][k] : 0));
          requireGuardIntact(selected);
        }
      }
}

TEST_CASE("non_max_suppression without a maximum selects nothing, without thresholds all") {
  const std::vector<float> boxes = {0, 0, 1, 1, 0, 0, 1, 1, 5, 5, 6, 6};
  const std::vector<float> scores = {0.2f, 0.9f, -0.4f};
  NmsParams p{1, 1, 3, 3, false};
  std::vector<int64_t> selected(9, 5);
  int64_t extent = -1;
  REQUIRE(non_max_suppression(p, boxes.data(), nullptr, scores.data(), nullptr, nullptr, nullptr,
                              selected.data(), extentsOf(extent)) == Status::kOk);
  REQUIRE(extent == 0);
  const int64_t maxOut = 3;
  REQUIRE(non_max_suppression(p, boxes.data(), nullptr, scores.data(), &maxOut, nullptr, nullptr,
                              selected.data(), extentsOf(extent)) == Status::kOk);
  // IoU threshold 0: the identical box 0 is suppressed by box 1, box 2 is
  // apart (and kept, however low its score).
  REQUIRE(extent == 2);
  REQUIRE(selected == std::vector<int64_t>{0, 0, 1, 0, 0, 2, 0, 0, 0});
}

TEST_CASE("unique and non_max_suppression read an input of run-time size to its extent") {
  // A 1-D input of bound 8 holding 5 values, zeros past them (as generated
  // code keeps it): the zeros are no values.
  const std::vector<float> x = {3, 1, 3, 2, 1, 0, 0, 0};
  int64_t inputExtent = 5, extent = -1;
  UniqueParams p{1, 8, 1, 8, true};
  std::vector<float> y(8);
  std::vector<int64_t> indices(8), inverse(8), counts(8);
  REQUIRE(unique<float>(p, x.data(), extentsOf(inputExtent), y.data(), indices.data(),
                        inverse.data(), counts.data(), extentsOf(extent)) == Status::kOk);
  REQUIRE(extent == 3);
  REQUIRE(y == std::vector<float>{1, 2, 3, 0, 0, 0, 0, 0});
  REQUIRE(counts == std::vector<int64_t>{2, 1, 2, 0, 0, 0, 0, 0});
  REQUIRE(indices == std::vector<int64_t>{1, 3, 0, 0, 0, 0, 0, 0});
  REQUIRE(inverse == std::vector<int64_t>{2, 0, 2, 1, 0, 0, 0, 0});
  // Two boxes of a bound of four; the zero padding boxes would be selected
  // (no score threshold) if they counted.
  const std::vector<float> boxes = {0, 0, 1, 1, 5, 5, 6, 6, 0, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<float> scores = {0.5f, 0.7f, 0, 0};
  int64_t boxCount = 2;
  const int64_t maxOut = 10;
  NmsParams nms{1, 1, 4, 4, false};
  std::vector<int64_t> selected(12, 9);
  REQUIRE(non_max_suppression(nms, boxes.data(), extentsOf(boxCount), scores.data(), &maxOut,
                              nullptr, nullptr, selected.data(), extentsOf(extent)) == Status::kOk);
  REQUIRE(extent == 2);
  REQUIRE(selected == std::vector<int64_t>{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("clear_tail zeroes past the extents; compact_extents moves them to lie densely") {
  // A [3][4][5] bound, extents 2 and 3 in dimensions 0 and 2 (slots 0, 1).
  const int64_t bound[3] = {3, 4, 5};
  ExtentParams p{};
  p.rank = 3;
  p.elem_bytes = sizeof(float);
  for (int d = 0; d < 3; ++d) p.bound[d] = bound[d], p.slot[d] = -1;
  p.slot[0] = 0, p.slot[2] = 1;
  const std::vector<float> data = randomFloats(60, 11);
  for (const std::array<int64_t, 2>& extents : {std::array<int64_t, 2>{2, 3}, {3, 5}, {0, 2}}) {
    const int64_t slots[2] = {extents[0], extents[1]};
    std::vector<float> cleared = data, compacted = data;
    clear_tail(p, slots, cleared.data());
    compact_extents(p, slots, compacted.data());
    std::vector<float> dense;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 5; ++k) {
          const size_t at = static_cast<size_t>((i * 4 + j) * 5 + k);
          const bool inside = i < slots[0] && k < slots[1];
          REQUIRE(cleared[at] == (inside ? data[at] : 0.0f));
          if (inside) dense.push_back(data[at]);
        }
    REQUIRE(std::equal(dense.begin(), dense.end(), compacted.begin()));
  }
}
