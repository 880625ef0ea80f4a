// Reductions (ReduceSum/Mean/Max/...), ArgMax/ArgMin, and the index-map
// kernel behind Pad and Tile.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cgc/kernels.h"

namespace cgc::rt {

namespace {

/// The elements per output where the reduced axes are the trailing ones
/// (x is [out_count, inner], one output per contiguous row: PyTorch's
/// x.mean((2, 3)) for global average pooling), else 0.
int64_t trailingRow(const ReduceParams& p) {
  int d = p.rank - 1;
  int64_t inner = 1;
  for (; d >= 0 && p.out_strides[d] == 0; --d) inner *= p.shape[d];
  for (; d >= 0; --d)
    if (p.out_strides[d] == 0 && p.shape[d] != 1) return 0;
  return inner * p.out_count == p.count ? inner : 0;
}

/// A sum-like reduction of one contiguous row in double, in eight partial
/// sums that GCC keeps in vector registers (a single running sum cannot be
/// reordered into vectors): f(v) is the term of element v.
template <typename T, typename F>
double sumRow(const T* x, int64_t n, F f) {
  constexpr int kParts = 8;
  double part[kParts] = {};
  int64_t i = 0;
  for (; i + kParts <= n; i += kParts)
    for (int j = 0; j < kParts; ++j) part[j] += f(static_cast<double>(x[i + j]));
  double sum = 0.0;
  for (; i < n; ++i) sum += f(static_cast<double>(x[i]));
  for (int j = 0; j < kParts; ++j) sum += part[j];
  return sum;
}

/// The last step of Mean (the division) and L2 (the root) on a sum.
double finishSum(const ReduceParams& p, double v) {
  if (p.op == ReduceOp::kMean) return v / static_cast<double>(p.reduced);
  if (p.op == ReduceOp::kL2) return std::sqrt(v);
  return v;
}

/// reduce's fast path: Sum, Mean, SumSquare, L1 and L2 over trailing axes.
/// Returns false where it does not apply.
template <typename T>
bool reduceRows(const ReduceParams& p, const T* x, T* y) {
  const int64_t inner = trailingRow(p);
  const bool sumLike = p.op == ReduceOp::kSum || p.op == ReduceOp::kMean ||
                       p.op == ReduceOp::kSumSquare || p.op == ReduceOp::kL1 ||
                       p.op == ReduceOp::kL2;
  if (!sumLike || inner <= 0 || !std::is_floating_point_v<T>) return false;
  for (int64_t o = 0; o < p.out_count; ++o) {
    const T* row = x + o * inner;
    double v;
    if (p.op == ReduceOp::kSumSquare || p.op == ReduceOp::kL2)
      v = sumRow(row, inner, [](double e) { return e * e; });
    else if (p.op == ReduceOp::kL1)
      v = sumRow(row, inner, [](double e) { return std::fabs(e); });
    else
      v = sumRow(row, inner, [](double e) { return e; });
    y[o] = static_cast<T>(finishSum(p, v));
  }
  return true;
}

}  // namespace

template <typename T>
void reduce(const ReduceParams& p, const T* x, T* y) {
  if (reduceRows(p, x, y)) return;
  // Accumulate in double (integers exact up to 2^53), finish per element.
  std::vector<double> acc(static_cast<size_t>(p.out_count));
  double init = 0.0;
  if (p.op == ReduceOp::kMax) init = -std::numeric_limits<double>::infinity();
  if (p.op == ReduceOp::kMin) init = std::numeric_limits<double>::infinity();
  if (p.op == ReduceOp::kProd) init = 1.0;
  std::vector<double> maxima;
  if (p.op == ReduceOp::kLogSumExp) {
    maxima.assign(acc.size(), -std::numeric_limits<double>::infinity());
  }
  std::fill(acc.begin(), acc.end(), init);
  auto visit = [&](auto f) {
    int64_t index[kMaxRank] = {};
    int64_t out = 0;
    for (int64_t i = 0; i < p.count; ++i) {
      f(out, static_cast<double>(x[i]));
      for (int d = p.rank - 1; d >= 0; --d) {
        out += p.out_strides[d];
        if (++index[d] < p.shape[d]) break;
        out -= p.out_strides[d] * p.shape[d];
        index[d] = 0;
      }
    }
  };
  switch (p.op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      visit([&](int64_t o, double v) { acc[o] += v; });
      break;
    case ReduceOp::kMax:
      visit([&](int64_t o, double v) { acc[o] = std::max(acc[o], v); });
      break;
    case ReduceOp::kMin:
      visit([&](int64_t o, double v) { acc[o] = std::min(acc[o], v); });
      break;
    case ReduceOp::kProd:
      visit([&](int64_t o, double v) { acc[o] *= v; });
      break;
    case ReduceOp::kSumSquare:
    case ReduceOp::kL2:
      visit([&](int64_t o, double v) { acc[o] += v * v; });
      break;
    case ReduceOp::kL1:
      visit([&](int64_t o, double v) { acc[o] += std::fabs(v); });
      break;
    case ReduceOp::kLogSumExp:
      visit([&](int64_t o, double v) { maxima[o] = std::max(maxima[o], v); });
      visit([&](int64_t o, double v) { acc[o] += std::exp(v - maxima[o]); });
      break;
  }
  for (int64_t o = 0; o < p.out_count; ++o) {
    double v = finishSum(p, acc[o]);
    if (p.op == ReduceOp::kLogSumExp) v = std::log(v) + maxima[o];
    if constexpr (std::is_integral_v<T>)
      y[o] = std::isfinite(v) ? static_cast<T>(std::trunc(v)) : T(0);
    else
      y[o] = static_cast<T>(v);
  }
}

template void reduce<float>(const ReduceParams&, const float*, float*);
template void reduce<double>(const ReduceParams&, const double*, double*);
template void reduce<int32_t>(const ReduceParams&, const int32_t*, int32_t*);
template void reduce<int64_t>(const ReduceParams&, const int64_t*, int64_t*);

void arg_reduce(const ArgParams& p, const float* x, int64_t* y) {
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t i = 0; i < p.inner; ++i) {
      const float* in = x + o * p.axis * p.inner + i;
      int64_t best = 0;
      for (int64_t a = 1; a < p.axis; ++a) {
        float v = in[a * p.inner], b = in[best * p.inner];
        bool better = p.max ? v > b : v < b;
        if (better || (p.select_last && v == b)) best = a;
      }
      y[o * p.inner + i] = best;
    }
}

