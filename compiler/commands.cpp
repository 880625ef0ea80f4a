// The cgc subcommands: compile, run, inspect.
#include "compiler/commands.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "onnx_frontend/onnx_loader.h"
#include "onnx_frontend/tensor_proto.h"
#include "pipeline/input_shapes.h"
#include "planning/cost_model.h"
#include "toolchain/build_cache.h"
#include "toolchain/build_library.h"
#include "toolchain/model_runner.h"
#include "toolchain/target_library.h"
#include "tools/accuracy_budget.h"

namespace cgc::commands {
namespace fs = std::filesystem;

namespace {

std::string preview(const frontend::HostTensor& t) {
  int64_t n = t.type.numElements();
  if (n == 0) return "(empty)";
  auto values = driver::toDoubles(t);
  std::vector<std::string> shown;
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i)
    shown.push_back(fmt::format("{:.6g}", values[i]));
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  return fmt::format("{}{}  (min {:.6g}, max {:.6g}, mean {:.6g})", fmt::join(shown, " "),
                     n > 6 ? " ..." : "", *lo, *hi, sum / static_cast<double>(n));
}

/// The errors of one output against its expected values. An element
/// passes when |actual - expected| <= atol + rtol x |expected|.
struct Comparison {
  double maxAbs = 0, maxRel = 0;
  double relAt = 0;  // the expected value where the relative error is largest
  int64_t elements = 0, bad = 0, firstBad = -1;
  double badActual = 0, badExpected = 0;  // at firstBad
  bool allWithinRtol = true;              // rtol x |expected| alone passes every element

