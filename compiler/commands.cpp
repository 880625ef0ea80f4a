// The cgc subcommands: compile, run, inspect.
#include "compiler/commands.h"

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "compiler/model_runner.h"
#include "onnx_frontend/tensor_proto.h"

namespace cgc::commands {
namespace fs = std::filesystem;

namespace {

uint64_t fnv1a(const void* data, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

ir::TensorType typeOf(const cgc_tensor_info& info) {
  return {static_cast<DType>(info.dtype),
          ir::Shape(info.shape, info.shape + info.rank)};
}

/// Deterministic input data: uniform in [-1, 1) for floats, 0..9 for
/// integers, alternating for bool.
void fillDeterministic(const cgc_tensor_info& info, void* data) {
  uint64_t state = 0x9E3779B97F4A7C15ull ^ fnv1a(info.name, std::strlen(info.name));
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  ir::TensorType type = typeOf(info);
  int64_t n = type.numElements();
  auto fill = [&](auto* p, auto value) {
    for (int64_t i = 0; i < n; ++i) p[i] = value(i);
  };
  switch (type.dtype) {
    case DType::kF32:
      fill(static_cast<float*>(data), [&](int64_t) { return next() / 2147483648.0f - 1.0f; });
      break;
    case DType::kF64:
      fill(static_cast<double*>(data), [&](int64_t) { return next() / 2147483648.0 - 1.0; });
      break;
    case DType::kI64:
      fill(static_cast<int64_t*>(data), [&](int64_t) { return int64_t(next() % 10); });
      break;
    case DType::kI32:
      fill(static_cast<int32_t*>(data), [&](int64_t) { return int32_t(next() % 10); });
      break;
    case DType::kBool:
      fill(static_cast<uint8_t*>(data), [&](int64_t i) { return uint8_t(i % 2); });
      break;
    default:
      fill(static_cast<uint8_t*>(data), [&](int64_t) { return uint8_t(next() % 10); });
      std::memset(data, 0, type.bytes());
  }
}

void loadInput(const std::string& path, const cgc_tensor_info& info, void* data) {
  frontend::HostTensor tensor = frontend::readTensorFile(path);
  ir::TensorType expected = typeOf(info);
  if (tensor.type.dtype != expected.dtype || tensor.type.shape != expected.shape)
    userError({path, "", ""},
              "tensor '{}' is {} but input '{}' of the model is {}",
              tensor.name, tensor.type.str(), info.name, expected.str());
  std::memcpy(data, tensor.bytes.data(), tensor.bytes.size());
}

frontend::HostTensor outputTensor(const cgc_tensor_info& info, const void* data) {
  frontend::HostTensor t{info.name, typeOf(info), {}};
  const auto* bytes = static_cast<const uint8_t*>(data);
  t.bytes.assign(bytes, bytes + info.bytes);
  return t;
}

/// A tensor's elements as doubles, through the IR's constant reader.
std::vector<double> toDoubles(const frontend::HostTensor& t) {
  ir::Value value;
  value.type = t.type;
  value.kind = ir::ValueKind::kConstant;
  value.data = std::make_shared<const std::vector<uint8_t>>(t.bytes);
  return value.doubleValues();
}

std::string preview(const frontend::HostTensor& t) {
  int64_t n = t.type.numElements();
  if (n == 0) return "(empty)";
  auto values = toDoubles(t);
  std::vector<std::string> shown;
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i)
    shown.push_back(fmt::format("{:.6g}", values[i]));
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  return fmt::format("{}{}  (min {:.6g}, max {:.6g}, mean {:.6g})",
                     fmt::join(shown, " "), n > 6 ? " ..." : "", *lo, *hi,
                     sum / static_cast<double>(n));
}

/// Compares against DIR/output_i.pb; returns whether all match.
bool checkOutputs(const std::string& dir, const driver::LoadedModel& model,
                  double rtol, double atol) {
  bool allMatch = true;
  const auto& info = model.info();
  for (int i = 0; i < info.num_outputs; ++i) {
    std::string path = fmt::format("{}/output_{}.pb", dir, i);
    frontend::HostTensor expected = frontend::readTensorFile(path);
    frontend::HostTensor actual = outputTensor(info.outputs[i], model.output(i));
    if (expected.type != actual.type) {
      std::cout << fmt::format("check: output '{}' is {} but {} holds {}\n",
                               info.outputs[i].name, actual.type.str(), path,
                               expected.type.str());
      allMatch = false;
      continue;
    }
    auto e = toDoubles(expected), a = toDoubles(actual);
    double maxAbs = 0, maxRel = 0;
    int64_t bad = 0, firstBad = -1;
    for (size_t k = 0; k < e.size(); ++k) {
      if (std::isnan(e[k]) && std::isnan(a[k])) continue;
      double diff = std::fabs(a[k] - e[k]);
      if (std::isinf(e[k]) && a[k] == e[k]) diff = 0;
      maxAbs = std::max(maxAbs, diff);
      if (e[k] != 0) maxRel = std::max(maxRel, diff / std::fabs(e[k]));
      if (!(diff <= atol + rtol * std::fabs(e[k]))) {
        if (firstBad < 0) firstBad = static_cast<int64_t>(k);
        ++bad;
      }
    }
    std::cout << fmt::format(
        "check: output '{}': max abs error {:.3g}, max rel error {:.3g}: {}\n",
        info.outputs[i].name, maxAbs, maxRel,
        bad == 0 ? "ok"
                 : fmt::format("{} of {} elements differ (first at {}: {} vs {})",
                               bad, e.size(), firstBad, a[firstBad], e[firstBad]));
    allMatch &= bad == 0;
  }
  return allMatch;
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
      throw CompileError(fmt::format(
          "cgc: error: --shape '{}' is not of the form NAME=1x3x224x224", text));
    bindings.emplace_back(text.substr(0, eq), frontend::parseShape(text.substr(eq + 1)));
  }
  return bindings;
}

std::vector<std::pair<std::string, std::string>> parseNamedFiles(
    const std::vector<std::string>& texts) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& text : texts) {
    size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      throw CompileError(fmt::format(
          "cgc: error: --constant '{}' is not of the form NAME=FILE.pb", text));
    pairs.emplace_back(text.substr(0, eq), text.substr(eq + 1));
  }
  return pairs;
}

