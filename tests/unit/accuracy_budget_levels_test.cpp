// The level search of --precision auto (tools/accuracy_budget_search.h,
// searchLevels) against made-up measurements: levels 0 (int8), 1 (bf16)
// and 2 (fp32); each layer adds an error of its own at its level, and the
// model's error is their sum.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "tools/accuracy_budget_search.h"

using cgc::quant::BudgetError;
using cgc::quant::Levels;
using cgc::quant::LevelSearch;
using cgc::quant::searchBudget;
using cgc::quant::searchLevels;
using Layers = std::vector<std::string>;

namespace {

constexpr int kTop = 2;

/// A model whose error is the sum of its layers' errors at their levels;
/// it counts the trials and remembers the levels each layer was tried at.
struct Additive {
  using Errors = std::map<std::string, std::vector<double>>;  // layer -> at level 0, 1, 2
  explicit Additive(Errors e) : errors(std::move(e)) {}
  Errors errors;
  int calls = 0;
  std::map<std::string, std::set<int>> tried;

  BudgetError operator()(const Levels& raised) {
    ++calls;
    double e = 0;
    for (const auto& [layer, at] : errors) {
      const auto it = raised.find(layer);
      const int level = it == raised.end() ? 0 : it->second;
      tried[layer].insert(level);
      e += at[level];
    }
    return {e, e};
  }
  Layers layers() const {
    Layers names;
    for (const auto& [layer, at] : errors) names.push_back(layer);
    return names;
  }
  LevelSearch search(const std::map<std::string, std::vector<int>>& takes, double maxError) {
    return searchLevels(layers(), kTop, takes, maxError, (*this)({}), std::ref(*this));
  }
};

std::map<std::string, std::vector<int>> allTakeBf16(const Additive& m) {
  std::map<std::string, std::vector<int>> takes;
  for (const auto& layer : m.layers()) takes[layer] = {1};
  return takes;
}

}  // namespace

TEST_CASE("layers the budget takes out of int8 stay in bf16 where it is enough") {
  Additive m{{{"a", {0.1, 0.001, 0}},
              {"b", {0.05, 0.001, 0}},
              {"c", {0.01, 0.001, 0}},
              {"d", {0.005, 0.001, 0}}}};
  const LevelSearch s = m.search(allTakeBf16(m), 0.05);
  REQUIRE(s.met);
  CHECK(s.levels == Levels{{"a", 1}, {"b", 1}});
  CHECK(s.error.budget == Approx(0.017));
  CHECK(s.toTop.floatLayers.size() == 2);
  REQUIRE(s.lowered.count(1));
  CHECK(s.lowered.at(1).floatLayers.empty());  // none returned to fp32
}

TEST_CASE("a layer whose bf16 is not enough returns to fp32, the others stay in bf16") {
  Additive m{{{"a", {0.1, 0.04, 0}},
              {"b", {0.05, 0.001, 0}},
              {"c", {0.01, 0.001, 0}},
              {"d", {0.005, 0.001, 0}}}};
  const LevelSearch s = m.search(allTakeBf16(m), 0.05);
  REQUIRE(s.met);
  CHECK(s.levels == Levels{{"a", kTop}, {"b", 1}});
  CHECK(s.error.budget <= 0.05);
  CHECK(s.lowered.at(1).floatLayers == Layers{"a"});
}

TEST_CASE("a layer without a bf16 kernel goes to fp32 and is never tried in bf16") {
  Additive m{{{"a", {0.1, 0.001, 0}},
              {"b", {0.05, 0.001, 0}},
              {"c", {0.01, 0.001, 0}},
              {"d", {0.005, 0.001, 0}}}};
  const LevelSearch s = m.search({{"b", {1}}, {"c", {1}}, {"d", {1}}}, 0.05);
  REQUIRE(s.met);
  CHECK(s.levels == Levels{{"a", kTop}, {"b", 1}});
  CHECK_FALSE(m.tried.at("a").count(1));
}

TEST_CASE("without a bf16 layer the search is the int8-or-float one") {
  Additive m{{{"a", {0.1, 0.001, 0}},
              {"b", {0.05, 0.001, 0}},
              {"c", {0.01, 0.001, 0}},
              {"d", {0.005, 0.001, 0}}}};
  const LevelSearch s = m.search({}, 0.05);
  REQUIRE(s.met);
  CHECK(s.levels == Levels{{"a", kTop}, {"b", kTop}});
  CHECK(s.lowered.empty());
  const int levelCalls = m.calls;
  Additive two = m;
  two.calls = 0;
  const auto floatSearch = searchBudget(two.layers(), 0.05, two({}), [&](const Layers& f) {
    Levels raised;
    for (const auto& layer : f) raised[layer] = kTop;
    return two(raised);
  });
  CHECK(floatSearch.floatLayers == s.toTop.floatLayers);
  CHECK(two.calls == levelCalls);  // no trial more
}

TEST_CASE("a budget that all-int8 meets raises no layer") {
  Additive m{{{"a", {0.01, 0.001, 0}}, {"b", {0.01, 0.001, 0}}}};
  const LevelSearch s = m.search(allTakeBf16(m), 0.05);
  CHECK(s.met);
  CHECK(s.levels.empty());
  CHECK(m.calls == 1);  // the all-int8 measurement the caller gives
}

TEST_CASE("an unreachable budget fails before trying bf16") {
  Additive m{{{"a", {0.1, 0.001, 0.05}}, {"b", {0.1, 0.001, 0.05}}, {"c", {0.1, 0.001, 0.05}}}};
  const LevelSearch s = m.search(allTakeBf16(m), 0.01);
  CHECK_FALSE(s.met);
  CHECK(s.lowered.empty());
  for (const auto& [layer, levels] : m.tried) CHECK_FALSE(levels.count(1));
}
