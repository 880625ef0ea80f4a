// See tune.h. Each configuration is compiled twice: once with estimated
// costs, to profile it, and once with that profile, whose schedule is the
// one timed (and the one a user gets with --profile). Each variant trial is
// one build with the variant (and its setting: Winograd's form, Packed's
// depth step) on every layer that takes it; the per-layer choice they give
// is kept only if the whole model, timed in alternation with the default
// build, is faster by more than the rounds' spread; the layers whose
// weights are stored narrow (bf16, int8) are timed in float the same way,
// in one build; at the end the model built with the whole profile is timed
// the same way against the untuned build, and the profile is kept only if
// it wins (tools/alternated_timing.h).
#include "tools/tune.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cgc/isa_tiers.h"
#include "cgc/kernels.h"
#include "cgc/machine.h"
#include "cgc/team.h"
#include "ir/conventions.h"
#include "pipeline/input_shapes.h"
#include "pipeline/precision.h"
#include "pipeline/specializations.h"
#include "pipeline/targets.h"
#include "pipeline/tuned_profile.h"
#include "toolchain/build_cache.h"
#include "toolchain/model_runner.h"
#include "toolchain/model_session.h"
#include "toolchain/target_library.h"
#include "tools/alternated_timing.h"
#include "tools/bandwidth_probe.h"
#include "tools/tune_trials.h"

namespace cgc::tune {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

/// Executor configurations to try, those that use every core first (by
/// executors), then the ones that leave cores idle: threads that only
/// contend for memory bandwidth or barriers can lose to fewer.
std::vector<std::pair<int, int>> configurations(int cpus) {
  std::vector<std::pair<int, int>> full, partial;
  for (int e = 1; e <= cpus; ++e) {
    int most = cpus / e;
    full.emplace_back(e, most);
    for (int t = 1; t < most; t *= 2) partial.emplace_back(e, t);
  }
  std::stable_sort(partial.begin(), partial.end(),
                   [](auto a, auto b) { return a.first * a.second > b.first * b.second; });
  full.insert(full.end(), partial.begin(), partial.end());
  return full;
}

/// The machine's read bandwidth (tools/bandwidth_probe.h), by thread count.
using Bandwidths = std::map<int, double>;

struct Try {
  std::string config;  // "2x1", "2x1 node X: 1 thread", "2x1 variant Im2col"
  double ms;
  std::string outcome;
};

/// Whether the target's runtime has the variant of `tier` and this CPU runs it.
bool runsHere(const std::string& targetTier, const char* tier) {
  return isaTierIncludes(targetTier, tier) && (*tier == '\0' || cpu_has_tier(tier) == 1);
}

/// The trials worth a build: the variants the target's runtime has and this
/// CPU runs (those on bf16 weights where the compile may store them,
/// `narrow`: --precision bf16 or --keep-bf16, on every layer they take),
/// Winograd in each of its forms (tiles 2 and 4), Packed with the depth
/// steps the default build chose (`defaults`), halved and doubled;
/// and the int8 convolution's variants where the model has int8 layers.
std::vector<std::string> candidateVariants(const std::string& targetTier,
                                           const std::map<std::string, std::string>& defaults,
                                           bool narrow) {
  std::vector<std::string> names;
  const bool int8 = std::any_of(defaults.begin(), defaults.end(), [](const auto& d) {
    return rt::qconvVariantNamed(d.second.c_str()) != rt::QConvVariant::kNone;
  });
  if (int8)
    for (const rt::QConvVariantInfo& v : rt::kQConvVariants)
      if (runsHere(targetTier, v.tier)) names.emplace_back(v.name);
  for (const rt::ConvVariantInfo& v : rt::kConvVariants) {
    if (!runsHere(targetTier, v.tier)) continue;
    if (rt::convWeightsNarrow(v.weights) && !narrow) continue;
    if (v.weights == rt::ConvWeights::kWinograd) {
      for (int tile : {2, 4}) names.push_back(fmt::format("{}:{}", v.name, tile));
    } else if (v.weights == rt::ConvWeights::kPanels || v.weights == rt::ConvWeights::kBf16Panels) {
      names.emplace_back(v.name);
      std::set<int64_t> depths, others;
      for (const auto& [node, text] : defaults) {
        const ir::conventions::ConvChoice choice = ir::conventions::parseConvChoice(text);
        if (choice.variant == v.name && choice.setting) depths.insert(choice.setting);
      }
      for (int64_t d : depths) others.insert({d / 2, d * 2});
      for (int64_t d : others)
        if (!depths.count(d)) names.push_back(fmt::format("{}:{}", v.name, d));
    } else {
      names.emplace_back(v.name);
    }
  }
  return names;
}

/// The search's state and its stages.
class Search {
 public:
  /// `start`: when the budget began (a specialised path's search shares
  /// the whole tune's).
  Search(const TuneOptions& options, const fs::path& work, Clock::time_point start)
      : options_(options), tuner_(options, work), start_(start) {}

