// What the per-family lowering files (lower_*.cpp) share: shape arithmetic,
// the Unsupported result, and the table of op lowerers they register into.
#pragma once

#include <fmt/format.h>

#include <array>
#include <map>
#include <string>
#include <vector>

#include "lowering/kernel_call.h"

namespace cgc::lowering {

using ir::Graph;
using ir::Node;
using ir::Shape;

using OpLowerer = Lowered (*)(const Graph&, const Node&);

/// Every op with a kernel, by ONNX (or cgc) op name; one register function
/// per family.
const std::map<std::string, OpLowerer>& opLowerers();
/// The ops of data-dependent output size (lower_dynamic.cpp).
void registerDynamicLowerers(std::map<std::string, OpLowerer>& table);
void registerElementwiseLowerers(std::map<std::string, OpLowerer>& table);
void registerNeuralNetLowerers(std::map<std::string, OpLowerer>& table);
void registerTensorLowerers(std::map<std::string, OpLowerer>& table);
void registerQuantizationLowerers(std::map<std::string, OpLowerer>& table);
void registerMathLowerers(std::map<std::string, OpLowerer>& table);
void registerIndexingLowerers(std::map<std::string, OpLowerer>& table);
void registerSignalLowerers(std::map<std::string, OpLowerer>& table);

template <typename... Args>
Unsupported unsupported(fmt::format_string<Args...> format, Args&&... args) {
  return {fmt::format(format, std::forward<Args>(args)...)};
}

inline const Shape& shapeOf(const Graph& g, int value) { return g.value(value).type.shape; }
inline DType elementType(const Graph& g, int value) { return g.value(value).type.dtype; }

/// Node `n`'s attribute "axis" (`fallback` where it has none) over a tensor
/// of rank `rank`, a negative one counted from the end (the importer
/// normalises ONNX's nodes; hand-built graphs may not).
inline size_t axisOf(const Node& n, size_t rank, int64_t fallback = 0) {
  const int64_t axis = n.getInt("axis", fallback);
  const int64_t r = static_cast<int64_t>(rank);
  CGC_ASSERT(axis >= -r && axis < r, "node '{}': axis {} out of range for rank {}", n.name, axis,
             rank);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

/// Bools are one byte: the uint8 kernels serve them.
inline DType kernelType(DType t) { return t == DType::kBool ? DType::kU8 : t; }

/// Dense row-major strides in elements.
std::vector<int64_t> denseStrides(const Shape& shape);

/// Product of shape[from, to).
int64_t product(const Shape& s, size_t from, size_t to);

/// Strides of `in` (right-aligned against `out`) with 0 on broadcast dims.
std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out);

/// "rank 9 exceeds the supported maximum of 8", or nothing.
std::optional<Unsupported> checkRank(size_t rank);
/// A binary node's output shape with each operand's broadcast strides, or
/// why not (lower_elementwise.cpp).
std::variant<rt::BroadcastParams, Unsupported> broadcastOf(const Graph& g, const Node& n);

/// `values` into a PerDim array (values.size() <= kMaxRank).
template <typename T, typename V>
rt::PerDim<T> perDim(const std::vector<V>& values) {
  rt::PerDim<T> out{};
  for (size_t d = 0; d < values.size() && d < out.size(); ++d) out[d] = static_cast<T>(values[d]);
  return out;
}

}  // namespace cgc::lowering
