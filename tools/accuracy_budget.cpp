// See accuracy_budget.h.
#include "tools/accuracy_budget.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "ir/conventions.h"
#include "pipeline/precision.h"
#include "toolchain/build_cache.h"
#include "toolchain/model_session.h"
#include "tools/accuracy_budget_search.h"

namespace cgc::quant {
namespace {

namespace fs = std::filesystem;
using driver::CompiledModel;
using driver::CompileOptions;

/// A model compiled, built and loaded, and its outputs on every check input.
struct Trial {
  CompiledModel model;
  std::unique_ptr<driver::LoadedModel> loaded;
  std::vector<std::vector<std::vector<double>>> outputs;  // [input set][output][value]
};

Trial runTrial(const CompileOptions& options, const std::vector<std::string>& dirs) {
  Trial t;
  const driver::BuiltModel built = driver::compileAndBuild(options, t.model);
  t.loaded = std::make_unique<driver::LoadedModel>(built.library, built.prefix);
  for (const std::string& dir : dirs) {
    driver::setInputs(t.model, *t.loaded, dir, false);
    driver::runOnce(*t.loaded, options.modelPath);
    auto& set = t.outputs.emplace_back();
    for (int i = 0; i < t.loaded->info().num_outputs; ++i)
      set.push_back(driver::toDoubles(driver::outputTensor(*t.loaded, i)));
  }
  return t;
}

struct OutputError {
  std::string name;
  double relative = 0;
  double top1 = -1;     // agreement; -1: not classifier-shaped
  double mismatch = 0;  // the share of rows whose top-1 differs (exact: not 1 - top1)
  /// What the budget bounds: the top-1 disagreement of a classifier, the
  /// relative error of any other output.
  double worst() const { return top1 < 0 ? relative : mismatch; }
};

/// Rank 2 or 3 float, the last dimension >= 2 and the largest: rows of
/// class scores.
bool classifierShaped(const cgc_tensor_info& t) {
  if (t.dtype != static_cast<int32_t>(DType::kF32) || t.rank < 2 || t.rank > 3) return false;
  const int64_t classes = t.shape[t.rank - 1];
  for (int d = 0; d + 1 < t.rank; ++d)
    if (t.shape[d] > classes) return false;
  return classes >= 2;
}

std::vector<OutputError> compare(const Trial& reference, const Trial& trial) {
  const cgc_model_info& info = trial.loaded->info();
  std::vector<OutputError> errors;
  for (int i = 0; i < info.num_outputs; ++i) {
    OutputError e{info.outputs[i].name};
    const bool classes = classifierShaped(info.outputs[i]);
    const auto width =
        static_cast<size_t>(info.outputs[i].shape[std::max(0, info.outputs[i].rank - 1)]);
    double diff = 0, power = 0, rows = 0, agree = 0;
    for (size_t s = 0; s < trial.outputs.size(); ++s) {
      const auto& f = reference.outputs[s][i];
      const auto& q = trial.outputs[s][i];
      for (size_t k = 0; k < f.size() && k < q.size(); ++k)
        diff += (q[k] - f[k]) * (q[k] - f[k]), power += f[k] * f[k];
      if (!classes || width == 0) continue;
      for (size_t r = 0; r + width <= f.size(); r += width, ++rows)
        agree += std::max_element(f.begin() + r, f.begin() + r + width) - f.begin() ==
                 std::max_element(q.begin() + r, q.begin() + r + width) - q.begin();
    }
    e.relative = power > 0 ? std::sqrt(diff / power) : std::sqrt(diff);
    if (classes && rows > 0) e.top1 = agree / rows, e.mismatch = (rows - agree) / rows;
    errors.push_back(e);
  }
  return errors;
}

/// The largest of the outputs' errors: what the budget bounds
/// (OutputError::worst) and the relative error.
BudgetError worstOf(const std::vector<OutputError>& errors) {
  BudgetError worst;
  for (const auto& e : errors)
    worst.budget = std::max(worst.budget, e.worst()),
    worst.relative = std::max(worst.relative, e.relative);
  return worst;
}

/// What the budget measures on one output, for the report and messages.
const char* metricName(const OutputError& e) {
  return e.top1 < 0 ? "relative error" : "top-1 disagreement";
}

/// The metric the budget bounds over all outputs.
std::string metricOf(const std::vector<OutputError>& errors) {
  const auto classifiers =
      std::count_if(errors.begin(), errors.end(), [](const auto& e) { return e.top1 >= 0; });
  if (classifiers == 0) return "relative error";
  if (classifiers == static_cast<std::ptrdiff_t>(errors.size())) return "top-1 disagreement";
  return "top-1 disagreement (classifier-shaped outputs), relative error (others)";
}

/// The output of the largest budget error.
const OutputError* worstOutput(const std::vector<OutputError>& errors) {
  const auto it = std::max_element(errors.begin(), errors.end(), [](const auto& a, const auto& b) {
    return a.worst() < b.worst();
  });
  return it == errors.end() ? nullptr : &*it;
}

/// "top-1 disagreement 0.012 (budget 0.02), relative error 0.31 (output
/// 'y')": the budget's metric on the worst output first.
std::string describeError(const std::vector<OutputError>& errors, double maxError) {
  const OutputError* worst = worstOutput(errors);
  if (!worst) return "no outputs";
  const std::string budget = maxError > 0 ? fmt::format(" (budget {:g})", maxError) : "";
  const BudgetError all = worstOf(errors);
  std::string text = fmt::format("{} {:.4g}{}", metricName(*worst), all.budget, budget);
  if (worst->top1 >= 0) text += fmt::format(", relative error {:.4g}", all.relative);
  return text + fmt::format(" (output '{}')", worst->name);
}

/// Relative rounding and clipping noise of quantising a tensor with these
/// params, over its calibration histogram (bin centres).
double activationNoise(const TensorStats& s, const passes::QuantizeSpec::Tensor& t, DType type) {
  if (s.hi <= s.lo || s.histogram.empty()) return 0;
  const double qMin = ir::conventions::quantMin(type), qMax = ir::conventions::quantMax(type);
  const double width = (s.hi - s.lo) / static_cast<double>(s.histogram.size());
  double noise = 0, power = 0;
  for (size_t k = 0; k < s.histogram.size(); ++k) {
    const double v = s.lo + (static_cast<double>(k) + 0.5) * width;
    const double q = std::clamp(std::nearbyint(v / t.scale) + t.zeroPoint, qMin, qMax);
    const double back = (q - t.zeroPoint) * t.scale;
    const auto n = static_cast<double>(s.histogram[k]);
    noise += n * (back - v) * (back - v), power += n * v * v;
  }
  return power > 0 ? noise / power : 0;
}

/// --weights-only: the products on int8 weights, in graph order, each of
/// sensitivity 0 (there are no activation statistics): the measured
/// ranking orders them.
std::vector<std::pair<std::string, double>> rankNarrowLayers(const CompiledModel& model) {
  namespace conv = ir::conventions;
  std::vector<std::pair<std::string, double>> ranked;
  for (int id : model.graph.topologicalOrder()) {
    const ir::Node& n = model.graph.node(id);
    if (n.op != "MatMulNarrow" || n.inputs[conv::kNarrowScale] < 0) continue;
    ranked.emplace_back(n.name, 0.0);
  }
  return ranked;
}

/// The int8 layers, most sensitive first, with their sensitivity (from the
/// calibration statistics `stats`).
std::vector<std::pair<std::string, double>> rankLayers(
    const CompiledModel& model, const std::map<std::string, TensorStats>& stats) {
  if (!model.quantization) return rankNarrowLayers(model);
  const auto& record = *model.quantization->record;
  std::map<std::string, double> tensorNoise;
  for (const auto& t : record.tensors)
    if (auto it = stats.find(t.name); it != stats.end())
      tensorNoise[t.name] = activationNoise(it->second, t, model.quantization->activations);
  std::vector<std::pair<std::string, double>> ranked;
  for (const auto& l : record.layers)
    ranked.emplace_back(l.name, l.weightNoise + tensorNoise[l.input] + tensorNoise[l.output]);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return ranked;
}

/// Median milliseconds of float and int8, rounds alternating, and the
/// rounds' range of the ratio.
nlohmann::ordered_json measureSpeed(Trial& floatModel, Trial& int8Model,
                                    const CompileOptions& options, const QuantizeOptions& budget) {
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto time = [&](Trial& t) {
    std::vector<double> ms;
    for (int i = 0; i < budget.benchRuns; ++i) {
      const auto start = std::chrono::steady_clock::now();
      driver::runOnce(*t.loaded, options.modelPath);
      ms.push_back(driver::secondsSince(start) * 1e3);
    }
    return median(ms);
  };
  constexpr int kRounds = 5;
  std::vector<double> f, q, ratios;
  time(floatModel), time(int8Model);  // warm-up
  for (int r = 0; r < kRounds; ++r) {
    f.push_back(time(floatModel));
    q.push_back(time(int8Model));
    ratios.push_back(f.back() / q.back());
  }
  const double fm = median(f), qm = median(q);
  return {{"float_ms", fm},
          {"int8_ms", qm},
          {"speedup", fm / qm},
          {"speedup_range",
           {*std::min_element(ratios.begin(), ratios.end()),
            *std::max_element(ratios.begin(), ratios.end())}},
          {"rounds", kRounds},
          {"runs", budget.benchRuns}};
}

}  // namespace

namespace {

/// The levels of the search: int8 and float, or under --precision auto
/// int8, bf16 and fp32 (bf16 taken only by the layers `bf16` names).
struct LevelNames {
  std::vector<std::string> names{"int8", "float"};
  std::map<std::string, std::vector<int>> bf16;  // layer -> {1}: it has a bf16 kernel
  int top() const { return static_cast<int>(names.size()) - 1; }
};

struct Outcome {
  std::vector<std::pair<std::string, double>> analytic;  // the estimated noise, most first
  LevelNames levels;
  LevelSearch search;  // its levels: the layers the budget took out of int8
  std::vector<OutputError> errors;
  nlohmann::ordered_json speed;
};

/// `base` with the layers of `raised` at their levels: bf16 ones in
/// --keep-bf16, the rest in --keep-float.
CompileOptions withLevels(CompileOptions base, const LevelNames& levels, const Levels& raised) {
  for (const auto& [layer, level] : raised)
    (levels.names[level] == "bf16" ? base.quantize.keepBf16 : base.quantize.keepFloat)
        .push_back(layer);
  return base;
}

/// Why the budget left `layer` at `precision` (it took it out of int8).
std::string whyRaised(const Outcome& out, const std::string& layer, const std::string& precision) {
  if (out.levels.top() == 1) return "--max-error";
  if (precision == "bf16") return "--max-error (bf16 enough)";
  return out.levels.bf16.count(layer) ? "--max-error (bf16 not enough)"
                                      : "--max-error (no bf16 kernel)";
}

nlohmann::ordered_json reportJson(const CompileOptions& options, const QuantizeOptions& budget,
                                  const CompiledModel& model, const Outcome& out) {
  const auto& q = options.quantize;
  const std::set<std::string> user(q.keepFloat.begin(), q.keepFloat.end());
  const std::set<std::string> userBf16(q.keepBf16.begin(), q.keepBf16.end());
  const auto& alone = out.search.toTop.floatAlone;
  const auto lowered = out.search.lowered.find(1);
  const std::map<std::string, double> sensitivity(out.analytic.begin(), out.analytic.end());
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  std::map<std::string, int> counts;
  for (int id : model.graph.liveNodes()) {
    const ir::Node& n = model.graph.node(id);
    const std::string precision = driver::layerPrecision(n);
    if (precision.empty()) continue;
    ++counts[precision];
    const bool int8 = precision.rfind("int8", 0) == 0;
    // An int8 product that writes int32 sums keeps a float output (a
    // classifier's logits: fuse-quantized dequantises the sums).
    const bool floatOutput = (n.op != "QLinearConv" && n.op != "QLinearMatMul") ||
                             model.graph.value(n.outputs[0]).type.dtype == DType::kI32;
    nlohmann::ordered_json row = {{"name", n.name},
                                  {"op", n.op},
                                  {"precision", precision},
                                  {"output", floatOutput ? "float" : "int8"}};
    if (!int8)
      row["why"] = user.count(n.name)                ? "--keep-float"
                   : userBf16.count(n.name)          ? "--keep-bf16"
                   : out.search.levels.count(n.name) ? whyRaised(out, n.name, precision)
                   : q.weightsOnly ? "not quantised (no constant weights, or a convolution)"
                                   : "not quantised (no calibrated range or no constant weights)";
    if (auto it = sensitivity.find(n.name); it != sensitivity.end())
      row["sensitivity"] = it->second;
    if (auto it = alone.find(n.name); it != alone.end())
      row["error_float_alone"] = it->second.budget,
      row["relative_error_float_alone"] = it->second.relative;
    if (lowered != out.search.lowered.end())
      if (auto it = lowered->second.floatAlone.find(n.name); it != lowered->second.floatAlone.end())
        row["error_fp32_alone_over_bf16"] = it->second.budget;
    layers.push_back(row);
  }
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  const auto noTensors = std::make_shared<passes::QuantizeSpec::Record>();
  for (const auto& t : (model.quantization ? model.quantization->record : noTensors)->tensors)
    tensors.push_back({{"name", t.name},
                       {"min", t.lo},
                       {"max", t.hi},
                       {"scale", t.scale},
                       {"zero_point", t.zeroPoint}});
  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
  for (const auto& e : out.errors) {
    nlohmann::ordered_json row = {{"name", e.name},
                                  {"metric", metricName(e)},
                                  {"error", e.worst()},
                                  {"relative_error", e.relative}};
    if (e.top1 >= 0) row["top1_agreement"] = e.top1;
    outputs.push_back(row);
  }
  auto steps = [](const std::vector<BudgetTrial>& trials) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& t : trials)
      rows.push_back({{"float_layers", t.floatLayers.size()},
                      {"worst_error", t.error.budget},
                      {"worst_relative_error", t.error.relative}});
    return rows;
  };
  nlohmann::ordered_json report = {
      {"model", options.modelPath},
      {"calibration", q.calibration},
      {"method", q.method},
      {"activations", q.weightsOnly ? "float" : q.activations},
      {"precision", options.precision},
      {"max_error", budget.maxError > 0 ? nlohmann::ordered_json(budget.maxError) : nullptr},
      {"metric", metricOf(out.errors)},
      {"check_inputs", budget.checkInputs.size()},
      {"layers_per_precision", counts},
      {"layers", layers},
      {"outputs", outputs},
      {"trials", steps(out.search.toTop.trials)}};
  // --precision auto: the trials that lowered the float layers to bf16 (the
  // first: all of them; then those returned to fp32).
  if (lowered != out.search.lowered.end()) report["bf16_trials"] = steps(lowered->second.trials);
  report["speed"] = out.speed;
  report["tensors"] = tensors;
  return report;
}

