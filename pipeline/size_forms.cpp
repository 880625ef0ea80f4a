// See size_forms.h.
#include "pipeline/size_forms.h"

#include <algorithm>
#include <set>

namespace cgc::driver {
namespace {

using Wide = __int128;
using DerivedSize = codegen::VariableDims::DerivedSize;

/// The largest divisor a floor form is tried with: strides of 2, 3 and 4,
/// and two stride-2 layers fused (a stem's convolution and pool).
constexpr int64_t kMaxDivisor = 8;

Wide floorDiv(Wide a, Wide b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// The samples where the target and every factor are known.
std::vector<size_t> knownAt(const Series& target, const std::vector<const Series*>& factors) {
  std::vector<size_t> out;
  for (size_t i = 0; i < target.size(); ++i) {
    bool known = target[i].has_value();
    for (const Series* f : factors) known = known && i < f->size() && (*f)[i].has_value();
    if (known) out.push_back(i);
  }
  return out;
}

/// target = a * product + b with integers a != 0 and b at every sample
/// (at least two products distinct): a and b.
std::optional<std::pair<int64_t, int64_t>> affineFit(const Series& target,
                                                     const std::vector<const Series*>& factors) {
  const std::vector<size_t> at = knownAt(target, factors);
  std::vector<Wide> x;
  for (size_t i : at) {
    Wide p = 1;
    for (const Series* f : factors) p *= *(*f)[i];
    x.push_back(p);
  }
  for (size_t i = 1; i < at.size(); ++i) {
    if (x[i] == x[0]) continue;
    const Wide dy = Wide{*target[at[i]]} - *target[at[0]], dx = x[i] - x[0];
    if (dy % dx != 0 || dy == 0) return std::nullopt;
    const Wide a = dy / dx, b = *target[at[0]] - a * x[0];
    for (size_t k = 0; k < at.size(); ++k)
      if (a * x[k] + b != *target[at[k]]) return std::nullopt;
    return std::make_pair(static_cast<int64_t>(a), static_cast<int64_t>(b));
  }
  return std::nullopt;
}

/// target = floor((c + b) / s) + k at every sample, c's values taking
/// every remainder modulo s: b and k for the one b in [0, s) that fits.
std::optional<std::pair<int64_t, int64_t>> floorFit(const Series& target, const Series& c,
                                                    int64_t s) {
  const std::vector<size_t> at = knownAt(target, {&c});
  std::set<int64_t> remainders;
  for (size_t i : at) remainders.insert(static_cast<int64_t>(floorDiv(*c[i], s) * -s + *c[i]));
  if (static_cast<int64_t>(remainders.size()) < s) return std::nullopt;
  for (int64_t b = 0; b < s; ++b) {
    const Wide k = *target[at[0]] - floorDiv(Wide{*c[at[0]]} + b, s);
    bool fits = true;
    for (size_t i : at) fits = fits && floorDiv(Wide{*c[i]} + b, s) + k == *target[i];
    if (fits) return std::make_pair(b, static_cast<int64_t>(k));
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> SizeForm::at(const std::vector<int64_t>& values) const {
  return poly ? poly->at(values) : derived->at(values);
}

std::vector<SizeForm> explainSize(const Series& target, const std::vector<SizeCandidate>& given) {
  // Candidates equal at every sample are one.
  std::vector<const SizeCandidate*> candidates;
  for (const SizeCandidate& c : given)
    if (std::none_of(candidates.begin(), candidates.end(),
                     [&](const SizeCandidate* seen) { return seen->values == c.values; }))
      candidates.push_back(&c);
  const size_t n = candidates.size();
  for (const SizeCandidate* c : candidates)
    if (const auto fit = affineFit(target, {&c->values}))
      return {SizeForm{c->poly.affine(fit->first, fit->second), std::nullopt}};
  const auto product = [&](std::vector<const SizeCandidate*> factors) -> std::optional<SizeForm> {
    std::vector<const Series*> values;
    std::vector<ir::DimPoly> polys;
    for (const SizeCandidate* f : factors) {
      values.push_back(&f->values);
      polys.push_back(f->poly);
    }
    const auto fit = affineFit(target, values);
    if (!fit) return std::nullopt;
    return SizeForm{std::nullopt, DerivedSize{polys, fit->first, fit->second, 1, 0}};
  };
  // A factor may repeat: a square plane's positions, one dimension for both
  // sides, are its side times itself.
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i; j < n; ++j)
      if (auto form = product({candidates[i], candidates[j]})) return {*form};
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i; j < n; ++j)
      for (size_t k = j; k < n; ++k)
        if (auto form = product({candidates[i], candidates[j], candidates[k]})) return {*form};
  std::vector<SizeForm> found;
  for (const SizeCandidate* c : candidates)
    for (int64_t s = 2; s <= kMaxDivisor; ++s)
      if (const auto fit = floorFit(target, c->values, s))
        found.push_back({std::nullopt, DerivedSize{{c->poly}, 1, fit->first, s, fit->second}});
  return found;
}

}  // namespace cgc::driver