  int executors() const { return bestE_; }
  int threads() const { return bestT_; }
  double bestMs() const { return best_.ms; }

  void line(const std::string& text) const { std::cout << "tune: " << text << std::endl; }

  /// The machine's read bandwidth on one thread and on `threads`, before
  /// any trial runs: how fast a run that reads each weight once can be.
  /// The buffer outgrows the last-level cache many times over.
  void probeMemory(int threads) {
    const int64_t bytes =
        std::max<int64_t>(int64_t{512} << 20, 16 * rt::hostMachine(0).lastLevelBytes());
    for (int n : {1, threads}) bandwidth_[n] = probe::readBandwidth(n, bytes) / 1e9;
    line(fmt::format("memory: reads {:.1f} GB/s on 1 thread, {:.1f} GB/s on {}", bandwidth_[1],
                     bandwidth_[threads], threads));
  }
  bool overBudget() const { return msSince(start_) / 1000 > options_.budgetSeconds; }
  double seconds() const { return msSince(start_) / 1000; }

  /// Stage 1: executors x threads among `configs`, the default first; a
  /// later one is kept where it beats the best by more than the rounds'
  /// spread and kConfigMargin. False when none ran.
  bool searchConfigurations(const std::vector<std::pair<int, int>>& configs) {
    for (auto [e, t] : configs) {
      if (bestE_ > 0 && overBudget()) {
        line("budget spent; configurations left untried");
        break;
      }
      std::string config = fmt::format("{}x{}", e, t);
      try {
        Measurement estimated = tuner_.measure(e, t, "");
        std::string profile = tuner_.writeProfile(estimated.profile, TrialChoices{});
        Measurement measured = tuner_.measure(e, t, profile);
        // The first configuration is the default (one executor on every
        // core); another replaces the best only beyond both one's noise.
        const bool better = bestE_ == 0 || beatsBeyondNoise(best_.ms, best_.spread, measured.ms,
                                                            measured.spread, kConfigMargin);
        line(fmt::format("{:<6} estimated costs {:.3f} ms, measured costs {:.3f} ms{}", config,
                         estimated.ms, measured.ms, better ? " (best)" : ""));
        tries_.push_back({config, measured.ms, better ? "best so far" : ""});
        if (better) {
          best_ = std::move(measured);
          bestE_ = e;
          bestT_ = t;
        }
      } catch (const CompileError& error) {
        line(fmt::format("{:<6} failed: {}", config, error.what()));
        tries_.push_back({config, std::nan(""), "failed"});
      }
    }
    return bestE_ > 0;
  }

