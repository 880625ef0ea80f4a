// --max-error: the accuracy budget of --quantize int8. The quantised model's
// outputs are measured against the float model's on held-out inputs
// (--check-inputs); while an output's relative error (|q - f| / |f| over
// all its values and inputs) or, for a classifier-shaped output (rank 2 or
// 3, float, its last dimension the largest), instead the share of rows
// whose top-1 class differs exceeds the budget, the most sensitive int8
// layers return to float: 1, 2, 4, ... of them, then a bisection between
// the last count that failed and the first that held, ranked by
// measurement (the outputs' relative error with each layer alone in float:
// one trial a layer) with ties in the order of the quantisation noise of
// their activations (from the calibration histograms) and weights. It fails,
// naming the budget and the error it reached, when even all-float layers
// do not meet it. The report (--quantize-report FILE.json, with a readable
// table in FILE.txt) gives each layer's precision and why, each output's
// error, the activations' ranges and params, the trials, and the speed of
// the float and the int8 model. With --weights-only the layers are the
// products on int8 weights (no calibration: measurement alone ranks them),
// and a classifier-shaped output's top-1 agreement is a decoder's greedy
// tokens agreeing with float.
#pragma once

#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace cgc::quant {

/// The compile options whose --keep-float list meets the budget (options
/// unchanged without --max-error, --check-inputs or --quantize-report),
/// after writing the report where one is asked for. CompileError for a
/// budget without check inputs, check inputs that do not match the model,
/// and a budget that cannot be met.
driver::CompileOptions applyBudget(const driver::CompileOptions& options);

}  // namespace cgc::quant
