// See dim_poly.h. Interpolation on a tensor grid is one 1-D interpolation
// per dimension, each turning values along that dimension into
// coefficients of its powers (Newton's divided differences, expanded); the
// arithmetic is exact, in 128-bit fractions.
#include "ir/dim_poly.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "ir/diagnostics.h"

namespace cgc::ir {
namespace {

using Wide = __int128;

Wide gcdOf(Wide a, Wide b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) a = std::exchange(b, a % b);
  return a;
}

/// An exact fraction; `overflow` records a step beyond 2^100.
struct Fraction {
  Wide num = 0, den = 1;
  static inline bool overflow = false;

  static Fraction make(Wide n, Wide d) {
    if (d < 0) n = -n, d = -d;
    const Wide g = gcdOf(n, d);
    if (g > 1) n /= g, d /= g;
    constexpr Wide kLimit = Wide{1} << 100;
    if (n > kLimit || n < -kLimit || d > kLimit) overflow = true;
    return {n, d};
  }
  Fraction operator+(const Fraction& o) const {
    return make(num * o.den + o.num * den, den * o.den);
  }
  Fraction operator-(const Fraction& o) const {
    return make(num * o.den - o.num * den, den * o.den);
  }
  Fraction operator*(const Fraction& o) const { return make(num * o.num, den * o.den); }
  Fraction operator/(const Fraction& o) const { return make(num * o.den, den * o.num); }
};

Fraction whole(int64_t v) { return {v, 1}; }

/// Coefficients c[0..n) of the polynomial of degree < n through (x[i], y[i]).
std::vector<Fraction> coefficients(const std::vector<int64_t>& x, const std::vector<Fraction>& y) {
  const size_t n = x.size();
  if (n == 1) return {y[0]};
  const Fraction a1 = (y[1] - y[0]) / whole(x[1] - x[0]);
  if (n == 2) return {y[0] - a1 * whole(x[0]), a1};
  CGC_ASSERT(n == 3, "a dimension sampled at {} sizes", n);
  const Fraction a2 = ((y[2] - y[1]) / whole(x[2] - x[1]) - a1) / whole(x[2] - x[0]);
  return {y[0] - a1 * whole(x[0]) + a2 * whole(x[0]) * whole(x[1]), a1 - a2 * whole(x[0] + x[1]),
          a2};
}

}  // namespace

DimPoly DimPoly::constant(int64_t value) {
  DimPoly p;
  if (value != 0) p.terms_[{}] = value;
  return p;
}

DimPoly DimPoly::variable(int j) {
  DimPoly p;
  std::vector<int> exponents(static_cast<size_t>(j) + 1, 0);
  exponents.back() = 1;
  p.terms_[exponents] = 1;
  return p;
}

std::optional<DimPoly> DimPoly::interpolate(const std::vector<std::vector<int64_t>>& grid,
                                            const std::vector<int64_t>& values) {
  Fraction::overflow = false;
  std::vector<Fraction> table;
  for (int64_t v : values) table.push_back(whole(v));
  // Along each dimension j in turn: the fibres (fixed other indices) of
  // `table` become coefficients of d_j's powers, in place.
  size_t inner = table.size();
  for (const std::vector<int64_t>& points : grid) {
    const size_t n = points.size();
    inner /= n;
    for (size_t start = 0; start < table.size(); start += n * inner)
      for (size_t i = 0; i < inner; ++i) {
        std::vector<Fraction> fibre;
        for (size_t k = 0; k < n; ++k) fibre.push_back(table[start + k * inner + i]);
        const std::vector<Fraction> c = coefficients(points, fibre);
        for (size_t k = 0; k < n; ++k) table[start + k * inner + i] = c[k];
      }
  }
  Wide denominator = 1;
  for (const Fraction& f : table)
    if (f.num != 0) denominator = denominator / gcdOf(denominator, f.den) * f.den;
  DimPoly p;
  constexpr Wide kMax = INT64_MAX;
  if (Fraction::overflow || denominator > kMax) return std::nullopt;
  p.denominator_ = static_cast<int64_t>(denominator);
  for (size_t flat = 0; flat < table.size(); ++flat) {
    if (table[flat].num == 0) continue;
    const Wide numerator = table[flat].num * (denominator / table[flat].den);
    if (numerator > kMax || numerator < -kMax) return std::nullopt;
    std::vector<int> exponents(grid.size());
    size_t rest = flat;
    for (size_t j = grid.size(); j-- > 0;) {
      exponents[j] = static_cast<int>(rest % grid[j].size());
      rest /= grid[j].size();
    }
    p.terms_[exponents] = static_cast<int64_t>(numerator);
  }
  return p;
}

