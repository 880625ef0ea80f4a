// cgc: the command line. Exit codes: 0 success, 1 a problem in the model or
// the arguments (the diagnostic names file, node and op), 2 an internal error.
#include <CLI/CLI.hpp>

#include <iostream>

#include "compiler/commands.h"
#include "compiler/tune.h"
#include "passes/pass_manager.h"

namespace {

using cgc::driver::CompileOptions;

void addModelOptions(CLI::App& command, CompileOptions& options,
                     std::vector<std::string>& shapes,
                     std::vector<std::string>& constants) {
  command.add_option("MODEL", options.modelPath, "ONNX model file")
      ->required();
  command.add_option("--shape", shapes,
                     "Bind an input's shape, e.g. --shape input=1x3x224x224 "
                     "(repeat for several inputs)");
  command.add_option("--constant", constants,
                     "Make a graph input a compile-time constant read from a "
                     "TensorProto file, e.g. --constant shape=shape.pb (for "
                     "inputs that determine shapes: Reshape's shape, Slice's "
                     "starts, ...)");
  command.add_option("--disable-pass", options.disabledPasses,
                     "Skip a graph pass (repeatable): " +
                         fmt::format("{}", fmt::join(cgc::passes::passNames(), ", ")));
  command.add_flag("-q,--quiet", options.quiet, "No progress lines on stderr");
}

/// How the model runs: executors, threads, measured costs.
void addScheduleOptions(CLI::App& command, CompileOptions& options) {
  command.add_option("--executors", options.executors,
                     "Executors that run independent ops concurrently "
                     "(default: 1, or the profile's)")
      ->check(CLI::Range(1, 1024));
  command.add_option("--threads", options.threadsPerExecutor,
                     "Threads per executor; each op splits over them "
                     "(default: the cores available divided by the executors, "
                     "or the profile's)")
      ->check(CLI::Range(1, 1024));
  command.add_option("--profile", options.profilePath,
                     "Profile JSON (cgc run --profile-out, cgc tune): its "
                     "measured costs drive the schedule, and a tuned profile's "
                     "executors, threads and per-op thread counts are used "
                     "unless given here")
      ->check(CLI::ExistingFile);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "cgc: an ahead-of-time compiler from ONNX models to specialised C++"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "cgc 0.1.0");

  CompileOptions compileOptions;
  std::vector<std::string> compileShapes, compileConstants;
  std::string weightsMode = "embed";
  CLI::App* compile = app.add_subcommand(
      "compile", "Compile MODEL into NAME.h, NAME.cpp and NAME.weights.bin");
  addModelOptions(*compile, compileOptions, compileShapes, compileConstants);
  addScheduleOptions(*compile, compileOptions);
  compile->add_option("-o,--output", compileOptions.outDir,
                      "Output directory (default: current directory)");
  compile->add_option("--name", compileOptions.className,
                      "C++ class name (default: from the file name); the C "
                      "ABI prefix and file names are its snake_case form");
  compile->add_option("--namespace", compileOptions.nameSpace,
                      "C++ namespace of the class (default: cgc_models)");
  compile->add_option("--weights", weightsMode,
                      "embed: weights inside the object file (.incbin); "
                      "file: read NAME.weights.bin at construction")
      ->check(CLI::IsMember({"embed", "file"}));
  compile->add_flag("--verify", compileOptions.verify,
                    "Parse the generated code with Clang in process and fail "
                    "on any error or warning");

  cgc::commands::RunOptions runOptions;
  std::vector<std::string> runShapes, runConstants;
  CLI::App* run = app.add_subcommand(
      "run", "Compile MODEL, build it with the C++ compiler (cached), run it "
             "and print its outputs");
  addModelOptions(*run, runOptions.compile, runShapes, runConstants);
  addScheduleOptions(*run, runOptions.compile);
  run->add_option("--inputs", runOptions.inputsDir,
                  "Directory with input_0.pb, input_1.pb, ... (ONNX test-data "
                  "layout); inputs not given are filled deterministically");
  run->add_option("--outputs", runOptions.outputsDir,
                  "Directory to write output_0.pb, output_1.pb, ... into");
  run->add_option("--check", runOptions.checkDir,
                  "Compare the outputs with DIR/output_N.pb (exit 1 if they "
                  "differ)");
  run->add_option("--rtol", runOptions.rtol, "Relative tolerance for --check")
      ->capture_default_str();
  run->add_option("--atol", runOptions.atol, "Absolute tolerance for --check")
      ->capture_default_str();
  run->add_option("--bench", runOptions.benchRuns,
                  "Time N inferences after warm-up; print a JSON line last")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--profile-out", runOptions.profileOut,
                  "Write per-node timings (profile JSON) to this file");
  run->add_option("--trace", runOptions.traceOut,
                  "Write a Chrome trace (chrome://tracing, Perfetto)");
  run->add_flag("--verify", runOptions.compile.verify,
                "Parse the generated code with Clang before building it");

  cgc::tune::TuneOptions tuneOptions;
  std::vector<std::string> tuneShapes, tuneConstants;
  CLI::App* tune = app.add_subcommand(
      "tune", "Measure executor configurations and per-op thread counts; "
              "write the fastest as DIR/<model>.profile.json for --profile");
  addModelOptions(*tune, tuneOptions.compile, tuneShapes, tuneConstants);
  tune->add_option("-o,--output", tuneOptions.outDir,
                   "Directory for the profile (default: current directory)");
  tune->add_option("--inputs", tuneOptions.inputsDir,
                   "Directory with input_0.pb, ... to time on (default: "
                   "deterministic data)");
  tune->add_option("--rounds", tuneOptions.rounds, "Timed rounds per try (median)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  tune->add_option("--budget", tuneOptions.budgetSeconds,
                   "Seconds after which no new try starts")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();

  CompileOptions inspectOptions;
  std::vector<std::string> inspectShapes, inspectConstants;
  bool json = false;
  CLI::App* inspect = app.add_subcommand(
      "inspect", "Report MODEL's ops, unsupported nodes and memory plan");
  addModelOptions(*inspect, inspectOptions, inspectShapes, inspectConstants);
  inspect->add_flag("--json", json, "Print the report as JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }

  try {
    if (*compile) {
      compileOptions.load.shapes = cgc::commands::parseShapeBindings(compileShapes);
      compileOptions.load.constantInputs = cgc::commands::parseNamedFiles(compileConstants);
      compileOptions.embedWeights = weightsMode == "embed";
      return cgc::commands::compile(compileOptions);
    }
    if (*run) {
      runOptions.compile.load.shapes = cgc::commands::parseShapeBindings(runShapes);
      runOptions.compile.load.constantInputs = cgc::commands::parseNamedFiles(runConstants);
      return cgc::commands::run(runOptions);
    }
    if (*tune) {
      tuneOptions.compile.load.shapes = cgc::commands::parseShapeBindings(tuneShapes);
      tuneOptions.compile.load.constantInputs = cgc::commands::parseNamedFiles(tuneConstants);
      return cgc::tune::tune(tuneOptions);
    }
    inspectOptions.load.shapes = cgc::commands::parseShapeBindings(inspectShapes);
    inspectOptions.load.constantInputs = cgc::commands::parseNamedFiles(inspectConstants);
    inspectOptions.quiet = true;
    return cgc::commands::inspect(inspectOptions, json);
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
