// See precision.h.
#include "pipeline/precision.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <variant>

#include "cgc/isa_tiers.h"
#include "ir/conventions.h"
#include "lowering/kernel_call.h"
#include "pipeline/targets.h"

namespace cgc::driver {
namespace {

[[noreturn]] void optionError(const std::string& text) {
  throw CompileError("cgc: error: " + text);
}

/// --weights-only's checks: --quantize int8, and no calibration file (what
/// only int8 activations read).
void checkWeightsOnly(const quant::QuantizeOptions& q) {
  if (!q.enabled()) optionError("--weights-only needs --quantize int8");
  if (q.precision != "int8")
    optionError(fmt::format("--quantize: '{}' is not a precision (int8)", q.precision));
  if (!q.calibration.empty())
    optionError(
        "--quantize int8 --weights-only keeps activations in float and reads no --calibration");
}

/// The error of bf16 weights (`flag`) for a target without the tier.
void checkBf16Target(const Target& target, const char* flag) {
  if (!targetHasBf16(target))
    optionError(
        fmt::format("{} needs the CPU feature avx512bf16, which target '{}' lacks (its tier "
                    "is {}{}); compile for a target that has it, or without {}",
                    flag, target.name, target.tier,
                    target.isNative() ? ": this CPU or the runtime cgc links" : "", flag));
}

}  // namespace

const std::vector<std::string>& precisionNames() {
  static const std::vector<std::string> names{"fp32", "bf16", "auto"};
  return names;
}

bool targetHasBf16(const Target& target) { return isaTierIncludes(target.tier, "bf16"); }

std::optional<rt::WeightFormat> narrowWeightFormat(const CompileOptions& options) {
  const auto& names = precisionNames();
  if (std::find(names.begin(), names.end(), options.precision) == names.end())
    optionError(fmt::format("--precision: '{}' is not a precision ({})", options.precision,
                            fmt::join(names, ", ")));
  if (options.precision == "auto")
    optionError(
        "--precision auto needs --quantize int8 --calibration FILE --max-error E --check-inputs "
        "DIR (cgc compile, run)");
  const bool bf16 = options.precision == "bf16";
  if (!options.quantize.keepFloat.empty() && !options.quantize.enabled() && !bf16)
    optionError("--keep-float needs --quantize int8 or --precision bf16");
  if (!options.quantize.keepBf16.empty()) {
    if (!options.quantize.activations8())
      optionError("--keep-bf16 needs --quantize int8 with --calibration (not --weights-only)");
    checkBf16Target(options.target(), "--keep-bf16");
  }
  if (options.quantize.weightsOnly) {
    checkWeightsOnly(options.quantize);
    if (bf16)
      optionError(
          "--precision bf16 and --quantize int8 --weights-only both choose the weights' "
          "format: give one");
    return rt::WeightFormat::kInt8;
  }
  if (!bf16) return std::nullopt;
  checkBf16Target(options.target(), "--precision bf16");
  return rt::WeightFormat::kBf16;
}

std::optional<rt::WeightFormat> narrowedFormat(const CompileOptions& options) {
  const auto format = narrowWeightFormat(options);
  if (!format && !options.quantize.keepBf16.empty()) return rt::WeightFormat::kBf16;
  return format;
}

std::string layerPrecision(const ir::Node& node) {
  namespace conv = ir::conventions;
  if (node.op == "QLinearConv" || node.op == "QLinearMatMul") return "int8";
  if (node.op == "MatMulNarrow")
    return static_cast<rt::WeightFormat>(node.getInt(conv::kWeightFormat, 0)) ==
                   rt::WeightFormat::kInt8
               ? "int8 weights"
               : "bf16";
  if (node.op == "Conv" && conv::convPacking(node) == conv::ConvPacking::kBf16Panels) return "bf16";
  if (node.op == "Conv" || node.op == "MatMul" || node.op == "Gemm") return "float";
  return "";
}

NarrowReport narrowReport(const ir::Graph& graph) {
  namespace conv = ir::conventions;
  NarrowReport report;
  std::set<int> seen;
  for (int id : graph.liveNodes()) {
    const ir::Node& node = graph.node(id);
    if (node.op == "Conv" && conv::convPacking(node) == conv::ConvPacking::kBf16Panels) {
      const auto p = std::get<rt::ConvParams>(lowering::lowerNode(graph, node).params);
      ++report.convolutions;
      report.convFloatBytes += p.c_out * (p.c_in / p.groups) * p.k_d * p.k_h * p.k_w * 4;
      report.convNarrowBytes += graph.value(node.inputs[1]).type.bytes();
    }
    if (node.op != "MatMulNarrow") continue;
    ++report.products;
    const int weights = node.inputs[conv::kNarrowWeights];
    if (!seen.insert(weights).second) continue;
    const int64_t k = graph.value(node.inputs[0]).type.shape.back();
    const ir::Shape& y = graph.value(node.outputs[0]).type.shape;
    report.floatBytes += k * (y.empty() ? 1 : y.back()) * 4;
    report.narrowBytes += graph.value(weights).type.bytes();
    const int scale = node.inputs[conv::kNarrowScale];
    if (scale >= 0) report.narrowBytes += graph.value(scale).type.bytes();
  }
  return report;
}

std::string describeNarrow(rt::WeightFormat format, const NarrowReport& report) {
  const char* name = format == rt::WeightFormat::kBf16 ? "bf16" : "int8";
  if (report.products == 0 && report.convolutions == 0)
    return fmt::format(
        "note: {} weights: no matrix product (MatMul, Gemm){} with constant float weights to "
        "store narrow",
        name, format == rt::WeightFormat::kBf16 ? " or convolution" : "");
  auto size = [](int64_t bytes) {
    const double b = static_cast<double>(bytes);
    if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
    if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
    if (b >= 1e3) return fmt::format("{:.1f} KB", b / 1e3);
    return fmt::format("{} bytes", bytes);
  };
  std::vector<std::string> parts;  // each kind of layer that has narrow weights
  if (report.products > 0)
    parts.push_back(fmt::format("{} products, {} -> {}", report.products, size(report.floatBytes),
                                size(report.narrowBytes)));
  if (report.convolutions > 0)
    parts.push_back(fmt::format("{} convolutions, {} -> {}", report.convolutions,
                                size(report.convFloatBytes), size(report.convNarrowBytes)));
  return fmt::format("{} weights: {}", name, fmt::join(parts, "; "));
}

}  // namespace cgc::driver
