// See accuracy_budget_search.h.
#include "tools/accuracy_budget_search.h"

#include <algorithm>

namespace cgc::quant {
namespace {

using Layers = std::vector<std::string>;
using Progress = std::function<void(const std::string&, const BudgetTrial&)>;

Layers joined(const Layers& kept, const Layers& order, size_t count) {
  Layers all = kept;
  all.insert(all.end(), order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count));
  return all;
}

class Search {
 public:
  Search(double maxError, const MeasureFloat& measure, const Progress& progress, BudgetSearch& out)
      : maxError_(maxError), measure_(measure), progress_(progress), out_(out) {}

  /// A trial of the search, recorded.
  BudgetError trial(const Layers& floatLayers) {
    out_.trials.push_back({floatLayers, measure_(floatLayers)});
    if (progress_) progress_("trial", out_.trials.back());
    return out_.trials.back().error;
  }

  /// Ranks `order` by each layer's errors alone in float on top of `kept`
  /// (a stable sort: equal errors keep their order).
  void rank(const Layers& kept, Layers& order) {
    size_t done = 0;
    for (const std::string& layer : order) {
      Layers one = kept;
      one.push_back(layer);
      const BudgetTrial t{one, measure_(one)};
      out_.floatAlone[layer] = t.error;
      if (progress_)
        progress_("layer " + std::to_string(++done) + "/" + std::to_string(order.size()) +
                      " alone in float",
                  t);
    }
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      return out_.floatAlone.at(a) < out_.floatAlone.at(b);
    });
  }

  /// The fewest of `order`'s first `held` layers (with `kept`) that meet
  /// the budget, `failed` of them known not to: a bisection.
  void bisect(const Layers& kept, const Layers& order, size_t failed, size_t held,
              BudgetError heldError) {
    while (held - failed > 1) {
      const size_t mid = failed + (held - failed) / 2;
      const BudgetError e = trial(joined(kept, order, mid));
      if (met(e))
        held = mid, heldError = e;
      else
        failed = mid;
    }
    out_.floatLayers = joined(kept, order, held);
    out_.error = heldError;
    out_.met = true;
  }

  bool met(const BudgetError& e) const { return e.budget <= maxError_; }

 private:
  double maxError_;
  const MeasureFloat& measure_;
  const Progress& progress_;
  BudgetSearch& out_;
};

/// How much `after` improves on `before`, in both metrics.
BudgetError gain(const BudgetError& before, const BudgetError& after) {
  return {before.budget - after.budget, before.relative - after.relative};
}

}  // namespace

BudgetSearch searchBudget(const std::vector<std::string>& layers, double maxError,
                          const BudgetError& allInt8, const MeasureFloat& measure,
                          const Progress& progress) {
  BudgetSearch out;
  out.trials.push_back({{}, allInt8});
  out.error = allInt8;
  out.ranking = layers;
  Search search(maxError, measure, progress, out);
  out.met = search.met(allInt8);
  if (out.met || layers.size() < 2) return out;
  const size_t most = layers.size() - 1;  // at least one layer stays int8
  Layers order = layers, kept;
  BudgetError current = allInt8, rankedOn = allInt8;
  search.rank(kept, order);
  size_t n = 1;  // the batch size: doubles while batches help, 1 after a new ranking
  while (kept.size() < most) {
    out.ranking = kept;
    out.ranking.insert(out.ranking.end(), order.begin(), order.end());
    if (search.met(out.floatAlone.at(order.front()))) {  // its layer alone is enough
      out.floatLayers = joined(kept, order, 1);
      out.error = out.floatAlone.at(order.front());
      out.trials.push_back({out.floatLayers, out.error});
      out.met = true;
      return out;
    }
    const size_t room = most - kept.size();
    size_t failed = 0;
    BudgetError e;
    for (n = std::min(n, room);; n = std::min(2 * n, room)) {
      e = search.trial(joined(kept, order, n));
      if (search.met(e)) {
        search.bisect(kept, order, failed, n, e);
        return out;
      }
      if (e < current || n == room) break;
      failed = n;
    }
    out.floatLayers = joined(kept, order, n);
    out.error = e;
    if (!(e < current)) break;  // even the most layers in float do not help
    // The batch gained less than its best layer did alone: the effects do
    // not add, so the rest are measured again on top of it.
    const bool adds = !(gain(current, e) < gain(rankedOn, out.floatAlone.at(order.front())));
    kept.insert(kept.end(), order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n));
    order.erase(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n));
    current = e;
    n *= 2;
    if (adds || kept.size() >= most) continue;
    search.rank(kept, order);
    rankedOn = current;
    n = 1;
  }
  return out;
}

namespace {

/// `base` with `layers` at `level`.
Levels raisedTo(const Layers& layers, int level, Levels base) {
  for (const std::string& layer : layers) base[layer] = level;
  return base;
}

}  // namespace

LevelSearch searchLevels(
    const std::vector<std::string>& layers, int top,
    const std::map<std::string, std::vector<int>>& takes, double maxError,
    const BudgetError& allInt8, const MeasureLevels& measure,
    const std::function<void(int, const std::string&, const BudgetTrial&)>& progress) {
  auto heard = [&](int level) -> Progress {
    if (!progress) return {};
    return [&progress, level](const std::string& what, const BudgetTrial& t) {
      progress(level, what, t);
    };
  };
  LevelSearch out;
  out.toTop = searchBudget(
      layers, maxError, allInt8,
      [&](const Layers& raised) { return measure(raisedTo(raised, top, {})); }, heard(top));
  out.met = out.toTop.met;
  out.error = out.toTop.error;
  out.levels = raisedTo(out.toTop.floatLayers, top, {});
  if (!out.met) return out;
  for (int level = 1; level < top; ++level) {
    Layers candidates;
    for (const std::string& layer : layers) {
      const auto it = takes.find(layer);
      if (out.levels.count(layer) && out.levels.at(layer) == top && it != takes.end() &&
          std::find(it->second.begin(), it->second.end(), level) != it->second.end())
        candidates.push_back(layer);
    }
    if (candidates.empty()) continue;
    const Levels lowered = raisedTo(candidates, level, out.levels);
    const BudgetError all = measure(lowered);
    if (progress) progress(level, "all lowered", {candidates, all});
    // Its float layers: those returned from `level` to the top.
    BudgetSearch search = searchBudget(
        candidates, maxError, all,
        [&](const Layers& raised) { return measure(raisedTo(raised, top, lowered)); }, heard(top));
    if (search.met) {
      out.levels = raisedTo(search.floatLayers, top, lowered);
      out.error = search.error;
    }
    out.lowered.emplace(level, std::move(search));
  }
  return out;
}

}  // namespace cgc::quant
