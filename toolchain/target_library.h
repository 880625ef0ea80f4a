// A library built for several targets (cgc compile --target a,b,c and
// cgc_add_graph(... TARGET a b c)): the model compiled once per target, each
// build with its own C prefix (<prefix>_<target>) and namespace, plus a
// dispatcher (codegen/emit_dispatcher.cpp) whose create() runs the best build
// the CPU has. For cgc run and cgc build, the shared library made of them:
// each build is linked with its own target's runtime into one relocatable
// object in which everything but its <prefix>_api table is made local, so
// that the builds' runtimes (the same symbols, compiled for different CPUs)
// never meet.
#pragma once

#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "pipeline/targets.h"

namespace cgc::driver {

/// Whether --target names several targets ("x86-64-v3,cascadelake").
bool namesSeveralTargets(const CompileOptions& options);

/// The targets --target lists, best first (the tier with the most features
/// first, the list's order among equals). CompileError for --weights file
/// (each build embeds its own packing of the weights).
std::vector<Target> listedTargets(const CompileOptions& options);

/// `options` for the best listed target alone: what the graph is checked
/// and described with (cgc run's inputs and outputs).
CompileOptions firstTargetOptions(const CompileOptions& options);

struct TargetLibrary {
  std::vector<Target> targets;                // best first
  std::vector<codegen::EmittedModel> builds;  // one per target
  codegen::EmittedModel dispatcher;           // NAME.h / NAME.cpp
};

/// Compiles and emits every build and the dispatcher.
TargetLibrary emitTargetLibrary(const CompileOptions& options);

/// Writes the builds, then the dispatcher, into `outDir`; the dispatcher's
/// files come first in the result.
std::vector<WrittenFiles> writeTargetLibrary(TargetLibrary library, const std::string& outDir,
                                             const CompileOptions& options);

/// One build of a library for several targets: its target and its
/// generated NAME_<target>.cpp.
struct TargetSource {
  Target target;
  std::string source;
};

/// Links a written library for several targets (the dispatcher's source and
/// its builds, best first) into the shared library `output` (cgc run, cgc
/// build): each build compiled with its target's flags at -O`optLevel` and
/// linked with its target's runtime into one object, OUTPUT_STEM.<target>.o
/// beside `output` (kept: every symbol in it local but the build's _api
/// table), then the dispatcher, compiled for the family's baseline, and
/// those objects into `output`. CompileError when the targets are of
/// another processor family than this machine's or a target's runtime is
/// not installed, before anything is built.
void linkTargetLibrary(const std::string& dispatcher, const std::vector<TargetSource>& builds,
                       const std::string& output, int optLevel, const CompileOptions& options);

}  // namespace cgc::driver
