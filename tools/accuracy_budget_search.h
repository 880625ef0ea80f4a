// The search of --max-error (tools/accuracy_budget.h), apart from compiling
// and running models: which int8 layers return to float so that the
// quantised model's error meets the budget. It sees the model only through
// a measuring function (the error with a given set of layers in float), so
// that tests drive it with made-up errors.
//
// 1. Ranking: each layer is measured alone in float and ranked by the
//    budget's own metric then (the error the budget bounds), ties broken
//    by the relative error, then by the order given (the analytic noise).
// 2. Greedy batches: the next layers of the ranking are added to the float
//    set in batches of 1, 2, 4, ...: a batch that meets the budget ends the
//    search (a bisection keeps the fewest of it), one that improves on the
//    error so far is kept, one that does not is doubled.
// 3. Re-measurement where effects do not add: when a kept batch gained
//    less than its best layer did alone, the remaining layers are measured
//    again, each alone on top of the float set kept so far, and ranked
//    anew (layers that share an activation often help only together);
//    batches start again at 1.
// At least one layer stays int8; where even that does not meet the budget,
// or no batch improves, the search fails.
//
// Levels (--precision auto): where a layer may take precisions between int8
// and float (levels 1 .. top - 1, cheapest first; top is float), the
// layers the search above returned to float (level top) are tried at each
// intermediate level in turn, cheapest first: all of those that take the
// level are lowered to it at once, and the same search (ranking, batches,
// re-measurement) returns the fewest of them to the top level where that
// does not meet the budget.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace cgc::quant {

/// A trial's errors, each the worst over the model's outputs.
struct BudgetError {
  double budget = 0;    // the budget's metric (top-1 disagreement or relative error)
  double relative = 0;  // the relative error: it moves where top-1 agreement ties
  bool operator<(const BudgetError& o) const {
    return budget != o.budget ? budget < o.budget : relative < o.relative;
  }
};

/// The errors with these layers in float (besides those the user keeps).
using MeasureFloat = std::function<BudgetError(const std::vector<std::string>& floatLayers)>;

struct BudgetTrial {
  std::vector<std::string> floatLayers;
  BudgetError error;
};

struct BudgetSearch {
  std::vector<std::string> ranking;  // the final order, most harmful in int8 first
  /// Each layer's error when last measured alone in float on top of the
  /// float set of its time (the first ranking: on the all-int8 model).
  std::map<std::string, BudgetError> floatAlone;
  std::vector<BudgetTrial> trials;       // in order; the first is all int8
  std::vector<std::string> floatLayers;  // the result, or the last tried where not met
  BudgetError error;                     // its errors
  bool met = false;
};

/// Searches the fewest layers (of `layers`, the analytic order, most
/// sensitive first) to return to float so that the budget metric is at most
/// `maxError`, given the all-int8 errors. `progress` (may be empty) hears
/// each measurement.
BudgetSearch searchBudget(
    const std::vector<std::string>& layers, double maxError, const BudgetError& allInt8,
    const MeasureFloat& measure,
    const std::function<void(const std::string& what, const BudgetTrial&)>& progress = {});

/// Each layer's level above int8 (level 0, not listed) after searchLevels.
using Levels = std::map<std::string, int>;
/// The errors with these layers above int8, at these levels.
using MeasureLevels = std::function<BudgetError(const Levels& raised)>;

struct LevelSearch {
  BudgetSearch toTop;  // the search of the layers that leave int8 (at the top level)
  /// One search per intermediate level tried (of the layers lowered to it:
  /// its floatLayers returned to the top level).
  std::map<int, BudgetSearch> lowered;
  Levels levels;  // the result: every layer not at level 0
  BudgetError error;
  bool met = false;
};

/// searchBudget over `layers` with `top` as float, then each intermediate
/// level (1 .. top - 1) as the file's comment says; `takes` lists the
/// intermediate levels each layer may take (a layer not listed takes none).
LevelSearch searchLevels(const std::vector<std::string>& layers, int top,
                         const std::map<std::string, std::vector<int>>& takes, double maxError,
                         const BudgetError& allInt8, const MeasureLevels& measure,
                         const std::function<void(int level, const std::string& what,
                                                  const BudgetTrial&)>& progress = {});

}  // namespace cgc::quant
