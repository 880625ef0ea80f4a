// fuse-epilogues: folds the cheap elementwise op after a Conv, Gemm or
// MatMul into that node, so the runtime applies it to each output block
// while the block is still in cache (the GEMM epilogue) instead of a
// separate kernel reading and writing the whole tensor again:
//   Conv/Gemm/MatMul -> Relu | Clip       => attribute cgc_activation
//                                            ("Relu" / "Clip" with
//                                            cgc_act_min, cgc_act_max)
//   Conv -> Add(other) [-> Relu | Clip]    => input 3 = other (a residual,
//                                            same shape, summed before the
//                                            activation)
//   MatMul -> Add(constant [n]) [-> act]   => input 2 = the bias
// The intermediate tensor must have no other reader and not be a graph
// output. The fused node keeps the Conv's name, so diagnostics and profiles
// still name the original node; lowering reads the attributes and inputs,
// and the constant folder runs the same kernel with the same epilogue.
//
// The Add's other operand cannot depend on the Conv (the Conv's output has
// no other reader), so making it a Conv input keeps the graph acyclic.
#include <limits>

#include "ir/conventions.h"
#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

bool isFusible(const ir::Graph& graph, const ir::Node& node) {
  if (node.op != "Conv" && node.op != "Gemm" && node.op != "MatMul") return false;
  return graph.value(node.outputs[0]).type.dtype == DType::kF32;
}

/// Whether the Add's `other` operand can be folded into `node` (whose
/// output is `out`), and if so makes it the node's residual or bias input.
bool absorbAdd(const ir::Graph& graph, ir::Node& node, int out, int other,
               const ir::TensorType& sum) {
  const ir::TensorType& outType = graph.value(out).type;
  if (other == out || !(sum == outType)) return false;
  const ir::TensorType& otherType = graph.value(other).type;
  if (node.op == "Conv") {
    constexpr size_t kResidual = ir::conventions::kConvResidual;
    if (node.inputs.size() > kResidual && node.inputs[kResidual] >= 0) return false;
    if (!(otherType == outType)) return false;
    node.inputs.resize(kResidual + 1, -1);
    node.inputs[kResidual] = other;
    return true;
  }
  if (node.op == "MatMul") {
    if (node.inputs.size() > ir::conventions::kMatMulBias || outType.shape.empty()) return false;
    if (!graph.value(other).isConstant() || otherType.dtype != DType::kF32 ||
        otherType.shape != ir::Shape{outType.shape.back()})
      return false;
    node.inputs.push_back(other);
    return true;
  }
  return false;
}

/// Fuses the single reader of `id`'s output into it; false when there is
/// nothing (more) to fuse.
bool fuseNext(ir::Graph& graph, int id) {
  ir::Node& node = graph.node(id);
  const int out = node.outputs[0];
  auto readers = graph.consumers(out);
  if (readers.size() != 1 || graph.isGraphOutput(out)) return false;
  const int nextId = readers[0];
  ir::Node& next = graph.node(nextId);
  if (node.has(ir::conventions::kActivation)) return false;  // nothing fuses after it
  if (next.op == "Relu" && next.inputs.size() == 1) {
    node.attrs[ir::conventions::kActivation] = std::string("Relu");
  } else if (next.op == "Clip" && next.numPresentInputs() == 1) {
    node.attrs[ir::conventions::kActivation] = std::string("Clip");
    node.attrs[ir::conventions::kActivationMin] =
        next.getFloat("min", -std::numeric_limits<double>::infinity());
    node.attrs[ir::conventions::kActivationMax] =
        next.getFloat("max", std::numeric_limits<double>::infinity());
  } else if (next.op == "Add" && next.inputs.size() == 2) {
    const int other = next.inputs[0] == out ? next.inputs[1] : next.inputs[0];
    if (!absorbAdd(graph, node, out, other, graph.value(next.outputs[0]).type)) return false;
  } else {
    return false;
  }
  const int nextOut = next.outputs[0];
  graph.removeNode(nextId);
  graph.setNodeOutput(id, 0, nextOut);
  return true;
}

}  // namespace

bool fuseEpilogues(ir::Graph& graph, const PassTarget&) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    if (graph.node(id).dead || !isFusible(graph, graph.node(id))) continue;
    while (fuseNext(graph, id)) changed = true;
  }
  return changed;
}

}  // namespace cgc::passes
