// See targets.h. The table is cgc/targets.def, read here as an X-macro (its
// machine columns through cgc/machine.h).
#include "pipeline/targets.h"

#include <fmt/ranges.h>
#include <sys/utsname.h>

#include <algorithm>
#include <sstream>

#include "cgc/isa_tiers.h"
#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "compiler_config.h"
#include "ir/diagnostics.h"

namespace cgc::driver {
namespace {

struct TableRow {
  const char *name, *arch, *flags, *tier;
  int lanes;
  const char* xsmm;
};

constexpr TableRow kTable[] = {
#define CGC_TARGET(name, arch, flags, tier, lanes, xsmm, ...) \
  {name, arch, flags, tier, lanes, xsmm},
#include "cgc/targets.def"
#undef CGC_TARGET
};

/// The processor family cgc runs on, as the table names it.
std::string hostArch() {
  utsname name{};
  if (uname(&name) != 0) return "unknown";
  const std::string machine = name.machine;
  return machine == "arm64" ? "aarch64" : machine;
}

/// The widest vector of floats this machine's features give.
int hostLanes(const std::vector<std::string>& features) {
  auto has = [&](const char* f) {
    return std::find(features.begin(), features.end(), f) != features.end();
  };
  if (has("avx512f")) return 16;
  if (has("avx")) return 8;
  return 4;
}

}  // namespace

std::string Target::compiler() const {
  if (arch == hostArch()) return CGC_CXX_COMPILER;
  return arch + "-linux-gnu-g++";
}

std::string Target::runtimeLibrary() const {
  return isNative() ? "libcgc_runtime.a" : "libcgc_runtime_" + name + ".a";
}

std::vector<std::string> targetNames() {
  std::vector<std::string> names;
  for (const TableRow& row : kTable) names.push_back(row.name);
  return names;
}

Target findTarget(const std::string& name) {
  for (const TableRow& row : kTable) {
    if (name != row.name) continue;
    Target target{row.name,  row.arch, row.flags, row.tier, isaTierFeatures(row.tier),
                  row.lanes, row.xsmm, {}};
    if (target.isNative()) {
      // This machine's features, and the tier of the native runtime cgc
      // links (built for CGC_NATIVE_MARCH, this machine unless told).
      target.arch = hostArch();
      for (const char* const* f = checkable_cpu_features(); *f; ++f)
        if (cpu_has_feature(*f) == 1) target.features.push_back(*f);
      target.tier = runtime_isa_tier();
      target.lanes = hostLanes(target.features);
      const std::string native = "-march=native", march = "-march=" CGC_NATIVE_MARCH;
      if (const size_t at = target.flags.find(native); at != std::string::npos)
        target.flags.replace(at, native.size(), march);
      target.machine = rt::hostMachine(32 * target.lanes);
      return target;
    }
    target.machine = *rt::machineOfTarget(target.name, 32 * target.lanes);  // this row's
    return target;
  }
  throw CompileError(fmt::format("cgc: error: unknown target '{}' (known: {})", name,
                                 fmt::join(targetNames(), ", ")));
}

const Target& nativeTarget() {
  static const Target native = findTarget("native");
  return native;
}

std::vector<Target> resolveTargets(const std::string& list) {
  std::vector<Target> targets;
  std::stringstream stream(list);
  for (std::string name; std::getline(stream, name, ',');) {
    if (name.empty())
      throw CompileError(fmt::format("cgc: error: --target '{}' has an empty name", list));
    Target target = findTarget(name);
    for (const Target& other : targets) {
      if (other.name == target.name)
        throw CompileError(fmt::format("cgc: error: --target lists {} twice", name));
      if (other.arch != target.arch)
        throw CompileError(fmt::format(
            "cgc: error: --target {}: one library holds one processor family ({} is for {}, {} "
            "for {})",
            list, other.name, other.arch, target.name, target.arch));
    }
    targets.push_back(std::move(target));
  }
  if (targets.empty())
    throw CompileError(
        fmt::format("cgc: error: --target is empty (known: {})", fmt::join(targetNames(), ", ")));
  return targets;
}

std::string targetList(const std::vector<Target>& targets) {
  std::vector<std::string> names;
  for (const Target& target : targets) names.push_back(target.name);
  return fmt::format("{}", fmt::join(names, ","));
}

std::string whyNotRunnableHere(const Target& target) {
  const std::string arch = hostArch();
  if (target.arch != arch)
    return fmt::format("target {} is for {}, this machine is {}", target.name, target.arch, arch);
  std::vector<std::string> missing;
  for (const auto& f : target.features)
    if (cpu_has_feature(f.c_str()) != 1) missing.push_back(f);
  if (missing.empty()) return "";
  return fmt::format("target {} needs {}, which this CPU lacks", target.name,
                     fmt::join(missing, ", "));
}

int printTargets(bool runnableOnly) {
  size_t flagsWidth = 0;  // the widest target's flags set the column
  for (const std::string& name : targetNames())
    flagsWidth = std::max(flagsWidth, findTarget(name).flags.size());
  for (const std::string& name : targetNames()) {
    const Target target = findTarget(name);
    const std::string why = whyNotRunnableHere(target);
    if (runnableOnly) {
      if (why.empty()) fmt::print("{}\n", name);
      continue;
    }
    fmt::print("{:<16} {:<8} {:<{}} {}\n{:<16} {}\n", name, target.tier.empty() ? "-" : target.tier,
               target.flags, flagsWidth, why.empty() ? "runs here" : why, "",
               rt::describeMachine(target.machine));
  }
  return 0;
}

}  // namespace cgc::driver