  /// "max abs error 2e-07, max rel error 1.03 (where expected is 1.9e-07):
  /// ok, every error within atol 0.0001" and the like: which tolerance
  /// passed it, or how many elements it failed.
  std::string report(double rtol, double atol) const {
    std::string out = fmt::format("max abs error {:.3g}, max rel error {:.3g}", maxAbs, maxRel);
    if (maxRel > rtol) out += fmt::format(" (where expected is {:.3g})", relAt);
    const std::string both = fmt::format("atol {:.3g} + rtol {:.3g} x |expected|", atol, rtol);
    if (bad > 0)
      return out + fmt::format(": {} of {} elements differ by more than {} (first at {}: {} vs {})",
                               bad, elements, both, firstBad, badActual, badExpected);
    if (maxAbs <= atol) return out + fmt::format(": ok, every error within atol {:.3g}", atol);
    if (allWithinRtol)
      return out + fmt::format(": ok, every error within rtol {:.3g} x |expected|", rtol);
    return out + ": ok, every error within " + both;
  }
};

Comparison compare(const std::vector<double>& a, const std::vector<double>& e, double rtol,
                   double atol) {
  Comparison c;
  c.elements = static_cast<int64_t>(e.size());
  for (size_t k = 0; k < e.size(); ++k) {
    if (std::isnan(e[k]) && std::isnan(a[k])) continue;
    double diff = std::fabs(a[k] - e[k]);
    if (std::isinf(e[k]) && a[k] == e[k]) diff = 0;
    c.maxAbs = std::max(c.maxAbs, diff);
    if (e[k] != 0 && diff / std::fabs(e[k]) > c.maxRel) {
      c.maxRel = diff / std::fabs(e[k]);
      c.relAt = e[k];
    }
    if (!(diff <= rtol * std::fabs(e[k]))) c.allWithinRtol = false;
    if (!(diff <= atol + rtol * std::fabs(e[k]))) {
      if (c.firstBad < 0) {
        c.firstBad = static_cast<int64_t>(k);
        c.badActual = a[k];
        c.badExpected = e[k];
      }
      ++c.bad;
    }
  }
  return c;
}

/// Compares against DIR/output_i.pb (a sequence output's file against its
/// tensors, outputs NAME[0], NAME[1], ...); returns whether all match.
bool checkOutputs(const std::string& dir, const std::string& modelPath,
                  const driver::LoadedModel& model, double rtol, double atol) {
  bool allMatch = true;
  const auto& info = model.info();
  const std::vector<frontend::HostTensor> expectedOutputs =
      frontend::readExpectedOutputs(modelPath, dir);
  if (static_cast<int>(expectedOutputs.size()) != info.num_outputs) {
    std::cout << fmt::format("check: the model has {} output tensors, {} holds {}\n",
                             info.num_outputs, dir, expectedOutputs.size());
    return false;
  }
  for (int i = 0; i < info.num_outputs; ++i) {
    const frontend::HostTensor& expected = expectedOutputs[i];
    frontend::HostTensor actual = driver::outputTensor(model, i);
    if (expected.type != actual.type) {
      std::cout << fmt::format("check: output '{}' is {} but {} holds {}\n", info.outputs[i].name,
                               actual.type.str(), dir, expected.type.str());
      allMatch = false;
      continue;
    }
    const Comparison c =
        compare(driver::toDoubles(actual), driver::toDoubles(expected), rtol, atol);
    std::cout << fmt::format("check: output '{}': {}\n", info.outputs[i].name,
                             c.report(rtol, atol));
    allMatch &= c.bad == 0;
  }
  return allMatch;
}

/// The bytes of every input (or output) of the loaded model.
std::vector<std::vector<uint8_t>> snapshot(driver::LoadedModel& model, bool inputs) {
  const auto& info = model.info();
  std::vector<std::vector<uint8_t>> bytes;
  for (int i = 0; i < (inputs ? info.num_inputs : info.num_outputs); ++i)
    bytes.push_back(model.readTensor(inputs, i));
  return bytes;
}

/// run() must leave its inputs as the caller wrote them and give the same
/// outputs when called again: checked on every `cgc run` (a second run costs
/// little next to compiling), so every test that runs a model checks it.
void requireRepeatable(driver::LoadedModel& model,
                       const std::vector<std::vector<uint8_t>>& inputsBefore) {
  const auto& info = model.info();
  auto differs = [](const char* what, const char* name, const std::vector<uint8_t>& a,
                    const std::vector<uint8_t>& b) {
    if (a != b)
      throw InternalError(fmt::format(
          "internal error: run() {} '{}' (the library contract is broken)", what, name));
  };
  const auto inputsAfter = snapshot(model, true);
  for (int i = 0; i < info.num_inputs; ++i)
    differs("changed input", info.inputs[i].name, inputsBefore[i], inputsAfter[i]);
  const auto first = snapshot(model, false);
  const Status status = model.run();
  if (!status.ok())
    throw InternalError(
        fmt::format("internal error: run() failed on its second call: {}", status.message()));
  const auto second = snapshot(model, false);
  for (int i = 0; i < info.num_outputs; ++i)
    differs("gave another answer on its second call for output", info.outputs[i].name, first[i],
            second[i]);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

std::vector<std::pair<std::string, ir::Shape>> parseShapeBindings(
    const std::vector<std::string>& texts) {
  std::vector<std::pair<std::string, ir::Shape>> bindings;
  for (const auto& text : texts) {
    size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0)
      throw CompileError(
          fmt::format("cgc: error: --shape '{}' is not of the form NAME=1x3x224x224", text));
    bindings.emplace_back(text.substr(0, eq), frontend::parseShape(text.substr(eq + 1)));
  }
  return bindings;
}

std::map<std::string, int64_t> parseBounds(const std::vector<std::string>& texts) {
  std::map<std::string, int64_t> bounds;
  for (const auto& text : texts) {
    const size_t eq = text.rfind('=');
    size_t used = 0;
    int64_t value = -1;
    try {
      if (eq != std::string::npos) value = std::stoll(text.substr(eq + 1), &used);
    } catch (const std::exception&) {
    }
    if (eq == std::string::npos || eq == 0 || used == 0 || used != text.size() - eq - 1 ||
        value < 0 || value > ir::kMaxTensorBytes)
      throw CompileError(
          fmt::format("cgc: error: --bound '{}' is not of the form NAME=N (0 <= N <= 2^40)", text));
    bounds[text.substr(0, eq)] = value;
  }
  return bounds;
}

std::vector<std::pair<std::string, std::string>> parseNamedFiles(
    const std::vector<std::string>& texts) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& text : texts) {
    size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      throw CompileError(
          fmt::format("cgc: error: --constant '{}' is not of the form NAME=FILE.pb", text));
    pairs.emplace_back(text.substr(0, eq), text.substr(eq + 1));
  }
  return pairs;
}

