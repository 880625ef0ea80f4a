// `--needs` for the test binaries' mains: a hidden Catch2 case ([.cpus4],
// [.bf16], ...) runs from a ctest entry of its own, `--needs WHAT` before the
// test spec, which exits 77 (ctest's SKIP_RETURN_CODE) where this machine
// or runtime cannot run it, so that ctest reports it as skipped, never as
// passed. WHAT: cpus=N, lacks=avx512vnni, tier=NAME (the runtime's
// instruction-set tier includes NAME: cgc/isa_tiers.def).
#pragma once

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cgc/isa_tiers.h"
#include "cgc/runtime.h"
#include "cgc/team.h"

namespace cgc::testing {

/// Why this machine cannot run what `need` asks (empty when it can).
inline std::string unmetNeed(const std::string& need) {
  if (need.rfind("cpus=", 0) == 0) {
    const int wanted = std::stoi(need.substr(5)), cpus = available_cpus();
    if (cpus < wanted)
      return "needs " + std::to_string(wanted) + " CPUs; this process may use " +
             std::to_string(cpus);
    return {};
  }
  if (need.rfind("tier=", 0) == 0) {
    const std::string tier = need.substr(5);
    if (!isaTierIncludes(runtime_isa_tier(), tier) || cpu_has_tier(tier.c_str()) != 1)
      return "needs tier " + tier + "; this runtime's is " + runtime_isa_tier() +
             (cpu_has_tier(tier.c_str()) == 1 ? "" : ", and this CPU lacks it");
    return {};
  }
  if (need == "lacks=avx512vnni") {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni"))
      return "needs a CPU without AVX-512 VNNI; this one has it";
    return {};
#else
    return "needs an x86-64 CPU without AVX-512 VNNI";
#endif
  }
  return "unknown --needs " + need;
}

/// Takes every `--needs WHAT` out of `args`; 77 (after saying why) when one
/// is unmet, else 0.
inline int takeNeeds(std::vector<char*>& args) {
  for (size_t i = 1; i + 1 < args.size(); ++i) {
    if (std::strcmp(args[i], "--needs") != 0) continue;
    const std::string why = unmetNeed(args[i + 1]);
    if (!why.empty()) {
      std::printf("skipped: %s\n", why.c_str());
      return 77;
    }
    args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
    --i;
  }
  return 0;
}

}  // namespace cgc::testing
