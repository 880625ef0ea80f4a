// See kernel_table.h. The entries are built from kernels.def and from the
// signatures of the runtime functions it names (Signature below), and the
// constant folder's calls (evaluate) the same way, so a kernel added to the
// table needs nothing here.
#include "lowering/kernel_table.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include "ir/diagnostics.h"
#include "lowering/kernel_call.h"

namespace cgc::lowering {
namespace {

constexpr unsigned kInPlace = 1;

template <typename A>
constexpr ArgKind argKind() {
  if constexpr (std::is_same_v<A, const rt::Team&>)
    return ArgKind::kTeam;
  else if constexpr (std::is_same_v<A, rt::Extents*>)
    return ArgKind::kExtents;
  else if constexpr (std::is_same_v<A, const rt::Extents*>)
    return ArgKind::kInputExtents;
  else if constexpr (std::is_same_v<A, const void* const*>)
    return ArgKind::kInputList;
  else if constexpr (std::is_const_v<std::remove_pointer_t<A>>)
    return ArgKind::kInput;
  else
    return ArgKind::kOutput;
}

/// The element type an argument points to; kUndefined for void and teams.
template <typename A>
constexpr DType argType() {
  using E = std::remove_cv_t<std::remove_pointer_t<std::remove_cvref_t<A>>>;
  if constexpr (std::is_void_v<E> || std::is_pointer_v<E> || std::is_same_v<E, rt::Team> ||
                std::is_same_v<E, rt::Extents>)
    return DType::kUndefined;
  else
    return dtypeOf<E>();
}

template <typename F>
struct Signature;

/// A runtime kernel R fn(const P&, Args...): its argument kinds, and a call
/// on host buffers (inputs and outputs in KernelCall order).
template <typename R, typename P, typename... Args>
struct Signature<R (*)(const P&, Args...)> {
  using Params = P;
  static constexpr bool kFallible = std::is_same_v<R, rt::Status>;
  static_assert(kFallible || std::is_void_v<R>, "a kernel returns void or rt::Status");
  static constexpr std::array<ArgKind, sizeof...(Args)> kArgs = {argKind<Args>()...};

  static std::vector<ArgKind> args() { return {kArgs.begin(), kArgs.end()}; }
  static std::vector<DType> types() { return {argType<Args>()...}; }

  static rt::Status call(R (*fn)(const P&, Args...), const P& p, const std::vector<const void*>& in,
                         const std::vector<void*>& out, rt::Extents* extents) {
    return callWith(fn, p, in, out, extents, std::index_sequence_for<Args...>{});
  }

 private:
  /// Position of argument I among the arguments of its kind.
  template <size_t I>
  static constexpr size_t rankOf() {
    size_t before = 0;
    for (size_t j = 0; j < I; ++j) before += kArgs[j] == kArgs[I];
    return before;
  }

  template <size_t I>
  static std::tuple_element_t<I, std::tuple<Args...>> arg(const std::vector<const void*>& in,
                                                          const std::vector<void*>& out,
                                                          rt::Extents* extents) {
    using A = std::tuple_element_t<I, std::tuple<Args...>>;
    constexpr size_t n = rankOf<I>();
    if constexpr (kArgs[I] == ArgKind::kTeam)
      return rt::Team::serial();
    else if constexpr (kArgs[I] == ArgKind::kExtents)
      return extents;
    else if constexpr (kArgs[I] == ArgKind::kInputExtents)
      return static_cast<const rt::Extents*>(nullptr);  // folded inputs are constants
    else if constexpr (kArgs[I] == ArgKind::kInputList)
      return in.data();
    else if constexpr (kArgs[I] == ArgKind::kInput)
      return static_cast<A>(n < in.size() ? in[n] : nullptr);
    else
      return static_cast<A>(n < out.size() ? out[n] : nullptr);
  }