  /// Stage 2: the convolution variants. Each candidate runs on every layer
  /// that takes it, in one build each; each layer then takes the variant
  /// with the lowest median where it beats the default's by kMargin, and
  /// the model keeps that choice only if it is not slower as a whole.
  void variants(const std::string& targetTier) {
    if (best_.variants.empty()) return;
    const std::string costs = tuner_.writeProfile(best_.profile, TrialChoices{});
    LayerTimes us;
    record(best_, us);
    // bf16 weights: --precision bf16, or the layers --keep-bf16 names.
    const bool narrow = driver::narrowWeightFormat(options_.compile) == rt::WeightFormat::kBf16 ||
                        !options_.compile.quantize.keepBf16.empty();
    const std::vector<std::string> candidates =
        candidateVariants(targetTier, best_.variants, narrow);
    int trials = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (overBudget()) {
        line(fmt::format("budget spent; variants left untried: {}",
                         fmt::join(candidates.begin() + i, candidates.end(), ", ")));
        break;
      }
      const std::string config = fmt::format("{}x{} variant {}", bestE_, bestT_, candidates[i]);
      try {
        Build b =
            tuner_.build(bestE_, bestT_, costs, {candidates[i], {}, {}, /*compileOnly=*/true});
        int changed = 0;
        for (const auto& [node, variant] : b.variants) {
          auto before = best_.variants.find(node);
          changed += before == best_.variants.end() || before->second != variant;
        }
        if (changed == 0) {
          line(fmt::format("{}: no layer whose default differs", config));
          continue;
        }
        tuner_.finish(b);
        Measurement m = tuner_.time(b, options_.rounds, /*profile=*/true);
        ++trials;
        record(m, us);
        line(fmt::format("{} on {} layer(s): {:.3f} ms", config, changed, m.ms));
        tries_.push_back({config, m.ms, fmt::format("{} layer(s)", changed)});
      } catch (const CompileError& error) {
        line(fmt::format("{} failed: {}", config, error.what()));
        tries_.push_back({config, std::nan(""), "failed"});
      }
    }
    if (trials == 0) return;
    std::map<std::string, std::string> chosen = fastestPerLayer(us);
    if (chosen.empty()) {
      line("variants: the default is the fastest measured on every layer");
      return;
    }
    confirm(chosen, costs);
  }

  /// Stage 3: the layers stored narrow (bf16, int8 weights, int8) against
  /// float, timed in the float model (one build, on estimated costs); a
  /// layer goes back to float where that runs it faster by kMargin, and the
  /// model keeps those only if it is faster as a whole. Float is never less
  /// accurate than the precision the user allowed, so only the time
  /// decides; where every int8 layer is faster in float, tune says so.
  void precisions() {
    // A model stored int8 in its file (QDQ) has no float form to try.
    const driver::CompileOptions& asked = options_.compile;
    if (best_.precisions.empty() || !(asked.quantize.enabled() || asked.precision == "bf16"))
      return;
    if (overBudget()) {
      line("budget spent; precisions left untried");
      return;
    }
    const std::string config =
        fmt::format("{}x{} {} narrow layer(s) in float", bestE_, bestT_, best_.precisions.size());
    std::map<std::string, double> narrowUs, floatUs;
    try {
      TrialCompile floatModel{"", variants_, {}};
      floatModel.floatModel = true;
      Measurement m = tuner_.time(tuner_.build(bestE_, bestT_, "", floatModel), options_.rounds,
                                  /*profile=*/true);
      line(fmt::format("{}: {:.3f} ms", config, m.ms));
      tries_.push_back({config, m.ms, ""});
      for (const auto& [profile, us] :
           {std::pair{&best_.profile, &narrowUs}, {&m.profile, &floatUs}})
        for (const auto& node : (*profile)["nodes"])
          (*us)[node["name"].get<std::string>()] = node["median_us"].get<double>();
    } catch (const CompileError& error) {
      line(fmt::format("{} failed: {}", config, error.what()));
      return;
    }
    std::set<std::string> chosen;
    int int8 = 0, int8Chosen = 0;
    for (const auto& [node, precision] : best_.precisions) {
      int8 += precision == "int8";
      if (!narrowUs.count(node) || !floatUs.count(node)) continue;
      if (floatUs[node] >= narrowUs[node] * (1 - kMargin)) continue;
      chosen.insert(node);
      int8Chosen += precision == "int8";
      line(fmt::format("layer {}: {} {:.1f} us -> float {:.1f} us", node, precision, narrowUs[node],
                       floatUs[node]));
    }
    if (chosen.empty()) {
      line("precisions: every narrow layer is faster than in float");
      return;
    }
    if (int8 > 0 && int8Chosen == int8) {
      line(
          "precisions: every int8 layer runs faster in float: the float model is the faster "
          "here (compile it without --quantize)");
      return;
    }
    confirmFloat(chosen);
  }

