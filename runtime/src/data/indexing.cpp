// Indexing kernels (cgc/kernels/indexing.h): GatherElements,
// ScatterElements, GatherND, ScatterND, OneHot, Trilu, ReverseSequence,
// and MaxUnpool. Every index read from the data is checked before it
// addresses memory; a bad one makes the kernel return kIndexOutOfRange and
// skip that element, so a model's data can never make it read or write out
// of bounds.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "cgc/kernels.h"
#include "core/type_dispatch.h"

namespace cgc::rt {
namespace {

/// Normalises an index against an axis of `dim`; false if out of range.
bool normalize(int64_t& index, int64_t dim) {
  if (index < 0) index += dim;
  return index >= 0 && index < dim;
}

/// Dense strides of the first `rank` dims of `shape`.
void denseStrides(const PerDim<int64_t>& shape, int rank, int64_t* strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= shape[d];
  }
}

/// y[at] (op)= u[from], elements of `dtype`.
void combine(ScatterReduction reduction, DType dtype, void* y, int64_t at, const void* u,
             int64_t from) {
  const int64_t bytes = dtypeSize(dtype);
  if (reduction == ScatterReduction::kNone) {
    std::memcpy(static_cast<uint8_t*>(y) + at * bytes,
                static_cast<const uint8_t*>(u) + from * bytes, static_cast<size_t>(bytes));
    return;
  }
  const bool add = reduction == ScatterReduction::kAdd;
  const bool native = detail::withNativeType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T& target = static_cast<T*>(y)[at];
    const T update = static_cast<const T*>(u)[from];
    if constexpr (std::is_integral_v<T>) {
      // Wraps instead of overflowing a signed type.
      using U = std::make_unsigned_t<std::common_type_t<T, int>>;
      target = static_cast<T>(add ? static_cast<U>(target) + static_cast<U>(update)
                                  : static_cast<U>(target) * static_cast<U>(update));
    } else {
      target = add ? target + update : target * update;
    }
  });
  if (!native) {
    const double a = detail::loadDouble(dtype, y, at), b = detail::loadDouble(dtype, u, from);
    detail::storeDouble(dtype, y, at, add ? a + b : a * b);
  }
}

/// f(position, data offset with the axis coordinate taken from the index)
/// for every index position of an elements op; false on a bad index.
template <typename Index, typename F>
Status forEachElementIndex(int rank, int axis, const PerDim<int64_t>& dataShape,
                           const PerDim<int64_t>& indexShape, const Index* indices, F f) {
  int64_t strides[kMaxRank];
  denseStrides(dataShape, rank, strides);
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) count *= indexShape[d];
  int64_t coord[kMaxRank] = {};
  Status status = Status::kOk;
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = static_cast<int64_t>(indices[i]);
    if (normalize(index, dataShape[axis])) {
      int64_t offset = 0;
      for (int d = 0; d < rank; ++d) offset += (d == axis ? index : coord[d]) * strides[d];
      f(i, offset);
    } else {
      status = Status::kIndexOutOfRange;
    }
    for (int d = rank - 1; d >= 0; --d) {
      if (++coord[d] < indexShape[d]) break;
      coord[d] = 0;
    }
  }
  return status;
}

}  // namespace

template <typename Index>
Status gather_elements(const GatherElementsParams& p, const void* data, const Index* indices,
                       void* y) {
  const auto* in = static_cast<const uint8_t*>(data);
  auto* out = static_cast<uint8_t*>(y);
  const size_t bytes = static_cast<size_t>(p.elem_bytes);
  int64_t count = 1;
  for (int d = 0; d < p.rank; ++d) count *= p.index_shape[d];
  if (count > 0) std::memset(out, 0, static_cast<size_t>(count) * bytes);
  return forEachElementIndex(
      p.rank, p.axis, p.data_shape, p.index_shape, indices, [&](int64_t i, int64_t offset) {
        std::memcpy(out + i * p.elem_bytes, in + offset * p.elem_bytes, bytes);
      });
}

