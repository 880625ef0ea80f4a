// Which instruction-set tiers this build of the runtime has, as a
// compile-time query of the tier table (cgc/isa_tiers.def, through the
// generated core/isa.h). A kernel with a file per tier (qproduct_vnni.cpp,
// qproduct_avx2.cpp, qproduct.cpp: XNNPACK's layout) declares each tier's
// functions once and calls them under `if constexpr (buildHasTier("vnni"))`:
// a build without the tier compiles the tier's file empty and never
// references its functions, and no kernel body tests a CGC_ISA_* macro.
#pragma once

#include <string_view>

#include "core/isa.h"

namespace cgc::rt::detail {

struct BuildTier {
  std::string_view name;
  bool enabled;  // CGC_ISA_<NAME>: the flags enable the tier and its bases
};
inline constexpr BuildTier kBuildTiers[] = {CGC_ISA_TIERS};

/// Whether the compiler's flags enable tier `name` (CGC_ISA_<NAME>); ""
/// (portable code) always. A name not in the table does not compile.
consteval bool buildHasTier(std::string_view name) {
  if (name.empty()) return true;
  for (const BuildTier& tier : kBuildTiers)
    if (tier.name == name) return tier.enabled;
  throw "buildHasTier: not a tier of cgc/isa_tiers.def";
}

}  // namespace cgc::rt::detail
