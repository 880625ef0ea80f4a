// Data-dependent sizes through the nodes that read them: which readers
// keep a value's run-time extent, and what extent their outputs get (see
// dynamic_extents.cpp).
#pragma once

#include "ir/graph.h"

namespace cgc::frontend {

/// For the nodes from `firstNewNode` on (one ONNX node's import): outputs
/// of nodes that read values of data-dependent size get their extent; a
/// node that cannot read such a value is a CompileError at `where`.
void propagateDynamicExtents(ir::Graph& graph, int firstNewNode, const DiagLocation& where);

}  // namespace cgc::frontend
