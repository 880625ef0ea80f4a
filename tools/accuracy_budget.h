// --max-error: the accuracy budget of --quantize int8. The quantised model's
// outputs are measured against the float model's on held-out inputs
// (--check-inputs). The budget bounds one metric per output: for a
// classifier-shaped output (rank 2 or 3, float, its last dimension the
// largest) the top-1 disagreement (the share of rows whose top-1 class
// differs), for any other the relative error (|q - f| / |f| over all its
// values and inputs). While the worst exceeds the budget, int8 layers
// return to float as the search of accuracy_budget_search.h chooses them:
// ranked by that same metric measured with each layer alone in float (ties
// by the relative error, then by the quantisation noise of their
// activations, from the calibration histograms, and weights), added in
// growing batches, measured again where effects do not add. It fails,
// naming the budget, the metric and the error it reached, when even all
// layers but one in float do not meet it. The report (--quantize-report
// FILE.json, with a readable table in FILE.txt) names the metric and gives
// each layer's precision and why, each output's error, the activations'
// ranges and params, the trials, and the speed of the float and the int8
// model. With --weights-only the layers are the products on int8 weights
// (no calibration: measurement alone ranks them), and a classifier-shaped
// output's top-1 agreement is a decoder's greedy tokens agreeing with
// float.
// --precision auto (accuracy_budget_search.h, searchLevels): the layers the
// search takes out of int8 that have a bf16 kernel (a compile with
// --precision bf16 says which) are tried in bf16, and the fewest returned
// to fp32 where bf16 is not enough; the result is --precision fp32 with
// --keep-bf16 and --keep-float lists. A target without the bf16 tier gets
// int8 or fp32, said in one line.
#pragma once

#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace cgc::quant {

/// The compile options whose --keep-float list (and under --precision auto
/// --keep-bf16 list) meets the budget (options unchanged without
/// --max-error, --check-inputs or --quantize-report), after writing the
/// report where one is asked for. CompileError for a budget without check
/// inputs, check inputs that do not match the model, --precision auto
/// without --quantize int8 activations or --max-error, and a budget that
/// cannot be met.
driver::CompileOptions applyBudget(const driver::CompileOptions& options);

}  // namespace cgc::quant
