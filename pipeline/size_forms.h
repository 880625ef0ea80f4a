// cgc compile --dim: the forms a size takes where no polynomial in the
// dimensions gives it. A strided or padded convolution's output is
// floor((h + p - k) / s) + 1 of its input's extent, a pool's too, a
// tensor's element count the product of extents that are such sizes. The
// fit (pipeline/variable_dims.cpp) knows a quantity's value at each sample
// size and, as candidates, the sizes it may be made of: the extents of the
// node's operands (each a polynomial in the dimensions or a size derived
// before). This finds the forms that give the quantity at every
// sample: an integer multiple of a product of up to three candidates (one
// may repeat: a square plane's positions) plus an integer, or
// floor((c + b) / s) + k of one candidate c, where the samples' values of
// c take every remainder modulo s, so that b is the only one that fits.
// Where two remainders or two divisors give forms that fit alike, the
// samples do not tell which holds: the fit compiles the model where they
// differ (dim_samples.h: tellForms) and tries again, takes either where
// they agree at every size --dim allows, and refuses rather than guess
// when it still cannot tell.
#pragma once

#include <optional>
#include <vector>

#include "codegen/model_emitter.h"

namespace cgc::driver {

/// A quantity's value at each sample (nothing where it is not known there).
using Series = std::vector<std::optional<int64_t>>;

/// A size the quantity may be made of, with its values at the samples.
struct SizeCandidate {
  ir::DimPoly poly;
  Series values;
};

/// A candidate itself times an integer plus an integer (`poly`), or a new
/// derived size (`derived`).
struct SizeForm {
  std::optional<ir::DimPoly> poly;
  std::optional<codegen::VariableDims::DerivedSize> derived;
  /// Its value from the variables' values (VariableDims::variableValues).
  std::optional<int64_t> at(const std::vector<int64_t>& values) const;
};

/// The forms that give `target` at every sample from `candidates`: one,
/// the answer; several floor divisions, which the samples do not tell
/// apart; none.
std::vector<SizeForm> explainSize(const Series& target,
                                  const std::vector<SizeCandidate>& candidates);

}  // namespace cgc::driver
