// See tune_trials.h.
#include "tools/tune_trials.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "cgc/runtime.h"
#include "ir/conventions.h"
#include "pipeline/precision.h"

namespace cgc::tune {
namespace fs = std::filesystem;
using json = nlohmann::json;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

json readJson(const std::string& path) {
  std::ifstream file(path);
  json value = json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) userError({path, "", ""}, "not valid profile JSON");
  return value;
}

void writeJson(const std::string& path, const json& value) {
  std::ofstream file(path);
  file << value.dump(2) << "\n";
  if (!file) userError({path, "", ""}, "cannot write the profile");
}

namespace {

/// Each convolution's variant, float (with its setting) and int8.
std::map<std::string, std::string> convVariantsOf(const ir::Graph& graph) {
  std::map<std::string, std::string> variants;
  for (int id : graph.liveNodes()) {
    const ir::Node& node = graph.node(id);
    if (ir::conventions::hasConvChoice(node))
      variants[node.name] = ir::conventions::convChoice(node);
  }
  return variants;
}

/// Each layer stored narrow (bf16, int8 weights or int8), by node name.
std::map<std::string, std::string> narrowLayersOf(const ir::Graph& graph) {
  std::map<std::string, std::string> layers;
  for (int id : graph.liveNodes()) {
    const std::string precision = driver::layerPrecision(graph.node(id));
    if (!precision.empty() && precision != "float") layers[graph.node(id).name] = precision;
  }
  return layers;
}

}  // namespace

Build Tuner::build(int executors, int threads, const std::string& profilePath,
                   const TrialCompile& trial) {
  driver::CompileOptions compile = options_.compile;
  compile.executors = executors;
  compile.threadsPerExecutor = threads;
  compile.profilePath = profilePath;
  compile.overrides.everyConvVariant = trial.every;
  compile.overrides.convVariants = trial.variants;
  compile.quantize.keepFloat.insert(compile.quantize.keepFloat.end(), trial.floatLayers.begin(),
                                    trial.floatLayers.end());
  if (trial.floatModel) {
    compile.quantize = {};
    compile.precision = "fp32";
  }
  compile.specialize.clear();  // --dim: the general code is tuned (the paths by tunePaths)
  compile.overrides.specializeProfiledSizes = false;
  compile.quiet = true;  // tune's own lines say what happens
  Build b{compile, driver::compileModel(compile), {}, {}, {}};
  b.variants = convVariantsOf(b.model.graph);
  b.precisions = narrowLayersOf(b.model.graph);
  if (!trial.compileOnly) finish(b);
  return b;
}

void Tuner::finish(Build& b) {
  if (b.built.library.empty()) b.built = driver::buildCached(b.model, b.compile);
}

Measurement Tuner::time(const Build& b, int rounds, bool profile) {
  driver::LoadedModel loaded(b.built.library, b.built.prefix);
  driver::setInputs(b.model, loaded, options_.inputsDir,
                    /*fillMissing=*/options_.inputsDir.empty(), /*note=*/!filledNoted_);
  filledNoted_ = true;  // one note for the whole search
  const std::string& path0 = options_.compile.modelPath;

  auto start = Clock::now();
  driver::runOnce(loaded, path0);
  double first = msSince(start);
  // Rounds of at least ~20 ms, so sub-millisecond models are not timed
  // at the clock's and the scheduler's resolution.
  int perRound = std::clamp(static_cast<int>(std::ceil(20.0 / std::max(first, 1e-3))), 1, 1000);
  for (int i = 0; i < std::min(perRound, 3); ++i) driver::runOnce(loaded, path0);
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) {
    start = Clock::now();
    for (int i = 0; i < perRound; ++i) driver::runOnce(loaded, path0);
    times.push_back(msSince(start) / perRound);
  }
  Measurement m;
  m.ms = medianOf(times);
  m.spread = spreadOf(times);
  m.variants = b.variants;
  m.precisions = b.precisions;
  m.weightBytes = b.model.weightBytes();
  if (!profile) return m;

  Profiler profiler;
  loaded.setProfiler(&profiler);
  for (int i = 0; i < std::max(options_.rounds, 3); ++i) driver::runOnce(loaded, path0);
  loaded.setProfiler(nullptr);
  std::string path = (work_ / fmt::format("measured_{}.json", ++files_)).string();
  if (!profiler.write_profile(path)) userError({path, "", ""}, "cannot write the profile");
  m.profile = readJson(path);
  return m;
}

Measurement Tuner::measure(int executors, int threads, const std::string& profilePath) {
  return time(build(executors, threads, profilePath), options_.rounds, /*profile=*/true);
}

Measurement Tuner::measureNewGraph(int executors, int threads, const TrialChoices& choices) {
  const Measurement estimated =
      time(build(executors, threads, "", {"", choices.variants, choices.floatLayers}),
           options_.rounds, /*profile=*/true);
  return measure(executors, threads, writeProfile(estimated.profile, choices));
}

std::string Tuner::writeProfile(json profile, const TrialChoices& choices) {
  profile["node_threads"] = choices.nodeThreads;
  profile["variants"] = choices.variants;
  profile["float_layers"] = choices.floatLayers;
  return writeProfile(profile);
}

std::string Tuner::writeProfile(const json& profile) {
  std::string path = (work_ / fmt::format("profile_{}.json", ++files_)).string();
  writeJson(path, profile);
  return path;
}

AlternatedTiming Tuner::alternate(const Build& baseline, const Build& candidate, int rounds) {
  std::vector<double> a, b;
  for (int r = 0; r < rounds; ++r) {
    a.push_back(time(baseline, 2, false).ms);
    b.push_back(time(candidate, 2, false).ms);
  }
  return judgeAlternated(a, b);
}

}  // namespace cgc::tune
