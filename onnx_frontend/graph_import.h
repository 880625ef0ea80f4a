// Imports ONNX node lists into the IR, including the structure around single
// nodes: nested name scopes, `If`, and functions.
//
// - `If` whose condition folds to a constant (typically a shape test, or an
//   input bound with --constant) is replaced by the nodes of the branch it
//   takes. Otherwise both branches are inlined and every output is selected
//   at run time by a Where node on the condition; both branches must then
//   produce the same types.
// - Functions are inlined: the model's local functions, and ONNX ops that the
//   ONNX schema defines by a function body (MeanVarianceNormalization,
//   HardSwish, Celu, ...) when cgc has no importer of its own for them.
//
// Each node is folded as soon as it is imported, so shape sub-graphs and
// branch conditions resolve to constants before the nodes that need them.
//
// Sequences and optionals exist only in the importer (import_sequence.cpp):
// a graph input of such a type must be bound to a constant, and a graph
// output of such a type is its tensors, outputs NAME[0], NAME[1], ...
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "onnx_frontend/onnx.h"
#include "onnx_frontend/tensor_proto.h"

namespace cgc::frontend {

struct UnsupportedNode {
  std::string node;
  std::string op;
  std::string domain;
};

/// "unsupported ops: 3 NonZero (nodes 'a', 'b', 'c'), 1 ai.onnx.ml.TreeEnsembleClassifier
/// (node 't')": per op, its count and the first `shown` node names.
std::string describeUnsupported(const std::vector<UnsupportedNode>& nodes, size_t shown);

/// ONNX Runtime's own domains (com.microsoft, com.microsoft.nchwc, ...):
/// the ops its optimiser writes into a model it saves, which only ONNX
/// Runtime runs.
bool isOnnxRuntimeDomain(const std::string& domain);

/// What to do about these unsupported nodes, for the error and `cgc
/// inspect`: for ONNX Runtime's internal ops, to compile the original model;
/// else where the supported ops are listed.
std::string unsupportedAdvice(const std::vector<UnsupportedNode>& nodes);

/// The ops cgc imports, from the frontend's tables (`cgc inspect --ops`,
/// docs/OPS.md), each list sorted.
struct SupportedOps {
  std::vector<std::string> imported;     // an importer each (op_import.h)
  std::vector<std::string> controlFlow;  // If, Loop, Scan
  std::vector<std::string> compileTime;  // sequence and optional ops, computed at compile time
  /// Ops ONNX defines by a function body that cgc inlines, with the first
  /// opset whose schema has a body.
  std::vector<std::pair<std::string, int>> functions;
};
SupportedOps supportedOps();

/// The model's version of the default ONNX domain.
int modelOpset(const onnx::ModelProto& model);

/// Nodes that cgc can import neither directly nor through a function body,
/// in the main graph, in If branches and in local functions.
std::vector<UnsupportedNode> unsupportedNodes(const onnx::ModelProto& model);

/// A value that a node of the main graph defines, under its ONNX name.
struct DefinedValue {
  std::string name;
  int value = -1;
  DiagLocation where;  // the node
};

/// Imports the main graph's nodes into `graph`, whose initializers and inputs
/// are already defined in `names`, and sets the graph outputs. Returns the
/// values the main graph's nodes define, for the loader to check against
/// ONNX shape inference once the import succeeded.
/// Inputs of sequence or optional type bound with --constant are given in
/// `composites`, by name (they become constants). `sized`: the values
/// computed at run time from the sizes of variable dimensions
/// (LoadOptions::sizedValues).
std::vector<DefinedValue> importGraphNodes(
    ir::Graph& graph, const onnx::ModelProto& model,
    const std::unordered_map<std::string, int>& names, const std::map<std::string, int64_t>& bounds,
    const std::set<std::string>& sized = {},
    const std::map<std::string, CompositeTensors>& composites = {});

}  // namespace cgc::frontend
