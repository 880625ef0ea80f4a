// The IR as text, one node per line, for --print-ir-after and for tests
// that compare a pass's result with the graph they expect (MLIR's
// FileCheck tests are the model):
//
//   graph tiny_cnn (inputs: %input float32[1,3,16,16]; outputs: probs = %probs)
//   %w1 = constant float32[8,3,3,3]
//   conv1 = Conv(%input, %w1, %b1) -> %conv1_out float32[1,8,16,16] {kernel_shape = [3, 3], ...}
//
// Values print as %name with their type where they are defined; channel-
// blocked values say so; attributes print sorted by name.
#pragma once

#include <string>

#include "ir/graph.h"

namespace cgc::ir {

/// Every constant a live node reads, then the live nodes in topological
/// order.
std::string printGraph(const Graph& graph);

/// One node's line (no newline).
std::string printNode(const Graph& graph, const Node& node);

}  // namespace cgc::ir
