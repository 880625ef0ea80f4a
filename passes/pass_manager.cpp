// See pass_manager.h.
#include "passes/pass_manager.h"

#include <algorithm>
#include <cstring>

#include "ir/verifier.h"

namespace cgc::passes {

int addFloatConstant(ir::Graph& graph, const std::string& name, ir::Shape shape,
                     const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return graph.addConstant(name, {DType::kF32, std::move(shape)}, std::move(bytes));
}

std::vector<std::string> passNames() {
  return {
#define CGC_PASS_NAME(name, function) name,
      CGC_GRAPH_PASSES(CGC_PASS_NAME)
#undef CGC_PASS_NAME
  };
}

bool passForTarget(const std::string& name, const PassTarget& target) {
  // The packed and Winograd convolutions and the channel-blocked layout
  // between them keep vectors of 16 channels (kChannelBlock) in register
  // tiles of up to 24: on 8-lane AVX2 each is two registers and the tiles
  // still pay (measured on Zen 3, README "Targets"); on 4-lane SSE and NEON
  // they spill, and the NCHW kernels are faster.
  constexpr int kMinBlockedLanes = 8;
  if (name == "narrow-weights")
    return target.narrowWeights.has_value() || !target.bf16Weights.empty();
  if (name == "pack-conv-weights" || name == "block-activations")
    return target.vectorLanes() >= kMinBlockedLanes;
  return true;
}

void runPipeline(ir::Graph& graph, const PipelineOptions& options) {
  auto names = passNames();
  for (const auto& name : options.disabled)
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw CompileError(fmt::format("cgc: error: unknown pass '{}'", name));
  auto enabled = [&](const char* name) {
    return std::find(options.disabled.begin(), options.disabled.end(), name) ==
               options.disabled.end() &&
           passForTarget(name, options.target);
  };
#define CGC_RUN_PASS(name, function)                                \
  if (enabled(name)) {                                              \
    bool changed = function(graph, options.target);                 \
    ir::verifyGraph(graph);                                         \
    if (options.afterPass) options.afterPass(name, changed, graph); \
  }
  CGC_GRAPH_PASSES(CGC_RUN_PASS)
#undef CGC_RUN_PASS
}

}  // namespace cgc::passes
