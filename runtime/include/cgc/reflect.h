// Field and enumerator names for the kernels' parameter structs, so that the
// compiler prints a parameter struct as C++ (codegen), and checks one, from
// its declaration alone: no hand-kept mirror of a struct's fields.
//
//   struct PoolParams {
//     int64_t n_c;
//     bool count_include_pad;
//     CGC_REFLECT(PoolParams, n_c, count_include_pad)
//   };
//   CGC_ENUM(UnaryOp, kRelu, kLeakyRelu /* alpha */, ...)
//
// CGC_REFLECT adds only static members and member functions, so the struct
// stays an aggregate (designated initializers, constexpr). The compiler
// checks that it names every field (codegen/params_printer.cpp counts the
// aggregate's fields). CGC_ENUM declares an `enum class : int32_t` and
// `enumName` / `enumTypeName` for it.
#pragma once

#include <cstdint>

// CGC_FOR_EACH(m, a, b, c) expands to m(a) m(b) m(c), for up to 256 names.
#define CGC_PARENS ()
#define CGC_EXPAND(...) CGC_EXPAND4(CGC_EXPAND4(CGC_EXPAND4(CGC_EXPAND4(__VA_ARGS__))))
#define CGC_EXPAND4(...) CGC_EXPAND3(CGC_EXPAND3(CGC_EXPAND3(CGC_EXPAND3(__VA_ARGS__))))
#define CGC_EXPAND3(...) CGC_EXPAND2(CGC_EXPAND2(CGC_EXPAND2(CGC_EXPAND2(__VA_ARGS__))))
#define CGC_EXPAND2(...) CGC_EXPAND1(CGC_EXPAND1(CGC_EXPAND1(CGC_EXPAND1(__VA_ARGS__))))
#define CGC_EXPAND1(...) __VA_ARGS__
#define CGC_FOR_EACH(macro, ...) __VA_OPT__(CGC_EXPAND(CGC_FOR_EACH_HELPER(macro, __VA_ARGS__)))
#define CGC_FOR_EACH_HELPER(macro, a1, ...) \
  macro(a1) __VA_OPT__(CGC_FOR_EACH_AGAIN CGC_PARENS(macro, __VA_ARGS__))
#define CGC_FOR_EACH_AGAIN() CGC_FOR_EACH_HELPER

#define CGC_REFLECT_VISIT(field) visit(#field, field);
#define CGC_REFLECT_COUNT(field) +1

/// Inside a parameter struct: its name, its field count and
/// `forEachField(visit)`, which calls visit("name", field) in declaration
/// order.
#define CGC_REFLECT(Type, ...)                                                       \
  static constexpr const char* kTypeName = #Type;                                    \
  static constexpr int kFieldCount = 0 CGC_FOR_EACH(CGC_REFLECT_COUNT, __VA_ARGS__); \
  template <typename Visit>                                                          \
  constexpr void forEachField([[maybe_unused]] Visit&& visit) const {                \
    CGC_FOR_EACH(CGC_REFLECT_VISIT, __VA_ARGS__)                                     \
  }                                                                                  \
  template <typename Visit>                                                          \
  constexpr void forEachField([[maybe_unused]] Visit&& visit) {                      \
    CGC_FOR_EACH(CGC_REFLECT_VISIT, __VA_ARGS__)                                     \
  }

#define CGC_ENUM_VALUE(name) name,
#define CGC_ENUM_CASE(name) \
  case EnumType::name:      \
    return #name;

/// An `enum class Type : int32_t` with enumName(value) ("kRelu") and
/// enumTypeName(value) ("UnaryOp").
#define CGC_ENUM(Type, ...)                                                \
  enum class Type : int32_t { CGC_FOR_EACH(CGC_ENUM_VALUE, __VA_ARGS__) }; \
  constexpr const char* enumTypeName(Type) { return #Type; }               \
  constexpr const char* enumName(Type value) {                             \
    using EnumType = Type;                                                 \
    switch (value) { CGC_FOR_EACH(CGC_ENUM_CASE, __VA_ARGS__) }            \
    return "";                                                             \
  }
