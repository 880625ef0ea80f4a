// Data-dependent sizes through the ops that read them (see
// ir::DynamicExtent). A value of data-dependent size is stored at its bound
// with zeros past its actual extent (codegen zeroes the tails after every
// node that writes one). An op may read such a value where computing on the
// whole bound gives the right values inside the actual extent; its output
// takes the same size slot, the dynamic dimension moved to where the op
// puts it. Why each reader is exact:
//   - elementwise ops, Cast, Clip, Where (an operand broadcasting along the
//     dynamic dimension): each output element reads the same element of
//     each input;
//   - Transpose, and Reshape/Squeeze/Unsqueeze/Flatten that keep the
//     dynamic dimension a dimension of its own (the dimensions before it
//     hold as many elements as before, and so do those after it): elements
//     keep their coordinates along it;
//   - Slice and Split that do not cut the dynamic dimension, Gather of
//     dynamic data along another axis, Concat along another axis of inputs
//     of the same extent: the dynamic dimension is carried along whole;
//   - Gather of dynamic indices, GatherElements and GatherND of dynamic
//     indices (along their batch dimensions): an output element reads the
//     element its own index names, and the zeros in the tails are valid
//     indices;
//   - MatMul/Gemm whose left operand's rows are dynamic, Softmax, LogSoftmax,
//     reductions, ArgMax/ArgMin and TopK along another axis: each output
//     element is computed from one row or column that lies within, or
//     wholly outside, the extent;
//   - CumSum along any axis: the tails add zeros.
// Any other reader is a clear error (a reduction along the dynamic axis or
// Softmax along it would count the padding; Shape and Size would report the
// bound), and so is an op that reads two different run-time extents.
#include "onnx_frontend/dynamic_extents.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace cgc::frontend {
namespace {

using Extent = std::optional<ir::DynamicExtent>;

const std::set<std::string>& sameShapeOps() {
  static const std::set<std::string> ops = {
      "Relu", "LeakyRelu", "Sigmoid",    "Tanh",  "HardSigmoid", "Sqrt",     "Exp", "Log",
      "Neg",  "Abs",       "Reciprocal", "Floor", "Ceil",        "Identity", "Erf", "Softplus",
      "Elu",  "Softsign",  "Not",        "Cast",  "Clip",        "Sin",      "Cos", "Tan",
      "Sign", "Round",     "IsNaN",      "IsInf", "CumSum"};
  return ops;
}

const std::set<std::string>& binaryOps() {
  static const std::set<std::string> ops = {
      "Add",         "Sub",   "Mul", "Div",   "Pow",     "Min",  "Max",
      "And",         "Or",    "Xor", "Equal", "Greater", "Less", "GreaterOrEqual",
      "LessOrEqual", "Where", "Mod"};
  return ops;
}

/// The output's extent from one input's, dimensions right-aligned (numpy
/// broadcasting), or nothing when another input does not broadcast along a
/// dynamic dimension.
Extent broadcastExtent(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& out = g.value(n.outputs[0]).type.shape;
  Extent extent;
  for (int in : n.inputs) {
    if (in < 0) continue;
    const ir::Value& v = g.value(in);
    const size_t shift = out.size() - v.type.shape.size();
    ir::DynamicExtent mine{{}, v.dynamic.sizeSlot};
    for (int d : v.dynamic.dims) mine.dims.push_back(d + static_cast<int>(shift));
    if (v.dynamic.empty()) continue;
    if (extent && !(*extent == mine)) return std::nullopt;
    extent = mine;
  }
  // Every static operand must broadcast (extent 1 or absent) along them.
  for (int in : n.inputs) {
    if (in < 0 || !g.value(in).dynamic.empty()) continue;
    const ir::Shape& shape = g.value(in).type.shape;
    const size_t shift = out.size() - shape.size();
    for (int d : extent->dims)
      if (d >= static_cast<int>(shift) && shape[d - shift] != 1) return std::nullopt;
  }
  return extent;
}

/// The only input of run-time size, or null when there are several.
const ir::Value* soleDynamicInput(const ir::Graph& g, const ir::Node& n) {
  const ir::Value* found = nullptr;
  for (int in : n.inputs)
    if (in >= 0 && !g.value(in).dynamic.empty()) {
      if (found && found->id != in) return nullptr;
      found = &g.value(in);
    }
  return found;
}

/// `from` with its one dynamic dimension moved to `dim` (nothing when
/// `dim` is negative or the value has several).
Extent moved(const ir::DynamicExtent& from, int dim) {
  if (from.dims.size() != 1 || dim < 0) return std::nullopt;
  return ir::DynamicExtent{{dim}, from.sizeSlot};
}

/// Reshape: where the dynamic dimension d of [A..., B, C...] lands in an
/// output [A'..., B, C'...] with prod(A) = prod(A'), or -1.
int reshapedDim(const ir::Shape& in, const ir::Shape& out, int d) {
  const int64_t before = ir::numElements(ir::Shape(in.begin(), in.begin() + d));
  if (in[d] == 0 || ir::numElements(in) == 0) return in == out ? d : -1;
  int64_t prefix = 1;
  for (size_t e = 0; e < out.size(); ++e) {
    if (prefix == before && out[e] == in[d]) return static_cast<int>(e);
    prefix *= out[e];
    if (prefix > before) return -1;
  }
  return -1;
}

/// Where dimension d of the input lands in the output of a reduction over
/// `axes` (kept as 1 or dropped), or -1 when d is reduced.
int reducedDim(const std::vector<int64_t>& axes, bool keepDims, int d) {
  if (std::find(axes.begin(), axes.end(), d) != axes.end()) return -1;
  if (keepDims) return d;
  return d - static_cast<int>(
                 std::count_if(axes.begin(), axes.end(), [&](int64_t a) { return a < d; }));
}

/// Readers that move or keep one dynamic dimension of one input.
Extent movingExtent(const ir::Graph& g, const ir::Node& n) {
  const ir::Value* in = soleDynamicInput(g, n);
  if (!in || in->dynamic.dims.size() != 1) return std::nullopt;
  const int d = in->dynamic.dims[0];
  const bool first = in->id == n.inputs[0];
  const ir::Shape& x = in->type.shape;
  const ir::Shape& out = g.value(n.outputs[0]).type.shape;
  const bool keepDims = out.size() == x.size();
  if (n.op == "Reshape" && first) return moved(in->dynamic, reshapedDim(x, out, d));
  if (n.op == "Slice" && first) {
    const bool whole =
        n.getInts("starts").at(d) == 0 && n.getInts("steps").at(d) == 1 && out[d] == x[d];
    return whole ? in->dynamic : Extent();
  }
  if (n.op == "Gather" && first) {
    const int axis = static_cast<int>(n.getInt("axis", 0));
    const int indexRank = g.value(n.inputs[1]).type.rank();
    return d == axis ? Extent() : moved(in->dynamic, d < axis ? d : d - 1 + indexRank);
  }
  if ((n.op == "GatherElements" && !first) || (n.op == "GatherND" && !first)) {
    const bool batch =
        n.op == "GatherND" && (d < n.getInt("batch_dims", 0) || d + 1 == in->type.rank());
    return batch ? Extent() : in->dynamic;
  }
  if ((n.op == "MatMul" || (n.op == "Gemm" && n.getInt("transA", 0) == 0)) && first) {
    // Gemm's C must broadcast along the rows.
    const bool rowBias = n.op == "Gemm" && n.inputs.size() > 2 && n.inputs[2] >= 0 &&
                         g.value(n.inputs[2]).type.rank() == 2 &&
                         g.value(n.inputs[2]).type.shape[0] != 1;
    const bool rowsOnly = x.size() >= 2 && d < static_cast<int>(x.size()) - 1 &&
                          g.value(n.inputs[1]).type.rank() == 2 && !rowBias;
    return rowsOnly ? in->dynamic : Extent();
  }
  if ((n.op == "Softmax" || n.op == "LogSoftmax") && first) {
    const int axis = static_cast<int>(n.getInt("axis", -1));
    const bool outside = n.getInt("legacy", 0) ? d < axis : d != axis;
    return outside ? in->dynamic : Extent();
  }
  if (n.op.rfind("Reduce", 0) == 0 && first)
    return moved(in->dynamic, reducedDim(n.getInts("axes"), keepDims, d));
  if ((n.op == "ArgMax" || n.op == "ArgMin" || n.op == "TopK") && first)
    return moved(in->dynamic, reducedDim({n.getInt("axis", 0)}, keepDims, d));
  return std::nullopt;
}

/// Concat along another axis of inputs that all have the same extent.
Extent concatExtent(const ir::Graph& g, const ir::Node& n) {
  const ir::DynamicExtent& first = g.value(n.inputs[0]).dynamic;
  const int axis = static_cast<int>(n.getInt("axis", 0));
  for (int in : n.inputs)
    if (!(g.value(in).dynamic == first)) return std::nullopt;
  if (std::find(first.dims.begin(), first.dims.end(), axis) != first.dims.end())
    return std::nullopt;
  return first;
}

Extent outputExtent(const ir::Graph& g, const ir::Node& n) {
  const ir::Value& first = g.value(n.inputs[0]);
  if (sameShapeOps().count(n.op))
    return soleDynamicInput(g, n) == &first ? first.dynamic : Extent();
  if (binaryOps().count(n.op)) return broadcastExtent(g, n);
  if (n.op == "Transpose") {
    const auto perm = n.getInts("perm");
    ir::DynamicExtent extent{{}, first.dynamic.sizeSlot};
    for (int d : first.dynamic.dims)
      extent.dims.push_back(
          static_cast<int>(std::find(perm.begin(), perm.end(), d) - perm.begin()));
    if (extent.dims.size() > 1 && extent.dims[0] > extent.dims[1]) return std::nullopt;
    return extent;
  }
  if (n.op == "Gather" && first.dynamic.empty()) {
    const int axis = static_cast<int>(n.getInt("axis", 0));
    ir::DynamicExtent extent = g.value(n.inputs[1]).dynamic;
    for (int& d : extent.dims) d += axis;
    return extent;
  }
  if (n.op == "Concat") return concatExtent(g, n);
  return movingExtent(g, n);
}

/// A dynamic value the ONNX node read at compile time (Shape, Size: no new
/// node reads it and no output is it).
void checkConsumed(const ir::Graph& g, int firstNewNode, const std::vector<int>& onnxInputs,
                   const std::vector<int>& results, const std::string& op,
                   const DiagLocation& where) {
  for (int in : onnxInputs) {
    if (in < 0 || g.value(in).dynamic.empty()) continue;
    bool read = std::find(results.begin(), results.end(), in) != results.end();
    for (int id = firstNewNode; id < g.numNodeSlots() && !read; ++id) {
      const ir::Node& n = g.node(id);
      read = !n.dead && std::find(n.inputs.begin(), n.inputs.end(), in) != n.inputs.end();
    }
    if (!read)
      userError(where,
                "{} reads '{}', whose size along dimension {} is known only at run time (up to "
                "{}); cgc cannot compute with that size at compile time",
                op, g.value(in).name, g.value(in).dynamic.dims[0],
                g.value(in).type.shape[g.value(in).dynamic.dims[0]]);
  }
}

}  // namespace

