// Printing a KernelCall's parameters as C++ literals (designated
// initializers), so that generated code shows every field by name.
#pragma once

#include <string>

#include "lowering/kernel_call.h"

namespace cgc::codegen {

/// "cgc::rt::ConvParams" for struct parameters, "" for kernels whose
/// parameters are passed as plain arguments.
std::string paramsType(const lowering::KernelCall& call);

/// "{.n = 1, .c_in = 3, ...}" for struct parameters.
std::string paramsInitializer(const lowering::KernelCall& call);

/// C++ element type for a dtype ("float", "int64_t", "bool", ...).
std::string cppType(DType type);

}  // namespace cgc::codegen