std::string reportText(const nlohmann::ordered_json& r) {
  const std::string calibration = r["calibration"].get<std::string>();
  std::string text =
      calibration.empty()
          ? fmt::format("cgc quantisation report: {}\nint8 weights only, activations float\n\n",
                        r["model"].get<std::string>())
          : fmt::format(
                "cgc quantisation report: {}\ncalibration {}, method {}, activations {}\n\n",
                r["model"].get<std::string>(), calibration, r["method"].get<std::string>(),
                r["activations"].get<std::string>());
  // sensitivity: the analytic noise estimate; float alone: measured
  // (--max-error), the budget's metric with the layer alone in float.
  auto number = [](const nlohmann::ordered_json& l, const char* key) {
    return l.contains(key) ? fmt::format("{:.3g}", l[key].get<double>()) : std::string("-");
  };
  text += fmt::format("{:<40} {:<14} {:<9} {:<6} {:>11} {:>11}  {}\n", "layer", "op", "precision",
                      "output", "sensitivity", "float alone", "why float");
  for (const auto& l : r["layers"])
    text +=
        fmt::format("{:<40} {:<14} {:<9} {:<6} {:>11} {:>11}  {}\n", l["name"].get<std::string>(),
                    l["op"].get<std::string>(), l["precision"].get<std::string>(),
                    l["output"].get<std::string>(), number(l, "sensitivity"),
                    number(l, "error_float_alone"), l.value("why", ""));
  if (!r["outputs"].empty()) {
    text += fmt::format(
        "\noutputs against the float model on {} check input(s):\n{:<30} {:<19} {:>8} {:>15} "
        "{:>16}\n",
        r["check_inputs"].get<size_t>(), "output", "budget metric", "error", "relative error",
        "top-1 agreement");
    for (const auto& o : r["outputs"])
      text += fmt::format("{:<30} {:<19} {:>8.3g} {:>15.3g} {:>16}\n", o["name"].get<std::string>(),
                          o["metric"].get<std::string>(), o["error"].get<double>(),
                          o["relative_error"].get<double>(),
                          o.contains("top1_agreement")
                              ? fmt::format("{:.2f}%", 100 * o["top1_agreement"].get<double>())
                              : "-");
  }
  text += "\nlayers per precision:";
  for (const auto& [precision, count] : r["layers_per_precision"].items())
    text += fmt::format(" {} {};", precision, count.get<int>());
  text += "\n";
  auto trials = [&](const nlohmann::ordered_json& steps) {
    for (const auto& s : steps)
      text +=
          fmt::format(" {}: {:.3g};", s["float_layers"].get<int>(), s["worst_error"].get<double>());
    text += "\n";
  };
  if (!r["max_error"].is_null()) {
    text += fmt::format("\nbudget --max-error {} on the {}; trials (layers in float: error):",
                        r["max_error"].get<double>(), r["metric"].get<std::string>());
    trials(r["trials"]);
  }
  if (r.contains("bf16_trials")) {
    text += "then those layers in bf16, trials (layers returned to fp32: error):";
    trials(r["bf16_trials"]);
  }
  if (!r["speed"].is_null()) {
    const auto& s = r["speed"];
    text += fmt::format(
        "\nspeed ({} rounds of {} runs, alternated): float {:.3f} ms, int8 {:.3f} ms: {:.2f}x "
        "({:.2f}-{:.2f}x)\n",
        s["rounds"].get<int>(), s["runs"].get<int>(), s["float_ms"].get<double>(),
        s["int8_ms"].get<double>(), s["speedup"].get<double>(), s["speedup_range"][0].get<double>(),
        s["speedup_range"][1].get<double>());
  }
  return text;
}

