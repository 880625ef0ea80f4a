// Element types shared by the compiler and the generated code. The numbers are
// ONNX's TensorProto.DataType values, so a model's type codes pass through.
#pragma once

#include <cstdint>

namespace cgc {

enum class DType : int32_t {
  kUndefined = 0,
  kF32 = 1,
  kU8 = 2,
  kI8 = 3,
  kU16 = 4,
  kI16 = 5,
  kI32 = 6,
  kI64 = 7,
  kBool = 9,
  kF16 = 10,
  kF64 = 11,
  kU32 = 12,
  kU64 = 13,
  kBF16 = 16,
};

/// Size of one element in bytes; 0 for kUndefined.
constexpr int64_t dtypeSize(DType t) {
  switch (t) {
    case DType::kU8:
    case DType::kI8:
    case DType::kBool:
      return 1;
    case DType::kU16:
    case DType::kI16:
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kF32:
    case DType::kI32:
    case DType::kU32:
      return 4;
    case DType::kI64:
    case DType::kF64:
    case DType::kU64:
      return 8;
    case DType::kUndefined:
      break;
  }
  return 0;
}

/// The enumerator's name ("kF32"), so that the compiler prints a DType
/// field of a kernel's parameters as C++ (as CGC_ENUM's enumName does for the
/// kernels' own enums).
constexpr const char* enumName(DType t) {
  switch (t) {
    case DType::kUndefined:
      return "kUndefined";
    case DType::kF32:
      return "kF32";
    case DType::kU8:
      return "kU8";
    case DType::kI8:
      return "kI8";
    case DType::kU16:
      return "kU16";
    case DType::kI16:
      return "kI16";
    case DType::kI32:
      return "kI32";
    case DType::kI64:
      return "kI64";
    case DType::kBool:
      return "kBool";
    case DType::kF16:
      return "kF16";
    case DType::kF64:
      return "kF64";
    case DType::kU32:
      return "kU32";
    case DType::kU64:
      return "kU64";
    case DType::kBF16:
      return "kBF16";
  }
  return "";
}
constexpr const char* enumTypeName(DType) { return "DType"; }

/// Short lower-case name ("float32", "int64", ...).
constexpr const char* dtypeName(DType t) {
  switch (t) {
    case DType::kF32:
      return "float32";
    case DType::kU8:
      return "uint8";
    case DType::kI8:
      return "int8";
    case DType::kU16:
      return "uint16";
    case DType::kI16:
      return "int16";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kBool:
      return "bool";
    case DType::kF16:
      return "float16";
    case DType::kF64:
      return "float64";
    case DType::kU32:
      return "uint32";
    case DType::kU64:
      return "uint64";
    case DType::kBF16:
      return "bfloat16";
    case DType::kUndefined:
      break;
  }
  return "undefined";
}

}  // namespace cgc
