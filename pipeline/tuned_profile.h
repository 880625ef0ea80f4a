// What a profile that `cgc tune` wrote fixes besides the measured costs
// (which passes/cost_model.h reads): the executor configuration, per-op
// thread counts, the convolution variant of each layer that tune measured
// faster than the default, and the CPU it measured them on. Read once per
// compile; a profile measured on another CPU is refused for `native`.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/targets.h"

namespace cgc::driver {

/// A CPU as tune records it: CPUID's vendor, family and model (aarch64:
/// MIDR's implementer, architecture and part), and the instruction-set
/// tier the measurements ran with (cgc/isa_tiers.def).
struct CpuRecord {
  std::string vendor;
  int family = 0, model = 0;
  std::string tier;

  /// "AuthenticAMD family 26 model 2"
  std::string str() const;
  bool sameProcessor(const CpuRecord& other) const {
    return vendor == other.vendor && family == other.family && model == other.model;
  }
};

/// This machine, with the tier of the native runtime cgc links.
CpuRecord thisCpu();

struct TunedConfig {
  int executors = 0, threads = 0;
  std::map<std::string, int> nodeThreads;           // "node_threads", by node name
  std::map<std::string, std::string> convVariants;  // "variants": node name -> variant name
  /// "float_layers": layers the precision asked for would store narrow
  /// (bf16, int8) that cgc tune measured faster in float.
  std::set<std::string> floatLayers;
  std::optional<CpuRecord> cpu;  // "cpu"; absent in cgc run's profiles
  /// "sizes": the runs at each size of the variable dimensions (a model
  /// compiled with --dim), by dimension name; most runs first.
  std::vector<std::pair<std::map<std::string, int64_t>, int64_t>> sizes;
  /// "specializations": the sizes of each specialised path that cgc tune
  /// tuned on its own (the path's section holds its tuning).
  std::vector<std::map<std::string, int64_t>> specializations;
};

/// The tuned fields of the profile at `path` (all absent where it has none;
/// a file that is not JSON is left to the cost model's reader to report).
/// A "variants" or "cpu" of the wrong form is a CompileError naming the file.
TunedConfig readTunedConfig(const std::string& path);
/// The same from a profile already read (a section of the file at `path`).
TunedConfig readTunedConfig(const nlohmann::json& profile, const std::string& path);

/// The section of the tuned profile at `path` for the specialised path of
/// `sizes` ("specializations": [{"dims": {...}, "profile": {...}}]): what a
/// compile of that path reads instead of the whole file.
nlohmann::json specializationProfile(const std::string& path,
                                     const std::map<std::string, int64_t>& sizes);

/// For `native`: a CompileError naming both CPUs when the profile was
/// measured on another processor (vendor, family or model). A named target
/// refuses nothing: its tier decides which of the variants are taken.
void checkMeasuredHere(const std::string& path, const TunedConfig& config, const Target& target);

}  // namespace cgc::driver