DimPoly DimPoly::affine(int64_t scale, int64_t offset) const {
  DimPoly p = *this;
  for (auto& [exponents, coefficient] : p.terms_) coefficient *= scale;
  // The constant's key: no exponents, or all zero as interpolate writes it.
  std::vector<int> none;
  for (const auto& [exponents, coefficient] : p.terms_)
    if (std::all_of(exponents.begin(), exponents.end(), [](int e) { return e == 0; }))
      none = exponents;
  p.terms_[none] += offset * denominator_;
  std::erase_if(p.terms_, [](const auto& term) { return term.second == 0; });
  return p;
}

std::optional<int64_t> DimPoly::at(const std::vector<int64_t>& dims) const {
  Wide sum = 0;
  for (const auto& [exponents, coefficient] : terms_) {
    Wide term = coefficient;
    for (size_t j = 0; j < exponents.size(); ++j)
      for (int e = 0; e < exponents[j]; ++e) term *= dims.at(j);
    sum += term;
  }
  if (sum % denominator_ != 0) return std::nullopt;
  return static_cast<int64_t>(sum / denominator_);
}

bool DimPoly::isConstant() const {
  for (const auto& [exponents, coefficient] : terms_)
    if (std::any_of(exponents.begin(), exponents.end(), [](int e) { return e != 0; })) return false;
  return true;
}

bool DimPoly::uses(int j) const {
  for (const auto& [exponents, coefficient] : terms_)
    if (static_cast<size_t>(j) < exponents.size() && exponents[static_cast<size_t>(j)] != 0)
      return true;  // a constant's term has no exponents
  return false;
}

std::optional<int> DimPoly::singleDim() const {
  if (terms_.size() != 1 || denominator_ != 1 || terms_.begin()->second != 1) return std::nullopt;
  const std::vector<int>& exponents = terms_.begin()->first;
  int found = -1;
  for (size_t j = 0; j < exponents.size(); ++j) {
    if (exponents[j] == 0) continue;
    if (exponents[j] != 1 || found >= 0) return std::nullopt;
    found = static_cast<int>(j);
  }
  if (found < 0) return std::nullopt;
  return found;
}

std::string DimPoly::cpp(const std::vector<std::string>& names) const {
  if (terms_.empty()) return "0";
  std::string text;
  // Highest degree first, the constant last.
  for (auto it = terms_.rbegin(); it != terms_.rend(); ++it) {
    const auto& [exponents, coefficient] = *it;
    std::string factors;
    for (size_t j = 0; j < exponents.size(); ++j)
      for (int e = 0; e < exponents[j]; ++e) factors += (factors.empty() ? "" : " * ") + names[j];
    const int64_t magnitude = coefficient < 0 ? -coefficient : coefficient;
    std::string term = factors.empty()  ? std::to_string(magnitude)
                       : magnitude == 1 ? factors
                                        : fmt::format("{} * {}", magnitude, factors);
    if (text.empty())
      text = coefficient < 0 ? "-" + term : term;
    else
      text += (coefficient < 0 ? " - " : " + ") + term;
  }
  if (denominator_ == 1) return text;
  return fmt::format("({}) / {}", text, denominator_);
}

}  // namespace cgc::ir
