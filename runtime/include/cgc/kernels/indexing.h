// Indexing kernels: GatherElements, ScatterElements (and the deprecated
// Scatter), GatherND, ScatterND, OneHot, Trilu, ReverseSequence and
// MaxUnpool. Indices come from the model's data, so every kernel that reads
// one checks it: an index outside its axis fails with kIndexOutOfRange (the
// node's output is then unspecified but nothing out of bounds is touched).
// Elements are moved as elem_bytes-byte words unless a reduction needs
// their type.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

/// GatherElements: y has the indices' shape; y[i...] = data[i...] with the
/// axis coordinate replaced by indices[i...] (negative counts from the end).
struct GatherElementsParams {
  int32_t rank;
  int32_t axis;
  int64_t elem_bytes;
  PerDim<int64_t> data_shape;
  PerDim<int64_t> index_shape;
  CGC_REFLECT(GatherElementsParams, rank, axis, elem_bytes, data_shape, index_shape)
};

template <typename Index>
Status gather_elements(const GatherElementsParams& p, const void* data, const Index* indices,
                       void* y);

/// How a scatter combines an update with the element it lands on.
CGC_ENUM(ScatterReduction, kNone, kAdd, kMul)

/// ScatterElements: y = data, then for every index position i...,
/// y[i... with the axis coordinate replaced by indices[i...]] (op)=
/// updates[i...]. Updates are applied in index order (later ones win for
/// kNone). Elements of `dtype`.
struct ScatterElementsParams {
  int32_t rank;
  int32_t axis;
  ScatterReduction reduction;
  DType dtype;
  PerDim<int64_t> data_shape;
  PerDim<int64_t> index_shape;
  CGC_REFLECT(ScatterElementsParams, rank, axis, reduction, dtype, data_shape, index_shape)
};

template <typename Index>
Status scatter_elements(const ScatterElementsParams& p, const void* data, const Index* indices,
                        const void* updates, void* y);

/// GatherND with batch_dims: data [batch..., index_dims (k)..., slice...],
/// indices [batch..., positions..., k]; each position picks one slice of
/// slice_bytes bytes within its batch.
struct GatherNDParams {
  int64_t batch;      // product of the batch dims
  int64_t positions;  // index tuples per batch
  int32_t k;          // the indices' last dimension
  int64_t slice_bytes;
  PerDim<int64_t> index_dims;  // data's dims [batch_dims, batch_dims + k)
  CGC_REFLECT(GatherNDParams, batch, positions, k, slice_bytes, index_dims)
};

Status gather_nd(const GatherNDParams& p, const void* data, const int64_t* indices, void* y);

/// ScatterND: y = data, then each of the `updates_count` index tuples (k
/// each) addresses one slice of `slice` elements that the update's slice is
/// (op)= into, in order.
struct ScatterNDParams {
  ScatterReduction reduction;
  DType dtype;
  int64_t data_count;
  int64_t updates_count;
  int32_t k;
  int64_t slice;
  PerDim<int64_t> index_dims;  // data's first k dims
  CGC_REFLECT(ScatterNDParams, reduction, dtype, data_count, updates_count, k, slice, index_dims)
};

Status scatter_nd(const ScatterNDParams& p, const void* data, const int64_t* indices,
                  const void* updates, void* y);

/// OneHot: y [outer, depth, inner] is values[0] (off) except where the
/// index (truncated toward zero; negative counts from the end) at [outer,
/// inner] names the depth position: values[1] (on). An index outside
/// [-depth, depth) leaves its column off, as ONNX says.
struct OneHotParams {
  int64_t outer, depth, inner, elem_bytes;
  CGC_REFLECT(OneHotParams, outer, depth, inner, elem_bytes)
};

template <typename Index>
void one_hot(const OneHotParams& p, const Index* indices, const void* values, void* y);

/// Trilu over `batch` rows x cols matrices: keeps the elements on and above
/// (upper) or on and below the k-th diagonal and zeroes the rest. k is read
/// from the tensor `k` (one int64) when given, else the parameter.
struct TriluParams {
  int64_t batch, rows, cols, elem_bytes, k;
  bool upper;
  CGC_REFLECT(TriluParams, batch, rows, cols, elem_bytes, k, upper)
};

void trilu(const TriluParams& p, const void* x, const int64_t* k, void* y);

/// ReverseSequence of x [time, batch, inner] (time_major) or [batch, time,
/// inner]: the first lens[b] steps of each batch entry reversed, the rest
/// copied. A length outside [0, time] fails with kIndexOutOfRange.
struct ReverseSequenceParams {
  int64_t time, batch, inner_bytes;
  bool time_major;
  CGC_REFLECT(ReverseSequenceParams, time, batch, inner_bytes, time_major)
};

Status reverse_sequence(const ReverseSequenceParams& p, const void* x, const int64_t* lens,
                        void* y);

/// MaxUnpool: y (out_count elements) is zero except at x's indices. An
/// index is flat over the [N, C, spatial...] shape that kernel_shape,
/// strides and pads give (`index_shape`, as MaxPool's Indices output); with
/// an explicit output_shape (`out_shape`, another size) the element keeps its
/// coordinates: y[coords of indices[i] in index_shape] = x[i].
struct MaxUnpoolParams {
  int64_t in_count, out_count, elem_bytes;
  int32_t rank = 0;  // 0: index_shape is the output's shape
  PerDim<int64_t> index_shape;
  PerDim<int64_t> out_shape;
  CGC_REFLECT(MaxUnpoolParams, in_count, out_count, elem_bytes, rank, index_shape, out_shape)
};

Status max_unpool(const MaxUnpoolParams& p, const void* x, const int64_t* indices, void* y);

}  // namespace cgc::rt
