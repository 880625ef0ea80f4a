// The fixed pass pipeline. Each graph-to-graph pass lives in its own file,
// says in its header what it does and why, and reports whether it changed
// the graph; the verifier runs after every pass.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "ir/graph.h"

namespace cgc::passes {

// X-macro list of the graph passes, in pipeline order: (name, function).
#define CGC_GRAPH_PASSES(X)                               \
  X("canonicalize", canonicalize)                         \
  X("fold-pad", foldPad)                                  \
  X("quantize", quantize)                                 \
  X("fuse-quantized", fuseQuantized)                      \
  X("pack-quantized-weights", packQuantizedWeights)       \
  X("fold-constants", foldConstants)                      \
  X("fuse-attention", fuseAttention)                      \
  X("fold-conv-batchnorm", foldConvBatchNorm)             \
  X("decompose-conv-transpose", decomposeConvTranspose)   \
  X("fuse-matmuls", fuseMatMuls)                          \
  X("fuse-epilogues", fuseEpilogues)                      \
  X("fuse-conv-maxpool", fuseConvMaxPool)                 \
  X("pretranspose-gemm-weights", pretransposeGemmWeights) \
  X("narrow-weights", narrowWeights)                      \
  X("pack-conv-weights", packConvolutionWeights)          \
  X("block-activations", blockActivations)                \
  X("pack-rnn-weights", packRecurrentWeights)             \
  X("dead-code", eliminateDeadCode)

/// What the quantize pass makes int8 (compiler/quantize.h makes it from a
/// calibration file): the activations' ranges by value name, in float, as
/// the calibration method chose them; the activations' type; and the
/// nodes (by name) that stay in float.
struct QuantizeSpec {
  std::map<std::string, std::pair<float, float>> ranges;
  DType activations = DType::kU8;
  std::set<std::string> keepFloat;
  /// What the pass did, for the quantisation report (null: not recorded).
  struct Tensor {
    std::string name;
    float lo, hi, scale;
    int32_t zeroPoint;
  };
  struct Layer {
    std::string name, input, output;  // the node and its activations
    double weightNoise;               // |Q(w) - w|^2 / |w|^2
  };
  struct Record {
    std::vector<Tensor> tensors;
    std::vector<Layer> layers;
  };
  std::shared_ptr<Record> record;
};

/// What the passes may assume of the target they compile for
/// (pipeline/targets.h makes it from cgc/targets.def): layouts that pay on
/// one instruction set and not another are chosen by it. The defaults: the
/// "native" row's machine with 16 lanes, and this build's int8 kernels and
/// tier.
struct PassTarget {
  /// Its vector width, caches and cores (cgc/machine.h): the
  /// channel-blocked layouts skip targets of fewer than 8 lanes
  /// (passForTarget); the convolutions' choices weigh all of it.
  rt::MachineInfo machine = *rt::machineOfTarget("native", 512);
  /// The instruction-set tier (cgc/isa_tiers.def) of the runtime that runs
  /// the model: the kernel variants it has, and the int8 weights' packing
  /// (rt::preferredQPacking) that pack-quantized-weights stores.
  std::string tier = runtime_isa_tier();
  /// Measured convolution variants (a tuned profile's "variants", by node
  /// name): pack-conv-weights and pack-quantized-weights run such a float or
  /// int8 convolution with its variant where the variant exists, `tier`
  /// includes the variant's tier and it takes the layer, else with their
  /// own choice (and say so through `note`).
  std::map<std::string, std::string> convVariants{};
  /// cgc tune's trials: this variant on every convolution not named in
  /// convVariants that it takes, the pass's own choice elsewhere ("": none).
  std::string everyConvVariant{};
  /// --dim's general code: by node name, the variants (ConvChoice texts)
  /// that other sizes choose, which pack-conv-weights packs too (at most 2
  /// besides the layer's own, float ones) so that conv takes one per call.
  std::map<std::string, std::vector<std::string>> convAlternatives{};
  /// --precision bf16 or --quantize int8 --weights-only: the format
  /// narrow-weights stores the constant weights of matrix products in
  /// (none: they stay float and the pass does not run).
  std::optional<rt::WeightFormat> narrowWeights{};
  /// Products (node names) whose weights narrow-weights leaves in float
  /// (--keep-float).
  std::set<std::string> keepFloatWeights{};
  /// Products and convolutions (node names) whose weights are stored as
  /// bfloat16 whatever narrowWeights says (--keep-bf16: layers --precision
  /// auto takes out of int8 into bf16).
  std::set<std::string> bf16Weights{};
  /// --quantize int8: what the quantize pass quantises (null: nothing).
  std::shared_ptr<const QuantizeSpec> quantize{};
  /// What a pass tells the user (a measured choice it did not take); null:
  /// nothing is said.
  std::function<void(const std::string&)> note{};

  int vectorLanes() const { return machine.lanes(); }

  /// The format layer `node`'s constant weights are stored in (none:
  /// float): keepFloatWeights, then bf16Weights, then narrowWeights.
  std::optional<rt::WeightFormat> weightFormatFor(const std::string& node) const {
    if (keepFloatWeights.count(node)) return std::nullopt;
    if (bf16Weights.count(node)) return rt::WeightFormat::kBf16;
    return narrowWeights;
  }

  /// The variant asked of convolution `node`: its measured one
  /// (`measured`, from convVariants), else everyConvVariant ("": none).
  struct VariantRequest {
    std::string text;
    bool measured;
  };
  VariantRequest variantFor(const std::string& node) const {
    const auto recorded = convVariants.find(node);
    if (recorded != convVariants.end()) return {recorded->second, true};
    return {everyConvVariant, false};
  }
};

#define CGC_DECLARE_PASS(name, function) \
  bool function(ir::Graph& graph, const PassTarget& target = {});
CGC_GRAPH_PASSES(CGC_DECLARE_PASS)
#undef CGC_DECLARE_PASS

struct PipelineOptions {
  /// Passes to skip, by name (e.g. "fold-conv-batchnorm").
  std::vector<std::string> disabled;
  /// Called after each pass that ran, with its name and whether it changed
  /// the graph (for --print-after style tracing).
  std::function<void(const std::string&, bool, const ir::Graph&)> afterPass;
  PassTarget target;
};

/// Whether the pass `name` runs for `target`.
bool passForTarget(const std::string& name, const PassTarget& target);

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