  /// Stage 4: per-op thread counts for the most expensive ops of the best
  /// configuration: halve (or, failing that, double) an op's threads and
  /// keep the change if the whole model gets faster by more than the
  /// rounds' spread (of either measurement) and 2%.
  void nodeThreads() {
    if (bestT_ <= 1) return;
    std::vector<std::pair<double, std::string>> costs;
    for (const auto& node : best_.profile["nodes"])
      costs.emplace_back(node["median_us"].get<double>(), node["name"].get<std::string>());
    std::sort(costs.rbegin(), costs.rend());
    const size_t maxNodes = 16;
    for (size_t i = 0; i < std::min(costs.size(), maxNodes) && !overBudget(); ++i) {
      const std::string& name = costs[i].second;
      int current = nodeThreads_.count(name) ? nodeThreads_[name] : bestT_;
      for (int candidate : {current / 2, current * 2}) {
        if (candidate < 1 || candidate > bestT_ || overBudget()) continue;
        auto trial = nodeThreads_;
        trial[name] = candidate;
        std::string config = fmt::format("{}x{} {}: {} thread{}", bestE_, bestT_, name, candidate,
                                         candidate == 1 ? "" : "s");
        Measurement m = tuner_.measure(
            bestE_, bestT_, tuner_.writeProfile(best_.profile, {trial, variants_, floatLayers_}));
        const bool kept = beatsBeyondNoise(best_.ms, best_.spread, m.ms, m.spread, kConfigMargin);
        line(fmt::format("{:<6} {:.3f} ms (spread {:.3f}){}", config, m.ms, m.spread,
                         kept ? " (best)" : ""));
        tries_.push_back({config, m.ms, kept ? "kept" : ""});
        if (kept) {
          nodeThreads_ = std::move(trial);
          best_ = std::move(m);
          break;
        }
      }
    }
  }

  /// The profile to write: the best build's measured profile and what it
  /// fixes.
  json result(const std::string& targetTier) const {
    json result = best_.profile;
    result["executors"] = bestE_;
    result["threads"] = bestT_;
    result["node_threads"] = nodeThreads_;
    result["variants"] = variants_;
    result["float_layers"] = floatLayers_;
    driver::CpuRecord cpu = driver::thisCpu();
    cpu.tier = targetTier;
    result["cpu"] = {
        {"vendor", cpu.vendor}, {"family", cpu.family}, {"model", cpu.model}, {"tier", cpu.tier}};
    for (const auto& [threads, gbps] : bandwidth_)
      result["cpu"]["read_gbps"][std::to_string(threads)] = gbps;
    result["tuned_ms"] = best_.ms;
    if (!finalCheck_.is_null()) result["final_check"] = finalCheck_;
    return result;
  }

  /// The last stage: the model built with the whole profile against the
  /// untuned build (no profile), alternated; true if faster by more than
  /// the spread. Runs even past the budget.
  bool finalCheck(const std::string& targetTier) {
    try {
      Build defaults = tuner_.build(0, 0, "");
      Build tuned = tuner_.build(0, 0, tuner_.writeProfile(result(targetTier)));
      const AlternatedTiming t = tuner_.alternate(defaults, tuned, std::max(options_.rounds, 10));
      finalCheck_ = {{"default_ms", t.baselineMs},
                     {"tuned_ms", t.candidateMs},
                     {"spread_ms", t.spreadMs},
                     {"rounds", t.rounds},
                     {"kept", t.faster}};
      line(fmt::format(
          "final check: {}: {}", describeTiming(t, "tuned", "untuned"),
          t.faster ? "kept the tuned profile" : "not faster by more than the spread; dropped it"));
      tries_.push_back({"tuned profile against the untuned build", t.candidateMs,
                        fmt::format("{} (untuned {:.3f}, spread {:.3f})",
                                    t.faster ? "kept" : "dropped", t.baselineMs, t.spreadMs)});
      if (!t.faster) defaults_ = tuner_.time(defaults, options_.rounds, /*profile=*/true);
      return t.faster;
    } catch (const CompileError& error) {
      line(fmt::format("final check: the tuned profile failed: {}", error.what()));
      return false;
    }
  }

