// ModelRuntime's variable dimensions (cgc compile --dim; cgc/runtime.h):
// their values live in the instance's arena, where the generated code reads
// them to size each kernel call; every value is checked before a run uses it.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "cgc/runtime.h"

namespace cgc {
namespace {

std::string bounds(const cgc_dim_info& d) {
  std::string text = std::to_string(d.min) + ".." + std::to_string(d.max);
  return d.multiple > 1 ? text + ":" + std::to_string(d.multiple) : text;
}

Status invalid(const ModelInfo& info, const std::string& message) {
  return Status(CGC_ERROR_INVALID_ARGUMENT, std::string(info.name) + ": " + message);
}

}  // namespace

int64_t* ModelRuntime::dimValues() const {
  return reinterpret_cast<int64_t*>(arena_ + spec_.dims_offset);
}

int64_t ModelRuntime::dim(int index) const {
  return index >= 0 && index < info().num_dims ? dimValues()[index] : -1;
}

std::string ModelRuntime::whyNotDim(int index, int64_t value) const {
  const cgc_dim_info& d = info().dims[index];
  if (value < d.min || value > d.max)
    return "dimension '" + std::string(d.name) + "' is " + std::to_string(value) +
           ", outside its bounds " + bounds(d);
  if (value % d.multiple != 0)
    return "dimension '" + std::string(d.name) + "' is " + std::to_string(value) +
           ", not a multiple of " + std::to_string(d.multiple) + " (its bounds " + bounds(d) + ")";
  return "";
}

Status ModelRuntime::checkDims() const {
  for (const std::string& error : inputErrors_)
    if (!error.empty()) return invalid(info(), error);
  for (int j = 0; j < info().num_dims; ++j)
    if (std::string why = whyNotDim(j, dimValues()[j]); !why.empty()) return invalid(info(), why);
  return {};
}

Status ModelRuntime::set_dim(const char* name, int64_t value) {
  for (int j = 0; name && j < info().num_dims; ++j)
    if (std::string(info().dims[j].name) == name) {
      dimValues()[j] = value;
      const std::string why = whyNotDim(j, value);
      return why.empty() ? Status() : invalid(info(), why);
    }
  return invalid(info(), "no variable dimension '" + std::string(name ? name : "") + "'");
}

/// Why input `index` cannot take `dims` now ("" when it can).
std::string ModelRuntime::whyNotShape(int index, const int64_t* dims, int rank) const {
  const ModelInfo& model = info();
  const cgc_tensor_info& t = model.inputs[index];
  if (rank != t.rank || (rank > 0 && !dims))
    return "input '" + std::string(t.name) + "' has rank " + std::to_string(t.rank) + ", not " +
           std::to_string(rank);
  for (int a = 0; a < rank; ++a) {
    const int j = t.dims ? t.dims[a] : -1;
    if (j < 0) {
      if (dims[a] != t.shape[a])
        return "input '" + std::string(t.name) + "' axis " + std::to_string(a) + " is " +
               std::to_string(t.shape[a]) + ", not " + std::to_string(dims[a]);
      continue;
    }
    if (std::string why = whyNotDim(j, dims[a]); !why.empty()) return why;
    const int by = dimSetBy_[j];
    if (by >= 0 && by != index && dimValues()[j] != dims[a])
      return "input '" + std::string(t.name) + "' makes dimension '" + model.dims[j].name + "' " +
             std::to_string(dims[a]) + ", but input '" + model.inputs[by].name + "' makes it " +
             std::to_string(dimValues()[j]);
  }
  return "";
}

Status ModelRuntime::set_input_shape(int index, const int64_t* dims, int rank) {
  if (index < 0 || index >= info().num_inputs)
    return invalid(info(), "input index " + std::to_string(index) + " is out of range");
  inputErrors_[index] = whyNotShape(index, dims, rank);
  if (!inputErrors_[index].empty()) return invalid(info(), inputErrors_[index]);
  const cgc_tensor_info& t = info().inputs[index];
  for (int a = 0; t.dims && a < rank; ++a)
    if (const int j = t.dims[a]; j >= 0) {
      dimValues()[j] = dims[a];
      dimSetBy_[j] = index;
    }
  return {};
}

std::vector<int64_t> ModelRuntime::input_shape(int index) const {
  if (index < 0 || index >= info().num_inputs) return {};
  const cgc_tensor_info& t = info().inputs[index];
  std::vector<int64_t> shape(t.shape, t.shape + t.rank);
  for (int a = 0; t.dims && a < t.rank; ++a)
    if (t.dims[a] >= 0) shape[a] = dimValues()[t.dims[a]];
  return shape;
}

}  // namespace cgc