template <typename Index>
Status scatter_elements(const ScatterElementsParams& p, const void* data, const Index* indices,
                        const void* updates, void* y) {
  int64_t count = 1;
  for (int d = 0; d < p.rank; ++d) count *= p.data_shape[d];
  if (count > 0 && y != data) std::memcpy(y, data, static_cast<size_t>(count * dtypeSize(p.dtype)));
  return forEachElementIndex(
      p.rank, p.axis, p.data_shape, p.index_shape, indices,
      [&](int64_t i, int64_t offset) { combine(p.reduction, p.dtype, y, offset, updates, i); });
}

Status gather_nd(const GatherNDParams& p, const void* data, const int64_t* indices, void* y) {
  int64_t strides[kMaxRank];
  denseStrides(p.index_dims, p.k, strides);
  int64_t slices = 1;
  for (int j = 0; j < p.k; ++j) slices *= p.index_dims[j];
  const auto* in = static_cast<const uint8_t*>(data);
  auto* out = static_cast<uint8_t*>(y);
  Status status = Status::kOk;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t q = 0; q < p.positions; ++q) {
      const int64_t position = b * p.positions + q;
      const int64_t* tuple = indices + position * p.k;
      int64_t slice = 0;
      bool valid = true;
      for (int j = 0; j < p.k && valid; ++j) {
        int64_t index = tuple[j];
        valid = normalize(index, p.index_dims[j]);
        slice += index * strides[j];
      }
      uint8_t* target = out + position * p.slice_bytes;
      if (!valid) {
        std::memset(target, 0, static_cast<size_t>(p.slice_bytes));
        status = Status::kIndexOutOfRange;
        continue;
      }
      std::memcpy(target, in + (b * slices + slice) * p.slice_bytes,
                  static_cast<size_t>(p.slice_bytes));
    }
  return status;
}

Status scatter_nd(const ScatterNDParams& p, const void* data, const int64_t* indices,
                  const void* updates, void* y) {
  if (p.data_count > 0 && y != data)
    std::memcpy(y, data, static_cast<size_t>(p.data_count * dtypeSize(p.dtype)));
  int64_t strides[kMaxRank];
  denseStrides(p.index_dims, p.k, strides);
  Status status = Status::kOk;
  for (int64_t u = 0; u < p.updates_count; ++u) {
    int64_t slice = 0;
    bool valid = true;
    for (int j = 0; j < p.k && valid; ++j) {
      int64_t index = indices[u * p.k + j];
      valid = normalize(index, p.index_dims[j]);
      slice += index * strides[j];
    }
    if (!valid) {
      status = Status::kIndexOutOfRange;
      continue;
    }
    for (int64_t e = 0; e < p.slice; ++e)
      combine(p.reduction, p.dtype, y, slice * p.slice + e, updates, u * p.slice + e);
  }
  return status;
}

template <typename Index>
void one_hot(const OneHotParams& p, const Index* indices, const void* values, void* y) {
  const auto* off = static_cast<const uint8_t*>(values);
  const uint8_t* on = off + p.elem_bytes;
  auto* out = static_cast<uint8_t*>(y);
  const size_t bytes = static_cast<size_t>(p.elem_bytes);
  for (int64_t i = 0; i < p.outer * p.depth * p.inner; ++i)
    std::memcpy(out + i * p.elem_bytes, off, bytes);
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t i = 0; i < p.inner; ++i) {
      const double raw = static_cast<double>(indices[o * p.inner + i]);
      // Out of range (or NaN): the column stays off, as ONNX says.
      if (!(raw > -static_cast<double>(p.depth) - 1 && raw < static_cast<double>(p.depth)))
        continue;
      int64_t index = static_cast<int64_t>(raw);
      if (!normalize(index, p.depth)) continue;
      std::memcpy(out + ((o * p.depth + index) * p.inner + i) * p.elem_bytes, on, bytes);
    }
}

