// fold-constants: evaluates, at compile time, every node whose inputs are all
// constants (with the runtime's own kernels, through lowering::evaluate). The
// frontend already folds while importing; this pass catches what earlier
// passes exposed. Nodes with outputs over ir::kMaxFoldBytes stay for run
// time, as on import.
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

namespace cgc::passes {

bool foldConstants(ir::Graph& graph) {
  bool changed = false;
  for (int id : graph.topologicalOrder())
    if (ir::foldableSize(graph, graph.node(id)) &&
        lowering::isLowerable(graph, graph.node(id)))
      changed |= !lowering::foldNode(graph, id).empty();
  return changed;
}

}  // namespace cgc::passes
