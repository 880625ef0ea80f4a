// See tune.h. Each try compiles the model twice for its configuration: once
// with estimated costs, to profile it, and once with that profile, whose
// schedule is the one timed (and the one a user gets with --profile).
#include "compiler/tune.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "cgc/team.h"
#include "compiler/commands.h"
#include "compiler/model_runner.h"
#include "compiler/target_library.h"

namespace cgc::tune {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
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

struct Measurement {
  double ms = std::numeric_limits<double>::infinity();
  json profile;  // the profiler's per-node medians of this build
};

struct Try {
  std::string config;  // "2x1", "2x1 node X: 1 thread"
  double ms;
  std::string outcome;
};

class Tuner {
 public:
  Tuner(const TuneOptions& options, fs::path workDir)
      : options_(options), work_(std::move(workDir)) {}

  /// Builds the model for E x T (with the profile at `profilePath`, if any),
  /// times it and profiles it.
  Measurement measure(int executors, int threads, const std::string& profilePath) {
    driver::CompileOptions compile = options_.compile;
    compile.executors = executors;
    compile.threadsPerExecutor = threads;
    compile.profilePath = profilePath;
    compile.quiet = true;  // tune's own lines say what happens
    auto model = driver::compileGraph(compile);
    auto built = commands::buildCached(model, compile);
    driver::LoadedModel loaded(built.library, built.prefix);
    commands::setInputs(model, loaded, options_.inputsDir,
                        /*fillMissing=*/options_.inputsDir.empty());
    const std::string& path0 = compile.modelPath;

    auto start = Clock::now();
    commands::runOnce(loaded, path0);
    double first = msSince(start);
    // Rounds of at least ~20 ms, so sub-millisecond models are not timed
    // at the clock's and the scheduler's resolution.
    int perRound = std::clamp(static_cast<int>(std::ceil(20.0 / std::max(first, 1e-3))), 1, 1000);
    for (int i = 0; i < std::min(perRound, 3); ++i) commands::runOnce(loaded, path0);
    std::vector<double> rounds;
    for (int r = 0; r < options_.rounds; ++r) {
      start = Clock::now();
      for (int i = 0; i < perRound; ++i) commands::runOnce(loaded, path0);
      rounds.push_back(msSince(start) / perRound);
    }
    Measurement m;
    m.ms = median(rounds);

    Profiler profiler;
    loaded.setProfiler(&profiler);
    for (int i = 0; i < std::max(options_.rounds, 3); ++i) commands::runOnce(loaded, path0);
    loaded.setProfiler(nullptr);
    std::string path = (work_ / fmt::format("measured_{}.json", ++files_)).string();
    if (!profiler.write_profile(path)) userError({path, "", ""}, "cannot write the profile");
    m.profile = readJson(path);
    return m;
  }

  /// Writes `profile` with the given node thread counts for a build to read.
  std::string writeProfile(json profile, const std::map<std::string, int>& nodeThreads) {
    profile["node_threads"] = nodeThreads;
    std::string path = (work_ / fmt::format("profile_{}.json", ++files_)).string();
    writeJson(path, profile);
    return path;
  }

 private:
  const TuneOptions& options_;
  fs::path work_;
  int files_ = 0;
};

}  // namespace

std::string modelName(const std::string& modelPath) {
  fs::path path = fs::absolute(modelPath);
  std::string stem = path.stem().string();
  if (stem == "model" && path.has_parent_path() && !path.parent_path().filename().empty())
    return path.parent_path().filename().string();
  return stem;
}

