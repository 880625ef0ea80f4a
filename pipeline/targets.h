// The targets cgc compiles for (cgc/targets.def, the one table the runtime,
// the CMake build and cgc_add_graph read too): a name picks the generated
// code's compiler and flags, the CPU features its ModelSpec names, the vector
// width and the machine the passes weigh, the ISA LIBXSMM may JIT for, and
// the runtime library it links. "native" is resolved on the machine cgc runs
// on, so that a native library moved to a CPU without its features says so
// when an instance is created instead of dying on an illegal instruction.
#pragma once

#include <string>
#include <vector>

#include "cgc/kernels.h"
#include "cgc/machine.h"

namespace cgc::driver {

struct Target {
  std::string name;                   // "x86-64-v3"
  std::string arch;                   // "x86_64", "aarch64"
  std::string flags;                  // "-march=x86-64-v3"
  std::string tier;                   // its instruction-set tier (cgc/isa_tiers.def): "avx2"
  std::vector<std::string> features;  // the ModelSpec's CPU features: the tier's
  int lanes = 0;                      // floats per vector register
  std::string xsmmArch;               // libxsmm_set_target_arch name; "" LIBXSMM's choice; "none"
  rt::MachineInfo machine;            // its row's caches and cores, or this machine (native)

  bool isNative() const { return name == "native"; }
  /// The C++ compiler for generated code of this target ("aarch64-linux-gnu-g++"
  /// for another processor family, else the one cgc was configured with).
  std::string compiler() const;
  /// "libcgc_runtime.a" for native, else "libcgc_runtime_<name>.a".
  std::string runtimeLibrary() const;
};

/// Every target's name, in the table's order.
std::vector<std::string> targetNames();

/// The target called `name`, "native" resolved on this machine (its
/// features, vector width and processor family, the tier of the native
/// runtime cgc links, and CGC_NATIVE_MARCH in its flags). An unknown name is a
/// CompileError listing the known ones.
Target findTarget(const std::string& name);

/// findTarget("native"), resolved once per process.
const Target& nativeTarget();

/// --target's text resolved once, at the edge (the command line, Python):
/// one name, or several comma-separated for one library holding a build of
/// each (toolchain/target_library.h), in the order given. CompileError for
/// an unknown or empty name, one listed twice, or targets of two processor
/// families.
std::vector<Target> resolveTargets(const std::string& list);

/// The targets' names, comma-separated: --target's text again.
std::string targetList(const std::vector<Target>& targets);

/// "" when code for `target` can run on this machine, else why not (another
/// processor family, or the CPU features it lacks).
std::string whyNotRunnableHere(const Target& target);

/// `cgc targets`: every target with its tier, its flags and whether code
/// for it runs on this machine (or why not); with `runnableOnly`, just the
/// names of those that run here, one a line (what the tests ask).
int printTargets(bool runnableOnly);

}  // namespace cgc::driver