  /// After a failed final check: the search's choices dropped, the result
  /// is the default configuration (`executors` x `threads`, no per-op
  /// threads or variants) with the default build's measured costs where
  /// the check measured them.
  void useDefaults(int executors, int threads) {
    if (!defaults_.profile.is_null()) best_ = std::move(defaults_);
    bestE_ = executors;
    bestT_ = threads;
    nodeThreads_.clear();
    variants_.clear();
    floatLayers_.clear();
  }

  void summary(const std::string& out) const {
    std::cout << fmt::format("\n{:<48} {:>10}  {}\n", "tried", "median ms", "");
    for (const auto& t : tries_)
      std::cout << fmt::format("{:<48} {:>10.3f}  {}\n", t.config, t.ms, t.outcome);
    const bool dropped = finalCheck_.is_object() && !finalCheck_["kept"].get<bool>();
    line(
        fmt::format("best {}x{} ({} ops with their own thread count, {} layers with a measured "
                    "variant, {} narrow layers in float{}): {:.3f} ms; wrote {} ({:.0f} s)",
                    bestE_, bestT_, nodeThreads_.size(), variants_.size(), floatLayers_.size(),
                    dropped ? "; the default configuration: the tuned one was not faster" : "",
                    best_.ms, out, seconds()));
    if (bandwidth_.empty() || best_.weightBytes == 0) return;
    const double gbps = bandwidth_.rbegin()->second;
    line(
        fmt::format("its weights ({:.1f} MB) read once at {:.1f} GB/s take {:.3f} ms, the "
                    "least a run can take",
                    best_.weightBytes / 1e6, gbps, best_.weightBytes / gbps / 1e6));
  }

 private:
  /// Per convolution layer, the median microseconds of each variant measured.
  using LayerTimes = std::map<std::string, std::map<std::string, double>>;
  /// A layer's time differs by this fraction before its variant changes.
  static constexpr double kMargin = 0.05;
  /// A configuration or a per-op thread count beats the best by this
  /// fraction beyond the noise before it replaces it.
  static constexpr double kConfigMargin = 0.02;

  /// The layers' times in `m` under their variants, each layer's lowest
  /// median kept: load from other processes only adds time. A layer that
  /// a trial leaves on its default is measured again, so a variant must
  /// beat the default's best.
  static void record(const Measurement& m, LayerTimes& us) {
    for (const auto& node : m.profile["nodes"]) {
      auto variant = m.variants.find(node["name"].get<std::string>());
      if (variant == m.variants.end()) continue;
      const double time = node["median_us"].get<double>();
      auto [at, added] = us[variant->first].emplace(variant->second, time);
      if (!added) at->second = std::min(at->second, time);
    }
  }

  /// Each layer's fastest variant where it beats the default by kMargin,
  /// with a line for each.
  std::map<std::string, std::string> fastestPerLayer(const LayerTimes& us) const {
    std::map<std::string, std::string> chosen;
    for (const auto& [node, defaultVariant] : best_.variants) {
      auto times = us.find(node);
      if (times == us.end() || !times->second.count(defaultVariant)) continue;
      const double defaultUs = times->second.at(defaultVariant);
      auto fastest = std::min_element(times->second.begin(), times->second.end(),
                                      [](auto& a, auto& b) { return a.second < b.second; });
      if (fastest->first == defaultVariant || fastest->second >= defaultUs * (1 - kMargin))
        continue;
      chosen[node] = fastest->first;
      line(fmt::format("layer {}: {} {:.1f} us -> {} {:.1f} us", node, defaultVariant, defaultUs,
                       fastest->first, fastest->second));
    }
    return chosen;
  }

