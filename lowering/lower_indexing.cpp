// Lowering of the indexing ops of issue 19 (onnx_frontend/import_indexing.cpp)
// onto the kernels of cgc/kernels/indexing.h. The frontend has checked the
// shapes; the kernels check the indices.
#include "lowering/lower_support.h"

namespace cgc::lowering {
namespace {

rt::ScatterReduction reductionOf(const Node& n) {
  const std::string r = n.getString("reduction", "none");
  return r == "add"   ? rt::ScatterReduction::kAdd
         : r == "mul" ? rt::ScatterReduction::kMul
                      : rt::ScatterReduction::kNone;
}

Lowered lowerGatherElements(const Graph& g, const Node& n) {
  const Shape& data = shapeOf(g, n.inputs[0]);
  if (auto problem = checkRank(data.size())) return *problem;
  rt::GatherElementsParams p{};
  p.rank = static_cast<int32_t>(data.size());
  p.axis = static_cast<int32_t>(n.getInt("axis", 0));
  p.elem_bytes = dtypeSize(elementType(g, n.inputs[0]));
  p.data_shape = perDim<int64_t>(data);
  p.index_shape = perDim<int64_t>(shapeOf(g, n.inputs[1]));
  return KernelCall{Kernel::kGatherElements,
                    elementType(g, n.inputs[1]),
                    p,
                    {n.inputs[0], n.inputs[1]},
                    {n.outputs[0]}};
}

Lowered lowerScatterElements(const Graph& g, const Node& n) {
  const Shape& data = shapeOf(g, n.inputs[0]);
  if (auto problem = checkRank(data.size())) return *problem;
  rt::ScatterElementsParams p{};
  p.rank = static_cast<int32_t>(data.size());
  p.axis = static_cast<int32_t>(n.getInt("axis", 0));
  p.reduction = reductionOf(n);
  p.dtype = elementType(g, n.inputs[0]);
  p.data_shape = perDim<int64_t>(data);
  p.index_shape = perDim<int64_t>(shapeOf(g, n.inputs[1]));
  if (p.reduction != rt::ScatterReduction::kNone && p.dtype == DType::kBool)
    return unsupported("a reduction on bool elements is not supported");
  return KernelCall{Kernel::kScatterElements,
                    elementType(g, n.inputs[1]),
                    p,
                    {n.inputs[0], n.inputs[1], n.inputs[2]},
                    {n.outputs[0]}};
}

Lowered lowerGatherND(const Graph& g, const Node& n) {
  const Shape& data = shapeOf(g, n.inputs[0]);
  const Shape& indices = shapeOf(g, n.inputs[1]);
  const size_t b = static_cast<size_t>(n.getInt("batch_dims", 0));
  const size_t k = static_cast<size_t>(indices.back());
  if (auto problem = checkRank(k)) return *problem;
  rt::GatherNDParams p{};
  p.batch = product(data, 0, b);
  p.positions = product(indices, b, indices.size() - 1);
  p.k = static_cast<int32_t>(k);
  p.slice_bytes = product(data, b + k, data.size()) * dtypeSize(elementType(g, n.inputs[0]));
  p.index_dims = perDim<int64_t>(Shape(data.begin() + b, data.begin() + b + k));
  return KernelCall{Kernel::kGatherNd,
                    elementType(g, n.inputs[0]),
                    p,
                    {n.inputs[0], n.inputs[1]},
                    {n.outputs[0]}};
}

Lowered lowerScatterND(const Graph& g, const Node& n) {
  const Shape& data = shapeOf(g, n.inputs[0]);
  const Shape& indices = shapeOf(g, n.inputs[1]);
  const size_t k = static_cast<size_t>(indices.back());
  if (auto problem = checkRank(k)) return *problem;
  rt::ScatterNDParams p{};
  p.reduction = reductionOf(n);
  p.dtype = elementType(g, n.inputs[0]);
  p.data_count = ir::numElements(data);
  p.updates_count = product(indices, 0, indices.size() - 1);
  p.k = static_cast<int32_t>(k);
  p.slice = product(data, k, data.size());
  p.index_dims = perDim<int64_t>(Shape(data.begin(), data.begin() + k));
  if (p.reduction != rt::ScatterReduction::kNone && p.dtype == DType::kBool)
    return unsupported("a reduction on bool elements is not supported");
  return KernelCall{
      Kernel::kScatterNd, p.dtype, p, {n.inputs[0], n.inputs[1], n.inputs[2]}, {n.outputs[0]}};
}

Lowered lowerOneHot(const Graph& g, const Node& n) {
  const Shape& indices = shapeOf(g, n.inputs[0]);
  const size_t axis = axisOf(n, indices.size() + 1);
  rt::OneHotParams p{product(indices, 0, axis), n.getInt("depth", 1),
                     product(indices, axis, indices.size()),
                     dtypeSize(elementType(g, n.outputs[0]))};
  return KernelCall{
      Kernel::kOneHot, elementType(g, n.inputs[0]), p, {n.inputs[0], n.inputs[1]}, {n.outputs[0]}};
}

Lowered lowerTrilu(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  rt::TriluParams p{product(x, 0, x.size() - 2),
                    x[x.size() - 2],
                    x.back(),
                    dtypeSize(elementType(g, n.inputs[0])),
                    0,
                    n.getInt("upper", 1) != 0};
  const int k = n.inputs.size() > 1 ? n.inputs[1] : -1;
  return KernelCall{
      Kernel::kTrilu, elementType(g, n.outputs[0]), p, {n.inputs[0], k}, {n.outputs[0]}};
}

Lowered lowerReverseSequence(const Graph& g, const Node& n) {
  const Shape& x = shapeOf(g, n.inputs[0]);
  const bool timeMajor = n.getInt("time_axis", 0) == 0;
  rt::ReverseSequenceParams p{timeMajor ? x[0] : x[1], timeMajor ? x[1] : x[0],
                              product(x, 2, x.size()) * dtypeSize(elementType(g, n.inputs[0])),
                              timeMajor};
  return KernelCall{Kernel::kReverseSequence,
                    elementType(g, n.outputs[0]),
                    p,
                    {n.inputs[0], n.inputs[1]},
                    {n.outputs[0]}};
}

Lowered lowerMaxUnpool(const Graph& g, const Node& n) {
  const DType t = elementType(g, n.outputs[0]);
  rt::MaxUnpoolParams p{};
  p.in_count = g.value(n.inputs[0]).type.numElements();
  p.out_count = g.value(n.outputs[0]).type.numElements();
  p.elem_bytes = dtypeSize(t);
  const Shape& out = g.value(n.outputs[0]).type.shape;
  const Shape indexShape = n.getInts("index_shape", out);
  if (indexShape != out) {
    if (indexShape.size() != out.size() || out.size() > static_cast<size_t>(rt::kMaxRank))
      return unsupported("output_shape of another rank than the input");
    p.rank = static_cast<int32_t>(out.size());
    p.index_shape = perDim<int64_t>(indexShape);
    p.out_shape = perDim<int64_t>(out);
  }
  return KernelCall{Kernel::kMaxUnpool, t, p, {n.inputs[0], n.inputs[1]}, {n.outputs[0]}};
}

}  // namespace

void registerIndexingLowerers(std::map<std::string, OpLowerer>& table) {
  table["GatherElements"] = lowerGatherElements;
  table["ScatterElements"] = lowerScatterElements;
  table["GatherND"] = lowerGatherND;
  table["ScatterND"] = lowerScatterND;
  table["OneHot"] = lowerOneHot;
  table["Trilu"] = lowerTrilu;
  table["ReverseSequence"] = lowerReverseSequence;
  table["MaxUnpool"] = lowerMaxUnpool;
}

}  // namespace cgc::lowering
