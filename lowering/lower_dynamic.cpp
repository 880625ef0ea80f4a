// Lowering of the ops whose output size depends on their data (NonZero,
// Compress, Unique, TopK with a run-time k, NonMaxSuppression) onto the
// kernels of cgc/kernels/dynamic.h. The bound is the output's static shape
// along its dynamic dimension (the frontend fixed it); the kernel writes
// the actual extent to the output's size slot (ArgKind::kExtents).
#include "lowering/lower_support.h"

namespace cgc::lowering {
namespace {

/// The bound of the node's dynamic dimension, from its first output.
int64_t boundOf(const Graph& g, const Node& n) {
  const ir::Value& out = g.value(n.outputs[0]);
  CGC_ASSERT(out.dynamic.dims.size() == 1, "'{}' ({}) needs one dynamic dimension", n.name, n.op);
  return out.type.shape[out.dynamic.dims[0]];
}

Lowered lowerNonZero(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  if (auto problem = checkRank(x.size())) return *problem;
  rt::NonZeroParams p{};
  p.rank = static_cast<int32_t>(x.size());
  p.count = ir::numElements(x);
  p.shape = perDim<int64_t>(x);
  p.bound = boundOf(g, n);
  return KernelCall{
      Kernel::kNonZero, kernelType(elementType(g, n.inputs[0])), p, {n.inputs[0]}, {n.outputs[0]}};
}

Lowered lowerCompress(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const int64_t axis = n.getInt("axis", -1);  // -1: the flattened input
  const int64_t elem = dtypeSize(elementType(g, n.inputs[0]));
  rt::CompressParams p{};
  p.outer = axis < 0 ? 1 : product(x, 0, static_cast<size_t>(axis));
  p.axis_dim = axis < 0 ? ir::numElements(x) : x[static_cast<size_t>(axis)];
  p.inner_bytes = axis < 0 ? elem : product(x, static_cast<size_t>(axis) + 1, x.size()) * elem;
  p.cond_len = ir::numElements(shapeOf(g, n.inputs[1]));
  p.bound = boundOf(g, n);
  return KernelCall{Kernel::kCompress, elementType(g, n.inputs[0]), p, n.inputs, {n.outputs[0]}};
}

Lowered lowerUnique(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const int64_t axis = n.getInt("axis", -1);  // -1: the flattened input
  rt::UniqueParams p{};
  p.outer = axis < 0 ? 1 : product(x, 0, static_cast<size_t>(axis));
  p.axis_dim = axis < 0 ? ir::numElements(x) : x[static_cast<size_t>(axis)];
  p.inner = axis < 0 ? 1 : product(x, static_cast<size_t>(axis) + 1, x.size());
  p.bound = boundOf(g, n);
  p.sorted = n.getInt("sorted", 1) != 0;
  return KernelCall{
      Kernel::kUnique, kernelType(elementType(g, n.inputs[0])), p, {n.inputs[0]}, n.outputs};
}

/// TopK with k known only at run time (its second input).
Lowered lowerTopKDynamic(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const size_t axis = axisOf(n, x.size());
  rt::TopKDynamicParams p{};
  p.outer = product(x, 0, axis);
  p.axis = x[axis];
  p.inner = product(x, axis + 1, x.size());
  p.bound = boundOf(g, n);
  p.largest = n.getInt("largest", 1) != 0;
  return KernelCall{Kernel::kTopKDynamic, kernelType(elementType(g, n.inputs[0])), p, n.inputs,
                    n.outputs};
}

Lowered lowerTopK(const Graph& g, const Node& n) {
  if (n.inputs.size() == 2) return lowerTopKDynamic(g, n);
  const Shape& x = shapeOf(g, n.inputs[0]);
  const size_t axis = axisOf(n, x.size());
  rt::TopKParams p{};
  p.outer = product(x, 0, axis);
  p.axis = x[axis];
  p.inner = product(x, axis + 1, x.size());
  p.k = n.getInt("k", 0);
  p.largest = n.getInt("largest", 1) != 0;
  return KernelCall{
      Kernel::kTopK, kernelType(elementType(g, n.inputs[0])), p, {n.inputs[0]}, n.outputs};
}

Lowered lowerNonMaxSuppression(const Graph& g, const Node& n) {
  const Shape& boxes = shapeOf(g, n.inputs[0]);
  const Shape& scores = shapeOf(g, n.inputs[1]);
  rt::NmsParams p{};
  p.batches = boxes[0];
  p.boxes = boxes[1];
  p.classes = scores[1];
  p.bound = boundOf(g, n);
  p.center_point_box = n.getInt("center_point_box", 0) != 0;
  return KernelCall{Kernel::kNonMaxSuppression, DType::kF32, p, n.inputs, {n.outputs[0]}};
}

}  // namespace

void registerDynamicLowerers(std::map<std::string, OpLowerer>& table) {
  table["NonZero"] = lowerNonZero;
  table["Compress"] = lowerCompress;
  table["Unique"] = lowerUnique;
  table["TopK"] = lowerTopK;
  table["NonMaxSuppression"] = lowerNonMaxSuppression;
}

}  // namespace cgc::lowering