void writeReport(const std::string& path, const nlohmann::ordered_json& report) {
  const fs::path json(path);
  const fs::path text = fs::path(path).replace_extension(".txt");
  std::ofstream(json) << report.dump(1) << "\n";
  std::ofstream out(text);
  out << reportText(report);
  if (!out) userError({path, "", ""}, "--quantize-report: cannot write the report");
}

/// The budget's search (tools/accuracy_budget_search.h) over trials that
/// compile, build and run the model on the check inputs; `trial` ends as
/// the model of the levels it chose, `out` with its errors.
/// CompileError (after the report) where the budget cannot be met.
void search(const CompileOptions& options, const CompileOptions& base, const Trial& reference,
            Trial& trial, Outcome& out) {
  const QuantizeOptions& budget = options.quantize;
  std::vector<std::string> layers;
  for (const auto& [name, noise] : out.analytic) layers.push_back(name);
  Levels last;
  auto measure = [&](const Levels& raised) {
    trial = runTrial(withLevels(base, out.levels, raised), budget.checkInputs);
    out.errors = compare(reference, trial);
    last = raised;
    return worstOf(out.errors);
  };
  auto progress = [&](int level, const std::string& what, const BudgetTrial& t) {
    driver::progress(
        options, fmt::format("quantize: {}: {} layer(s) in {}{}: {}", what, t.floatLayers.size(),
                             out.levels.names[level],
                             t.floatLayers.size() == 1 ? " ('" + t.floatLayers[0] + "')" : "",
                             describeError(out.errors, budget.maxError)));
  };
  out.search = searchLevels(layers, out.levels.top(), out.levels.bf16, budget.maxError,
                            worstOf(out.errors), measure, progress);
  if (last != out.search.levels) measure(out.search.levels);
  if (out.search.met) return;
  if (!budget.report.empty())
    writeReport(budget.report, reportJson(options, budget, trial.model, out));
  throw CompileError(fmt::format(
      "{}: error: --max-error {} cannot be met: with {} of {} int8 layers returned to float "
      "the worst {}",
      options.modelPath, budget.maxError, out.search.levels.size(), layers.size(),
      describeError(out.errors, budget.maxError)));
}

