// --precision and --quantize int8 --weights-only: which format the
// narrow-weights pass stores the constant weights of matrix products in,
// the checks of those options against each other and against the target,
// and the compile log's line on what the pass did (docs/PRECISION.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cgc/kernels.h"
#include "pipeline/pipeline.h"

namespace cgc::driver {

/// The precisions --precision takes, for --help and its check.
const std::vector<std::string>& precisionNames();

/// Whether `target` has the bf16 tier (avx512bf16).
bool targetHasBf16(const Target& target);

/// The format narrow-weights stores products' weights in for these options
/// on their target; none: float.
/// CompileError for a precision not in precisionNames, "auto" (which the
/// accuracy budget resolves before compiling), --keep-float
/// without either format or --quantize int8, --keep-bf16 without
/// --quantize int8 (int8 activations), --weights-only
/// without --quantize int8 or with a calibration file (what only int8
/// activations read), both formats asked at once, and
/// bf16 (--precision or --keep-bf16) for a target whose tier lacks
/// avx512bf16.
std::optional<rt::WeightFormat> narrowWeightFormat(const CompileOptions& options);

/// The format of the weights stored narrow, for the compile log and
/// inspect: narrowWeightFormat's, else bf16 where --keep-bf16 names layers.
std::optional<rt::WeightFormat> narrowedFormat(const CompileOptions& options);

/// The precision a compiled layer runs in: "int8" (QLinearConv,
/// QLinearMatMul), "int8 weights" and "bf16" (MatMulNarrow; a Conv on
/// bfloat16 panels), "float" (any other Conv, MatMul, Gemm); "" for the
/// other ops.
std::string layerPrecision(const ir::Node& node);

/// What narrow-weights and pack-conv-weights made of `graph`: the products
/// and the convolutions (on bf16 panels) whose weights they stored narrow,
/// and those weights' bytes before and after.
struct NarrowReport {
  int products = 0;
  int64_t floatBytes = 0, narrowBytes = 0;
  int convolutions = 0;
  int64_t convFloatBytes = 0, convNarrowBytes = 0;
};
NarrowReport narrowReport(const ir::Graph& graph);

/// The compile log's line: "bf16 weights: 48 products, 340.2 MB -> 170.1
/// MB", then "; 53 convolutions, 94.1 MB -> 47.1 MB" where it has some.
std::string describeNarrow(rt::WeightFormat format, const NarrowReport& report);

}  // namespace cgc::driver