namespace cgc {

const cgc_cache_pair* cache_pair_of(const ModelInfo& info, bool input, int index) {
  for (int i = 0; i < info.num_cache_pairs; ++i) {
    const cgc_cache_pair& pair = info.cache_pairs[i];
    if ((input ? pair.input : pair.output) == index) return &pair;
  }
  return nullptr;
}

void stored_strides(const ModelInfo& info, bool input, int index, const int64_t* shape,
                    int64_t* strides) {
  const cgc_tensor_info& t = (input ? info.inputs : info.outputs)[index];
  const cgc_cache_pair* pair = cache_pair_of(info, input, index);
  int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= pair && d == pair->axis ? pair->capacity : shape[d];
  }
}

void copy_stored(const ModelInfo& info, bool input, int index, const int64_t* shape,
                 const void* from, void* to, bool to_stored) {
  const cgc_tensor_info& t = (input ? info.inputs : info.outputs)[index];
  const cgc_cache_pair* pair = cache_pair_of(info, input, index);
  int64_t bound = 1;
  for (int d = 0; d < t.rank; ++d) bound *= t.shape[d];
  const int64_t elem = bound > 0 ? t.bytes / bound : 0;
  if (!pair || elem == 0) {
    std::memcpy(to, from, static_cast<size_t>(tensor_bytes(t, shape)));
    return;
  }
  // Blocks of the axes before the cache's: `run` dense bytes each, one
  // `capacity` positions apart in the arena.
  int64_t blocks = 1, run = elem, block = elem;
  for (int d = 0; d < t.rank; ++d) {
    if (d < pair->axis) blocks *= shape[d];
    if (d >= pair->axis) run *= shape[d];
    if (d > pair->axis) block *= shape[d];
  }
  block *= pair->capacity;
  const auto* src = static_cast<const uint8_t*>(from);
  auto* dst = static_cast<uint8_t*>(to);
  for (int64_t b = 0; b < blocks && run > 0; ++b)
    std::memcpy(dst + b * (to_stored ? block : run), src + b * (to_stored ? run : block),
                static_cast<size_t>(run));
}

namespace {

/// The bytes of one element of axis `axis` of a dense tensor of `shape`.
size_t innerBytes(const int64_t* shape, int axis, int rank, int64_t element_bytes) {
  int64_t bytes = element_bytes;
  for (int a = axis + 1; a < rank; ++a) bytes *= shape[a];
  return static_cast<size_t>(bytes);
}

/// copy_padded from axis `axis` on, `from` and `to` at that axis's first
/// element (nothing allocated: it runs in run()).
void copyAxis(const unsigned char* from, const int64_t* from_shape, unsigned char* to,
              const int64_t* to_shape, int axis, int rank, int64_t element_bytes) {
  const int64_t common = std::min(from_shape[axis], to_shape[axis]);
  const size_t fi = innerBytes(from_shape, axis, rank, element_bytes);
  const size_t ti = innerBytes(to_shape, axis, rank, element_bytes);
  if (fi == ti) {  // every later axis alike: one block
    std::memcpy(to, from, static_cast<size_t>(common) * fi);
  } else {
    for (int64_t i = 0; i < common; ++i)
      copyAxis(from + static_cast<size_t>(i) * fi, from_shape, to + static_cast<size_t>(i) * ti,
               to_shape, axis + 1, rank, element_bytes);
  }
  if (to_shape[axis] > common)
    std::memset(to + static_cast<size_t>(common) * ti, 0,
                static_cast<size_t>(to_shape[axis] - common) * ti);
}

}  // namespace

void copy_padded(const void* from, const int64_t* from_shape, void* to, const int64_t* to_shape,
                 int rank, int64_t element_bytes) {
  copyAxis(static_cast<const unsigned char*>(from), from_shape, static_cast<unsigned char*>(to),
           to_shape, 0, rank, element_bytes);
}

}  // namespace cgc
