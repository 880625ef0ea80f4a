// The compile pipeline up to emitted source: the frontend's graph through
// the passes, lowering, the schedule and the memory plan (each verified), the
// bodies of control-flow nodes compiled the same way, and the emitter. No
// files and no Clang here: the CLI, the tests and the fuzz target share it
// (driver.cpp writes the files and verifies them).
#include "pipeline/pipeline.h"

#include <fmt/ranges.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cgc/team.h"
#include "ir/conventions.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "pipeline/precision.h"
#include "pipeline/targets.h"
#include "pipeline/tuned_profile.h"
#include "pipeline/variable_dims.h"
#include "planning/cost_model.h"
#include "planning/partition.h"

namespace cgc::driver {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void progress(const CompileOptions& options, const std::string& text) {
  if (!options.quiet) std::cerr << "cgc: " << text << std::endl;
}

namespace {

/// Executors and threads: the command line's, else a tuned profile's, else
/// one executor whose team is every core the process may use when the model
/// is created (the compiler's own core count only weighs the costs).
passes::Schedule scheduleGraph(const ir::Graph& graph, const lowering::KernelCalls& calls,
                               const CompileOptions& options, const TunedConfig& tuned) {
  const int cores = available_cpus();
  const int executors = options.executors > 0 ? options.executors
                        : tuned.executors > 0 ? tuned.executors
                                              : 1;
  const int fixedThreads = options.threadsPerExecutor > 0 ? options.threadsPerExecutor
                           : options.executors <= 0 && tuned.threads > 0 ? tuned.threads
                                                                         : 0;
  const int threads = fixedThreads > 0 ? fixedThreads : std::max(1, cores / executors);
  passes::CostModel costs =
      options.profilePath.empty() ? passes::estimateCosts(graph, calls)
      : options.overrides.profileSection.empty()
          ? passes::costsFromProfile(graph, calls, options.profilePath)
          : passes::costsFromProfile(
                graph, calls,
                specializationProfile(options.profilePath, options.overrides.profileSection),
                options.profilePath);
  std::vector<int> nodeThreads;
  if (threads > 1 && !tuned.nodeThreads.empty() && options.threadsPerExecutor <= 0) {
    nodeThreads.assign(graph.numNodeSlots(), 0);
    for (int id : graph.liveNodes()) {
      auto it = tuned.nodeThreads.find(graph.node(id).name);
      if (it != tuned.nodeThreads.end()) nodeThreads[id] = std::clamp(it->second, 1, threads);
    }
  }
  passes::Schedule schedule =
      passes::partitionGraph(graph, costs, executors, threads, std::move(nodeThreads));
  schedule.threadsAtRunTime = fixedThreads == 0;
  if (fixedThreads > 0 && executors * threads > cores)
    progress(options, fmt::format("note: {} executor(s) x {} thread(s) is more threads than the "
                                  "{} core(s) available here; the model runs, unpinned and more "
                                  "slowly",
                                  executors, threads, cores));
  return schedule;
}

/// The pipeline's options: the target, a tuned profile's convolution
/// variants (tune's trial variant), --print-ir-after's printer.
passes::PipelineOptions pipelineOptions(const CompileOptions& options, const TunedConfig& tuned) {
  passes::PipelineOptions pipeline;
  pipeline.disabled = options.disabledPasses;
  if (options.observe) {
    if (options.quantize.enabled())
      throw CompileError(
          "cgc: error: --observe records a float model's statistics; it does not combine "
          "with --quantize");
    // The tensors cgc calibrate observes stay whole and in ONNX's layout.
    for (const char* pass : {"fuse-attention", "fuse-matmuls", "fuse-epilogues",
                             "fuse-conv-maxpool", "block-activations"})
      pipeline.disabled.push_back(pass);
  }
  const Target& target = options.target();
  pipeline.target = {target.machine, target.tier};
  pipeline.target.convVariants = tuned.convVariants;
  for (const auto& [node, variant] : options.overrides.convVariants)
    pipeline.target.convVariants[node] = variant;
  pipeline.target.everyConvVariant = options.overrides.everyConvVariant;
  pipeline.target.convAlternatives = options.overrides.convAlternatives;
  pipeline.target.quantize = options.overrides.quantizeSpec;
  pipeline.target.narrowWeights = narrowWeightFormat(options);
  pipeline.target.keepFloatWeights = {options.quantize.keepFloat.begin(),
                                      options.quantize.keepFloat.end()};
  pipeline.target.bf16Weights = {options.quantize.keepBf16.begin(),
                                 options.quantize.keepBf16.end()};
  pipeline.target.note = [&options](const std::string& text) {
    progress(options, "note: " + text);
  };
  const auto names = passes::passNames();
  for (const auto& name : options.printIrAfter)
    if (name != "all" && std::find(names.begin(), names.end(), name) == names.end())
      throw CompileError(fmt::format("cgc: error: --print-ir-after: unknown pass '{}' (passes: {})",
                                     name, fmt::join(names, ", ")));
  if (options.printIrAfter.empty()) return pipeline;
  pipeline.afterPass = [&options](const std::string& name, bool changed, const ir::Graph& graph) {
    const auto& wanted = options.printIrAfter;
    if (std::find(wanted.begin(), wanted.end(), name) == wanted.end() &&
        std::find(wanted.begin(), wanted.end(), "all") == wanted.end())
      return;
    std::cout << fmt::format("// IR after {}{}\n{}", name, changed ? "" : " (unchanged)",
                             ir::printGraph(graph))
              << std::flush;
  };
  return pipeline;
}

}  // namespace

CompileOptions withModel(CompileOptions options) {
  if (!options.overrides.model) {
    const auto start = std::chrono::steady_clock::now();
    options.overrides.model = frontend::ModelFile::open(options.modelPath);
    progress(options, fmt::format("read {} ({:.2f} s)", options.modelPath, secondsSince(start)));
  }
  return options;
}

CompiledModel compileModel(const CompileOptions& options) {
  if (!options.overrides.model) return compileModel(withModel(options));
  return options.dims.empty() ? compileGraph(options) : compileWithVariableDims(options);
}

CompiledModel compileGraph(const CompileOptions& options) {
  CGC_ASSERT(options.dims.empty(), "compileGraph compiles for fixed sizes; --dim: compileModel");
  if (!options.overrides.model) return compileGraph(withModel(options));
  const auto start = std::chrono::steady_clock::now();
  ir::Graph graph = options.overrides.model->import(options.load);
  progress(options, fmt::format("imported {}: {} nodes ({:.2f} s)", options.modelPath,
                                graph.liveNodes().size(), secondsSince(start)));
  return compileGraph(std::move(graph), options);
}

codegen::ModelToEmit CompiledModel::toEmit() const {
  codegen::ModelToEmit emit{graph, schedule, plan, calls};
  emit.dims = dims;
  emit.specializedAt = specializedAt;
  emit.specializedMax = specializedMax;
  emit.padded = padded;
  emit.caches = caches.pairs;
  for (const CompiledModel& s : specializations) emit.specializations.push_back(s.toEmit());
  for (const auto& [node, bodies] : subgraphs)
    for (const CompiledModel& body : bodies) emit.subgraphs[node].push_back(body.toEmit());
  return emit;
}

std::map<std::string, int> CompiledModel::kernelCounts() const {
  std::map<std::string, int> counts;
  for (int id : graph.liveNodes()) ++counts[graph.node(id).op];
  for (const auto& [node, bodies] : subgraphs)
    for (const CompiledModel& body : bodies)
      for (const auto& [op, count] : body.kernelCounts()) counts[op] += count;
  return counts;
}

int CompiledModel::numSubgraphs() const {
  int count = 0;
  for (const auto& [node, bodies] : subgraphs)
    for (const CompiledModel& body : bodies) count += 1 + body.numSubgraphs();
  return count;
}

int CompiledModel::kernelsFollowingDims() const {
  int count = dims ? static_cast<int>(dims->params.size()) : 0;
  for (const auto& [node, bodies] : subgraphs)
    for (const CompiledModel& body : bodies) count += body.kernelsFollowingDims();
  return count;
}

int64_t CompiledModel::weightBytes() const {
  std::set<const std::vector<uint8_t>*> seen;
  std::function<int64_t(const CompiledModel&)> bytes = [&](const CompiledModel& model) {
    int64_t total = ir::constantBytes(model.graph, seen);
    for (const auto& [node, bodies] : model.subgraphs)
      for (const CompiledModel& body : bodies) total += bytes(body);
    return total;
  };
  return bytes(*this);
}

namespace {

/// Compiles every subgraph of the graph's control-flow nodes for the team
/// of the executor that runs the node (one executor, the same threads), and
/// gives the node the scratch its largest subgraph's arena needs.
void compileSubgraphs(CompiledModel& model, const CompileOptions& options) {
  CompileOptions inner = options;
  inner.executors = 1;
  inner.threadsPerExecutor = model.schedule.fixedThreads();
  inner.profilePath.clear();
  inner.printIrAfter.clear();
  inner.quiet = true;
  // Bodies stay float (calibration observes the top level only), but for
  // weights stored narrow.
  inner.quantize = {};
  if (options.quantize.weightsOnly) inner.quantize = options.quantize;
  inner.overrides.quantizeSpec = nullptr;
  for (int id : model.graph.liveNodes()) {
    const ir::Node& node = model.graph.node(id);
    if (node.subgraphs.empty()) continue;
    int64_t scratch = 0;
    auto& compiled = model.subgraphs[id];
    for (const auto& body : node.subgraphs) {
      compiled.push_back(body ? compileGraph(*body, inner) : CompiledModel{});
      scratch = std::max(scratch, compiled.back().plan.arenaBytes);
    }
    model.calls.setScratch(id, scratch);
    if (node.has(ir::conventions::kFailedBranch))
      progress(options,
               fmt::format("note: {} (If): the {} branch cannot be compiled for these "
                           "shapes; taking it is an error at run time: {}",
                           node.name,
                           node.getInt(ir::conventions::kFailedBranch, 0) == 0 ? "then" : "else",
                           node.getString(ir::conventions::kFailedBranchReason, "")));
  }
}

/// What --quantize made int8 (and, with --keep-bf16 or --precision bf16,
/// bf16), on stderr; CompileError where it made nothing (a calibration file
/// of another model).
void reportQuantized(const ir::Graph& graph, const CompileOptions& options) {
  int int8 = 0, bf16 = 0, float32 = 0;
  for (int id : graph.liveNodes()) {
    const std::string precision = layerPrecision(graph.node(id));
    int8 += precision == "int8";
    bf16 += precision == "bf16";
    float32 += precision == "float";
  }
  if (int8 == 0)
    userError({options.quantize.calibration, "", ""},
              "--quantize int8: no layer of {} became int8: the calibration file has no range for "
              "the activations of its Conv, MatMul and Gemm layers (calibrated on another model?)",
              options.modelPath);
  progress(options, fmt::format("quantize: {} layers int8, {}{} float ({} method)", int8,
                                bf16 ? fmt::format("{} bf16, ", bf16) : "", float32,
                                options.quantize.method));
}

}  // namespace

CompiledModel compileGraph(ir::Graph graph, const CompileOptions& given) {
  CompileOptions options = given;
  CompiledModel model;
  lowering::checkLowerable(graph);
  model.importedNodes = static_cast<int>(graph.liveNodes().size());
  model.graph = std::move(graph);
  TunedConfig tuned;
  if (!options.profilePath.empty()) {
    tuned = options.overrides.profileSection.empty()
                ? readTunedConfig(options.profilePath)
                : readTunedConfig(
                      specializationProfile(options.profilePath, options.overrides.profileSection),
                      options.profilePath);
    checkMeasuredHere(options.profilePath, tuned, options.target());
  }
  // The layers cgc tune found faster in float stay float, as with
  // --keep-float, where the compile stores any layer narrow.
  if (options.quantize.enabled() || options.precision == "bf16")
    options.quantize.keepFloat.insert(options.quantize.keepFloat.end(), tuned.floatLayers.begin(),
                                      tuned.floatLayers.end());
  if (options.quantize.activations8()) {
    auto spec = std::make_shared<passes::QuantizeSpec>(options.overrides.quantizeSpec
                                                           ? *options.overrides.quantizeSpec
                                                           : *quant::makeSpec(options.quantize));
    spec->keepFloat = {options.quantize.keepFloat.begin(), options.quantize.keepFloat.end()};
    spec->keepFloat.insert(options.quantize.keepBf16.begin(), options.quantize.keepBf16.end());
    spec->record = std::make_shared<passes::QuantizeSpec::Record>();
    options.overrides.quantizeSpec = model.quantization = spec;
  }
  passes::runPipeline(model.graph, pipelineOptions(options, tuned));
  if (options.overrides.quantizeSpec) reportQuantized(model.graph, options);
  if (const auto format = narrowedFormat(options))
    progress(options, describeNarrow(*format, narrowReport(model.graph)));
  model.calls = lowering::lowerGraph(model.graph);
  if (options.cacheInPlace)
    model.caches = passes::pairCaches(model.graph, model.calls, options.overrides.cacheCapacities);
  model.schedule = scheduleGraph(model.graph, model.calls, options, tuned);
  compileSubgraphs(model, options);
  passes::verifySchedule(model.graph, model.schedule);
  model.plan = passes::planMemory(model.graph, model.calls, model.schedule);
  passes::verifyMemoryPlan(model.graph, model.calls, model.schedule, model.plan);
  if (!options.quiet) {
    int kernels = 0;
    for (const auto& [op, count] : model.kernelCounts()) kernels += count;
    // The weights' bytes: the "wrote" line, from the file (equal constants
    // stored once, each aligned), as the header says.
    progress(options, fmt::format("planned {} kernels; arena {} bytes ({} without reuse)", kernels,
                                  model.plan.arenaBytes, model.plan.bytesWithoutReuse));
  }
  return model;
}

codegen::ModelNames checkedNames(const CompileOptions& options) {
  return codegen::checkedNames(
      options.className.empty() ? frontend::graphName(options.modelPath) : "", options.className,
      options.nameSpace);
}

codegen::EmitOptions emitOptions(const CompileOptions& options) {
  codegen::EmitOptions emit;
  emit.className = options.className;
  emit.symbolPrefix = options.symbolPrefix;
  if (emit.symbolPrefix.empty() && !options.className.empty())
    emit.symbolPrefix = codegen::toSymbolPrefix(options.className);
  emit.nameSpace = options.nameSpace;
  emit.embedWeights = options.embedWeights;
  emit.observe = options.observe;
  const Target& target = options.target();
  emit.target = target.name;
  emit.cpuFeatures = target.features;
  if (target.xsmmArch != "none") emit.xsmmTarget = target.xsmmArch;
  return emit;
}

codegen::EmittedModel emitModel(const CompiledModel& model, const CompileOptions& options) {
  // Data in an object file is reached by 32-bit offsets (the small code
  // model): weights past about 2 GiB do not link, and this bound leaves the
  // rest of the library room.
  constexpr int64_t kLargestEmbeddedWeights = int64_t{1} << 30;
  codegen::EmitOptions emit = emitOptions(options);
  const int64_t bytes = model.weightBytes();
  if (emit.embedWeights && bytes > kLargestEmbeddedWeights) {
    if (options.weightsGiven)
      throw CompileError(fmt::format(
          "cgc: error: --weights embed: the weights are {} bytes, more than an object file can "
          "embed ({}): use --weights file",
          bytes, kLargestEmbeddedWeights));
    progress(options, fmt::format("note: the weights are {} bytes, more than an object file can "
                                  "embed: they go to a weights file, mapped at run time, as with "
                                  "--weights file",
                                  bytes));
    emit.embedWeights = false;
  }
  return codegen::emitModel(model.toEmit(), emit);
}

}  // namespace cgc::driver
