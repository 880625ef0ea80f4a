// ModelRuntime's variable dimensions (cgc compile --dim; cgc/runtime.h):
// their values live in the instance's arena, where the generated code reads
// them to size each kernel call; every value is checked before a run uses it.
#include <string>

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

Status ModelRuntime::checkDim(int index) const {
  const cgc_dim_info& d = info().dims[index];
  const int64_t value = dimValues()[index];
  if (value < d.min || value > d.max)
    return invalid(info(), "dimension '" + std::string(d.name) + "' is " + std::to_string(value) +
                               ", outside its bounds " + bounds(d));
  if (value % d.multiple != 0)
    return invalid(info(), "dimension '" + std::string(d.name) + "' is " + std::to_string(value) +
                               ", not a multiple of " + std::to_string(d.multiple) +
                               " (its bounds " + bounds(d) + ")");
  return {};
}

Status ModelRuntime::checkDims() const {
  if (!dimConflict_.empty()) return invalid(info(), dimConflict_);
  for (int j = 0; j < info().num_dims; ++j)
    if (Status status = checkDim(j); !status.ok()) return status;
  return {};
}

Status ModelRuntime::set_dim(const char* name, int64_t value) {
  for (int j = 0; name && j < info().num_dims; ++j)
    if (std::string(info().dims[j].name) == name) {
      dimValues()[j] = value;
      return checkDim(j);
    }
  return invalid(info(), "no variable dimension '" + std::string(name ? name : "") + "'");
}

Status ModelRuntime::set_input_shape(int index, const int64_t* dims, int rank) {
  const ModelInfo& model = info();
  if (index < 0 || index >= model.num_inputs)
    return invalid(model, "input index " + std::to_string(index) + " is out of range");
  const cgc_tensor_info& t = model.inputs[index];
  if (rank != t.rank || (rank > 0 && !dims))
    return invalid(model, "input '" + std::string(t.name) + "' has rank " + std::to_string(t.rank) +
                              ", not " + std::to_string(rank));
  Status result;
  for (int a = 0; a < rank; ++a) {
    const int j = t.dims ? t.dims[a] : -1;
    if (j < 0) {
      if (dims[a] != t.shape[a] && result.ok())
        result = invalid(model, "input '" + std::string(t.name) + "' axis " + std::to_string(a) +
                                    " is " + std::to_string(t.shape[a]) + ", not " +
                                    std::to_string(dims[a]));
      continue;
    }
    const int by = dimSetBy_[j];
    if (by >= 0 && by != index && dimValues()[j] != dims[a] && dimConflict_.empty())
      dimConflict_ = "input '" + std::string(t.name) + "' makes dimension '" + model.dims[j].name +
                     "' " + std::to_string(dims[a]) + ", but input '" + model.inputs[by].name +
                     "' makes it " + std::to_string(dimValues()[j]);
    dimValues()[j] = dims[a];
    dimSetBy_[j] = index;
    if (Status status = checkDim(j); result.ok() && !status.ok()) result = status;
  }
  if (result.ok() && !dimConflict_.empty()) return invalid(model, dimConflict_);
  return result;
}

int64_t ModelRuntime::input_bytes(int index) const {
  if (index < 0 || index >= info().num_inputs) return -1;
  const cgc_tensor_info& t = info().inputs[index];
  int64_t bound = 1, actual = 1;
  for (int a = 0; a < t.rank; ++a) {
    bound *= t.shape[a];
    actual *= t.dims && t.dims[a] >= 0 ? dimValues()[t.dims[a]] : t.shape[a];
  }
  return bound == 0 ? 0 : t.bytes / bound * actual;
}

}  // namespace cgc
