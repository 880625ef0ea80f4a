// dead-code: removes nodes none of whose outputs is read by a live node or
// is a graph output (left behind by folding and fusion).
#include "passes/pass_manager.h"

namespace cgc::passes {

bool eliminateDeadCode(ir::Graph& graph, const PassTarget&) {
  std::vector<bool> used(graph.numValues(), false);
  for (int out : graph.outputs) used[out] = true;
  bool changed = false;
  auto order = graph.topologicalOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Node& node = graph.node(*it);
    bool live = false;
    for (int out : node.outputs) live |= used[out];
    if (!live) {
      graph.removeNode(*it);
      changed = true;
      continue;
    }
    for (int in : node.inputs)
      if (in >= 0) used[in] = true;
  }
  return changed;
}

}  // namespace cgc::passes
