// Which build of a library compiled for several targets (cgc compile
// --target a,b,c) a process runs: the first, best first, whose tier this CPU
// has, or the one the environment variable CGC_TARGET names. Baseline code,
// like the CPU check: it runs before anything a target's features allow.
#include <cstdlib>
#include <string>

#include "cgc/isa_tiers.h"
#include "cgc/runtime.h"

namespace cgc {
namespace {

std::string targetList(const TargetVariant* variants, int count) {
  std::string list;
  for (int i = 0; i < count; ++i) list += (i ? ", " : "") + std::string(variants[i].target);
  return list;
}

/// "" when this CPU runs tier `tier`, else why not ("lacks avx512vnni").
std::string whyNotRunnable(const char* tier) {
  if (cpu_has_tier(tier) == 1) return "";
  for (const std::string& feature : isaTierFeatures(tier))
    if (cpu_has_feature(feature.c_str()) != 1) return "this CPU lacks " + feature;
  return std::string("this CPU cannot run tier ") + tier;
}

}  // namespace

int choose_target_variant(const TargetVariant* variants, int count, std::string& why) {
  const char* forced = std::getenv("CGC_TARGET");
  if (forced && *forced) {
    for (int i = 0; i < count; ++i) {
      if (std::string(variants[i].target) != forced) continue;
      const std::string reason = whyNotRunnable(variants[i].tier);
      if (reason.empty()) return i;
      why = "CGC_TARGET=" + std::string(forced) + ": " + reason;
      return -1;
    }
    why = "CGC_TARGET=" + std::string(forced) + ": the library was built for " +
          targetList(variants, count) + " only";
    return -1;
  }
  for (int i = 0; i < count; ++i)
    if (cpu_has_tier(variants[i].tier) == 1) return i;
  why = "this CPU runs none of the library's targets (" + targetList(variants, count) + ")";
  return -1;
}

}  // namespace cgc