int tune(const TuneOptions& options) {
  if (driver::namesSeveralTargets(options.compile))
    throw CompileError(fmt::format(
        "cgc: error: cgc tune --target {}: a profile is measured for one build; tune each "
        "target on a machine it runs on",
        options.compile.target));
  auto start = Clock::now();
  auto overBudget = [&] { return msSince(start) / 1000 > options.budgetSeconds; };
  const int cpus = cgc::available_cpus();
  fs::path work = fs::temp_directory_path() / fmt::format("cgc-tune-{}", getpid());
  fs::create_directories(work);
  Tuner tuner(options, work);
  std::vector<Try> tries;
  auto line = [](const std::string& text) { std::cout << "tune: " << text << std::endl; };
  line(fmt::format("{} on {} cores, {} rounds per try, budget {:.0f} s", options.compile.modelPath,
                   cpus, options.rounds, options.budgetSeconds));

  // Stage 1: executors x threads.
  int bestE = 0, bestT = 0;
  Measurement best;
  for (auto [e, t] : configurations(cpus)) {
    if (bestE > 0 && overBudget()) {
      line("budget spent; configurations left untried");
      break;
    }
    std::string config = fmt::format("{}x{}", e, t);
    try {
      Measurement estimated = tuner.measure(e, t, "");
      std::string profile = tuner.writeProfile(estimated.profile, {});
      Measurement measured = tuner.measure(e, t, profile);
      bool better = measured.ms < best.ms;
      line(fmt::format("{:<6} estimated costs {:.3f} ms, measured costs {:.3f} ms{}", config,
                       estimated.ms, measured.ms, better ? " (best)" : ""));
      tries.push_back({config, measured.ms, better ? "best so far" : ""});
      if (better) {
        best = std::move(measured);
        bestE = e;
        bestT = t;
      }
    } catch (const CompileError& error) {
      line(fmt::format("{:<6} failed: {}", config, error.what()));
      tries.push_back({config, std::nan(""), "failed"});
    }
  }
  if (bestE == 0) {
    fs::remove_all(work);
    userError({options.compile.modelPath, "", ""}, "no configuration compiled and ran");
  }

  // Stage 2: per-op thread counts for the most expensive ops of the best
  // configuration: halve (or, failing that, double) an op's threads and keep
  // the change if the whole model gets faster by more than the noise.
  std::map<std::string, int> nodeThreads;
  if (bestT > 1) {
    std::vector<std::pair<double, std::string>> costs;
    for (const auto& node : best.profile["nodes"])
      costs.emplace_back(node["median_us"].get<double>(), node["name"].get<std::string>());
    std::sort(costs.rbegin(), costs.rend());
    const size_t maxNodes = 16;
    for (size_t i = 0; i < std::min(costs.size(), maxNodes) && !overBudget(); ++i) {
      const std::string& name = costs[i].second;
      int current = nodeThreads.count(name) ? nodeThreads[name] : bestT;
      for (int candidate : {current / 2, current * 2}) {
        if (candidate < 1 || candidate > bestT || overBudget()) continue;
        auto trial = nodeThreads;
        trial[name] = candidate;
        std::string config = fmt::format("{}x{} {}: {} thread{}", bestE, bestT, name, candidate,
                                         candidate == 1 ? "" : "s");
        Measurement m = tuner.measure(bestE, bestT, tuner.writeProfile(best.profile, trial));
        bool kept = m.ms < best.ms * 0.98;
        line(fmt::format("{:<6} {:.3f} ms{}", config, m.ms, kept ? " (best)" : ""));
        tries.push_back({config, m.ms, kept ? "kept" : ""});
        if (kept) {
          nodeThreads = std::move(trial);
          best = std::move(m);
          break;
        }
      }
    }
  }

  json result = best.profile;
  result["executors"] = bestE;
  result["threads"] = bestT;
  result["node_threads"] = nodeThreads;
  result["tuned_ms"] = best.ms;
  fs::create_directories(options.outDir);
  std::string out =
      (fs::path(options.outDir) / (modelName(options.compile.modelPath) + ".profile.json"))
          .string();
  writeJson(out, result);
  fs::remove_all(work);

  std::cout << fmt::format("\n{:<48} {:>10}  {}\n", "tried", "median ms", "");
  for (const auto& t : tries)
    std::cout << fmt::format("{:<48} {:>10.3f}  {}\n", t.config, t.ms, t.outcome);
  line(
      fmt::format("best {}x{} ({} ops with their own thread count): {:.3f} ms; "
                  "wrote {} ({:.0f} s)",
                  bestE, bestT, nodeThreads.size(), best.ms, out, msSince(start) / 1000));
  return 0;
}

}  // namespace cgc::tune