namespace {

/// Source index along one dimension, or -1 for a constant-padded element.
int64_t sourceIndex(IndexMapMode mode, int64_t o, int64_t padBegin, int64_t dim) {
  if (mode == IndexMapMode::kTile) return o % dim;
  int64_t i = o - padBegin;
  if (i >= 0 && i < dim) return i;
  switch (mode) {
    case IndexMapMode::kEdge:
      return i < 0 ? 0 : dim - 1;
    case IndexMapMode::kReflect: {
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);
      i = ((i % period) + period) % period;
      return i < dim ? i : period - i;
    }
    default:
      return -1;
  }
}

/// `count` copies of the element `fill` (zeros by memset).
void fillElements(uint8_t* dst, int64_t count, const std::vector<uint8_t>& fill) {
  if (std::all_of(fill.begin(), fill.end(), [](uint8_t b) { return b == 0; })) {
    std::memset(dst, 0, static_cast<size_t>(count) * fill.size());
    return;
  }
  for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * fill.size(), fill.data(), fill.size());
}

}  // namespace

// Row by row (the last dimension): a row whose leading indices fall in the
// padding is filled; otherwise its columns come from one source row through
// a column table computed once, the longest run of consecutive source
// columns (a constant pad's interior) in one memcpy.
void index_map(const IndexMapParams& p, const void* x, const void* value, void* y) {
  std::vector<uint8_t> fill(static_cast<size_t>(p.elem_bytes), 0);
  if (value)
    std::memcpy(fill.data(), value, fill.size());
  else
    cast({DType::kF64, p.dtype, 1}, &p.value, fill.data());
  const auto* in = static_cast<const uint8_t*>(x);
  auto* out = static_cast<uint8_t*>(y);
  if (p.out_count == 0) return;
  if (p.rank == 0) {
    std::memcpy(out, in, fill.size());
    return;
  }
  const int last = p.rank - 1;
  const int64_t width = p.out_shape[last], bytes = p.elem_bytes;
  std::vector<int64_t> inStrides(static_cast<size_t>(p.rank), 1);
  for (int d = p.rank - 2; d >= 0; --d) inStrides[d] = inStrides[d + 1] * p.in_shape[d + 1];
  std::vector<int64_t> column(static_cast<size_t>(width));
  int64_t runBegin = width, runEnd = width;
  for (int64_t o = 0; o < width; ++o) {
    column[o] = sourceIndex(p.mode, o, p.pad_begin[last], p.in_shape[last]);
    if (column[o] >= 0 && runBegin == width) runBegin = runEnd = o;
    if (runEnd == o && column[o] == column[runBegin] + (o - runBegin)) runEnd = o + 1;
  }
  int64_t index[kMaxRank] = {};
  for (int64_t row = 0; row < p.out_count / width; ++row) {
    int64_t source = 0;
    for (int d = 0; d < last && source >= 0; ++d) {
      const int64_t i = sourceIndex(p.mode, index[d], p.pad_begin[d], p.in_shape[d]);
      source = i < 0 ? -1 : source + i * inStrides[d];
    }
    uint8_t* dst = out + row * width * bytes;
    if (source < 0) {
      fillElements(dst, width, fill);
    } else {
      const uint8_t* src = in + source * bytes;
      for (int64_t o = 0; o < width; ++o) {
        if (o == runBegin) {
          std::memcpy(dst + o * bytes, src + column[o] * bytes,
                      static_cast<size_t>((runEnd - runBegin) * bytes));
          o = runEnd - 1;
        } else if (column[o] < 0) {
          std::memcpy(dst + o * bytes, fill.data(), fill.size());
        } else {
          std::memcpy(dst + o * bytes, src + column[o] * bytes, fill.size());
        }
      }
    }
    for (int d = last - 1; d >= 0; --d) {
      if (++index[d] < p.out_shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace cgc::rt