/// --precision auto's checks: int8 activations (its cheapest level) and a
/// budget.
void checkAuto(const QuantizeOptions& q) {
  if (!q.activations8())
    throw CompileError(
        "cgc: error: --precision auto needs --quantize int8 --calibration FILE (not "
        "--weights-only): int8 is its cheapest level");
  if (!(q.maxError > 0))
    throw CompileError(
        "cgc: error: --precision auto needs --max-error E (the budget each layer's choice keeps)");
}

/// The layers of `floatOptions`' model that have a bf16 kernel: compiled
/// (not built) with --precision bf16, the products and convolutions that
/// narrow-weights and pack-conv-weights store in bfloat16.
std::map<std::string, std::vector<int>> bf16Layers(CompileOptions floatOptions) {
  floatOptions.precision = "bf16";
  const CompiledModel model = driver::compileModel(floatOptions);
  std::map<std::string, std::vector<int>> layers;
  for (int id : model.graph.liveNodes())
    if (driver::layerPrecision(model.graph.node(id)) == "bf16")
      layers[model.graph.node(id).name] = {1};
  return layers;
}

/// --precision auto's levels: int8, bf16 and fp32, or where the target
/// lacks the bf16 tier int8 and fp32 (saying so).
LevelNames autoLevels(const CompileOptions& options, const CompileOptions& floatOptions) {
  LevelNames levels{{"int8", "bf16", "fp32"}, {}};
  if (driver::targetHasBf16(options.target())) {
    levels.bf16 = bf16Layers(floatOptions);
    return levels;
  }
  std::cerr << fmt::format(
                   "cgc: note: --precision auto: target '{}' lacks avx512bf16 (the bf16 tier): "
                   "each layer is int8 or fp32",
                   options.target().name)
            << std::endl;
  return levels;
}

}  // namespace

