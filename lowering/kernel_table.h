// What the compiler knows about each runtime kernel, all derived from its
// one line in kernels.def and from the runtime function's signature: the
// Kernel enum, the parameter variant, the function's name, the element types
// a typed kernel is instantiated for, its argument list, whether it can run
// in place and whether it can fail. Lowering, the memory plan, the constant
// folder and codegen ask here; nothing else lists kernels.
#pragma once

#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "cgc/kernels.h"

namespace cgc::lowering {

/// A node that needs no code: its output aliases its input's storage.
struct ViewParams {
  CGC_REFLECT(ViewParams)
};

enum class Kernel {
  kView,
  // Control flow: no runtime function; codegen runs the node's compiled
  // subgraphs (codegen/emit_control.cpp).
  kIf,
  kLoop,
  kScan,
#define CGC_KERNEL(Name, function, Params, flags) k##Name,
#define CGC_TYPED_KERNEL(Name, function, Params, flags, ...) k##Name,
#include "lowering/kernels.def"
#undef CGC_KERNEL
#undef CGC_TYPED_KERNEL
};

namespace detail {
template <typename Variant, typename... Ts>
struct Dedupe {
  using type = Variant;
};
template <typename... Seen, typename T, typename... Rest>
struct Dedupe<std::variant<Seen...>, T, Rest...> {
  using type = typename std::conditional_t<(std::is_same_v<T, Seen> || ...),
                                           Dedupe<std::variant<Seen...>, Rest...>,
                                           Dedupe<std::variant<Seen..., T>, Rest...>>::type;
};
}  // namespace detail

/// One alternative per parameter struct of the table (each once).
using KernelParams = detail::Dedupe<std::variant<>, ViewParams
#define CGC_KERNEL(Name, function, Params, flags) , rt::Params
#define CGC_TYPED_KERNEL(Name, function, Params, flags, ...) , rt::Params
#include "lowering/kernels.def"
#undef CGC_KERNEL
#undef CGC_TYPED_KERNEL
                                    >::type;

/// How the kernel takes each argument after its parameter struct.
enum class ArgKind {
  kInput,         // const T*: the next of KernelCall::inputs (-1: nullptr)
  kOutput,        // T*: the next of KernelCall::outputs
  kInputList,     // const void* const*: every input, as an array
  kTeam,          // const rt::Team&: the kernel splits its work over a team
  kExtents,       // rt::Extents*: the size slots of the output's dynamic extents
  kInputExtents,  // const rt::Extents*: the first input's, or null when it is static
};

struct KernelInfo {
  const char* name;        // "Conv"
  const char* function;    // "conv", in cgc::rt
  const char* paramsType;  // "ConvParams", in cgc::rt
  bool inPlace;            // kernels.def's kInPlace
  bool typed;              // a template over `types`
  std::vector<DType> types;
  std::vector<ArgKind> args;
  /// Element type of each argument, per instance (typed kernels: in `types`
  /// order; untyped: one); kUndefined where the kernel takes void* (or the
  /// team).
  std::vector<std::vector<DType>> argTypes;
  bool fallible;  // returns rt::Status
};

/// Kernels that are not in the table: a view, control flow.
constexpr bool isStructural(Kernel kernel) {
  return kernel == Kernel::kView || kernel == Kernel::kIf || kernel == Kernel::kLoop ||
         kernel == Kernel::kScan;
}

/// The kernel's entry (not for structural kernels).
const KernelInfo& kernelInfo(Kernel kernel);

/// Whether the kernel is instantiated for `type` (untyped kernels take any).
bool kernelTakes(Kernel kernel, DType type);

/// Element types of the call's arguments (ArgKind order) for the instance
/// of `type` (ignored for untyped kernels).
const std::vector<DType>& kernelArgTypes(Kernel kernel, DType type);

/// C++ element type of a dtype ("float", "int64_t"; bool is "uint8_t");
/// InternalError for a type the runtime has no kernels for.
std::string cppType(DType type);

/// The element type of a C++ type (cppType's inverse).
template <typename T>
constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DType::kF32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::kF64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::kI32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::kI64;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::kI8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::kU8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::kI16;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DType::kU16;
  else
    static_assert(sizeof(T) == 0, "no DType for this type");
}

}  // namespace cgc::lowering
