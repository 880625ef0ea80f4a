// See params_printer.h. One generic printer walks any parameter struct's
// fields; the only per-type knowledge is how to spell a value (numbers,
// enums through enumName, arrays, nested structs). Each struct's field list
// is checked against the aggregate's real field count at compile time, so a
// field added to a kernel's parameters cannot be forgotten here.
#include "codegen/params_printer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <type_traits>

namespace cgc::codegen {
namespace {

/// Converts to anything: counts an aggregate's fields by trying to
/// initialise it from N of these.
struct AnyField {
  template <typename T>
  constexpr operator T() const;  // never defined: only used unevaluated
};

template <typename T, size_t... I>
constexpr bool initializableFrom(std::index_sequence<I...>) {
  return requires { T{(static_cast<void>(I), AnyField{})...}; };
}

template <typename T, size_t N = 0>
constexpr size_t aggregateFieldCount() {
  if constexpr (N > 64 || !initializableFrom<T>(std::make_index_sequence<N + 1>{}))
    return N;
  else
    return aggregateFieldCount<T, N + 1>();
}

template <typename T>
struct IsStdArray : std::false_type {};
template <typename T, size_t N>
struct IsStdArray<std::array<T, N>> : std::true_type {};

template <typename T>
constexpr bool kIsStruct = requires {
  T::kFieldCount;
};

template <typename... Ps>
constexpr bool allReflected(std::variant<Ps...>*) {
  return ((aggregateFieldCount<Ps>() == static_cast<size_t>(Ps::kFieldCount)) && ...);
}
static_assert(allReflected(static_cast<lowering::KernelParams*>(nullptr)),
              "a kernel parameter struct's CGC_REFLECT list misses a field");

/// Shortest text that reads back as the same value, with a decimal point.
template <typename T>
std::string floating(T v) {
  const char* type = std::is_same_v<T, float> ? "float" : "double";
  if (std::isnan(v)) return fmt::format("std::numeric_limits<{}>::quiet_NaN()", type);
  if (std::isinf(v))
    return fmt::format("{}std::numeric_limits<{}>::infinity()", v > 0 ? "" : "-", type);
  std::string text = fmt::format("{}", v);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return std::is_same_v<T, float> ? text + "f" : text;
}

template <typename T>
std::string value(const T& v);

/// Whether a field may be left out when it has its default value: any but
/// an enum that names a choice (an op, a mode), which is always printed;
/// an enum's kNone means nothing is chosen and may be left out.
template <typename F>
bool omissible(const F& field) {
  if constexpr (std::is_enum_v<F>)
    return std::string_view(enumName(field)) == "kNone";
  else
    return true;
}

/// "{.a = 1, .b = 2}": the fields that differ from a value-initialised T.
template <typename T>
std::vector<std::string> fields(const T& v) {
  std::vector<std::string> out;
  const T defaults{};
  std::vector<std::string> defaultTexts;
  defaults.forEachField(
      [&](const char*, const auto& field) { defaultTexts.push_back(value(field)); });
  size_t i = 0;
  v.forEachField([&](const char* name, const auto& field) {
    std::string text = value(field);
    if (text != defaultTexts[i++] || !omissible(field))
      out.push_back(fmt::format(".{} = {}", name, text));
  });
  return out;
}

template <typename T>
std::string value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_enum_v<T>) {
    return fmt::format(
        "{}{}::{}", std::is_same_v<T, DType> ? "cgc::" : "cgc::rt::", enumTypeName(v), enumName(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return floating(v);
  } else if constexpr (std::is_integral_v<T>) {
    return fmt::format("{}", v);
  } else if constexpr (std::is_pointer_v<T>) {
    return v ? "?" : "nullptr";  // named arrays: printed by the caller
  } else if constexpr (IsStdArray<T>::value) {
    // Trailing default elements are left to the array's zero-initialisation.
    std::vector<std::string> items;
    for (const auto& item : v) items.push_back(value(item));
    const std::string zero = value(typename T::value_type{});
    while (!items.empty() && items.back() == zero) items.pop_back();
    // std::array wraps a C array: elements that are braced structs need the
    // outer braces spelled out (brace elision only covers scalars).
    if constexpr (kIsStruct<typename T::value_type>)
      return fmt::format("{{{{{}}}}}", fmt::join(items, ", "));
    return fmt::format("{{{}}}", fmt::join(items, ", "));
  } else {
    static_assert(kIsStruct<T>, "a parameter field of a type the printer cannot spell");
    return fmt::format("{{{}}}", fmt::join(fields(v), ", "));
  }
}

/// The fields with pointer fields named after their arrays.
template <typename T>
std::vector<std::string> topFields(const T& v, const lowering::KernelCall& call) {
  std::vector<std::string> out = fields(v);
  v.forEachField([&](const char* name, const auto& field) {
    if constexpr (std::is_pointer_v<std::remove_cvref_t<decltype(field)>>) {
      CGC_ASSERT(call.arrays.count(name), "no array for parameter field {}", name);
      out.push_back(fmt::format(".{0} = {0}", name));
    }
  });
  return out;
}

/// Appends the scalars of `v` at `place` (a field or element path).
template <typename T>
void leaves(const T& v, const std::string& place, std::vector<ParamLeaf>& out) {
  if constexpr (IsStdArray<T>::value) {
    for (size_t i = 0; i < v.size(); ++i) leaves(v[i], fmt::format("{}[{}]", place, i), out);
  } else if constexpr (kIsStruct<T>) {
    v.forEachField(
        [&](const char* name, const auto& field) { leaves(field, place + "." + name, out); });
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    out.push_back({place, value(v), static_cast<int64_t>(v)});
  } else {
    out.push_back({place, value(v), std::nullopt});
  }
}

}  // namespace

std::string paramsType(const lowering::KernelCall& call) {
  return std::visit([](const auto& p) { return fmt::format("cgc::rt::{}", p.kTypeName); },
                    call.params);
}

std::string paramsInitializer(const lowering::KernelCall& call) {
  return std::visit(
      [&](const auto& p) { return fmt::format("{{{}}}", fmt::join(topFields(p, call), ", ")); },
      call.params);
}

std::vector<ParamLeaf> paramLeaves(const lowering::KernelCall& call) {
  std::vector<ParamLeaf> out;
  std::visit([&](const auto& p) { leaves(p, "params", out); }, call.params);
  for (const auto& [name, values] : call.arrays)
    for (size_t i = 0; i < values.size(); ++i)
      out.push_back({fmt::format("{}[{}]", name, i), std::to_string(values[i]), values[i]});
  return out;
}

std::string initializerOf(const rt::SliceParams& p) {
  return fmt::format("{{{}}}", fmt::join(fields(p), ", "));
}

std::string initializerOf(const rt::ExtentParams& p) {
  return fmt::format("{{{}}}", fmt::join(fields(p), ", "));
}

void emitParams(CodeWriter& w, const lowering::KernelCall& call,
                const std::vector<std::pair<std::string, std::string>>& assignments) {
  // Parameters that follow variable dimensions are locals, assigned after
  // their initializer (which holds the values at the bounds).
  const char* storage = assignments.empty() ? "static constexpr " : "";
  for (const auto& [name, values] : call.arrays) {
    const std::string element = name + "[";
    const bool assigned = std::any_of(assignments.begin(), assignments.end(),
                                      [&](const auto& a) { return a.first.starts_with(element); });
    w.line("{}int64_t {}[] = {{{}}};", assigned ? "" : "static constexpr ", name,
           fmt::join(values, ", "));
  }
  std::visit(
      [&](const auto& p) {
        // One top-level field per line with a trailing comma: readable, and
        // the layout clang-format keeps (bin-packing long initializers costs
        // it seconds on large models).
        w.open("{}{} params = {{", storage, paramsType(call));
        for (const std::string& field : topFields(p, call)) w.line("{},", field);
        w.close(";");
      },
      call.params);
  for (const auto& [place, value] : assignments) w.line("{} = {};", place, value);
}

}  // namespace cgc::codegen
