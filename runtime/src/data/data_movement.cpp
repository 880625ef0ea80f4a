// Data movement: strided copies (Transpose, Slice, Expand), Concat, Gather,
// Cast and plain copies. Element-size generic: bytes are moved as uint8/16/
// 32/64 words.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cgc/float16.h"
#include "cgc/kernels.h"

namespace cgc::rt {
namespace {

/// Copies one output row: `outer` runs of `inner` words, run a starting at
/// src + a * outerStride, word i of it at + i * stride. Runs of two (the
/// interleave of decompose-conv-transpose's phases) get a loop of their own
/// that GCC vectorises.
template <typename W>
void copyRow(const W* src, W* dst, int64_t outer, int64_t outerStride, int64_t inner,
             int64_t stride) {
  if (inner == 2 && outerStride == 1) {
    const W* second = src + stride;
    for (int64_t a = 0; a < outer; ++a) {
      dst[2 * a] = src[a];
      dst[2 * a + 1] = second[a];
    }
    return;
  }
  for (int64_t a = 0; a < outer; ++a, src += outerStride, dst += inner) {
    if (stride == 1)
      std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(W));
    else
      for (int64_t i = 0; i < inner; ++i) dst[i] = src[i * stride];
  }
}

/// The team splits the output's rows in chunks of at least 16 KB; each
/// thread finds its first row's source offset from the row's multi-index.
/// A row is the last dimension, or the last two where the last is under 64
/// bytes (a row of a few words would cost its index update more than its
/// copy).
template <typename W>
void stridedCopyWords(const StridedCopyParams& p, const W* x, W* y, const Team& team) {
  const int rank = p.rank;
  if (rank == 0) {
    if (team.thread() == 0) y[0] = x[p.offset];
    return;
  }
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= p.shape[d];
  if (total == 0) return;
  const int64_t inner = p.shape[rank - 1], stride = p.in_strides[rank - 1];
  const bool pairs = rank >= 2 && inner * static_cast<int64_t>(sizeof(W)) < 64;
  const int rowDims = pairs ? 2 : 1;
  const int64_t outer = pairs ? p.shape[rank - 2] : 1;
  const int64_t outerStride = pairs ? p.in_strides[rank - 2] : 0;
  const int64_t row = inner * outer;
  const int64_t rowBytes = row * static_cast<int64_t>(sizeof(W));
  const Range rows = team.split(total / row, std::max<int64_t>(1, 16384 / rowBytes));
  if (rows.size() <= 0) return;
  int64_t index[kMaxRank] = {};
  int64_t offset = p.offset;
  for (int64_t d = rank - 1 - rowDims, rest = rows.begin; d >= 0; --d) {
    index[d] = rest % p.shape[d];
    rest /= p.shape[d];
    offset += index[d] * p.in_strides[d];
  }
  for (int64_t out = rows.begin * row; out < rows.end * row; out += row) {
    copyRow(x + offset, y + out, outer, outerStride, inner, stride);
    for (int d = rank - 1 - rowDims; d >= 0; --d) {
      offset += p.in_strides[d];
      if (++index[d] < p.shape[d]) break;
      offset -= p.in_strides[d] * p.shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace

template <typename Index>
Status gather(const GatherParams& p, const void* source, const Index* indices, void* target) {
  const auto* data = static_cast<const uint8_t*>(source);
  auto* y = static_cast<uint8_t*>(target);
  Status status = Status::kOk;
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t i = 0; i < p.num_indices; ++i) {
      int64_t index = static_cast<int64_t>(indices[i]);
      if (index < 0) index += p.axis_dim;
      uint8_t* dst = y + (o * p.num_indices + i) * p.inner_bytes;
      if (index < 0 || index >= p.axis_dim) {
        std::memset(dst, 0, static_cast<size_t>(p.inner_bytes));
        status = Status::kIndexOutOfRange;
        continue;
      }
      std::memcpy(dst, data + (o * p.axis_dim + index) * p.inner_bytes,
                  static_cast<size_t>(p.inner_bytes));
    }
  return status;
}

template Status gather(const GatherParams&, const void*, const int64_t*, void*);
template Status gather(const GatherParams&, const void*, const int32_t*, void*);

void write_sizes(const SizesParams& p, int64_t* y) {
  for (int32_t i = 0; i < p.count; ++i) y[i] = p.values[static_cast<size_t>(i)];
}

template <typename T>
void range(const RangeParams& p, const T* start, const T* delta, T* y) {
  for (int64_t i = 0; i < p.count; ++i)
    y[i] = static_cast<T>(start[0] + static_cast<T>(i) * delta[0]);
}

template void range(const RangeParams&, const int64_t*, const int64_t*, int64_t*);
template void range(const RangeParams&, const int32_t*, const int32_t*, int32_t*);
template void range(const RangeParams&, const float*, const float*, float*);
template void range(const RangeParams&, const double*, const double*, double*);

namespace {

template <typename From, typename To>
void convert(int64_t n, const From* x, To* y) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<To, bool>)
      y[i] = x[i] != From(0);
    else
      y[i] = static_cast<To>(x[i]);
  }
}

/// Calls f with a null pointer of the C++ type of `t`.
template <typename F>
void withType(DType t, F&& f) {
  switch (t) {
    case DType::kF32:
      f(static_cast<float*>(nullptr));
      break;
    case DType::kF64:
      f(static_cast<double*>(nullptr));
      break;
    case DType::kI64:
      f(static_cast<int64_t*>(nullptr));
      break;
    case DType::kI32:
      f(static_cast<int32_t*>(nullptr));
      break;
    case DType::kI16:
      f(static_cast<int16_t*>(nullptr));
      break;
    case DType::kI8:
      f(static_cast<int8_t*>(nullptr));
      break;
    case DType::kU8:
      f(static_cast<uint8_t*>(nullptr));
      break;
    case DType::kU16:
      f(static_cast<uint16_t*>(nullptr));
      break;
    case DType::kU32:
      f(static_cast<uint32_t*>(nullptr));
      break;
    case DType::kU64:
      f(static_cast<uint64_t*>(nullptr));
      break;
    case DType::kBool:
      f(static_cast<bool*>(nullptr));
      break;
    case DType::kF16:
    case DType::kBF16:
    case DType::kUndefined:
      break;
  }
}

}  // namespace

