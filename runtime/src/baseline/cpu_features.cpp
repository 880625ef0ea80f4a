// The CPU features a ModelSpec may name (those of the instruction-set tiers,
// cgc/isa_tiers.def) and how this machine is asked for them: GCC's __builtin_cpu_supports on x86
// (CPUID where GCC and Clang 14 lack a name), the kernel's HWCAP bits on aarch64. ModelRuntime
// checks a model's features at construction (model_runtime.cpp); cgc resolves its "native" target
// to the ones this machine has (compiler/targets.cpp).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "cgc/isa_tiers.h"
#include "cgc/runtime.h"

namespace cgc {
namespace {

#if defined(__x86_64__) || defined(__i386__)
/// An AMX feature (CPUID leaf 7's EDX bit `bit`) with the tile state that
/// the OS enables in XCR0 (bits 17 and 18). Linux also asks a process to
/// request the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM) before its
/// first tile instruction: that is for the kernel that uses one.
int x86HasAmx(unsigned bit) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;  // OSXSAVE
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << bit))) return 0;
  unsigned low = 0, high = 0;
  __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  constexpr unsigned kTileState = (1u << 17) | (1u << 18);
  return (low & kTileState) == kTileState ? 1 : 0;
}

/// __builtin_cpu_supports takes only a literal, hence one call per name.
int x86Has(const char* feature) {
  __builtin_cpu_init();
  auto is = [&](const char* name) { return std::strcmp(feature, name) == 0; };
  if (is("sse2")) return __builtin_cpu_supports("sse2") ? 1 : 0;
  if (is("popcnt")) return __builtin_cpu_supports("popcnt") ? 1 : 0;
  if (is("ssse3")) return __builtin_cpu_supports("ssse3") ? 1 : 0;
  if (is("sse4.1")) return __builtin_cpu_supports("sse4.1") ? 1 : 0;
  if (is("sse4.2")) return __builtin_cpu_supports("sse4.2") ? 1 : 0;
  if (is("avx")) return __builtin_cpu_supports("avx") ? 1 : 0;
  if (is("avx2")) return __builtin_cpu_supports("avx2") ? 1 : 0;
  if (is("fma")) return __builtin_cpu_supports("fma") ? 1 : 0;
  if (is("bmi2")) return __builtin_cpu_supports("bmi2") ? 1 : 0;
  if (is("avx512f")) return __builtin_cpu_supports("avx512f") ? 1 : 0;
  if (is("avx512bw")) return __builtin_cpu_supports("avx512bw") ? 1 : 0;
  if (is("avx512cd")) return __builtin_cpu_supports("avx512cd") ? 1 : 0;
  if (is("avx512vl")) return __builtin_cpu_supports("avx512vl") ? 1 : 0;
  if (is("avx512dq")) return __builtin_cpu_supports("avx512dq") ? 1 : 0;
  if (is("avx512vnni")) return __builtin_cpu_supports("avx512vnni") ? 1 : 0;
  if (is("avx512vbmi")) return __builtin_cpu_supports("avx512vbmi") ? 1 : 0;
  // Clang 14 knows none of these names: read CPUID (each needs the OS's
  // AVX or AVX-512 state, which "avx" and "avx512f" check).
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (is("f16c")) {
    const bool has = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
    return has && __builtin_cpu_supports("avx") ? 1 : 0;
  }
  if (is("avxvnni")) {
    const bool has = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));
    return has && __builtin_cpu_supports("avx") ? 1 : 0;
  }
  if (is("avx512bf16")) {
    const bool has = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
    return has && __builtin_cpu_supports("avx512f") ? 1 : 0;
  }
  if (is("amx-tile") || is("amx-bf16")) return x86HasAmx(is("amx-tile") ? 24 : 22);
  return -1;
}
#endif

/// The features of every tier (isa_tiers.def) that this family can check.
struct Checkable {
  std::vector<std::string> names;
  std::vector<const char*> list;
  Checkable() {
    for (const IsaTier& tier : kIsaTiers)
      for (const std::string& f : isaTierFeatures(tier.name))
        if (std::find(names.begin(), names.end(), f) == names.end() &&
            cpu_has_feature(f.c_str()) >= 0)
          names.push_back(f);
    for (const std::string& f : names) list.push_back(f.c_str());
    list.push_back(nullptr);
  }
};

}  // namespace

int cpu_has_feature(const char* feature) {
  if (!feature) return -1;
#if defined(__x86_64__) || defined(__i386__)
  return x86Has(feature);
#elif defined(__aarch64__)
  const unsigned long hwcap = getauxval(AT_HWCAP);
  if (std::strcmp(feature, "asimd") == 0) return (hwcap & HWCAP_ASIMD) ? 1 : 0;
  if (std::strcmp(feature, "asimddp") == 0 || std::strcmp(feature, "dotprod") == 0)
    return (hwcap & HWCAP_ASIMDDP) ? 1 : 0;
  return -1;
#else
  return -1;
#endif
}

const char* const* checkable_cpu_features() {
  static const Checkable checkable;
  return checkable.list.data();
}

int cpu_has_tier(const char* name) {
  if (!name || !findIsaTier(name)) return -1;
  for (const std::string& f : isaTierFeatures(name)) {
    const int has = cpu_has_feature(f.c_str());
    if (has != 1) return has;
  }
  return 1;
}

}  // namespace cgc
