// See pass_manager.h.
#include "passes/pass_manager.h"

#include <algorithm>

#include "ir/verifier.h"

namespace cgc::passes {

std::vector<std::string> passNames() {
  return {
#define CGC_PASS_NAME(name, function) name,
      CGC_GRAPH_PASSES(CGC_PASS_NAME)
#undef CGC_PASS_NAME
  };
}

void runPipeline(ir::Graph& graph, const PipelineOptions& options) {
  auto names = passNames();
  for (const auto& name : options.disabled)
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw CompileError(fmt::format("cgc: error: unknown pass '{}'", name));
  auto enabled = [&](const char* name) {
    return std::find(options.disabled.begin(), options.disabled.end(), name) ==
           options.disabled.end();
  };
#define CGC_RUN_PASS(name, function)                          \
  if (enabled(name)) {                                        \
    bool changed = function(graph);                           \
    ir::verifyGraph(graph);                                   \
    if (options.afterPass) options.afterPass(name, changed, graph); \
  }
  CGC_GRAPH_PASSES(CGC_RUN_PASS)
#undef CGC_RUN_PASS
}

}  // namespace cgc::passes
