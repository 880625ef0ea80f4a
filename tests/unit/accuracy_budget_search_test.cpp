// The search of --max-error (tools/accuracy_budget_search.h) against
// made-up measurements: no model is compiled, each case states what a
// float set of layers would measure.
#include "tools/accuracy_budget_search.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <set>

using cgc::quant::BudgetError;
using cgc::quant::BudgetSearch;
using cgc::quant::searchBudget;
using Layers = std::vector<std::string>;

namespace {

bool has(const Layers& layers, const std::string& name) {
  return std::find(layers.begin(), layers.end(), name) != layers.end();
}

/// A measuring function over `errorOf` that counts its calls.
struct Counted {
  std::function<BudgetError(const std::set<std::string>&)> errorOf;
  int calls = 0;
  BudgetError operator()(const Layers& floatLayers) {
    ++calls;
    return errorOf(std::set<std::string>(floatLayers.begin(), floatLayers.end()));
  }
  BudgetSearch search(const Layers& layers, double maxError) {
    return searchBudget(layers, maxError, errorOf({}), std::ref(*this));
  }
};

}  // namespace

TEST_CASE("a budget the all-int8 model meets takes no trial") {
  Counted m{[](const auto&) { return BudgetError{0.01, 0.2}; }};
  const BudgetSearch s = m.search({"a", "b"}, 0.02);
  CHECK(s.met);
  CHECK(s.floatLayers.empty());
  CHECK(m.calls == 0);
  CHECK(s.trials.size() == 1);
}

TEST_CASE("layers are ranked by the budget's metric, not by the relative error") {
  // The relative error points at a (given first, too); only c moves the
  // top-1 disagreement the budget bounds, and c alone is enough.
  Counted m{[](const std::set<std::string>& f) {
    return BudgetError{f.count("c") ? 0.05 : 0.2, f.count("a") ? 0.1 : 0.5};
  }};
  const BudgetSearch s = m.search({"a", "b", "c"}, 0.1);
  CHECK(s.met);
  CHECK(s.floatLayers == Layers{"c"});
  CHECK(s.ranking.front() == "c");
  CHECK(m.calls == 3);          // each layer alone, then nothing more
  CHECK(s.trials.size() == 2);  // all int8, then c's measurement alone
  CHECK(s.floatAlone.at("a").relative == Approx(0.1));
}

TEST_CASE("ties in the budget's metric go to the relative error") {
  // One layer alone never moves the disagreement; b moves the relative
  // error most, and b with any other meets the budget.
  Counted m{[](const std::set<std::string>& f) {
    const double relative = 0.5 - (f.count("b") ? 0.2 : 0) - 0.01 * static_cast<double>(f.size());
    return BudgetError{f.size() >= 2 && f.count("b") ? 0.0 : 0.3, relative};
  }};
  const BudgetSearch s = m.search({"a", "b", "c", "d"}, 0.02);
  CHECK(s.met);
  CHECK(s.ranking.front() == "b");
  CHECK(s.floatLayers.size() == 2);
  CHECK(has(s.floatLayers, "b"));
}

TEST_CASE("an additive error returns the fewest layers, in few trials") {
  // Each layer's share of the error, largest first in the analytic order
  // reversed: the measured ranking must put them right.
  Layers layers;
  std::map<std::string, double> share;
  for (int i = 0; i < 16; ++i) {
    layers.push_back(fmt::format("l{}", i));
    share[layers.back()] = 0.001 * (i + 1);
  }
  Counted m{[&](const std::set<std::string>& f) {
    double e = 0;
    for (const auto& [name, s] : share)
      if (!f.count(name)) e += s;
    return BudgetError{e, e};
  }};
  // All int8: 0.136; the five largest shares (0.016 ... 0.012) bring it to 0.066.
  const BudgetSearch s = m.search(layers, 0.07);
  CHECK(s.met);
  CHECK(s.floatLayers.size() == 5);
  for (const char* name : {"l15", "l14", "l13", "l12", "l11"}) CHECK(has(s.floatLayers, name));
  CHECK(s.error.budget <= 0.07);
  CHECK(m.calls <= 16 + 8);  // the ranking, then batches and a bisection
}

TEST_CASE("effects that do not add are measured again") {
  // b and a each help alone, together hardly more than b; d helps only
  // with both in float (they share its activations), which the first
  // ranking cannot see.
  Counted m{[](const std::set<std::string>& f) {
    const bool a = f.count("a"), b = f.count("b");
    double e = a && b ? 0.14 : b ? 0.15 : a ? 0.2 : 0.3;
    if (a && b && f.count("d")) e = 0.0;
    return BudgetError{e, e + 0.1};
  }};
  const BudgetSearch s = m.search({"a", "b", "c", "d", "e", "f"}, 0.05);
  REQUIRE(s.met);
  CHECK(has(s.floatLayers, "a"));
  CHECK(has(s.floatLayers, "b"));
  CHECK(has(s.floatLayers, "d"));
  CHECK(s.floatLayers.size() <= 4);
  CHECK(s.floatAlone.at("d").budget == 0.0);  // measured again on top of a and b
  CHECK(s.error.budget == 0.0);
}

TEST_CASE("an unreachable budget fails with all layers but one in float") {
  Counted m{[](const std::set<std::string>& f) {
    const double e = 0.3 - 0.01 * static_cast<double>(f.size());
    return BudgetError{e, e};
  }};
  const BudgetSearch s = m.search({"a", "b", "c", "d"}, 0.001);
  CHECK_FALSE(s.met);
  CHECK(s.floatLayers.size() == 3);
  CHECK(s.error.budget == Approx(0.27));
}

TEST_CASE("a search where nothing helps stops") {
  Counted m{[](const auto&) { return BudgetError{0.3, 0.5}; }};
  const BudgetSearch s = m.search({"a", "b", "c", "d", "e"}, 0.1);
  CHECK_FALSE(s.met);
  CHECK(s.floatLayers.size() == 4);
  CHECK(m.calls <= 5 + 3);  // the ranking, then 1, 2, 4 layers
}
