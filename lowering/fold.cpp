// Constant folding of one node: its kernel call, run on the constants'
// bytes by the same runtime kernels that generated code calls (evaluate, in
// kernel_table.cpp), and its outputs replaced by the results.
#include "lowering/kernel_call.h"

namespace cgc::lowering {

std::vector<int> foldNode(ir::Graph& graph, int nodeId) {
  const ir::Node& node = graph.node(nodeId);
  if (node.dead) return {};
  for (int v : node.inputs)
    if (v >= 0 && !graph.value(v).isConstant()) return {};
  Lowered lowered = tryLower(graph, node);
  const KernelCall* call = std::get_if<KernelCall>(&lowered);
  if (!call || (isStructural(call->kernel) && call->kernel != Kernel::kView)) return {};
  for (int v : node.outputs)
    if (v >= 0 && !graph.value(v).dynamic.empty()) return {};
  std::vector<int> outputs = node.outputs;
  std::vector<int> constants;
  if (call->kernel == Kernel::kView) {
    const ir::Value& source = graph.value(call->inputs[0]);
    const ir::Value& result = graph.value(outputs[0]);
    constants.push_back(graph.addConstant(result.name + "_folded", result.type,
                                          std::vector<uint8_t>(*source.data)));
  } else {
    std::vector<const void*> inputPtrs;
    for (int v : call->inputs) inputPtrs.push_back(v >= 0 ? graph.value(v).data->data() : nullptr);
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<void*> outputPtrs;
    // An output the kernel may skip (-1, a null pointer) has no value.
    for (int v : call->outputs) {
      buffers.emplace_back(v >= 0 ? graph.value(v).type.bytes() : 0);
      outputPtrs.push_back(v >= 0 ? buffers.back().data() : nullptr);
    }
    const rt::Status status = evaluate(*call, inputPtrs, outputPtrs);
    if (status != rt::Status::kOk)
      userError(graph.where(node), "{} (in constant inputs)", rt::statusMessage(status));
    for (size_t i = 0; i < call->outputs.size() && call->outputs[i] >= 0; ++i) {
      const ir::Value& result = graph.value(call->outputs[i]);
      constants.push_back(
          graph.addConstant(result.name + "_folded", result.type, std::move(buffers[i])));
    }
  }
  for (size_t i = 0; i < constants.size(); ++i) graph.replaceAllUses(outputs[i], constants[i]);
  graph.removeNode(nodeId);
  return constants;
}

}  // namespace cgc::lowering
