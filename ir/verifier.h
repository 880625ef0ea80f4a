// The graph verifier: run after every pass (and at the end of the frontend) so
// that a pass that corrupts the IR is caught where it did it, not three passes
// later in generated code.
#pragma once

#include "ir/graph.h"

namespace cgc::ir {

/// Throws InternalError listing every broken invariant: dangling ids, a value
/// with two producers, a producer that does not list its output, a cycle,
/// constants without data of the right size, negative dimensions, undefined
/// dtypes, graph outputs that nothing defines, and a channel-blocked value
/// that some node writes or reads as plain (see checkLayouts).
void verifyGraph(const Graph& graph);

}  // namespace cgc::ir