  /// The chosen variants against the defaults, builds alternated (A B A B)
  /// so that both see the same load; kept if faster by more than the
  /// spread. Runs even past the budget: it finishes the trials already made.
  void confirm(const std::map<std::string, std::string>& chosen, const std::string& costs) {
    try {
      Build before = tuner_.build(bestE_, bestT_, costs);
      Build after =
          tuner_.build(bestE_, bestT_, tuner_.writeProfile(best_.profile, {{}, chosen, {}}));
      const AlternatedTiming t = tuner_.alternate(before, after, std::max(options_.rounds, 5));
      const bool kept = t.faster;
      line(fmt::format(
          "variants: {}: {}",
          describeTiming(t, fmt::format("{} layer(s) changed", chosen.size()), "the defaults"),
          kept ? "kept" : "dropped"));
      tries_.push_back({fmt::format("{}x{} {} layer variant(s) against the defaults", bestE_,
                                    bestT_, chosen.size()),
                        t.candidateMs,
                        fmt::format("{} (defaults {:.3f}, spread {:.3f})",
                                    kept ? "kept" : "dropped", t.baselineMs, t.spreadMs)});
      if (!kept) return;
      best_ = tuner_.time(after, options_.rounds, /*profile=*/true);
      variants_ = chosen;
    } catch (const CompileError& error) {
      line(fmt::format("variants: the chosen variants failed: {}", error.what()));
    }
  }

  /// `chosen` layers in float against the best build, alternated; kept if
  /// faster by more than the spread.
  void confirmFloat(const std::set<std::string>& chosen) {
    try {
      const TrialChoices inFloat{{}, variants_, chosen};
      Measurement measured = tuner_.measureNewGraph(bestE_, bestT_, inFloat);
      Build before = tuner_.build(bestE_, bestT_, tuner_.writeProfile(best_.profile, choices()));
      Build after = tuner_.build(bestE_, bestT_, tuner_.writeProfile(measured.profile, inFloat));
      const AlternatedTiming t = tuner_.alternate(before, after, std::max(options_.rounds, 5));
      line(fmt::format(
          "precisions: {}: {}",
          describeTiming(t, fmt::format("{} layer(s) in float", chosen.size()), "as asked"),
          t.faster ? "kept" : "dropped"));
      tries_.push_back({fmt::format("{}x{} {} layer(s) in float against as asked", bestE_, bestT_,
                                    chosen.size()),
                        t.candidateMs,
                        fmt::format("{} (as asked {:.3f}, spread {:.3f})",
                                    t.faster ? "kept" : "dropped", t.baselineMs, t.spreadMs)});
      if (!t.faster) return;
      best_ = std::move(measured);
      floatLayers_ = chosen;
    } catch (const CompileError& error) {
      line(fmt::format("precisions: the layers in float failed: {}", error.what()));
    }
  }

  /// What the profile fixes so far.
  TrialChoices choices() const { return {nodeThreads_, variants_, floatLayers_}; }

  const TuneOptions& options_;
  Tuner tuner_;
  Clock::time_point start_;
  std::vector<Try> tries_;
  int bestE_ = 0, bestT_ = 0;
  Measurement best_;
  std::map<std::string, int> nodeThreads_;
  std::map<std::string, std::string> variants_;
  std::set<std::string> floatLayers_;  // narrow layers the precision stage put back in float
  Bandwidths bandwidth_;               // probeMemory's
  json finalCheck_;                    // the final check's timings, once made
  Measurement defaults_;  // the untuned build, timed where the final check dropped the profile
};

}  // namespace

std::string modelName(const std::string& modelPath) {
  fs::path path = fs::absolute(modelPath);
  std::string stem = path.stem().string();
  if (stem == "model" && path.has_parent_path() && !path.parent_path().filename().empty())
    return path.parent_path().filename().string();
  return stem;
}