void strided_copy(const StridedCopyParams& p, const void* x, void* y, const Team& team) {
  switch (p.elem_bytes) {
    case 1:
      stridedCopyWords(p, static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), team);
      break;
    case 2:
      stridedCopyWords(p, static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), team);
      break;
    case 4:
      stridedCopyWords(p, static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y), team);
      break;
    case 8:
      stridedCopyWords(p, static_cast<const uint64_t*>(x), static_cast<uint64_t*>(y), team);
      break;
    default:
      break;
  }
}

void concat(const ConcatParams& p, const void* const* inputs, void* y) {
  const int64_t* part_bytes = p.part_bytes;
  const int64_t outer = p.outer;
  const int32_t num_inputs = p.num_inputs;
  int64_t row = 0;
  for (int32_t i = 0; i < num_inputs; ++i) row += part_bytes[i];
  auto* out = static_cast<uint8_t*>(y);
  int64_t column = 0;
  for (int32_t i = 0; i < num_inputs; ++i) {
    // Empty parts may come with a null pointer, which memcpy must not see.
    if (part_bytes[i] == 0) continue;
    const auto* in = static_cast<const uint8_t*>(inputs[i]);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + o * row + column, in + o * part_bytes[i],
                  static_cast<size_t>(part_bytes[i]));
    column += part_bytes[i];
  }
}

void cache_append(const CacheAppendParams& p, const void*, const void* part, void* y) {
  if (p.part_bytes == 0) return;
  auto* out = static_cast<uint8_t*>(y) + p.offset_bytes;
  const auto* in = static_cast<const uint8_t*>(part);
  for (int64_t o = 0; o < p.outer; ++o)
    std::memcpy(out + o * p.block_bytes, in + o * p.part_bytes, static_cast<size_t>(p.part_bytes));
}

namespace {

void convertElements(DType from, DType to, int64_t count, const void* x, void* y) {
  auto isHalf = [](DType t) { return t == DType::kF16 || t == DType::kBF16; };
  if (isHalf(from) || isHalf(to)) {
    std::vector<float> values(static_cast<size_t>(count));
    const auto* hx = static_cast<const uint16_t*>(x);
    if (from == DType::kF16)
      for (int64_t i = 0; i < count; ++i) values[i] = half_to_float(hx[i]);
    else if (from == DType::kBF16)
      for (int64_t i = 0; i < count; ++i) values[i] = bfloat16_to_float(hx[i]);
    else
      convertElements(from, DType::kF32, count, x, values.data());
    auto* hy = static_cast<uint16_t*>(y);
    if (to == DType::kF16)
      for (int64_t i = 0; i < count; ++i) hy[i] = float_to_half(values[i]);
    else if (to == DType::kBF16)
      for (int64_t i = 0; i < count; ++i) hy[i] = float_to_bfloat16(values[i]);
    else
      convertElements(DType::kF32, to, count, values.data(), y);
    return;
  }
  withType(from, [&](auto* fromTag) {
    using From = std::remove_pointer_t<decltype(fromTag)>;
    withType(to, [&](auto* toTag) {
      using To = std::remove_pointer_t<decltype(toTag)>;
      convert(count, static_cast<const From*>(x), static_cast<To*>(y));
    });
  });
}

}  // namespace