CompileOptions applyBudget(const CompileOptions& options) {
  const QuantizeOptions& budget = options.quantize;
  const bool autoPrecision = options.precision == "auto";
  if (autoPrecision) checkAuto(budget);
  if (!budget.measured()) return options;
  if (!budget.enabled())
    throw CompileError(
        "cgc: error: --max-error, --check-inputs and --quantize-report need --quantize int8");
  if (budget.maxError > 0 && budget.checkInputs.empty())
    throw CompileError(
        "cgc: error: --max-error needs --check-inputs DIR... (held-out inputs, not the "
        "calibration's)");
  for (const std::string& dir : budget.checkInputs)
    if (!fs::is_directory(dir)) userError({dir, "", ""}, "--check-inputs: no such directory");
  // The trials are built apart from the cache and removed with it.
  const cache::TrialBuilds trialBuilds("budget");
  CompileOptions base = driver::withModel(options);
  std::map<std::string, TensorStats> stats;
  // --weights-only: no calibration, no spec; narrow-weights leaves the
  // products named in --keep-float in float.
  if (!budget.weightsOnly) base.overrides.quantizeSpec = makeSpec(options.quantize, &stats);
  base.quiet = true;
  if (autoPrecision) base.precision = "fp32";  // with --keep-bf16 lists
  base.quantize.maxError = 0;                  // the trials only compile
  base.quantize.checkInputs.clear();
  base.quantize.report.clear();
  CompileOptions floatOptions = base;
  floatOptions.quantize = {};
  floatOptions.overrides.quantizeSpec = nullptr;
  const auto& dirs = budget.checkInputs;
  Trial reference = dirs.empty() ? Trial{} : runTrial(floatOptions, dirs);
  Trial trial = runTrial(base, dirs);
  Outcome out;
  if (autoPrecision) out.levels = autoLevels(options, floatOptions);
  out.analytic = rankLayers(trial.model, stats);
  out.errors = dirs.empty() ? std::vector<OutputError>{} : compare(reference, trial);
  if (!dirs.empty()) {
    out.search.toTop.trials.push_back({{}, worstOf(out.errors)});
    driver::progress(options, "quantize: all int8: " + describeError(out.errors, budget.maxError));
  }
  if (budget.maxError > 0 && worstOf(out.errors).budget > budget.maxError)
    search(options, base, reference, trial, out);
  if (!dirs.empty()) out.speed = measureSpeed(reference, trial, options, budget);
  if (!dirs.empty() && out.speed["speedup"].get<double>() < 1)
    driver::progress(options,
                     fmt::format("note: with {} of {} layers out of int8 the quantised model runs "
                                 "{:.2f}x as fast as the float one: the float model is faster",
                                 out.search.levels.size(), out.analytic.size(),
                                 out.speed["speedup"].get<double>()));
  const nlohmann::ordered_json report = reportJson(options, budget, trial.model, out);
  if (!budget.report.empty()) writeReport(budget.report, report);
  if (autoPrecision) {
    std::string counts;
    for (const auto& [precision, count] : report["layers_per_precision"].items())
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", count.get<int>(), precision);
    driver::progress(options, fmt::format("precision auto: {} layers (Conv, MatMul, Gemm); {}",
                                          counts, describeError(out.errors, budget.maxError)));
  }
  CompileOptions result = withLevels(options, out.levels, out.search.levels);
  if (autoPrecision) result.precision = "fp32";
  result.overrides.quantizeSpec = base.overrides.quantizeSpec;
  result.overrides.model = base.overrides.model;
  return result;
}

}  // namespace cgc::quant