namespace {

/// cgc tune --specialize: each path searched on its own at its sizes (the
/// dimensions it leaves variable at their bounds) on the general code's
/// executors and threads, which every path shares; each path's result,
/// keyed by its sizes, for the profile's "specializations".
json tunePaths(const TuneOptions& options, const fs::path& work, const Search& general,
               const std::string& tier, Clock::time_point start) {
  json paths = json::array();
  for (const auto& path : options.compile.specialize) {
    if (std::any_of(path.begin(), path.end(), [](const auto& e) { return e.second.isBucket(); })) {
      general.line(
          fmt::format("--specialize {}: a bucket, left untuned", driver::describePath(path)));
      continue;
    }
    const auto fixed = driver::specializedSizes(options.compile.dims, path);
    TuneOptions at = options;
    at.inputsDir.clear();  // deterministic data at the path's sizes
    at.compile = driver::pathOptions(options.compile, fixed);
    const std::string sizes = driver::describeSizes(fixed);
    Search search(at, work, start);
    search.line(fmt::format("--specialize {}: its own variants and per-op threads", sizes));
    if (!search.searchConfigurations({{general.executors(), general.threads()}})) {
      search.line(fmt::format("--specialize {}: did not compile and run; left untuned", sizes));
      continue;
    }
    search.variants(tier);
    search.precisions();
    search.nodeThreads();
    if (!search.finalCheck(tier)) {
      search.useDefaults(general.executors(), general.threads());
      search.line(fmt::format("--specialize {}: its tuning dropped: specialised, untuned", sizes));
    }
    paths.push_back({{"dims", fixed}, {"profile", search.result(tier)}});
    search.line(fmt::format("--specialize {}: {:.3f} ms", sizes, search.bestMs()));
  }
  return paths;
}

/// --dim with --runs, a profile of runs (cgc run --profile-out, a
/// deployment's profiler): its "sizes" are kept in the tuned profile (a
/// compile with it specialises the sizes run most), and buckets that cover
/// them are proposed for --specialize: the user's choice, since a padded
/// bucket runs its bound's work at every size in it.
void keepRunSizes(const TuneOptions& options, const Search& search, json& result) {
  if (options.runsProfile.empty()) return;
  const driver::TunedConfig runs = driver::readTunedConfig(options.runsProfile);
  if (runs.sizes.empty()) return;
  json sizes = json::array();
  for (const auto& [dims, count] : runs.sizes) sizes.push_back({{"dims", dims}, {"runs", count}});
  result["sizes"] = sizes;
  std::vector<std::string> texts;
  for (const auto& path :
       driver::proposedBuckets(runs.sizes, options.compile.dims, driver::kProfiledSpecializations))
    texts.push_back(driver::describePath(path));
  search.line(fmt::format("--dim: {} sizes run; buckets that cover them (--specialize): {}",
                          runs.sizes.size(), fmt::join(texts, "; ")));
}

}  // namespace

int tune(const TuneOptions& given) {
  TuneOptions options = given;
  commands::bindShapesFromInputs(options.compile, options.inputsDir);
  options.compile = driver::withModel(options.compile);
  if (driver::namesSeveralTargets(options.compile))
    throw CompileError(fmt::format(
        "cgc: error: cgc tune --target {}: a profile is measured for one build; tune each "
        "target on a machine it runs on",
        driver::targetList(options.compile.targets)));
  driver::checkedNames(options.compile);
  if (!options.runsProfile.empty() && options.compile.dims.empty())
    throw CompileError("cgc: error: cgc tune --runs needs --dim (it keeps the sizes run)");
  const int cpus = cgc::available_cpus();
  const std::string tier = options.compile.target().tier;
  fs::path work = fs::temp_directory_path() / fmt::format("cgc-tune-{}", getpid());
  fs::create_directories(work);
  // The trials are built apart from the cache and removed at the end.
  const cache::TrialBuilds trialBuilds("tune");
  const Clock::time_point start = Clock::now();
  Search search(options, work, start);
  search.line(fmt::format("{} on {} cores, {} rounds per try, budget {:.0f} s",
                          options.compile.modelPath, cpus, options.rounds, options.budgetSeconds));
  search.probeMemory(cpus);
  if (!options.compile.dims.empty())
    search.line(fmt::format("--dim: the general code, timed at the sizes of {}",
                            options.inputsDir.empty() ? "the bounds" : options.inputsDir));
  if (!search.searchConfigurations(configurations(cpus))) {
    fs::remove_all(work);
    userError({options.compile.modelPath, "", ""}, "no configuration compiled and ran");
  }
  search.variants(tier);
  search.precisions();
  search.nodeThreads();
  if (!search.finalCheck(tier)) search.useDefaults(1, std::max(1, cpus));

  fs::create_directories(options.outDir);
  std::string out =
      (fs::path(options.outDir) / (modelName(options.compile.modelPath) + ".profile.json"))
          .string();
  json result = search.result(tier);
  if (!options.compile.specialize.empty())
    result["specializations"] = tunePaths(options, work, search, tier, start);
  keepRunSizes(options, search, result);
  writeJson(out, result);
  fs::remove_all(work);
  search.summary(out);
  return 0;
}

}  // namespace cgc::tune