void cast(const CastParams& p, const void* x, void* y) {
  convertElements(p.from, p.to, p.count, x, y);
}

namespace {

/// Bytes of one slice of p.shape along p.axis in blocks: `outer` blocks of
/// `inner` bytes, the blocks `stride` bytes apart in the whole tensor.
struct SliceBlocks {
  int64_t outer = 1, inner, stride;
};

SliceBlocks sliceBlocks(const SliceParams& p) {
  SliceBlocks b;
  b.inner = p.elem_bytes;
  for (int d = 0; d < p.axis; ++d) b.outer *= p.shape[d];
  for (int d = p.axis + 1; d < p.rank; ++d) b.inner *= p.shape[d];
  b.stride = b.inner * p.shape[p.axis];
  return b;
}

}  // namespace

void read_slice(const SliceParams& p, int64_t index, const void* full, void* slice) {
  const SliceBlocks b = sliceBlocks(p);
  const auto* src = static_cast<const uint8_t*>(full) + index * b.inner;
  auto* dst = static_cast<uint8_t*>(slice);
  for (int64_t o = 0; o < b.outer; ++o)
    std::memcpy(dst + o * b.inner, src + o * b.stride, static_cast<size_t>(b.inner));
}

void write_slice(const SliceParams& p, int64_t index, const void* slice, void* full) {
  const SliceBlocks b = sliceBlocks(p);
  const auto* src = static_cast<const uint8_t*>(slice);
  auto* dst = static_cast<uint8_t*>(full) + index * b.inner;
  for (int64_t o = 0; o < b.outer; ++o)
    std::memcpy(dst + o * b.stride, src + o * b.inner, static_cast<size_t>(b.inner));
}

namespace {

/// The actual extent of each dimension of `p`.
void actualExtents(const ExtentParams& p, const int64_t* slots, int64_t* actual) {
  for (int d = 0; d < p.rank; ++d)
    actual[d] = p.slot[d] >= 0 ? std::clamp<int64_t>(slots[p.slot[d]], 0, p.bound[d]) : p.bound[d];
}

}  // namespace

void clear_tail(const ExtentParams& p, const int64_t* slots, void* data) {
  // Walk the bound shape row by row (the last dimension); a row whose index
  // is past an actual extent is zeroed whole, else only past the last
  // dimension's extent.
  if (p.rank == 0) return;
  int64_t actual[kMaxRank] = {};
  actualExtents(p, slots, actual);
  const int last = p.rank - 1;
  const int64_t rowBytes = p.bound[last] * p.elem_bytes;
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= p.bound[d];
  auto* bytes = static_cast<uint8_t*>(data);
  int64_t index[kMaxRank] = {};
  for (int64_t r = 0; r < rows; ++r) {
    bool outside = false;
    for (int d = 0; d < last; ++d) outside |= index[d] >= actual[d];
    const int64_t keep = outside ? 0 : actual[last] * p.elem_bytes;
    std::memset(bytes + r * rowBytes + keep, 0, static_cast<size_t>(rowBytes - keep));
    for (int d = last - 1; d >= 0; --d) {
      if (++index[d] < p.bound[d]) break;
      index[d] = 0;
    }
  }
}

void compact_extents(const ExtentParams& p, const int64_t* slots, void* data) {
  // Row by row of the actual shape: a row's dense place is never after its
  // bound place, so moving rows in order overwrites only rows already moved.
  if (p.rank == 0) return;
  int64_t actual[kMaxRank] = {};
  actualExtents(p, slots, actual);
  const int last = p.rank - 1;
  const int64_t rowBytes = actual[last] * p.elem_bytes;
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= actual[d];
  auto* bytes = static_cast<uint8_t*>(data);
  int64_t index[kMaxRank] = {};
  for (int64_t r = 0; r < rows && rowBytes > 0; ++r) {
    int64_t at = 0;
    for (int d = 0; d < last; ++d) at = at * p.bound[d] + index[d];
    std::memmove(bytes + r * rowBytes, bytes + at * p.bound[last] * p.elem_bytes,
                 static_cast<size_t>(rowBytes));
    for (int d = last - 1; d >= 0; --d) {
      if (++index[d] < actual[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace cgc::rt