void trilu(const TriluParams& p, const void* x, const int64_t* kTensor, void* y) {
  const int64_t k = kTensor ? *kTensor : p.k;
  const auto* in = static_cast<const uint8_t*>(x);
  auto* out = static_cast<uint8_t*>(y);
  const size_t bytes = static_cast<size_t>(p.elem_bytes);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t c = 0; c < p.cols; ++c) {
        const int64_t at = ((b * p.rows + r) * p.cols + c) * p.elem_bytes;
        const bool keep = p.upper ? c - r >= k : c - r <= k;
        if (keep)
          std::memcpy(out + at, in + at, bytes);
        else
          std::memset(out + at, 0, bytes);
      }
}

Status reverse_sequence(const ReverseSequenceParams& p, const void* x, const int64_t* lens,
                        void* y) {
  const auto* in = static_cast<const uint8_t*>(x);
  auto* out = static_cast<uint8_t*>(y);
  const size_t bytes = static_cast<size_t>(p.inner_bytes);
  auto offset = [&](int64_t t, int64_t b) {
    return (p.time_major ? t * p.batch + b : b * p.time + t) * p.inner_bytes;
  };
  Status status = Status::kOk;
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t len = lens[b];
    if (len < 0 || len > p.time) {
      status = Status::kIndexOutOfRange;
      len = 0;
    }
    for (int64_t t = 0; t < p.time; ++t)
      std::memcpy(out + offset(t, b), in + offset(t < len ? len - 1 - t : t, b), bytes);
  }
  return status;
}

Status max_unpool(const MaxUnpoolParams& p, const void* x, const int64_t* indices, void* y) {
  auto* out = static_cast<uint8_t*>(y);
  const auto* in = static_cast<const uint8_t*>(x);
  if (p.out_count > 0) std::memset(out, 0, static_cast<size_t>(p.out_count * p.elem_bytes));
  Status status = Status::kOk;
  int64_t indexCount = 1;
  for (int32_t d = 0; d < p.rank; ++d) indexCount *= p.index_shape[d];
  for (int64_t i = 0; i < p.in_count; ++i) {
    int64_t index = indices[i];
    if (p.rank > 0) {  // from index_shape's coordinates to out_shape's
      if (index < 0 || index >= indexCount) {
        status = Status::kIndexOutOfRange;
        continue;
      }
      int64_t rest = index, mapped = 0, stride = 1;
      bool inside = true;
      for (int32_t d = p.rank - 1; d >= 0; --d) {
        const int64_t coord = rest % p.index_shape[d];
        rest /= p.index_shape[d];
        inside = inside && coord < p.out_shape[d];
        mapped += coord * stride;
        stride *= p.out_shape[d];
      }
      index = inside ? mapped : -1;
    }
    if (index < 0 || index >= p.out_count) {
      status = Status::kIndexOutOfRange;
      continue;
    }
    std::memcpy(out + index * p.elem_bytes, in + i * p.elem_bytes,
                static_cast<size_t>(p.elem_bytes));
  }
  return status;
}

template Status gather_elements(const GatherElementsParams&, const void*, const int64_t*, void*);
template Status gather_elements(const GatherElementsParams&, const void*, const int32_t*, void*);
template Status scatter_elements(const ScatterElementsParams&, const void*, const int64_t*,
                                 const void*, void*);
template Status scatter_elements(const ScatterElementsParams&, const void*, const int32_t*,
                                 const void*, void*);
template void one_hot(const OneHotParams&, const int64_t*, const void*, void*);
template void one_hot(const OneHotParams&, const int32_t*, const void*, void*);
template void one_hot(const OneHotParams&, const float*, const void*, void*);
template void one_hot(const OneHotParams&, const double*, const void*, void*);

}  // namespace cgc::rt
