// Codegen: Graph + Schedule + MemoryPlan -> NAME.h, NAME.cpp and the weights
// blob. No graph rewriting happens here; every decision was made by a pass.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/memory_plan.h"
#include "passes/schedule.h"

namespace cgc::codegen {

struct EmitOptions {
  std::string className;     // "TinyCnn"; derived from the graph name if empty
  std::string symbolPrefix;  // "tiny_cnn"; C ABI prefix, file base name
  std::string nameSpace = "cgc_models";
  bool embedWeights = true;  // .incbin; otherwise read at construction
  /// --weights file: where the constructor looks by default.
  std::string weightsPath;
};

struct EmittedModel {
  std::string className;
  std::string baseName;  // files are baseName.h / .cpp / .weights.bin
  std::string header;
  std::string source;
  std::vector<uint8_t> weights;
  std::string graphHash;
};

/// "tiny_cnn" -> "TinyCnn".
std::string toClassName(const std::string& name);
/// "TinyCnn" or "tiny-cnn" -> "tiny_cnn".
std::string toSymbolPrefix(const std::string& name);

EmittedModel emitModel(const ir::Graph& graph, const passes::Schedule& schedule,
                       const passes::MemoryPlan& plan,
                       const EmitOptions& options);

}  // namespace cgc::codegen
