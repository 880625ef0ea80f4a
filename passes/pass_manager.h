// The fixed pass pipeline. Each graph-to-graph pass lives in its own file,
// says in its header what it does and why, and reports whether it changed
// the graph; the verifier runs after every pass.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cgc::passes {

// X-macro list of the graph passes, in pipeline order: (name, function).
#define CGC_GRAPH_PASSES(X)                               \
  X("canonicalize", canonicalize)                         \
  X("fold-pad", foldPad)                                  \
  X("fuse-quantized", fuseQuantized)                      \
  X("pack-quantized-weights", packQuantizedWeights)       \
  X("fold-constants", foldConstants)                      \
  X("fold-conv-batchnorm", foldConvBatchNorm)             \
  X("decompose-conv-transpose", decomposeConvTranspose)   \
  X("fuse-matmuls", fuseMatMuls)                          \
  X("fuse-epilogues", fuseEpilogues)                      \
  X("fuse-conv-maxpool", fuseConvMaxPool)                 \
  X("pretranspose-gemm-weights", pretransposeGemmWeights) \
  X("pack-conv-weights", packConvolutionWeights)          \
  X("block-activations", blockActivations)                \
  X("pack-rnn-weights", packRecurrentWeights)             \
  X("dead-code", eliminateDeadCode)

#define CGC_DECLARE_PASS(name, function) bool function(ir::Graph& graph);
CGC_GRAPH_PASSES(CGC_DECLARE_PASS)
#undef CGC_DECLARE_PASS

struct PipelineOptions {
  /// Passes to skip, by name (e.g. "fold-conv-batchnorm").
  std::vector<std::string> disabled;
  /// Called after each pass that ran, with its name and whether it changed
  /// the graph (for --print-after style tracing).
  std::function<void(const std::string&, bool, const ir::Graph&)> afterPass;
  /// Floats per vector register of the target (cmake/targets.def): passes
  /// whose layouts pay only on wider vectors skip narrower targets
  /// (passForTarget).
  int vectorLanes = 16;
};

/// Whether the pass `name` runs for a target of `vectorLanes` lanes.
bool passForTarget(const std::string& name, int vectorLanes);

/// Adds a float32 constant of `shape` holding `values`, named `name` or,
/// where that is taken, a unique variant of it; returns its value id.
int addFloatConstant(ir::Graph& graph, const std::string& name, ir::Shape shape,
                     const std::vector<float>& values);

/// Names of all graph passes, in order.
std::vector<std::string> passNames();

/// Runs the pipeline, verifying the graph after each pass. Throws
/// CompileError for an unknown pass name in `disabled`.
void runPipeline(ir::Graph& graph, const PipelineOptions& options = {});

}  // namespace cgc::passes
