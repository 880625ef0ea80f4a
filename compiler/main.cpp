// cgc: the command line. Exit codes: 0 success, 1 a problem in the model or
// the arguments (the diagnostic names file, node and op), 2 an internal error.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "compiler/commands.h"
#include "compiler_config.h"
#include "passes/pass_manager.h"
#include "pipeline/precision.h"
#include "pipeline/specializations.h"
#include "pipeline/targets.h"
#include "pipeline/variable_dims.h"
#include "toolchain/build_cache.h"
#include "tools/calibrate.h"
#include "tools/tune.h"

namespace {

using cgc::driver::CompileOptions;

/// A name given on the command line may not be empty (an empty --name would
/// silently mean the default).
const CLI::Validator kNotEmpty(
    [](const std::string& text) { return text.empty() ? std::string("is empty") : std::string(); },
    "", "not empty");

/// The options every command that compiles takes, and the raw texts of
/// --shape and --constant (parsed once the command is known).
struct ModelArgs {
  explicit ModelArgs(CompileOptions* options) : options(options) {}
  CompileOptions* options;
  std::vector<std::string> shapes, constants, bounds, dims, specialize, sweep;
  std::string depfile;            // cgc compile --depfile
  std::string target = "native";  // --target's text, resolved in parse()

  void parse() {
    // cgc_add_graph runs cgc so (cmake/cgc.cmake): hints then say SHAPES.
    const char* caller = std::getenv("CGC_CALLER");
    if (caller && std::string(caller) == "cmake")
      options->load.spelling = cgc::frontend::ShapeSpelling::kCMake;
    // A --shape with a range ("x=1x3x48x80..960") makes --dims.
    std::vector<std::string> fixed, ranged;
    for (const std::string& shape : shapes)
      (shape.find("..") == std::string::npos ? fixed : ranged).push_back(shape);
    options->load.shapes = cgc::commands::parseShapeBindings(fixed);
    options->load.constantInputs = cgc::commands::parseNamedFiles(constants);
    options->load.bounds = cgc::commands::parseBounds(bounds);
    options->dims = cgc::driver::parseDims(dims);
    cgc::driver::bindShapeRanges(ranged, *options);
    options->targets = cgc::driver::resolveTargets(target);
    options->specialize = cgc::driver::parseSpecializations(specialize, options->dims);
    if (options->cacheInPlace && options->dims.empty())
      throw cgc::CompileError(
          "cgc: error: --cache-in-place needs --dim (the cache's length varies from step to "
          "step)");
  }
};

/// --dim, for the commands that build a model to run at any size.
void addDimOption(CLI::App& command, ModelArgs& args) {
  command.add_option("--dim", args.dims,
                     "Make a symbolic dimension of the inputs variable at run time within bounds, "
                     "e.g. --dim seq=1..512 or --dim seq=8..512:8 (multiples of 8 only); the model "
                     "is compiled once and run() takes any size within them (README \"Variable "
                     "dimensions\")");
  command.add_option("--specialize", args.specialize,
                     "Also compile static code for these sizes of a --dim dimension, e.g. "
                     "--specialize seq=128,384; run() takes it when the dimensions have those "
                     "sizes (several --specialize combine: batch=1 with side=224,320 makes two "
                     "paths, at most 16). A range is a bucket, e.g. --specialize "
                     "seq=1..64,65..256: static code at its largest size run on inputs padded to "
                     "it where padding is neutral along the dimension, else general code over "
                     "the range");
  command.add_flag("--cache-in-place", args.options->cacheInPlace,
                   "With --dim: each key/value cache (an input concatenated with the new "
                   "positions into an output, a decoder's past_k -> present_k) shares one "
                   "buffer with that output, with room for the dimension's bound; run() writes "
                   "only the new positions, and after set_dim(past + 1) the output is the next "
                   "step's input, without a copy (cgc inspect lists the pairs; docs/API.md)");
}

void addModelOptions(CLI::App& command, ModelArgs& args) {
  CompileOptions& options = *args.options;
  command.add_option("MODEL", options.modelPath, "ONNX model file")->required();
  command.add_option("--shape", args.shapes,
                     "Bind an input's shape, e.g. --shape input=1x3x224x224 (repeat for several "
                     "inputs; a symbolic dimension bound here is bound in every input); with "
                     "compile, run, inspect, tune and calibrate an axis may be a range, e.g. "
                     "--shape x=1x3x48x80..960:8, which is --dim for its symbolic dimension");
  command.add_option("--constant", args.constants,
                     "Make a graph input a compile-time constant read from a TensorProto file, "
                     "e.g. --constant shape=shape.pb (for inputs that determine shapes: "
                     "Reshape's shape, Slice's starts, ...)");
  command.add_option("--bound", args.bounds,
                     "The largest size a data-dependent output may take, by node or output "
                     "name, e.g. --bound decode_loop=64 (a Loop's scan outputs when its trip "
                     "count is known only at run time; NonZero, NonMaxSuppression, Unique, "
                     "Compress, TopK with a run-time k, whose default bound is the largest size "
                     "their inputs allow); a run that exceeds it fails");
  command.add_option("--disable-pass", options.disabledPasses,
                     "Skip a graph pass (repeatable): " +
                         fmt::format("{}", fmt::join(cgc::passes::passNames(), ", ")));
  command
      .add_option("--target", args.target,
                  "What the generated code is compiled for: " +
                      fmt::format("{}", fmt::join(cgc::driver::targetNames(), ", ")) +
                      " (default: native, this machine's CPU); several, comma-separated "
                      "(x86-64-v3,cascadelake), build one library that runs the best build the "
                      "CPU has (README \"Targets\")")
      ->capture_default_str();
  command.add_flag("-q,--quiet", options.quiet, "No progress lines on stderr");
}

/// How the model runs: executors, threads, measured costs.
void addScheduleOptions(CLI::App& command, CompileOptions& options) {
  command
      .add_option("--executors", options.executors,
                  "Executors that run independent ops concurrently (default: 1, or the "
                  "profile's)")
      ->check(CLI::Range(1, 1024));
  command
      .add_option("--threads", options.threadsPerExecutor,
                  "Threads per executor; each op splits over them (default: the profile's, "
                  "else decided when the model is created: every core the process may use, "
                  "divided by the executors). A model whose executors x threads exceed the "
                  "cores the process may use when it is created runs fewer threads per "
                  "executor, with a warning (cgc run --oversubscribe, or CGC_OVERSUBSCRIBE=1 "
                  "for a built model, runs them all)")
      ->check(CLI::Range(1, 1024));
  command
      .add_option("--profile", options.profilePath,
                  "Profile JSON (cgc run --profile-out, cgc tune): its measured costs drive "
                  "the schedule, and a tuned profile's executors, threads and per-op thread "
                  "counts are used unless given here, and its convolution variants where the "
                  "target has them (a profile tuned on another CPU is refused for native)")
      ->check(CLI::ExistingFile);
}

/// --quantize int8 and what it reads (compiler/quantize.h).
void addQuantizeOptions(CLI::App& command, CompileOptions& options) {
  cgc::quant::QuantizeOptions& q = options.quantize;
  auto* quantize = command.add_option(
      "--quantize", q.precision,
      "Run the model in int8 where the int8 kernels pay (Conv, MatMul, Gemm with constant "
      "weights; the Add, pooling and moves between them), from the activation ranges of "
      "--calibration; the rest stays float: int8 (README \"Quantisation\")");
  command
      .add_option("--calibration", q.calibration,
                  "The activation statistics --quantize reads (cgc calibrate's output)")
      ->check(CLI::ExistingFile)
      ->needs(quantize);
  command
      .add_option("--method", q.method,
                  "How a tensor's range is chosen from its statistics: " +
                      fmt::format("{}", fmt::join(cgc::quant::methodNames(), ", ")))
      ->capture_default_str()
      ->needs(quantize);
  command
      .add_option("--percentile", q.percentile,
                  "--method percentile: the central percent of each tensor's values kept")
      ->capture_default_str()
      ->needs(quantize);
  command.add_option("--activations", q.activations, "The int8 activations' type: u8 or s8")
      ->capture_default_str()
      ->needs(quantize);
  command.add_option("--keep-float", q.keepFloat,
                     "Leave these layers (node names, cgc inspect) in float (repeatable; with "
                     "--quantize int8 or --precision bf16)");
  command.add_option("--keep-bf16", q.keepBf16,
                     "With --quantize int8: leave these layers (node names) out of int8 and "
                     "store their weights as bfloat16 where they have a bf16 kernel (MatMul, Gemm "
                     "with constant weights, convolutions the bf16 variant takes; repeatable; "
                     "needs a target with avx512bf16)");
  command
      .add_flag("--weights-only", q.weightsOnly,
                "With --quantize int8: only the constant weights of matrix products (MatMul, "
                "Gemm) become int8, per output column, symmetric; activations and the rest "
                "stay float and no --calibration is read (docs/PRECISION.md)")
      ->needs(quantize);
  command
      .add_option("--precision", options.precision,
                  "How the constant weights of matrix products (MatMul, Gemm) and convolutions "
                  "are stored: fp32, or bf16 (bfloat16, sums in float; needs a target with "
                  "avx512bf16); auto (with --quantize int8 --calibration --max-error "
                  "--check-inputs): each layer int8, bf16 or fp32, the cheapest that keeps the "
                  "budget, measured (docs/PRECISION.md)")
      ->check(CLI::IsMember(cgc::driver::precisionNames()))
      ->capture_default_str();
}

/// The accuracy budget (compiler/accuracy_budget.h): compile and run only.
void addBudgetOptions(CLI::App& command, CompileOptions& options) {
  cgc::quant::QuantizeOptions& q = options.quantize;
  CLI::Option* quantize = command.get_option("--quantize");
  command
      .add_option("--max-error", q.maxError,
                  "The accuracy budget: the largest relative error of an output (of a "
                  "classifier-shaped one, the share of rows whose top-1 class differs) against "
                  "the float model on --check-inputs; the most sensitive layers return to float "
                  "until it holds")
      ->check(CLI::PositiveNumber)
      ->needs(quantize);
  command
      .add_option("--check-inputs", q.checkInputs,
                  "Held-out input sets (directories of input_N.pb) that --max-error and the "
                  "report measure on")
      ->needs(quantize);
  command
      .add_option("--quantize-report", q.report,
                  "Write the quantisation report to FILE.json and a table to FILE.txt: each "
                  "layer's precision, each output's error and the float and int8 speed (with "
                  "--check-inputs)")
      ->needs(quantize);
}

CLI::App* addCompile(CLI::App& app, ModelArgs& args, std::string& weightsMode) {
  CompileOptions& options = *args.options;
  CLI::App* compile =
      app.add_subcommand("compile", "Compile MODEL into NAME.h, NAME.cpp and NAME.weights.bin");
  addModelOptions(*compile, args);
  addDimOption(*compile, args);
  addScheduleOptions(*compile, options);
  addQuantizeOptions(*compile, options);
  addBudgetOptions(*compile, options);
  compile->add_option("-o,--output", options.outDir,
                      "Output directory (default: current directory)");
  compile
      ->add_option("--name", options.className,
                   "C++ class name (default: from the file name, hey_jarvis_v0.1.onnx -> "
                   "HeyJarvisV0_1); the C prefix and file names are its snake_case form "
                   "(hey_jarvis_v0_1). A C++ identifier: no keyword, no leading '_', no "
                   "'__', no '_t' ending (README \"Names\")")
      ->check(kNotEmpty);
  compile->add_option("--namespace", options.nameSpace,
                      "C++ namespace of the class, nested ones as a::b (default: cgc_models); "
                      "each part follows --name's rules");
  compile
      ->add_option("--weights", weightsMode,
                   "embed: weights inside the object file (.incbin); file: map "
                   "NAME.weights.bin at construction (by default from next to the binary)")
      ->check(CLI::IsMember({"embed", "file"}));
  compile->add_flag("--verify", options.verify,
                    "Parse the generated code with Clang in process and fail on any error or "
                    "warning");
  compile->add_flag("--observe", options.observe,
                    "Build the model so that a cgc::Profiler with record_statistics() attached "
                    "records the statistics of its float tensors on live traffic, written as a "
                    "calibration file for --quantize (README \"Quantisation\"); the fusions that "
                    "would erase tensors are off, so it runs slower");
  compile->add_option("--print-ir-after", options.printIrAfter,
                      "Print the IR on stdout after a pass (repeatable; 'all' for every pass)");
  compile->add_option("--depfile", args.depfile,
                      "Also write the files the output was made from (the model, its external "
                      "data files, --profile, --constant and --calibration files) to FILE in "
                      "make's form, for build systems (cgc_add_graph uses it)");
  return compile;
}

CLI::App* addRun(CLI::App& app, ModelArgs& args, cgc::commands::RunOptions& run) {
  CLI::App* command = app.add_subcommand(
      "run",
      "Compile MODEL, build it with the C++ compiler (cached), run it and print its "
      "outputs");
  addModelOptions(*command, args);
  addDimOption(*command, args);
  addScheduleOptions(*command, run.compile);
  addQuantizeOptions(*command, run.compile);
  addBudgetOptions(*command, run.compile);
  command->add_option("--inputs", run.inputsDir,
                      "Directory with input_0.pb, input_1.pb, ... (ONNX test-data layout); "
                      "every input must be there unless --fill-missing-inputs; their shapes "
                      "bind the symbolic dimensions that no --shape binds");
  command->add_flag("--fill-missing-inputs", run.fillMissingInputs,
                    "Fill inputs that --inputs lacks (or all, without --inputs) with "
                    "deterministic data, naming them on stderr");
  command->add_option("--outputs", run.outputsDir,
                      "Directory to write output_0.pb, output_1.pb, ... into");
  command->add_option("--check", run.checkDir,
                      "Compare the outputs with DIR/output_N.pb (exit 1 if they differ)");
  command->add_option("--rtol", run.rtol, "Relative tolerance for --check")->capture_default_str();
  command->add_option("--atol", run.atol, "Absolute tolerance for --check")->capture_default_str();
  CLI::Option* bench = command
                           ->add_option("--bench", run.benchRuns,
                                        "Time N inferences after warm-up; print a JSON line last")
                           ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--sweep", args.sweep,
                   "With --bench and --dim: time each of these sizes of a variable dimension, "
                   "e.g. --sweep seq=1,128,512 (several combine), one JSON line each; the "
                   "inputs then hold deterministic data")
      ->needs(bench);
  command->add_option("--profile-out", run.profileOut,
                      "Write per-node timings (profile JSON): of the --bench runs, else of one "
                      "cold run");
  command->add_option("--trace", run.traceOut,
                      "Write a Chrome trace (chrome://tracing, Perfetto): of the --bench runs, "
                      "else of one cold run");
  command->add_option("--statistics-out", run.statisticsOut,
                      "Build the model with --observe and write its float tensors' statistics "
                      "on the first run's inputs as a calibration file (what cgc calibrate "
                      "writes over many input sets)");
  command->add_flag("--verify", run.compile.verify,
                    "Parse the generated code with Clang before building it");
  command->add_flag("--oversubscribe", run.oversubscribe,
                    "Run executors x threads as given even where they exceed the cores this "
                    "process may use (slow: by default they are capped to the cores, with a "
                    "warning); the same as CGC_OVERSUBSCRIBE=1");
  CLI::Option* library =
      command
          ->add_option("--library", run.library,
                       "Run the model from this library (cgc build of the model's cgc "
                       "compile --name output, compiled with the same options) instead of "
                       "building it")
          ->check(CLI::ExistingFile);
  CLI::Option* name =
      command
          ->add_option("--name", run.compile.className,
                       "With --library: the model's class name (cgc compile --name)")
          ->check(kNotEmpty);
  library->needs(name);
  name->needs(library);
  return command;
}

