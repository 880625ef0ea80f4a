// Kernels whose output size depends on their data: NonZero, Compress,
// Unique, TopK with a run-time k and NonMaxSuppression (and TopK with a
// constant k, which shares TopK's code).
//
// Each output is stored at a bound the compiler fixed (`bound` below: the
// largest size the inputs allow, or the user's --bound); the kernel writes
// the actual size of the data-dependent dimension to extents->dims[0],
// zeroes its outputs past it, and returns kSizeBeyondBound when the data
// would need more than the bound (it then keeps the first `bound` results
// and reports the bound as the extent), never writing past its buffers.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

/// NonZero: y is [rank, bound]; column j holds the coordinates of the j-th
/// nonzero element of x in row-major order. A scalar is rank 1 of one
/// element.
struct NonZeroParams {
  int32_t rank;
  int64_t count;  // x's elements
  PerDim<int64_t> shape;
  int64_t bound;
  CGC_REFLECT(NonZeroParams, rank, count, shape, bound)
};

template <typename T>
Status non_zero(const NonZeroParams& p, const T* x, int64_t* y, Extents* extents);

/// Compress: x as [outer, axis_dim, inner_bytes] (without an axis: [1,
/// elements, element bytes]); y is [outer, bound, inner_bytes] holding the
/// slices i < min(cond_len, axis_dim) whose condition[i] is true, in order.
struct CompressParams {
  int64_t outer, axis_dim, inner_bytes, cond_len, bound;
  CGC_REFLECT(CompressParams, outer, axis_dim, inner_bytes, cond_len, bound)
};

Status compress(const CompressParams& p, const void* x, const uint8_t* condition, void* y,
                Extents* extents);

/// Unique over the slices of x along an axis: x as [outer, axis_dim, inner]
/// (without an axis: [1, elements, 1]); slice s is every x[o, s, i], compared
/// lexicographically in (o, i) order. y is [outer, bound, inner], the
/// unique slices, sorted ascending or in the order of first occurrence;
/// indices [bound] their first occurrences, counts [bound] their
/// occurrences, inverse [axis_dim] each slice's place in y. A 1-D x of
/// data-dependent length gives it in x_extents (only its first
/// x_extents->dims[0] elements count); null otherwise.
struct UniqueParams {
  int64_t outer, axis_dim, inner, bound;
  bool sorted;
  CGC_REFLECT(UniqueParams, outer, axis_dim, inner, bound, sorted)
};

template <typename T>
Status unique(const UniqueParams& p, const T* x, const Extents* x_extents, T* y, int64_t* indices,
              int64_t* inverse, int64_t* counts, Extents* extents);

/// TopK with a k known at compile time: x as [outer, axis, inner]; values
/// and indices are [outer, k, inner], the k largest (or smallest) along the
/// axis in order, ties by the lower index (k <= axis, checked when
/// compiling).
struct TopKParams {
  int64_t outer, axis, inner, k;
  bool largest;
  CGC_REFLECT(TopKParams, outer, axis, inner, k, largest)
};

template <typename T>
void top_k(const TopKParams& p, const T* x, T* values, int64_t* indices);

/// TopK whose k is an input (k[0], read at run time): x as [outer, axis,
/// inner]; values and indices are [outer, bound, inner], the k largest (or
/// smallest) along the axis in order, ties by the lower index. A negative
/// k or one beyond the axis (ONNX: an error) fails with kValueOutOfRange, one
/// within the axis but beyond the bound (--bound) with kSizeBeyondBound.
struct TopKDynamicParams {
  int64_t outer, axis, inner, bound;
  bool largest;
  CGC_REFLECT(TopKDynamicParams, outer, axis, inner, bound, largest)
};

template <typename T>
Status top_k_dynamic(const TopKDynamicParams& p, const T* x, const int64_t* k, T* values,
                     int64_t* indices, Extents* extents);

/// NonMaxSuppression as ONNX defines it (and ONNX Runtime computes it):
/// boxes [batches, boxes, 4], scores [batches, classes, boxes]; per batch
/// and class, the boxes scoring above score_threshold in descending score
/// (ties by the lower index), each kept unless its IoU with one kept before
/// exceeds iou_threshold, at most max_output[0] of them. selected is
/// [bound, 3] rows (batch, class, box). The thresholds and the maximum are
/// tensors read at run time; an absent one is null (no maximum: none
/// selected, as ONNX's default of 0 says; no score threshold: every box).
/// Boxes of data-dependent number (boxes' dimension 1 and scores' dimension
/// 2) give it in boxes_extents; null otherwise.
struct NmsParams {
  int64_t batches, classes, boxes, bound;
  bool center_point_box;  // boxes as [x_center, y_center, width, height]
  CGC_REFLECT(NmsParams, batches, classes, boxes, bound, center_point_box)
};

Status non_max_suppression(const NmsParams& p, const float* boxes, const Extents* boxes_extents,
                           const float* scores, const int64_t* max_output,
                           const float* iou_threshold, const float* score_threshold,
                           int64_t* selected, Extents* extents);

}  // namespace cgc::rt
