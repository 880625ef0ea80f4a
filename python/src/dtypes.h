// Element types between numpy and cgc: a model's C ABI names them by their
// ONNX TensorProto code (cgc::DType has the same values), numpy by dtype.
#pragma once

#include <pybind11/numpy.h>

#include <cstdint>

namespace cgc::python {

/// The numpy dtype of ONNX element type `code`; ValueError for one numpy has
/// no dtype for (bfloat16, strings).
pybind11::dtype numpyDtype(int32_t code);

/// The ONNX element type of numpy dtype `dtype`; ValueError when cgc has none.
int32_t onnxCode(const pybind11::dtype& dtype);

}  // namespace cgc::python
