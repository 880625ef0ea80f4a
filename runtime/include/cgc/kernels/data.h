// Data movement: strided copies (Transpose, Slice, Expand), Concat, Gather,
// Pad/Tile index maps and Resize.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

/// y[i...] = x[offset + sum_d i_d * in_strides[d]] for every index of `shape`.
/// Covers Transpose (permuted strides), Slice (offset, scaled or negative
/// strides) and broadcasting copies (zero strides). Strides and offset are in
/// elements of elem_bytes bytes (1, 2, 4 or 8).
struct StridedCopyParams {
  int32_t rank;
  int64_t elem_bytes;
  int64_t offset;
  PerDim<int64_t> shape;
  PerDim<int64_t> in_strides;
  CGC_REFLECT(StridedCopyParams, rank, elem_bytes, offset, shape, in_strides)
};

void strided_copy(const StridedCopyParams& p, const void* x, void* y,
                  const Team& team = Team::serial());

/// Concatenation along an axis, viewing each of the num_inputs inputs as
/// [outer, part_bytes[i]] and the output as [outer, sum(part_bytes)].
struct ConcatParams {
  int64_t outer;
  int32_t num_inputs;
  const int64_t* part_bytes;
  CGC_REFLECT(ConcatParams, outer, num_inputs, part_bytes)
};

void concat(const ConcatParams& p, const void* const* inputs, void* y);

/// The Concat of a key/value cache kept in place (cgc compile
/// --cache-in-place): the cache and the output share storage laid out as
/// [outer, block_bytes], each block holding room for the cache's capacity
/// along the axis; the earlier positions are already there, and the new
/// part ([outer, part_bytes]) is written at offset_bytes of each block.
/// `past` is the cache itself (its data is not read).
struct CacheAppendParams {
  int64_t outer;
  int64_t block_bytes;
  int64_t offset_bytes;
  int64_t part_bytes;
  CGC_REFLECT(CacheAppendParams, outer, block_bytes, offset_bytes, part_bytes)
};

void cache_append(const CacheAppendParams& p, const void* past, const void* part, void* y);

/// ONNX Gather: data viewed as [outer, axis_dim, inner_bytes]; each index
/// (negative counts from the end) picks one [inner_bytes] block. An index
/// outside [-axis_dim, axis_dim) fails with kIndexOutOfRange (its block is
/// zeros).
struct GatherParams {
  int64_t outer, axis_dim, inner_bytes, num_indices;
  CGC_REFLECT(GatherParams, outer, axis_dim, inner_bytes, num_indices)
};

template <typename Index>
Status gather(const GatherParams& p, const void* data, const Index* indices, void* y);

/// The sizes a Shape or Size node reads of a tensor whose extents follow
/// variable dimensions (cgc compile --dim): y[i] = values[i] for i < count,
/// values the generated code computes from the dimensions' values.
struct SizesParams {
  int32_t count;
  PerDim<int64_t> values;
  CGC_REFLECT(SizesParams, count, values)
};

void write_sizes(const SizesParams& p, int64_t* y);

/// ONNX Range whose start follows variable dimensions (a decoder's
/// positions from the length of its cache): y[i] = start + i * delta for
/// i < count.
struct RangeParams {
  int64_t count;
  CGC_REFLECT(RangeParams, count)
};

template <typename T>
void range(const RangeParams& p, const T* start, const T* delta, T* y);

/// Pad and Tile as index maps: output index o reads input index i_d per dim:
/// constant pad (out of range -> value), reflect, edge, or tile (o mod dim).
CGC_ENUM(IndexMapMode, kConstant, kReflect, kEdge, kTile)

struct IndexMapParams {
  IndexMapMode mode;
  int32_t rank;
  int64_t elem_bytes;
  int64_t out_count;
  PerDim<int64_t> in_shape;
  PerDim<int64_t> out_shape;
  PerDim<int64_t> pad_begin;
  double value;  // constant pad value, converted to the element type
  DType dtype;
  CGC_REFLECT(IndexMapParams, mode, rank, elem_bytes, out_count, in_shape, out_shape, pad_begin,
              value, dtype)
};

/// `value`: the constant pad value as a one-element tensor of x's type, read
/// at run time; null takes the parameter's `value`.
void index_map(const IndexMapParams& p, const void* x, const void* value, void* y);

CGC_ENUM(ResizeMode, kNearest, kLinear, kCubic)
CGC_ENUM(NearestMode, kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil)
CGC_ENUM(ResizeCoordinates, kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric,
         kTfHalfPixelForNn, kTfCropAndResize)

/// ONNX Resize (and Upsample) of a dense tensor, separably along every axis,
/// with the ONNX reference implementation's arithmetic: output coordinate x
/// maps to an input coordinate from `scales` (as given, not out / in), the
/// neighbours come from the edge-padded input, and the result is the
/// product-weighted sum over axes. roi (tf_crop_and_resize only) is per axis
/// in normalised coordinates; outside it the output is extrapolation_value.
struct ResizeParams {
  ResizeMode mode;
  NearestMode nearest_mode;
  ResizeCoordinates coordinates;
  int32_t rank;
  PerDim<int64_t> in_shape;
  PerDim<int64_t> out_shape;
  PerDim<double> scales;
  PerDim<float> roi_start;
  PerDim<float> roi_end;
  double cubic_coeff_a;
  bool exclude_outside;
  float extrapolation_value;
  CGC_REFLECT(ResizeParams, mode, nearest_mode, coordinates, rank, in_shape, out_shape, scales,
              roi_start, roi_end, cubic_coeff_a, exclude_outside, extrapolation_value)
};

void resize(const ResizeParams& p, const float* x, float* y);

// ------------------------------------------------- control flow, dynamic sizes

/// A tensor and an axis, for the slices a Loop's or Scan's body reads and
/// writes: slice i is the tensor without `axis`, at index i along it.
struct SliceParams {
  int32_t rank;
  int64_t elem_bytes;
  PerDim<int64_t> shape;  // the whole tensor's
  int32_t axis;
  CGC_REFLECT(SliceParams, rank, elem_bytes, shape, axis)
};

/// slice = full[..., index, ...] along p.axis.
void read_slice(const SliceParams& p, int64_t index, const void* full, void* slice);
/// full[..., index, ...] = slice along p.axis.
void write_slice(const SliceParams& p, int64_t index, const void* slice, void* full);

/// A tensor stored at its bound shape whose extent along some dimensions is
/// only known at run time: the actual extent of dimension d is
/// slots[slot[d]] where slot[d] >= 0, the bound elsewhere.
struct ExtentParams {
  int32_t rank;
  int64_t elem_bytes;
  PerDim<int64_t> bound;
  PerDim<int32_t> slot;  // -1: a static dimension
  CGC_REFLECT(ExtentParams, rank, elem_bytes, bound, slot)
};

/// Zeroes every element of `data` beyond the actual extents, so that what
/// lies past a data-dependent size is always zero.
void clear_tail(const ExtentParams& p, const int64_t* slots, void* data);

/// Moves the elements within the actual extents to the front of `data`,
/// densely at the actual shape (a --dim model's outputs are read so).
void compact_extents(const ExtentParams& p, const int64_t* slots, void* data);

}  // namespace cgc::rt
