// The compile pipeline behind every cgc command and the tests: load, the
// import check, passes, lowering, schedule, memory plan (each verified),
// codegen, write, and optionally verify with Clang.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/model_emitter.h"
#include "ir/graph.h"
#include "lowering/kernel_call.h"
#include "onnx_frontend/onnx_loader.h"
#include "pipeline/quantize.h"
#include "pipeline/targets.h"
#include "planning/cache_pairs.h"
#include "planning/memory_plan.h"
#include "planning/schedule.h"

namespace cgc::driver {

/// What a compile strategy or a tool fixes for a compile it makes (a --dim
/// compile at another size, a specialised path, a trial of cgc tune, of the
/// accuracy budget or of cgc calibrate), over what the user asked.
struct CompileOverrides {
  /// The model, read and checked once (withModel): every compile at
  /// another size, specialised path or trial imports it from here. A
  /// tool's edited model (cgc calibrate's, its tensors made outputs) is
  /// not the file's; modelPath still names it.
  std::shared_ptr<const frontend::ModelFile> model;
  /// A specialised path that cgc tune tuned on its own: its sizes, whose
  /// section of --profile ("specializations") this compile reads.
  std::map<std::string, int64_t> profileSection;
  /// cgc tune's trials: this convolution variant ("Im2col") on every float
  /// Conv that takes it (passes::PassTarget::everyConvVariant).
  std::string everyConvVariant;
  /// Convolution variants by node name (ir::conventions::convChoice), over
  /// the profile's: --dim's compiles at other sizes take the bounds'.
  std::map<std::string, std::string> convVariants;
  /// --dim's general code: by node name, the convolution variants other
  /// sizes choose, packed too (passes::PassTarget::convAlternatives).
  std::map<std::string, std::vector<std::string>> convAlternatives;
  /// --quantize's ranges made once for several compiles (the accuracy
  /// budget's trials share them).
  std::shared_ptr<const passes::QuantizeSpec> quantizeSpec;
  /// --cache-in-place: --dim's compiles at other sizes take the bounds'
  /// capacities (by input name).
  std::map<std::string, int64_t> cacheCapacities;
  /// Without --specialize, whether a --profile's most run sizes are
  /// specialised (cgc tune's trials time the general code: not).
  bool specializeProfiledSizes = true;
};

/// One dimension's sizes in a --specialize path: one size (min == max),
/// or a bucket of sizes min..max (pipeline/specializations.h).
struct SizeRange {
  int64_t min = 0, max = 0;
  bool isBucket() const { return min < max; }
  bool operator==(const SizeRange& other) const { return min == other.min && max == other.max; }
  bool operator<(const SizeRange& other) const {
    return min < other.min || (min == other.min && max < other.max);
  }
};
/// A --specialize path: the sizes it takes, by dimension name.
using SpecializedPath = std::map<std::string, SizeRange>;

struct CompileOptions {
  std::string modelPath;
  std::string outDir = ".";
  std::string className;  // --name
  std::string nameSpace = "cgc_models";
  std::string symbolPrefix;  // C prefix and file names; default: the class name's snake_case
  frontend::LoadOptions load;
  bool embedWeights = true;
  /// --weights was given: weights too large to embed are then an error,
  /// not a weights file chosen with a note (emitModel).
  bool weightsGiven = false;
  bool verify = false;
  std::vector<std::string> disabledPasses;
  /// Print the IR on stdout after these passes ("all": after every one).
  std::vector<std::string> printIrAfter;
  /// --target, resolved once at the edge (resolveTargets): one target, or
  /// several for one library holding a build of each
  /// (toolchain/target_library.h); the pipeline compiles for the first.
  std::vector<Target> targets = {nativeTarget()};
  const Target& target() const { return targets.front(); }
  int executors = 0;           // --executors; 0: 1, or the profile's
  int threadsPerExecutor = 0;  // --threads; 0: the profile's, else at run time
  std::string profilePath;     // --profile: measured costs for levels/partition
  bool quiet = false;          // no progress lines on stderr
  /// --quantize int8 and its settings; the pass's ranges are made from them
  /// once (overrides.quantizeSpec, where a caller has not made it already).
  quant::QuantizeOptions quantize;
  /// --precision: "fp32", or "bf16" (the constant weights of matrix
  /// products stored as bfloat16: passes/narrow_weights.cpp), or "auto"
  /// (each layer int8, bf16 or fp32 as the accuracy budget measures:
  /// tools/accuracy_budget.h turns it into fp32 with --keep-float and
  /// --keep-bf16 lists).
  std::string precision = "fp32";
  /// --observe: the generated code shows its float tensors to an attached
  /// profiler that records statistics (cgc::Profiler::record_statistics),
  /// and the passes that would fuse tensors away are skipped.
  bool observe = false;
  /// --dim NAME=MIN..MAX[:MULTIPLE]: dimensions set at run time
  /// (pipeline/variable_dims.h).
  std::vector<codegen::VariableDims::Dim> dims;
  /// --specialize NAME=V,MIN..MAX,...: the sizes of --dim dimensions that
  /// also get code of their own (pipeline/specializations.h), one map per
  /// path, each taking some of the dimensions at a size or in a bucket;
  /// empty: a profile's most run sizes.
  std::vector<SpecializedPath> specialize;
  /// --cache-in-place: each key/value cache (a graph input concatenated
  /// into a graph output) shares its buffer with that output
  /// (planning/cache_pairs.h).
  bool cacheInPlace = false;
  /// What the compile strategies and the tools fix for the compiles they
  /// make; no flag sets these.
  CompileOverrides overrides;
};

/// The compiled model in memory (before anything is written).
struct CompiledModel {
  ir::Graph graph;
  lowering::KernelCalls calls;  // the graph lowered once, after the passes
  passes::Schedule schedule;
  passes::MemoryPlan plan;
  /// --cache-in-place: the caches paired and those left as they were.
  passes::CachePairing caches;
  int importedNodes = 0;
  /// The compiled subgraphs of each control-flow node (If's branches, a
  /// Loop's or Scan's body), by node id; a branch that failed to import is
  /// an empty graph.
  std::map<int, std::vector<CompiledModel>> subgraphs;
  /// --quantize: what the quantize pass was given and what it recorded.
  std::shared_ptr<const passes::QuantizeSpec> quantization;
  /// --dim: the variable dimensions and what follows them.
  std::shared_ptr<const codegen::VariableDims> dims;
  /// --specialize: the model compiled for each specialised size, run
  /// instead of this one at those sizes.
  std::vector<CompiledModel> specializations;
  /// Of a specialisation: the size of each of the top level's dimensions
  /// it is compiled for, -1 where it stays variable; of a bucket, its
  /// least size, specializedMax its largest (else equal to specializedAt),
  /// and `padded` whether the path is static code at specializedMax run on
  /// inputs padded to it (passes/padding_neutral.h).
  std::vector<int64_t> specializedAt, specializedMax;
  std::vector<bool> padded;

