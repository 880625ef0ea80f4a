// A quantity that follows a model's variable dimensions (cgc compile --dim):
// a polynomial in the dimensions with rational coefficients, each dimension
// to at most the second power, as the sizes, strides and element counts of
// kernel parameters are (an attention score matrix holds batch * seq * seq
// elements). pipeline/variable_dims.cpp finds one by interpolating the
// quantity's values at a grid of sizes and checks it at other sizes;
// codegen prints it as a C++ expression of the dimensions' actual values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cgc::ir {

class DimPoly {
 public:
  DimPoly() = default;
  /// The constant `value`.
  static DimPoly constant(int64_t value);
  /// Variable j alone: dimension j, or beyond the dimensions a size
  /// computed from them (codegen::VariableDims::derived).
  static DimPoly variable(int j);
  /// Interpolation on a grid: `grid[j]` holds the distinct values of
  /// dimension j sampled (one to three), `values` the quantity at every
  /// grid point, row-major (the last dimension fastest). Nothing when the
  /// coefficients do not fit in 64 bits.
  static std::optional<DimPoly> interpolate(const std::vector<std::vector<int64_t>>& grid,
                                            const std::vector<int64_t>& values);

  /// scale * this + offset.
  DimPoly affine(int64_t scale, int64_t offset) const;

  /// The value at `dims`, or nothing when it is not an integer there.
  std::optional<int64_t> at(const std::vector<int64_t>& dims) const;
  bool isConstant() const;
  /// Whether dimension j appears.
  bool uses(int j) const;
  /// Dimension j alone (coefficient 1), if that is what this is.
  std::optional<int> singleDim() const;
  /// "(3 * seq * seq + batch) / 2", from the dimensions' C++ names.
  std::string cpp(const std::vector<std::string>& names) const;
  bool operator==(const DimPoly& other) const = default;

 private:
  /// Numerator coefficient of each monomial, by its exponents per
  /// dimension; zero coefficients are left out.
  std::map<std::vector<int>, int64_t> terms_;
  int64_t denominator_ = 1;
};

}  // namespace cgc::ir
