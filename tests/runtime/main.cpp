// The kernel tests' main: the same tests link against the runtime of each
// target (tests/runtime/CMakeLists.txt), so first say which instruction-set
// tier that runtime was built for, and skip (exit 77, ctest's
// SKIP_RETURN_CODE) on a CPU that lacks it instead of dying on an
// instruction it does not have. Hidden cases run from ctest entries of their
// own through `--needs` (tests/runtime/needs.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <vector>

#include "needs.h"

int main(int argc, char** argv) {
  const char* tier = cgc::runtime_isa_tier();
  if (cgc::cpu_has_tier(tier) != 1) {
    std::printf("skipped: the runtime is built for tier %s, which this CPU lacks\n", tier);
    return 77;
  }
  std::vector<char*> args(argv, argv + argc);
  if (const int skip = cgc::testing::takeNeeds(args)) return skip;
  std::printf("runtime built for tier %s (this CPU has it)\n", tier);
  return Catch::Session().run(static_cast<int>(args.size()), args.data());
}