int compile(const driver::CompileOptions& options) {
  auto model = driver::compileGraph(options);
  auto emitted = driver::emitModel(model, options, options.outDir);
  driver::writeModel(std::move(emitted), options.outDir, options);
  return 0;
}

BuiltModel buildCached(const driver::CompiledModel& model,
                       const driver::CompileOptions& options) {
  auto emitted = driver::emitModel(model, options, ".");
  uint64_t key = fnv1a(emitted.header.data(), emitted.header.size());
  key = fnv1a(emitted.source.data(), emitted.source.size(), key);
  key = fnv1a(emitted.weights.data(), emitted.weights.size(), key);
  std::string flags = driver::generatedCodeFlags();
  key = fnv1a(flags.data(), flags.size(), key);
  // The runtime is linked into the cached library: a rebuilt runtime must
  // not be shadowed by an old build of the same emitted code.
  std::ifstream runtime(driver::runtimePaths().library, std::ios::binary);
  std::string runtimeBytes((std::istreambuf_iterator<char>(runtime)), {});
  key = fnv1a(runtimeBytes.data(), runtimeBytes.size(), key);
  fs::path dir = fs::path(driver::cacheDirectory()) / fmt::format("{:016x}", key);
  std::string prefix = emitted.baseName;
  driver::WrittenFiles files;
  if (fs::exists(dir / (prefix + ".so"))) {
    files.emitted = std::move(emitted);
    files.sourcePath = (dir / (prefix + ".cpp")).string();
  } else {
    files = driver::writeModel(std::move(emitted), dir.string(), options);
  }
  return {driver::buildSharedLibrary(files, options), prefix};
}

void setInputs(const driver::CompiledModel& model, driver::LoadedModel& loaded,
               const std::string& inputsDir) {
  const auto& info = loaded.info();
  // Test-data files are numbered in the ONNX model's input order, which
  // still counts inputs that --constant turned into constants.
  for (int i = 0; i < info.num_inputs; ++i) {
    const auto& names = model.graph.onnxInputNames;
    auto position = std::find(names.begin(), names.end(), info.inputs[i].name);
    std::string path = fmt::format("{}/input_{}.pb", inputsDir,
                                   position - names.begin());
    if (!inputsDir.empty() && fs::exists(path))
      loadInput(path, info.inputs[i], loaded.input(i));
    else
      fillDeterministic(info.inputs[i], loaded.input(i));
  }
}

