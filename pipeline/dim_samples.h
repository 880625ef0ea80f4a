// cgc compile --dim: the sizes the model is compiled at to fit what follows
// the dimensions (pipeline/variable_dims.cpp), and the values it computes
// from them, which those compiles compute at run time instead of folding.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/pipeline.h"

namespace cgc::driver {

using Dim = codegen::VariableDims::Dim;
using Sizes = std::vector<int64_t>;  // one value per variable dimension

/// The sizes dimension `d` takes: the multiples of d.multiple in [min, max].
struct Lattice {
  int64_t first, step, count;
  int64_t at(int64_t i) const { return first + i * step; }
};

Lattice latticeOf(const Dim& d);

/// Three sizes of each dimension to interpolate at (fewer where it takes
/// fewer), the largest last, and three others to check at; none empty.
std::pair<std::vector<Sizes>, std::vector<Sizes>> samplesOf(const std::vector<Dim>& dims);

/// The grid's points, row-major (the last dimension fastest).
std::vector<Sizes> pointsOf(const std::vector<Sizes>& grid);

/// The values the model computes from the sizes of the dimensions
/// (frontend::LoadOptions::sizedValues): the constants that differ between
/// imports at the grid's first, middle and last points (each dimension
/// differs between them).
std::set<std::string> sizedValues(const CompileOptions& options,
                                  const std::vector<Sizes>& gridSizes);

/// `e`, thrown for sizes below the bounds, said to be the model's refusal
/// of a size --dim allows (a graph that fixes one: a Reshape to a constant).
CompileError notEverySize(const CompileError& e, const std::vector<Dim>& dims, const Sizes& sizes);

}  // namespace cgc::driver