void propagateDynamicExtents(ir::Graph& g, int firstNewNode, const std::vector<int>& onnxInputs,
                             const std::vector<int>& results, const std::string& op,
                             const DiagLocation& where) {
  checkConsumed(g, firstNewNode, onnxInputs, results, op, where);
  for (int id = firstNewNode; id < g.numNodeSlots(); ++id) {
    const ir::Node& n = g.node(id);
    if (n.dead) continue;
    int dynamicInput = -1;
    for (int in : n.inputs)
      if (in >= 0 && !g.value(in).dynamic.empty()) dynamicInput = in;
    if (dynamicInput < 0 || !n.subgraphs.empty()) continue;
    // An op of data-dependent size: its importer set its extent and
    // checked its inputs.
    const bool source = std::any_of(n.outputs.begin(), n.outputs.end(), [&](int out) {
      return out >= 0 && !g.value(out).dynamic.empty();
    });
    if (source) continue;
    const auto extent = outputExtent(g, n);
    if (!extent)
      userError(where,
                "{} reads '{}', whose size along dimension {} is known only at run time; cgc "
                "supports that in elementwise ops, Cast, Transpose, Reshape/Squeeze/Unsqueeze "
                "keeping that dimension, Slice/Gather/Concat along other axes, Gather and "
                "GatherND indices, and reductions, Softmax, ArgMax, TopK or MatMul along other "
                "axes",
                n.op, g.value(dynamicInput).name, g.value(dynamicInput).dynamic.dims[0]);
    for (int out : n.outputs)
      if (out >= 0) g.value(out).dynamic = *extent;
  }
}

}  // namespace cgc::frontend