  codegen::ModelToEmit toEmit() const;
  /// Kernels per op, in the graph and every compiled body at any depth (a
  /// control-flow node counts as its op, and its bodies' kernels too).
  std::map<std::string, int> kernelCounts() const;
  /// The compiled bodies at any depth (If's branches, Loop's and Scan's).
  int numSubgraphs() const;
  /// --dim: the kernels whose parameters follow the dimensions, in the
  /// graph and every body.
  int kernelsFollowingDims() const;
  /// Bytes of weights in the graph and every body, each constant once: the
  /// generated weights' size before alignment.
  int64_t weightBytes() const;
};

struct WrittenFiles {
  codegen::EmittedModel emitted;
  std::string headerPath, sourcePath, weightsPath;
};

/// Where the runtime's headers and library are: the install tree that holds
/// the cgc executable or the Python module (codegen::installPrefix) if there
/// is one, else the build tree cgc was built in.
struct RuntimePaths {
  std::string includeDir;
  std::string library;  // libcgc_runtime.a, or libcgc_runtime_<target>.a
};
RuntimePaths runtimePaths(const Target& target = nativeTarget());

/// What a program linking the runtime of `target` links after it: LIBXSMM's
/// archives (where the target's runtime has LIBXSMM), threads and dl, as
/// the build found them (compiler_config.h); with `cxxLibrary`, the C++
/// library too, for a program the C compiler links.
std::string runtimeLinkLibraries(const Target& target = nativeTarget(), bool cxxLibrary = false);

/// `options` with the model read and checked (overrides.model), unless a
/// caller has done so: what a caller that compiles one model several times
/// (a tool's trials) does once, first.
CompileOptions withModel(CompileOptions options);

/// The one entry of the compile strategies: compiles the model (withModel)
/// statically (compileGraph), or, with --dim, one general code for every
/// size and its specialisations (pipeline/variable_dims.h).
CompiledModel compileModel(const CompileOptions& options);

/// Imports the model at the sizes it has (no --dim) and compiles it: the
/// static strategy, which the others call and which calls none.
CompiledModel compileGraph(const CompileOptions& options);

/// The import check, passes (the IR verifier after each), lowering, the
/// schedule and the memory plan, each verified: what every command and the
/// tests run on a graph.
CompiledModel compileGraph(ir::Graph graph, const CompileOptions& options);

/// The names the generated code declares: --namespace, the class name
/// (--name, else made from the model's file name) and its C prefix, which
/// is also the files' base name. CompileError naming the flag, or the file
/// a default name came from, when one cannot name generated code.
codegen::ModelNames checkedNames(const CompileOptions& options);

/// What codegen is told: the names, the weights' place, the target's
/// features and LIBXSMM's.
codegen::EmitOptions emitOptions(const CompileOptions& options);

/// Generates and formats NAME.h / NAME.cpp and the weights blob in memory.
codegen::EmittedModel emitModel(const CompiledModel& model, const CompileOptions& options);

/// Writes the emitted files into `outDir`; with options.verify, parses the
/// result with Clang and throws InternalError carrying Clang's diagnostics
/// if it is not clean (generated code that does not compile is cgc's fault).
WrittenFiles writeModel(codegen::EmittedModel emitted, const std::string& outDir,
                        const CompileOptions& options);

/// Progress line on stderr unless quiet: "cgc: <text>".
void progress(const CompileOptions& options, const std::string& text);
/// Seconds since `start`, for progress lines.
double secondsSince(std::chrono::steady_clock::time_point start);

}  // namespace cgc::driver
