// fold-constants: evaluates, at compile time, every node whose inputs are all
// constants (with the runtime's own kernels, through lowering::evaluate). The
// frontend already folds while importing; this pass catches what earlier
// passes exposed. As on import, a node whose outputs exceed
// ir::kMaxFoldBytes, or what is left of ir::kMaxGeneratedBytes for this run,
// stays for run time.
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

namespace cgc::passes {

bool foldConstants(ir::Graph& graph, const PassTarget&) {
  bool changed = false;
  int64_t budget = ir::kMaxGeneratedBytes;
  for (int id : graph.topologicalOrder()) {
    int64_t bytes = ir::foldBytes(graph, graph.node(id), budget);
    if (bytes >= 0 && !lowering::foldNode(graph, id).empty()) {
      changed = true;
      budget -= bytes;
    }
  }
  return changed;
}

}  // namespace cgc::passes
