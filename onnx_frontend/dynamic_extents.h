// Data-dependent sizes through the nodes that read them: which readers
// keep a value's run-time extent, and what extent their outputs get (see
// dynamic_extents.cpp).
#pragma once

#include "ir/graph.h"

namespace cgc::frontend {

/// For the nodes from `firstNewNode` on (the import of one ONNX node `op`
/// with inputs `onnxInputs` and outputs `results`): outputs of nodes that
/// read values of data-dependent size get their extent; a node that cannot
/// read such a value, or an ONNX node that used one at compile time (Shape,
/// Size), is a CompileError at `where`.
void propagateDynamicExtents(ir::Graph& graph, int firstNewNode, const std::vector<int>& onnxInputs,
                             const std::vector<int>& results, const std::string& op,
                             const DiagLocation& where);

}  // namespace cgc::frontend
