// cgc compile --dim: the sizes the model is compiled at to fit what follows
// the dimensions (pipeline/variable_dims.cpp), and the values it computes
// from them, which those compiles compute at run time instead of folding.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/pipeline.h"
#include "pipeline/size_forms.h"

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

/// The sizes whose convolution variants the general code also packs, to
/// pick one per call (variable_dims.cpp): the smallest of every dimension
/// (not 0), the grid's middle point and `checks`.
std::vector<Sizes> variantProbes(const std::vector<Dim>& dims, const std::vector<Sizes>& grid,
                                 const std::vector<Sizes>& checks);

/// The grid's points, row-major (the last dimension fastest).
std::vector<Sizes> pointsOf(const std::vector<Sizes>& grid);

/// What the sizes --dim allows tell of `forms`, alternatives that fit a
/// quantity alike at the samples taken (`dims` gives their variables
/// values): every size is tried where there are at most 2^16, else the
/// sizes along each dimension from the bounds; size 0 is left out (empty
/// tensors: nothing runs).
struct FormsTold {
  /// Sizes, none of `taken` and no extent 1, where the forms take the
  /// most distinct values, at least two; nothing where none is found.
  std::optional<Sizes> sizes;
  /// Whether they agree at every size --dim allows: each of them holds.
  bool agree = false;
};
FormsTold tellForms(const std::vector<SizeForm>& forms, const codegen::VariableDims& dims,
                    const std::vector<Sizes>& taken);

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