  template <size_t... I>
  static rt::Status callWith(R (*fn)(const P&, Args...), const P& p,
                             const std::vector<const void*>& in, const std::vector<void*>& out,
                             rt::Extents* extents, std::index_sequence<I...>) {
    if constexpr (kFallible)
      return fn(p, arg<I>(in, out, extents)...);
    else {
      fn(p, arg<I>(in, out, extents)...);
      return rt::Status::kOk;
    }
  }
};

template <auto Fn>
rt::Status invoke(const KernelParams& params, const std::vector<const void*>& in,
                  const std::vector<void*>& out, rt::Extents* extents) {
  using S = Signature<decltype(Fn)>;
  return S::call(Fn, std::get<typename S::Params>(params), in, out, extents);
}

/// Calls f(std::type_identity<T>{}) for the T of Ts whose DType is `dtype`.
template <typename... Ts, typename F>
rt::Status dispatchType(DType dtype, const char* kernel, F&& f) {
  rt::Status status = rt::Status::kOk;
  const bool found =
      ((dtype == dtypeOf<Ts>() ? (status = f(std::type_identity<Ts>{}), true) : false) || ...);
  CGC_ASSERT(found, "kernel {} has no {} instance", kernel, dtypeName(dtype));
  return status;
}

template <typename T, typename... Rest>
using First = T;

template <typename... Ts>
std::vector<DType> dtypesOf() {
  return {dtypeOf<Ts>()...};
}

/// f(type_identity<T>) for each T of the tuple, in order.
template <typename F, typename... Ts>
std::vector<std::vector<DType>> instanceTypes(F&& f, std::type_identity<std::tuple<Ts...>>) {
  return {f(std::type_identity<Ts>{})...};
}

/// The table's parameter struct is the one the function takes.
#define CGC_CHECK_PARAMS(ParamsType, ...)                                                 \
  static_assert(std::is_same_v<Signature<decltype(__VA_ARGS__)>::Params, rt::ParamsType>, \
                #__VA_ARGS__ " does not take " #ParamsType);

const std::vector<KernelInfo>& table() {
  static const std::vector<KernelInfo> entries = {
#define CGC_KERNEL(Name, function, Params, flags) \
  {#Name,                                         \
   #function,                                     \
   #Params,                                       \
   ((flags)&kInPlace) != 0,                       \
   false,                                         \
   {},                                            \
   Signature<decltype(&rt::function)>::args(),    \
   {Signature<decltype(&rt::function)>::types()}, \
   Signature<decltype(&rt::function)>::kFallible},
#define CGC_TYPED_KERNEL(Name, function, Params, flags, ...)       \
  {#Name,                                                          \
   #function,                                                      \
   #Params,                                                        \
   ((flags)&kInPlace) != 0,                                        \
   true,                                                           \
   dtypesOf<__VA_ARGS__>(),                                        \
   Signature<decltype(&rt::function<First<__VA_ARGS__>>)>::args(), \
   instanceTypes(                                                  \
       []<typename T>(std::type_identity<T>) {                     \
         return Signature<decltype(&rt::function<T>)>::types();    \
       },                                                          \
       std::type_identity<std::tuple<__VA_ARGS__>>{}),             \
   Signature<decltype(&rt::function<First<__VA_ARGS__>>)>::kFallible},
#include "lowering/kernels.def"
#undef CGC_KERNEL
#undef CGC_TYPED_KERNEL
  };
  return entries;
}

#define CGC_KERNEL(Name, function, Params, flags) CGC_CHECK_PARAMS(Params, &rt::function)
#define CGC_TYPED_KERNEL(Name, function, Params, flags, ...) \
  CGC_CHECK_PARAMS(Params, &rt::function<First<__VA_ARGS__>>)
#include "lowering/kernels.def"
#undef CGC_KERNEL
#undef CGC_TYPED_KERNEL

/// Points each pointer field of the parameters at its array in `arrays`.
void bindArrays(KernelParams& params, const std::map<std::string, std::vector<int64_t>>& arrays) {
  std::visit(
      [&](auto& p) {
        p.forEachField([&](const char* name, auto& field) {
          if constexpr (std::is_pointer_v<std::remove_reference_t<decltype(field)>>) {
            auto it = arrays.find(name);
            CGC_ASSERT(it != arrays.end(), "no array for parameter field {}", name);
            field = it->second.data();
          }
        });
      },
      params);
}

}  // namespace

const KernelInfo& kernelInfo(Kernel kernel) {
  CGC_ASSERT(!isStructural(kernel), "kernel {} is not in the table", static_cast<int>(kernel));
  return table().at(static_cast<size_t>(kernel) - static_cast<size_t>(Kernel::kScan) - 1);
}

bool kernelTakes(Kernel kernel, DType type) {
  const KernelInfo& info = kernelInfo(kernel);
  return !info.typed || std::find(info.types.begin(), info.types.end(), type) != info.types.end();
}

const std::vector<DType>& kernelArgTypes(Kernel kernel, DType type) {
  const KernelInfo& info = kernelInfo(kernel);
  if (!info.typed) return info.argTypes.front();
  auto it = std::find(info.types.begin(), info.types.end(), type);
  CGC_ASSERT(it != info.types.end(), "kernel {} has no {} instance", info.name, dtypeName(type));
  return info.argTypes[static_cast<size_t>(it - info.types.begin())];
}

std::string cppType(DType type) {
  switch (type) {
    case DType::kF32:
      return "float";
    case DType::kF64:
      return "double";
    case DType::kI64:
      return "int64_t";
    case DType::kI32:
      return "int32_t";
    case DType::kI16:
      return "int16_t";
    case DType::kI8:
      return "int8_t";
    case DType::kU8:
      return "uint8_t";
    case DType::kU16:
    case DType::kF16:
    case DType::kBF16:
      return "uint16_t";
    case DType::kU32:
      return "uint32_t";
    case DType::kU64:
      return "uint64_t";
    case DType::kBool:
      return "uint8_t";  // one byte, 0 or 1
    case DType::kUndefined:
      break;
  }
  CGC_ASSERT(false, "no C++ type for {}", dtypeName(type));
}

rt::Status evaluate(const KernelCall& call, const std::vector<const void*>& in,
                    const std::vector<void*>& out, int64_t* extents) {
  // A kernel of data-dependent size writes its extents even where the
  // caller does not want them.
  int64_t scratch[rt::kMaxRank];
  rt::Extents* const sizes = reinterpret_cast<rt::Extents*>(extents ? extents : scratch);
  KernelParams params = call.params;
  bindArrays(params, call.arrays);
  switch (call.kernel) {
    case Kernel::kView:
    case Kernel::kIf:
    case Kernel::kLoop:
    case Kernel::kScan:
      CGC_ASSERT(false, "structural kernels are not evaluated");
#define CGC_KERNEL(Name, function, Params, flags) \
  case Kernel::k##Name:                           \
    return invoke<&rt::function>(params, in, out, sizes);
#define CGC_TYPED_KERNEL(Name, function, Params, flags, ...)                                     \
  case Kernel::k##Name:                                                                          \
    return dispatchType<__VA_ARGS__>(call.dtype, #Name, [&]<typename T>(std::type_identity<T>) { \
      return invoke<&rt::function<T>>(params, in, out, sizes);                                   \
    });
#include "lowering/kernels.def"
#undef CGC_KERNEL
#undef CGC_TYPED_KERNEL
  }
  CGC_ASSERT(false, "unknown kernel {}", static_cast<int>(call.kernel));
}

std::string kernelFunction(const KernelCall& call) {
  if (isStructural(call.kernel)) return "";
  const KernelInfo& info = kernelInfo(call.kernel);
  return info.typed ? fmt::format("{}<{}>", info.function, cppType(call.dtype)) : info.function;
}

bool takesTeam(const KernelCall& call) {
  if (isStructural(call.kernel)) return call.kernel != Kernel::kView;
  const auto& args = kernelInfo(call.kernel).args;
  return !args.empty() && args.back() == ArgKind::kTeam;
}

bool mayRunInPlace(const KernelCall& call) {
  return !isStructural(call.kernel) && kernelInfo(call.kernel).inPlace;
}

}  // namespace cgc::lowering
