// canonicalize: removes Identity nodes (Dropout arrives as Identity) by
// forwarding their input, and collapses chains of Reshape views into one, so
// later passes and the memory planner see one form per computation.
#include "passes/pass_manager.h"

namespace cgc::passes {

bool canonicalize(ir::Graph& graph, const PassTarget&) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    ir::Node& node = graph.node(id);
    if (node.op == "Identity") {
      int in = node.inputs[0], out = node.outputs[0];
      graph.removeNode(id);
      graph.replaceAllUses(out, in);
      changed = true;
      continue;
    }
    if (node.op == "Reshape") {
      int in = node.inputs[0];
      int producer = graph.value(in).producer;
      if (producer >= 0 && graph.node(producer).op == "Reshape") {
        node.inputs[0] = graph.node(producer).inputs[0];
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace cgc::passes
