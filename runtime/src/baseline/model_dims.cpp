// ModelRuntime's variable dimensions (cgc compile --dim; cgc/runtime.h):
// their values live in the instance's arena, where the generated code reads
// them to size each kernel call; every value is checked before a run uses it.
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