CLI::App* addCalibrate(CLI::App& app, ModelArgs& args, cgc::commands::CalibrateOptions& calib) {
  CLI::App* command = app.add_subcommand(
      "calibrate",
      "Run the float MODEL on calibration input sets and write each activation's statistics "
      "(min, max, histogram) as JSON, for int8 quantisation");
  command->footer(
      "The model is compiled and built as cgc run does (cached). The tensors: each float graph "
      "input and each float tensor a top-level node computes from the inputs, with its dtype, "
      "shape, count, min, max and histogram. Two passes over the input sets: the first finds "
      "min and max, the second counts each value into --bins equal bins over [min, max] (bin = "
      "floor((x - min) / (max - min) x bins), max in the last bin; one bin when min == max). A "
      "NaN or infinite value is an error naming the tensor and the input set; nothing is "
      "written then.");
  addModelOptions(*command, args);
  command->add_option("--inputs", calib.inputDirs,
                      "A calibration input set: a directory with input_0.pb, input_1.pb, ... "
                      "(ONNX test-data layout, as cgc run --inputs), every input there; repeat "
                      "for several sets (at least one); the first binds the symbolic dimensions "
                      "that no --shape or --dim binds");
  command->add_option("--dim", args.dims,
                      "Calibrate the model compiled with these variable dimensions (as cgc "
                      "compile --dim), so that the input sets may have any sizes within them; "
                      "the statistics then cover every size");
  command->add_option("-o,--output", calib.output,
                      "The JSON file to write (default: next to the model, <model "
                      "stem>.calib.json), written whole or not at all");
  command->add_option("--bins", calib.bins, "Histogram bins per tensor")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  return command;
}

