// The kernel tests' main: the same tests link against the runtime of each
// target (tests/runtime/CMakeLists.txt), so first say which instruction-set
// tier that runtime was built for, and skip (exit 77, ctest's
// SKIP_RETURN_CODE) on a CPU that lacks it instead of dying on an
// instruction it does not have.
//
// Cases that need more of the machine are hidden ([.cpus4], ...) and run by
// ctest entries of their own: `--needs cpus=N` or `--needs lacks=FEATURE`
// before the test spec skips (exit 77) where the machine cannot run them,
// so that ctest reports them as skipped, never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cgc/runtime.h"
#include "cgc/team.h"

namespace {

/// Why this machine cannot run what `need` asks (empty when it can).
std::string unmet(const std::string& need) {
  if (need.rfind("cpus=", 0) == 0) {
    const int wanted = std::stoi(need.substr(5)), cpus = cgc::available_cpus();
    if (cpus < wanted)
      return "needs " + std::to_string(wanted) + " CPUs; this process may use " +
             std::to_string(cpus);
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

}  // namespace

int main(int argc, char** argv) {
  const char* tier = cgc::runtime_isa_tier();
  if (cgc::cpu_has_tier(tier) != 1) {
    std::printf("skipped: the runtime is built for tier %s, which this CPU lacks\n", tier);
    return 77;
  }
  std::vector<char*> args(argv, argv + argc);
  for (size_t i = 1; i + 1 < args.size(); ++i) {
    if (std::strcmp(args[i], "--needs") != 0) continue;
    const std::string why = unmet(args[i + 1]);
    if (!why.empty()) {
      std::printf("skipped: %s\n", why.c_str());
      return 77;
    }
    args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
    --i;
  }
  std::printf("runtime built for tier %s (this CPU has it)\n", tier);
  return Catch::Session().run(static_cast<int>(args.size()), args.data());
}