int run(const RunOptions& options) {
  auto model = driver::compileGraph(options.compile);
  BuiltModel built = buildCached(model, options.compile);
  driver::LoadedModel loaded(built.library, built.prefix);
  driver::progress(options.compile, "running on " + loaded.placement());
  const auto& info = loaded.info();
  setInputs(model, loaded, options.inputsDir);

  Profiler profiler;
  bool profiling = !options.profileOut.empty() || !options.traceOut.empty();
  if (profiling) loaded.setProfiler(&profiler);
  loaded.run();

  for (int i = 0; i < info.num_outputs; ++i) {
    frontend::HostTensor t = outputTensor(info.outputs[i], loaded.output(i));
    std::cout << fmt::format("output '{}' {}: {}\n", t.name, t.type.str(), preview(t));
    if (!options.outputsDir.empty()) {
      fs::create_directories(options.outputsDir);
      frontend::writeTensorFile(fmt::format("{}/output_{}.pb", options.outputsDir, i), t);
    }
  }
  bool matches = options.checkDir.empty() ||
                 checkOutputs(options.checkDir, loaded, options.rtol, options.atol);

  if (options.benchRuns > 0) {
    for (int i = 0; i < 3; ++i) loaded.run();
    std::vector<double> times;
    for (int i = 0; i < options.benchRuns; ++i) {
      auto start = std::chrono::steady_clock::now();
      loaded.run();
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    }
    nlohmann::json line = {
        {"model", info.name},
        {"median_ms", median(times)},
        {"min_ms", *std::min_element(times.begin(), times.end())},
        {"runs", options.benchRuns},
        {"executors", info.executors},
        {"threads", info.threads_per_executor}};
    std::cout << line.dump() << std::endl;
  }
  if (profiling) {
    loaded.setProfiler(nullptr);
    if (!options.profileOut.empty() && !profiler.write_profile(options.profileOut))
      userError({options.profileOut, "", ""}, "cannot write the profile");
    if (!options.traceOut.empty() && !profiler.write_trace(options.traceOut))
      userError({options.traceOut, "", ""}, "cannot write the trace");
  }
  if (!matches) {
    std::cerr << fmt::format("{}: error: outputs differ from the expected ones in {}\n",
                             options.compile.modelPath, options.checkDir);
    return 1;
  }
  return 0;
}

int inspect(const driver::CompileOptions& options, bool json) {
  frontend::ModelSummary summary = frontend::summarizeModel(options.modelPath);
  nlohmann::json report = {{"model", options.modelPath},
                           {"opset", summary.opset},
                           {"nodes", summary.nodes},
                           {"ops", summary.opCounts}};
  nlohmann::json unsupported = nlohmann::json::array();
  for (const auto& u : summary.unsupported)
    unsupported.push_back({{"node", u.node}, {"op", u.op}, {"domain", u.domain}});
  report["unsupported"] = unsupported;
  if (summary.unsupported.empty()) {
    auto model = driver::compileGraph(options);
    std::map<std::string, int> kernels;
    for (int id : model.graph.liveNodes()) ++kernels[model.graph.node(id).op];
    report["kernels"] = kernels;
    report["arena_bytes"] = model.plan.arenaBytes;
    report["arena_bytes_no_reuse"] = model.plan.bytesWithoutReuse;
    report["weight_bytes"] = ir::constantBytes(model.graph);
    report["in_place_ops"] = model.plan.inPlaceNodes;
  }
  if (json) {
    std::cout << report.dump(2) << std::endl;
  } else {
    std::cout << fmt::format("{}: opset {}, {} nodes\n", options.modelPath,
                             summary.opset, summary.nodes);
    std::cout << "ONNX ops:\n";
    for (const auto& [op, count] : summary.opCounts)
      std::cout << fmt::format("  {:<24} {:>6}\n", op, count);
    if (!summary.unsupported.empty()) {
      std::cout << fmt::format("unsupported ({} nodes):\n", summary.unsupported.size());
      for (const auto& u : summary.unsupported)
        std::cout << fmt::format("  node '{}' ({}{})\n", u.node,
                                 u.domain.empty() ? "" : u.domain + ".", u.op);
    } else {
      std::cout << "kernels after passes:\n";
      for (const auto& [op, count] : report["kernels"].items())
        std::cout << fmt::format("  {:<24} {:>6}\n", op, count.get<int>());
      std::cout << fmt::format(
          "arena: {} bytes with reuse, {} bytes without ({} ops in place)\n"
          "weights: {} bytes\n",
          report["arena_bytes"].get<int64_t>(),
          report["arena_bytes_no_reuse"].get<int64_t>(),
          report["in_place_ops"].get<int>(), report["weight_bytes"].get<int64_t>());
    }
  }
  return summary.unsupported.empty() ? 0 : 1;
}

}  // namespace cgc::commands