CLI::App* addBuild(CLI::App& app, cgc::commands::BuildOptions& build) {
  CLI::App* command = app.add_subcommand(
      "build",
      "Build the NAME.cpp files of several compiled models (cgc compile, each with "
      "its own --name and --namespace: models that would clash are refused, naming both "
      "files) into one shared library, as one translation unit with the flags and runtime of "
      "their target; the NAME.cpp of a --target a,b,c output builds its library for several "
      "targets, each build with its own target's flags and runtime; run one with cgc run "
      "--library LIB --name NAME");
  command->add_option("SOURCES", build.sources, "Generated NAME.cpp files")->required();
  command->add_option("-o,--output", build.library, "The shared library to write")->required();
  command->add_flag("--verify", build.verify,
                    "Parse the translation unit with Clang first and fail on any error or "
                    "warning");
  command->add_flag("-q,--quiet", build.quiet, "No progress lines on stderr");
  command
      ->add_option("-O,--opt-level", build.optLevel,
                   "The C++ compiler's optimisation level for the generated code (the "
                   "kernels are prebuilt in the runtime library at theirs): lower builds "
                   "faster, runs the glue between kernels more slowly")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  return command;
}

CLI::App* addTune(CLI::App& app, ModelArgs& args, cgc::tune::TuneOptions& tune) {
  CLI::App* command = app.add_subcommand(
      "tune",
      "Measure executor configurations, each convolution layer's kernel variant (with "
      "Winograd's forms and the packed GEMM's depth steps), whether layers stored bf16 or int8 "
      "run faster in float, and per-op thread counts; write the fastest, if it "
      "beats the default, as DIR/<model>.profile.json for --profile");
  addModelOptions(*command, args);
  command->add_option("--dim", args.dims,
                      "Tune the model compiled with these variable dimensions (as cgc compile "
                      "--dim) at the sizes of --inputs (default: the bounds); the profile records "
                      "them, and a compile with it specialises them");
  command->add_option("--specialize", args.specialize,
                      "Also tune the static code of these sizes of a --dim dimension (as cgc "
                      "compile --specialize): each path's own convolution variants and per-op "
                      "thread counts, timed on deterministic data at its sizes on the general "
                      "code's executors and threads; a compile with the profile specialises "
                      "these paths with their tuning");
  addQuantizeOptions(*command, tune.compile);
  command->add_option("-o,--output", tune.outDir,
                      "Directory for the profile (default: current directory)");
  command->add_option("--inputs", tune.inputsDir,
                      "Directory with input_0.pb, ... to time on (default: deterministic data); "
                      "their shapes bind the symbolic dimensions that no --shape or --dim binds");
  command->add_option("--runs", tune.runsProfile,
                      "With --dim: a profile of runs (cgc run --profile-out, a deployment's "
                      "profiler) whose sizes the tuned profile keeps (a compile with it "
                      "specialises the sizes run most); prints buckets that cover them, for "
                      "--specialize");
  command->add_option("--rounds", tune.rounds, "Timed rounds per try (median)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  command->add_option("--budget", tune.budgetSeconds, "Seconds after which no new try starts")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  return command;
}

CLI::App* addConfig(CLI::App& app, cgc::commands::ConfigOptions& config) {
  CLI::App* command = app.add_subcommand(
      "config",
      "Print the flags a build without CMake needs (as pkg-config does; README \"Building "
      "against a generated model\"), for this cgc's install or build tree");
  command->add_flag("--cflags", config.cflags,
                    "The runtime's include directory: for any C or C++ (C++17 on) file that "
                    "includes a generated header (add -I<its directory>)");
  command->add_flag("--cxxflags", config.cxxflags,
                    "What compiling a generated NAME.cpp takes: C++20, the target's flags, the "
                    "include directory (add -I and, for embedded weights, -Wa,-I<its directory>)");
  command->add_flag("--libs", config.libs,
                    "The runtime archive and what it links (LIBXSMM, threads, dl, the C++ "
                    "library), after the program's objects; any C or C++ compiler links them");
  command
      ->add_option("--target", config.target,
                   "The target the model was compiled for (cgc compile --target): its runtime "
                   "and flags")
      ->capture_default_str();
  return command;
}

/// Runs the chosen command; CompileError is the user's problem (exit 1),
/// anything else cgc's (exit 2).
template <typename F>
int guarded(F&& command) {
  try {
    return command();
  } catch (const cgc::CompileError& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  } catch (const cgc::InternalError& e) {
    std::cerr << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "cgc: internal error: " << e.what() << std::endl;
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cgc: an ahead-of-time compiler from ONNX models to specialised C++"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "cgc " CGC_VERSION);

  CompileOptions compileOptions, inspectOptions;
  cgc::commands::RunOptions runOptions;
  cgc::tune::TuneOptions tuneOptions;
  cgc::commands::BuildOptions buildOptions;
  cgc::commands::ConfigOptions configOptions;
  cgc::commands::CalibrateOptions calibrateOptions;
  ModelArgs calibrateArgs{&calibrateOptions.compile};
  ModelArgs compileArgs{&compileOptions}, runArgs{&runOptions.compile},
      tuneArgs{&tuneOptions.compile}, inspectArgs{&inspectOptions};
  std::string weightsMode = "embed";
  bool json = false;
  CLI::App* compile = addCompile(app, compileArgs, weightsMode);
  CLI::App* run = addRun(app, runArgs, runOptions);
  CLI::App* tune = addTune(app, tuneArgs, tuneOptions);
  CLI::App* calibrate = addCalibrate(app, calibrateArgs, calibrateOptions);
  CLI::App* build = addBuild(app, buildOptions);
  CLI::App* config = addConfig(app, configOptions);
  CLI::App* inspect = app.add_subcommand(
      "inspect",
      "Report MODEL's inputs and outputs, its ops, what cgc cannot compile yet and "
      "what to try, and the compiled plan (ops, kernels and weights include those in If, Loop "
      "and Scan bodies); with --ops, the ONNX ops cgc supports");
  addModelOptions(*inspect, inspectArgs);
  addDimOption(*inspect, inspectArgs);
  addScheduleOptions(*inspect, inspectOptions);
  addQuantizeOptions(*inspect, inspectOptions);
  inspect->add_flag("--json", json, "Print the report as JSON");
  bool listOps = false;
  CLI::Option* model = inspect->get_option("MODEL")->required(false);
  inspect
      ->add_flag("--ops", listOps,
                 "Print the ONNX ops cgc supports, as Markdown (docs/OPS.md), instead of "
                 "inspecting a model")
      ->excludes(model);
  bool clearCache = false;
  CLI::App* cache = app.add_subcommand(
      "cache",
      "Show the cache of compiled models (cgc run and the Python module load a model "
      "compiled before with the same options from it): its directory ($CGC_CACHE_DIR, else "
      "$XDG_CACHE_HOME/cgc, else ~/.cache/cgc), size and builds, least recently used first. "
      "Builds beyond its limit ($CGC_CACHE_MAX_SIZE: bytes or 500M, 2G; default 2G) are "
      "removed, least recently used first, after each build");
  cache->add_flag("--clear", clearCache, "Remove every build from the cache");
  bool runnableOnly = false;
  CLI::App* targets = app.add_subcommand(
      "targets",
      "List the targets (--target): instruction-set tier, compiler flags, and whether their "
      "code runs on this machine");
  targets->add_flag("--runnable", runnableOnly,
                    "Print only the names of the targets whose code runs here, one a line");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line naming the flag, as every other error.
    std::cerr << "cgc: error: " << e.what() << " (see --help)\n";
    return 1;
  }
  return guarded([&] {
    if (*compile) {
      compileArgs.parse();
      compileOptions.embedWeights = weightsMode == "embed";
      compileOptions.weightsGiven = compile->count("--weights") > 0;
      return cgc::commands::compile(compileOptions, compileArgs.depfile);
    }
    if (*run) {
      runArgs.parse();
      runOptions.sweep =
          cgc::driver::parseSizeLists(runArgs.sweep, runOptions.compile.dims, "--sweep");
      return cgc::commands::run(runOptions);
    }
    if (*calibrate) {
      calibrateArgs.parse();
      return cgc::commands::calibrate(calibrateOptions);
    }
    if (*build) return cgc::commands::build(buildOptions);
    if (*targets) return cgc::driver::printTargets(runnableOnly);
    if (*config) return cgc::commands::config(configOptions);
    if (*cache) return cgc::cache::command(clearCache);
    if (*tune) {
      tuneArgs.parse();
      return cgc::tune::tune(tuneOptions);
    }
    if (listOps) return cgc::commands::printSupportedOps();
    if (inspectOptions.modelPath.empty())
      throw cgc::CompileError("cgc: error: inspect needs MODEL (or --ops)");
    inspectArgs.parse();
    inspectOptions.quiet = true;
    return cgc::commands::inspect(inspectOptions, json);
  });
}
