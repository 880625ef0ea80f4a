// NonZero, Compress, Unique and TopK with a run-time k (cgc/kernels/dynamic.h):
// outputs stored at a compile-time bound, their actual size written to the
// extents, zeros past it; and TopK with a constant k, of static size. Each runs on one thread: they
// are found in the post-processing of models, on small tensors, and their output positions depend
// on everything before them.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "cgc/kernels/dynamic.h"

namespace cgc::rt {

template <typename T>
Status non_zero(const NonZeroParams& p, const T* x, int64_t* y, Extents* extents) {
  const int rank = std::max(p.rank, 1);
  std::fill(y, y + rank * p.bound, int64_t{0});
  int64_t found = 0;
  Status status = Status::kOk;
  int64_t index[kMaxRank] = {};
  for (int64_t e = 0; e < p.count; ++e) {
    if (x[e] != T(0)) {
      if (found == p.bound) {
        status = Status::kSizeBeyondBound;
        break;
      }
      for (int d = 0; d < rank; ++d) y[d * p.bound + found] = p.rank == 0 ? 0 : index[d];
      ++found;
    }
    for (int d = p.rank - 1; d >= 0; --d) {
      if (++index[d] < p.shape[d]) break;
      index[d] = 0;
    }
  }
  extents->dims[0] = found;
  return status;
}

Status compress(const CompressParams& p, const void* x, const uint8_t* condition, void* y,
                Extents* extents) {
  const auto* in = static_cast<const uint8_t*>(x);
  auto* out = static_cast<uint8_t*>(y);
  const int64_t considered = std::min(p.cond_len, p.axis_dim);
  int64_t selected = 0;
  for (int64_t i = 0; i < considered; ++i) selected += condition[i] != 0;
  const Status status = selected > p.bound ? Status::kSizeBeyondBound : Status::kOk;
  selected = std::min(selected, p.bound);
  std::memset(out, 0, static_cast<size_t>(p.outer * p.bound * p.inner_bytes));
  for (int64_t o = 0; o < p.outer; ++o) {
    int64_t j = 0;
    for (int64_t i = 0; i < considered && j < selected; ++i)
      if (condition[i])
        std::memcpy(out + (o * p.bound + j++) * p.inner_bytes,
                    in + (o * p.axis_dim + i) * p.inner_bytes, static_cast<size_t>(p.inner_bytes));
  }
  extents->dims[0] = selected;
  return status;
}

namespace {

/// Slice s of x along the axis compared lexicographically, in (outer,
/// inner) order.
template <typename T>
struct SliceOrder {
  const UniqueParams& p;
  const T* x;
  int compare(int64_t a, int64_t b) const {
    for (int64_t o = 0; o < p.outer; ++o)
      for (int64_t i = 0; i < p.inner; ++i) {
        const T va = x[(o * p.axis_dim + a) * p.inner + i];
        const T vb = x[(o * p.axis_dim + b) * p.inner + i];
        if (va < vb) return -1;
        if (vb < va) return 1;
      }
    return 0;
  }
};

}  // namespace

template <typename T>
Status unique(const UniqueParams& p, const T* x, const Extents* x_extents, T* y, int64_t* indices,
              int64_t* inverse, int64_t* counts, Extents* extents) {
  const SliceOrder<T> order{p, x};
  const int64_t slices =
      x_extents ? std::clamp<int64_t>(x_extents->dims[0], 0, p.axis_dim) : p.axis_dim;
  // Slices sorted stably: equal slices form runs, each led by its first
  // occurrence.
  std::vector<int64_t> sorted(static_cast<size_t>(slices));
  std::iota(sorted.begin(), sorted.end(), int64_t{0});
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](int64_t a, int64_t b) { return order.compare(a, b) < 0; });
  struct Group {
    int64_t first, count;
  };
  std::vector<Group> groups;
  std::vector<int64_t> groupOf(static_cast<size_t>(slices));
  for (size_t r = 0; r < sorted.size(); ++r) {
    if (r == 0 || order.compare(sorted[r - 1], sorted[r]) != 0) groups.push_back({sorted[r], 0});
    ++groups.back().count;
    groupOf[static_cast<size_t>(sorted[r])] = static_cast<int64_t>(groups.size()) - 1;
  }
  // Output position of each group: sorted order, or by first occurrence.
  std::vector<int64_t> rank(groups.size());
  std::iota(rank.begin(), rank.end(), int64_t{0});
  if (!p.sorted) {
    std::vector<int64_t> byFirst(groups.size());
    std::iota(byFirst.begin(), byFirst.end(), int64_t{0});
    std::sort(byFirst.begin(), byFirst.end(),
              [&](int64_t a, int64_t b) { return groups[a].first < groups[b].first; });
    for (size_t r = 0; r < byFirst.size(); ++r)
      rank[static_cast<size_t>(byFirst[r])] = static_cast<int64_t>(r);
  }
  const int64_t found = static_cast<int64_t>(groups.size());
  const int64_t kept = std::min(found, p.bound);
  std::fill(y, y + p.outer * p.bound * p.inner, T(0));
  std::fill(indices, indices + p.bound, int64_t{0});
  std::fill(counts, counts + p.bound, int64_t{0});
  for (size_t g = 0; g < groups.size(); ++g) {
    const int64_t at = rank[g];
    if (at >= kept) continue;
    indices[at] = groups[g].first;
    counts[at] = groups[g].count;
    for (int64_t o = 0; o < p.outer; ++o)
      std::copy_n(x + (o * p.axis_dim + groups[g].first) * p.inner, p.inner,
                  y + (o * p.bound + at) * p.inner);
  }
  std::fill(inverse, inverse + p.axis_dim, int64_t{0});
  for (int64_t s = 0; s < slices; ++s) inverse[s] = rank[static_cast<size_t>(groupOf[s])];
  extents->dims[0] = kept;
  return found > p.bound ? Status::kSizeBeyondBound : Status::kOk;
}

