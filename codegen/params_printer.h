// Printing a KernelCall's parameter struct as a C++ constant, from the
// struct's own CGC_REFLECT field list (cgc/reflect.h): designated
// initializers, one top-level field per line, and only the fields that
// differ from the struct's defaults (a 2-D convolution prints no depth
// fields, a rank-2 broadcast two strides per operand). Pointer fields refer
// to the call's named arrays, printed as constants before the struct.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/code_writer.h"
#include "lowering/kernel_call.h"

namespace cgc::codegen {

/// Qualified name of the call's parameter struct ("cgc::rt::ConvParams").
std::string paramsType(const lowering::KernelCall& call);

/// `static constexpr int64_t part_bytes[] = {...};` for each array, then
/// `static constexpr cgc::rt::ConvParams params = {.n = 1, ...};`.
/// With `assignments` (a ParamLeaf::place and its C++ value each), the
/// parameters are locals, each place assigned after the initializer.
void emitParams(CodeWriter& w, const lowering::KernelCall& call,
                const std::vector<std::pair<std::string, std::string>>& assignments = {});

/// The initializer alone ("{.n = 1, .c_in = 3}"), for tests and the IR
/// printer.
std::string paramsInitializer(const lowering::KernelCall& call);

/// One scalar of a call's parameters: where it is ("params.batch_shape[0]",
/// "part_bytes[1]"), its value as printed, and the number where it is an
/// integer (not a bool or an enum): what --dim's sizes may change.
struct ParamLeaf {
  std::string place;
  std::string text;
  std::optional<int64_t> integer;
};
std::vector<ParamLeaf> paramLeaves(const lowering::KernelCall& call);
/// The initializers of the runtime's helper structs that control-flow code
/// passes (codegen/emit_control.cpp).
std::string initializerOf(const rt::SliceParams& p);
std::string initializerOf(const rt::ExtentParams& p);

}  // namespace cgc::codegen
