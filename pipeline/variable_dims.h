// cgc compile --dim NAME=MIN..MAX[:MULTIPLE]: one compiled model for every
// size of a symbolic dimension within bounds.
//
// The model is compiled as today at the bounds (the largest sizes): that
// compile's schedule, memory plan and weights are the model's. It is also
// compiled at a grid of other sizes (up to three per dimension) and the
// graphs compared: each must lower to the same kernels with the same
// choices, and each integer of each kernel's parameters is then a
// polynomial in the dimensions (ir::DimPoly), interpolated on the grid and
// checked at further sizes, or where none holds a size derived from its
// operands' extents (a strided convolution's floor division: size_forms.h).
// Values the model computes from the sizes are computed at run time in
// every one of those compiles (dim_samples.h), so that the graphs have
// the same nodes. Generated code computes those parameters from
// the dimensions' actual values, so every kernel runs as static code for
// the actual sizes would, on tensors stored densely in buffers planned at
// the bounds. Control-flow bodies are fitted as the top level is, and what
// codegen reads itself (data-dependent bounds, the operands a control-flow
// node copies, a Loop's trip count) follows the same polynomials. A model
// whose kernels or choices change with the sizes, or whose parameters
// follow no such polynomial, is an error naming the node.
#pragma once

#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace cgc::driver {

/// "--dim" values "NAME=MIN..MAX[:MULTIPLE]"; CompileError naming --dim.
std::vector<codegen::VariableDims::Dim> parseDims(const std::vector<std::string>& texts);

/// `dims` (parsed, or Python's dims= tuples) if each is a range that holds
/// a size (0 <= MIN <= MAX <= 2^40, MULTIPLE >= 1, a multiple within) and
/// no name has two; otherwise a CompileError naming --dim and the range.
std::vector<codegen::VariableDims::Dim> checkedDims(
    const std::vector<codegen::VariableDims::Dim>& dims);

/// "NAME=MIN..MAX[:MULTIPLE]", as --dim takes it.
std::string dimText(const codegen::VariableDims::Dim& dim);

/// --shape values with a range in an axis ("x=1x3x48x80..960:8"): each
/// ranged axis becomes a --dim of the symbolic dimension the model gives
/// it, each fixed axis that has one binds it by name (LoadOptions::dims).
/// CompileError naming --shape for an axis without a name, a fixed axis
/// that contradicts the model, or an unknown input.
void bindShapeRanges(const std::vector<std::string>& texts, CompileOptions& options);

/// compileGraph for options.dims (see above), with its specialised paths
/// (compiler/specializations.h).
CompiledModel compileWithVariableDims(const CompileOptions& options);

}  // namespace cgc::driver