namespace {

/// `path` with make's special characters escaped.
std::string makeEscaped(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#' || c == '\\') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

void writeDepfile(const std::string& depfile, const std::vector<driver::WrittenFiles>& written,
                  const driver::CompileOptions& options) {
  std::vector<std::string> outputs, inputs{options.modelPath};
  for (const driver::WrittenFiles& files : written)
    for (const std::string& path : {files.headerPath, files.sourcePath, files.weightsPath})
      if (!path.empty()) outputs.push_back(path);
  const fs::path folder = fs::path(options.modelPath).parent_path();
  for (const frontend::ExternalDataFile& file : options.overrides.model->summary().externalData)
    inputs.push_back((folder / file.location).string());
  for (const auto& [name, file] : options.load.constantInputs) inputs.push_back(file);
  for (const std::string& file : {options.profilePath, options.quantize.calibration})
    if (!file.empty()) inputs.push_back(file);
  std::string text;
  for (const std::string& path : outputs) text += makeEscaped(path) + ' ';
  text += ':';
  for (const std::string& path : inputs) text += " \\\n  " + makeEscaped(path);
  std::ofstream file(depfile);
  file << text << '\n';
  if (!file) userError({depfile, "", ""}, "--depfile: cannot write the file");
}

}  // namespace

int compile(const driver::CompileOptions& given, const std::string& depfile) {
  driver::checkedNames(given);
  // Read once for every target's compile and the depfile.
  const driver::CompileOptions options = driver::withModel(quant::applyBudget(given));
  std::vector<driver::WrittenFiles> written;
  if (driver::namesSeveralTargets(options)) {
    written =
        driver::writeTargetLibrary(driver::emitTargetLibrary(options), options.outDir, options);
  } else {
    auto model = driver::compileModel(options);
    written.push_back(
        driver::writeModel(driver::emitModel(model, options), options.outDir, options));
  }
  if (!depfile.empty()) writeDepfile(depfile, written, options);
  return 0;
}

namespace {

/// The --bench runs: median and minimum milliseconds as the JSON line
/// (with the variable dimensions' sizes).
void bench(driver::LoadedModel& loaded, const RunOptions& options) {
  for (int i = 0; i < 3; ++i) driver::runOnce(loaded, options.compile.modelPath);
  std::vector<double> times;
  for (int i = 0; i < options.benchRuns; ++i) {
    const auto start = std::chrono::steady_clock::now();
    driver::runOnce(loaded, options.compile.modelPath);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  const auto& info = loaded.info();
  nlohmann::json line = {{"model", info.name},
                         {"median_ms", median(times)},
                         {"min_ms", *std::min_element(times.begin(), times.end())},
                         {"runs", options.benchRuns},
                         {"executors", info.executors},
                         {"threads", loaded.threadsPerExecutor()},
                         {"placement", loaded.placement()}};
  for (int i = 0; i < info.num_inputs; ++i)
    for (int a = 0; info.inputs[i].dims && a < info.inputs[i].rank; ++a)
      if (const int j = info.inputs[i].dims[a]; j >= 0)
        line["dims"][info.dims[j].name] = loaded.inputShape(i)[static_cast<size_t>(a)];
  std::cout << line.dump() << std::endl;
}

/// --sweep: --bench at each combination of sizes, the other dimensions
/// as the inputs gave them, the inputs filled with deterministic data.
void sweep(driver::LoadedModel& loaded, const RunOptions& options) {
  const auto& info = loaded.info();
  for (const auto& sizes : options.sweep) {
    for (int i = 0; i < info.num_inputs; ++i) {
      std::vector<int64_t> shape = loaded.inputShape(i);
      for (int a = 0; info.inputs[i].dims && a < info.inputs[i].rank; ++a)
        if (const int j = info.inputs[i].dims[a]; j >= 0 && sizes.count(info.dims[j].name))
          shape[static_cast<size_t>(a)] = sizes.at(info.dims[j].name);
      if (const Status status = loaded.setInputShape(i, shape); !status.ok())
        userError({options.compile.modelPath, "", ""}, "--sweep: {}", status.message());
      driver::fillDeterministic(info.inputs[i], loaded.input(i));  // its buffer holds the bounds
    }
    bench(loaded, options);
  }
}

void printOutputs(const driver::LoadedModel& loaded, const std::string& outputsDir) {
  const auto& info = loaded.info();
  for (int i = 0; i < info.num_outputs; ++i) {
    const frontend::HostTensor t = driver::outputTensor(loaded, i);
    std::cout << fmt::format("output '{}' {}: {}\n", t.name, t.type.str(), preview(t));
    if (outputsDir.empty()) continue;
    fs::create_directories(outputsDir);
    frontend::writeTensorFile(fmt::format("{}/output_{}.pb", outputsDir, i), t);
  }
}

void writeProfiles(const Profiler& profiler, const RunOptions& options) {
  if (!options.profileOut.empty() && !profiler.write_profile(options.profileOut))
    userError({options.profileOut, "", ""}, "cannot write the profile");
  if (!options.traceOut.empty() && !profiler.write_trace(options.traceOut))
    userError({options.traceOut, "", ""}, "cannot write the trace");
}

void writeStatistics(const Profiler& profiler, const RunOptions& options) {
  if (!profiler.write_calibration(options.statisticsOut))
    userError({options.statisticsOut, "", ""}, "cannot write the statistics: {}",
              std::strerror(errno));
  driver::progress(options.compile,
                   fmt::format("wrote the run's tensor statistics to {}", options.statisticsOut));
}

}  // namespace

namespace {

/// The model as built into --library: the symbols of --name, and the same
/// graph, schedule and memory plan as this compile (else the library holds
/// another model, or one compiled with other options).
driver::BuiltModel prebuilt(const RunOptions& options, const codegen::ModelNames& names) {
  if (options.compile.className.empty())
    throw CompileError("cgc: error: --library needs the model's --name (its class name)");
  if (!fs::is_regular_file(options.library))
    userError({options.library, "", ""}, "--library: no such file");
  return {options.library, names.prefix};
}

void requireSameModel(const driver::CompiledModel& model, const driver::LoadedModel& loaded,
                      const RunOptions& options) {
  // The graph after the passes and the schedule. Not the arena: codegen
  // adds the size slots of data-dependent extents to the plan's.
  const cgc_model_info& info = loaded.info();
  const std::string hash = passes::graphHash(model.graph);
  if (hash != info.graph_hash || info.executors != model.schedule.executors)
    userError({options.library, "", ""},
              "'{}' in the library was compiled from another graph or with other options "
              "(graph hash {} vs {}, {} vs {} executors)",
              options.compile.className, info.graph_hash, hash, info.executors,
              model.schedule.executors);
}

}  // namespace

int build(const BuildOptions& options) {
  driver::CompileOptions compile;
  compile.quiet = options.quiet;
  driver::buildLibrary(options.sources, options.library, options.verify, options.optLevel, compile);
  return 0;
}

int run(const RunOptions& given) {
  RunOptions options = given;
  // --sweep writes deterministic data into every input at each size.
  options.fillMissingInputs |= !options.sweep.empty();
  if (!options.inputsDir.empty() && !fs::is_directory(options.inputsDir))
    userError({options.inputsDir, "", ""}, "--inputs: no such directory");
  options.compile.observe |= !options.statisticsOut.empty();
  bindShapesFromInputs(options.compile, options.inputsDir);
  const codegen::ModelNames names = driver::checkedNames(options.compile);
  options.compile = quant::applyBudget(options.compile);
  // Read by the runtime when the instance is created (ExecutorPool).
  if (options.oversubscribe) setenv("CGC_OVERSUBSCRIBE", "1", 1);
  const bool several = driver::namesSeveralTargets(options.compile);
  std::vector<std::string> onnxInputs;
  const driver::BuiltModel built = options.library.empty()
                                       ? driver::compileOnce(options.compile, onnxInputs)
                                       : prebuilt(options, names);
  driver::LoadedModel loaded(built.library, built.prefix);
  if (!options.library.empty()) {
    // A library for several targets is checked against the build it runs.
    driver::CompileOptions one = options.compile;
    if (several) one.targets = {driver::findTarget(loaded.info().target)};
    const driver::CompiledModel model = driver::compileModel(one);
    onnxInputs = model.graph.onnxInputNames;
    requireSameModel(model, loaded, options);
  }
  if (several)
    driver::progress(options.compile,
                     fmt::format("this CPU runs the {} build (of {})", loaded.info().target,
                                 driver::targetList(options.compile.targets)));
  driver::progress(options.compile, "running on " + loaded.placement());
  driver::setInputs(onnxInputs, loaded, options.inputsDir, options.fillMissingInputs);

  // Profiles and traces record the --bench runs, warm; without --bench, the
  // one cold run (first touch of the arena and the weights), and say so.
  // Statistics record the first run, on the inputs given.
  Profiler cold, warm;
  const bool profiling = !options.profileOut.empty() || !options.traceOut.empty();
  const bool coldProfile = profiling && options.benchRuns == 0;
  if (coldProfile)
    driver::progress(options.compile,
                     "note: the profile records one cold run (--bench N "
                     "records N warm runs)");
  if (!options.statisticsOut.empty()) cold.record_statistics();
  if (coldProfile || !options.statisticsOut.empty()) loaded.setProfiler(&cold);
  const std::vector<std::vector<uint8_t>> inputsBefore = snapshot(loaded, true);
  driver::runOnce(loaded, options.compile.modelPath);
  loaded.setProfiler(nullptr);
  if (!options.statisticsOut.empty()) writeStatistics(cold, options);
  requireRepeatable(loaded, inputsBefore);
  printOutputs(loaded, options.outputsDir);
  const bool matches =
      options.checkDir.empty() ||
      checkOutputs(options.checkDir, options.compile.modelPath, loaded, options.rtol, options.atol);
  if (profiling && options.benchRuns > 0) loaded.setProfiler(&warm);
  if (options.benchRuns > 0 && options.sweep.empty()) bench(loaded, options);
  if (options.benchRuns > 0) sweep(loaded, options);
  loaded.setProfiler(nullptr);
  if (profiling) writeProfiles(coldProfile ? cold : warm, options);
  if (!matches) {
    std::cerr << fmt::format("{}: error: outputs differ from the expected ones in {}\n",
                             options.compile.modelPath, options.checkDir);
    return 1;
  }
  return 0;
}

}  // namespace cgc::commands
