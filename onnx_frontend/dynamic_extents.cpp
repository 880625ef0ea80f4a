// Data-dependent sizes through the ops that read them (see
// ir::DynamicExtent). A value of data-dependent size is stored at its bound
// with zeros past its actual extent; an op may read it where computing on
// the whole bound gives the right values inside the actual extent:
// elementwise ops (with an operand that broadcasts along the dynamic
// dimensions), Cast, Transpose, Gather (of dynamic indices). Their outputs
// take the same actual extent (the same size slot). Any other reader is a
// clear error: a reduction or a softmax would count the padding.
#include "onnx_frontend/dynamic_extents.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace cgc::frontend {
namespace {

const std::set<std::string>& sameShapeOps() {
  static const std::set<std::string> ops = {
      "Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Sqrt", "Exp", "Log", "Neg", "Abs",
      "Reciprocal", "Floor", "Ceil", "Identity", "Erf", "Softplus", "Elu", "Softsign", "Not",
      "Cast", "Clip", "Sin", "Cos", "Tan", "Sign", "Round", "IsNaN", "IsInf"};
  return ops;
}

const std::set<std::string>& binaryOps() {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Min", "Max",
                                            "And", "Or", "Xor", "Equal", "Greater", "Less",
                                            "GreaterOrEqual", "LessOrEqual", "Where", "Mod"};
  return ops;
}

/// The output's extent from one input's, dimensions right-aligned (numpy
/// broadcasting), or nothing when another input does not broadcast along a
/// dynamic dimension.
std::optional<ir::DynamicExtent> broadcastExtent(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& out = g.value(n.outputs[0]).type.shape;
  std::optional<ir::DynamicExtent> extent;
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

std::optional<ir::DynamicExtent> outputExtent(const ir::Graph& g, const ir::Node& n) {
  const ir::Value& first = g.value(n.inputs[0]);
  if (sameShapeOps().count(n.op)) return first.dynamic;
  if (binaryOps().count(n.op)) return broadcastExtent(g, n);
  if (n.op == "Transpose") {
    const auto perm = n.getInts("perm");
    ir::DynamicExtent extent{{}, first.dynamic.sizeSlot};
    for (int d : first.dynamic.dims)
      extent.dims.push_back(static_cast<int>(std::find(perm.begin(), perm.end(), d) - perm.begin()));
    if (extent.dims.size() > 1 && extent.dims[0] > extent.dims[1]) return std::nullopt;
    return extent;
  }
  if (n.op == "Gather" && first.dynamic.empty()) {
    const int axis = static_cast<int>(n.getInt("axis", 0));
    ir::DynamicExtent extent = g.value(n.inputs[1]).dynamic;
    for (int& d : extent.dims) d += axis;
    return extent;
  }
  return std::nullopt;
}

}  // namespace

void propagateDynamicExtents(ir::Graph& g, int firstNewNode, const DiagLocation& where) {
  for (int id = firstNewNode; id < g.numNodeSlots(); ++id) {
    const ir::Node& n = g.node(id);
    if (n.dead) continue;
    int dynamicInput = -1;
    for (int in : n.inputs)
      if (in >= 0 && !g.value(in).dynamic.empty()) dynamicInput = in;
    if (dynamicInput < 0 || !n.subgraphs.empty()) continue;
    const auto extent = outputExtent(g, n);
    if (!extent)
      userError(where,
                "{} reads '{}', whose size along dimension {} is known only at run time; cgc "
                "supports that in elementwise ops, Cast, Transpose and Gather indices",
                n.op, g.value(dynamicInput).name, g.value(dynamicInput).dynamic.dims[0]);
    for (int out : n.outputs)
      if (out >= 0) g.value(out).dynamic = *extent;
  }
}

}  // namespace cgc::frontend
