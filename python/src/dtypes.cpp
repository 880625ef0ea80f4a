// See dtypes.h. One table, read both ways: numpy's kind and item size.
#include "dtypes.h"

#include <fmt/format.h>

#include <array>
#include <string>

#include "cgc/types.h"

namespace cgc::python {
namespace py = pybind11;
namespace {

struct Type {
  DType dtype;
  char kind;  // numpy's: 'f' float, 'i' signed, 'u' unsigned, 'b' bool
  int size;
};
constexpr std::array<Type, 12> kTypes = {{{DType::kF32, 'f', 4},
                                          {DType::kF64, 'f', 8},
                                          {DType::kF16, 'f', 2},
                                          {DType::kI8, 'i', 1},
                                          {DType::kI16, 'i', 2},
                                          {DType::kI32, 'i', 4},
                                          {DType::kI64, 'i', 8},
                                          {DType::kU8, 'u', 1},
                                          {DType::kU16, 'u', 2},
                                          {DType::kU32, 'u', 4},
                                          {DType::kU64, 'u', 8},
                                          {DType::kBool, 'b', 1}}};

}  // namespace

py::dtype numpyDtype(int32_t code) {
  for (const Type& type : kTypes)
    if (static_cast<int32_t>(type.dtype) == code)
      return py::dtype(type.kind == 'b' ? std::string("?")
                                        : fmt::format("{}{}", type.kind, type.size));
  throw py::value_error(
      fmt::format("ONNX element type {} has no numpy dtype (the Python API takes float16/32/64, "
                  "(u)int8/16/32/64 and bool)",
                  code));
}

int32_t onnxCode(const py::dtype& dtype) {
  for (const Type& type : kTypes)
    if (dtype.kind() == type.kind && dtype.itemsize() == type.size)
      return static_cast<int32_t>(type.dtype);
  throw py::value_error(fmt::format("numpy dtype {} has no ONNX element type in cgc",
                                    std::string(py::str(static_cast<const py::handle&>(dtype)))));
}

}  // namespace cgc::python
