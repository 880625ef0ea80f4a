// The instruction-set tiers of isa_tiers.def as data, for the code that
// reasons about them at run time or in the compiler: a tier's features with
// its bases', and whether this CPU has them all (cpu_has_tier, runtime.h).
// The kernels' compile-time conditions come from the same table through
// the generated core/isa.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cgc {

struct IsaTier {
  const char* name;
  const char* base;      // "" for a processor family's baseline
  const char* features;  // what it adds to its base, space-separated
};

inline constexpr IsaTier kIsaTiers[] = {
#define CGC_TIER(name, base, features, macros) {name, base, features},
#include "cgc/isa_tiers.def"
#undef CGC_TIER
};

/// The tier called `name`, or null.
inline const IsaTier* findIsaTier(std::string_view name) {
  for (const IsaTier& tier : kIsaTiers)
    if (name == tier.name) return &tier;
  return nullptr;
}

/// Every feature of tier `name` and of its bases, the baseline's first;
/// empty for an unknown name.
inline std::vector<std::string> isaTierFeatures(std::string_view name) {
  const IsaTier* tier = findIsaTier(name);
  if (!tier) return {};
  std::vector<std::string> out = isaTierFeatures(tier->base);
  std::string_view rest = tier->features;
  while (!rest.empty()) {
    const size_t space = rest.find(' ');
    if (space != 0) out.emplace_back(rest.substr(0, space));
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  return out;
}

/// Whether tier `name` is `base` or extends it; every tier includes ""
/// (portable code, no feature needed).
inline bool isaTierIncludes(std::string_view name, std::string_view base) {
  if (base.empty()) return true;
  for (const IsaTier* tier = findIsaTier(name); tier; tier = findIsaTier(tier->base))
    if (base == tier->name) return true;
  return false;
}

}  // namespace cgc
