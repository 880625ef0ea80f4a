// Lowering: from an IR node to the runtime kernel call that implements it.
//
// One KernelCall describes a call completely (kernel, element type, parameter
// struct, argument values), so the same description is executed at compile
// time by the constant folder (evaluate) and printed as C++ by codegen. The
// two can therefore never disagree about what a node computes. After the
// passes the whole graph is lowered once (lowerGraph); the memory plan, the
// cost model and codegen read those calls.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/graph.h"
#include "lowering/kernel_table.h"

namespace cgc::lowering {

struct KernelCall {
  KernelCall() = default;
  KernelCall(Kernel kernel, DType dtype, KernelParams params, std::vector<int> inputs,
             std::vector<int> outputs)
      : kernel(kernel),
        dtype(dtype),
        params(std::move(params)),
        inputs(std::move(inputs)),
        outputs(std::move(outputs)) {}

  Kernel kernel = Kernel::kView;
  DType dtype = DType::kF32;  // the template argument of typed kernels
  KernelParams params;
  std::vector<int> inputs;  // value ids in argument order; -1 passes nullptr
  std::vector<int> outputs;
  /// The arrays that pointer fields of `params` point to, by field name
  /// (Concat's part_bytes); codegen prints them as named constants.
  std::map<std::string, std::vector<int64_t>> arrays;
  /// Arena bytes the node uses while it runs, besides its outputs (a
  /// control-flow node's subgraphs); the memory plan gives them a region.
  int64_t scratchBytes = 0;

  template <typename P>
  const P& get() const {
    return std::get<P>(params);
  }
};

/// Why no kernel implements a node: "element type float16 is not supported".
struct Unsupported {
  std::string reason;
};

using Lowered = std::variant<KernelCall, Unsupported>;

/// The node's kernel call, or why there is none. Never throws for a model
/// problem; InternalError where a pass broke an invariant.
Lowered tryLower(const ir::Graph& graph, const ir::Node& node);

/// tryLower, throwing CompileError naming the node when there is no kernel.
KernelCall lowerNode(const ir::Graph& graph, const ir::Node& node);

/// Every live node's call, by node id: the graph lowered once, after the
/// passes.
class KernelCalls {
 public:
  const KernelCall& of(int node) const;
  bool has(int node) const;
  void setScratch(int node, int64_t bytes);
  /// Replaces a node's call (planning/cache_pairs.cpp: a cache kept in
  /// place and its readers).
  void replace(int node, KernelCall call);

 private:
  friend KernelCalls lowerGraph(const ir::Graph& graph);
  std::vector<std::optional<KernelCall>> byNode_;
};

/// Lowers every live node. A node without a kernel is an internal error:
/// the import check (checkLowerable) has already reported the model's.
KernelCalls lowerGraph(const ir::Graph& graph);

/// The import check: every node some kernel implements, or one CompileError
/// naming the first node without one, its reason, and how many more there
/// are (by op).
void checkLowerable(const ir::Graph& graph);

/// Name of the runtime function ("conv", "binary<float>", ...).
std::string kernelFunction(const KernelCall& call);

/// Runs a call on host buffers (the constant folder's interpreter), with
/// a serial team. Returns the kernel's status. A kernel of data-dependent
/// size writes the actual extents of its first output's dynamic dimensions
/// to `extents` (rt::kMaxRank slots) when it is given.
rt::Status evaluate(const KernelCall& call, const std::vector<const void*>& inputs,
                    const std::vector<void*>& outputs, int64_t* extents = nullptr);

/// If every input of the node is a constant (or known, ir::Value::known),
/// computes its outputs, replaces them by constants and removes the node.
/// Returns the new constants (one per output), or nothing when the node was
/// not folded (or has no kernel).
std::vector<int> foldNode(ir::Graph& graph, int node);
/// The same computation, but the node stays and its outputs become known
/// (a value computed from the sizes of variable dimensions, which run time
/// computes); whether it was computed. Outputs of data-dependent size are not.
bool evaluateNode(ir::Graph& graph, int node);

/// Whether the runtime function takes a `const rt::Team&` last and splits its
/// work over the team (see cgc/team.h); the others run on one thread.
bool takesTeam(const KernelCall& call);

/// Whether an op writes each output element only after reading the same
/// element of its first input, so the output may share the input's buffer.
bool mayRunInPlace(const KernelCall& call);

}  // namespace cgc::lowering