namespace {

/// The `taken` largest (or smallest) of each column of x [outer, axis,
/// inner] along the axis, in order, ties by the lower index, into values
/// and indices [outer, stride, inner].
template <typename T>
void topKColumns(int64_t outer, int64_t axis, int64_t inner, int64_t stride, int64_t taken,
                 bool largest, const T* x, T* values, int64_t* indices) {
  std::vector<int64_t> order(static_cast<size_t>(axis));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* column = x + o * axis * inner + i;
      std::iota(order.begin(), order.end(), int64_t{0});
      auto before = [&](int64_t a, int64_t b) {
        const T va = column[a * inner], vb = column[b * inner];
        if (va != vb) return largest ? vb < va : va < vb;
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + taken, order.end(), before);
      for (int64_t j = 0; j < taken; ++j) {
        const int64_t at = (o * stride + j) * inner + i;
        values[at] = column[order[static_cast<size_t>(j)] * inner];
        indices[at] = order[static_cast<size_t>(j)];
      }
    }
}

}  // namespace

template <typename T>
void top_k(const TopKParams& p, const T* x, T* values, int64_t* indices) {
  topKColumns(p.outer, p.axis, p.inner, p.k, p.k, p.largest, x, values, indices);
}

template <typename T>
Status top_k_dynamic(const TopKDynamicParams& p, const T* x, const int64_t* k, T* values,
                     int64_t* indices, Extents* extents) {
  std::fill(values, values + p.outer * p.bound * p.inner, T(0));
  std::fill(indices, indices + p.outer * p.bound * p.inner, int64_t{0});
  const int64_t wanted = k[0];
  Status status = Status::kOk;
  if (wanted > p.bound) status = Status::kSizeBeyondBound;
  if (wanted < 0 || wanted > p.axis) status = Status::kValueOutOfRange;
  const int64_t taken = std::clamp<int64_t>(wanted, 0, std::min(p.bound, p.axis));
  topKColumns(p.outer, p.axis, p.inner, p.bound, taken, p.largest, x, values, indices);
  extents->dims[0] = taken;
  return status;
}

#define CGC_DYNAMIC_INSTANCES(T)                                                                  \
  template Status non_zero(const NonZeroParams&, const T*, int64_t*, Extents*);                   \
  template Status unique(const UniqueParams&, const T*, const Extents*, T*, int64_t*, int64_t*,   \
                         int64_t*, Extents*);                                                     \
  template Status top_k_dynamic(const TopKDynamicParams&, const T*, const int64_t*, T*, int64_t*, \
                                Extents*);                                                        \
  template void top_k(const TopKParams&, const T*, T*, int64_t*);
CGC_DYNAMIC_INSTANCES(float)
CGC_DYNAMIC_INSTANCES(double)
CGC_DYNAMIC_INSTANCES(int32_t)
CGC_DYNAMIC_INSTANCES(int64_t)
CGC_DYNAMIC_INSTANCES(int8_t)
CGC_DYNAMIC_INSTANCES(uint8_t)
#undef CGC_DYNAMIC_INSTANCES

}  // namespace cgc::rt
