// See target_library.h.
#include "toolchain/target_library.h"

#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "cgc/isa_tiers.h"
#include "toolchain/model_runner.h"

namespace cgc::driver {
namespace fs = std::filesystem;

namespace {

/// "x86-64-v3" -> "x86_64_v3": a target's part of a build's C prefix.
std::string symbolOf(const std::string& target) {
  std::string out = target;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return out;
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> names;
  std::stringstream stream(text);
  for (std::string name; std::getline(stream, name, ',');) names.push_back(name);
  return names;
}

/// Runs `command`; an InternalError with its output when it fails or warns.
void runBuildStep(const std::string& command) {
  std::string output;
  const int status = runCommand(command, output);
  if (status != 0 || !output.empty())
    throw InternalError(
        fmt::format("internal error: a build step of the multi-target library {}:\n{}\n{}",
                    status != 0 ? "failed" : "warned", command, output));
}

}  // namespace

bool namesSeveralTargets(const CompileOptions& options) {
  return options.target.find(',') != std::string::npos;
}

std::vector<Target> listedTargets(const CompileOptions& options) {
  std::vector<Target> targets;
  for (const std::string& name : splitList(options.target)) {
    if (name.empty())
      throw CompileError(
          fmt::format("cgc: error: --target '{}' has an empty name", options.target));
    Target target = findTarget(name);
    for (const Target& other : targets) {
      if (other.name == target.name)
        throw CompileError(fmt::format("cgc: error: --target lists {} twice", name));
      if (other.arch != target.arch)
        throw CompileError(fmt::format(
            "cgc: error: --target {}: one library holds one processor family ({} is for {}, {} "
            "for {})",
            options.target, other.name, other.arch, target.name, target.arch));
    }
    targets.push_back(std::move(target));
  }
  if (!options.embedWeights)
    throw CompileError(
        "cgc: error: --weights file with several targets: each build packs the weights for its "
        "own CPU, so they are embedded (--weights embed)");
  std::stable_sort(targets.begin(), targets.end(), [](const Target& a, const Target& b) {
    return a.features.size() > b.features.size();
  });
  return targets;
}

CompileOptions firstTargetOptions(const CompileOptions& options) {
  CompileOptions first = options;
  first.target = listedTargets(options).front().name;
  return first;
}

TargetLibrary emitTargetLibrary(const CompileOptions& options) {
  TargetLibrary library;
  library.targets = listedTargets(options);
  std::vector<codegen::TargetBuild> builds;
  const codegen::ModelNames names = checkedNames(options);
  const std::string &className = names.className, &prefix = names.prefix;
  for (const Target& target : library.targets) {
    CompileOptions one = options;
    one.target = target.name;
    one.weightsGiven = true;  // each build embeds its weights
    const CompiledModel model = compileGraph(one);
    one.className = className;
    one.nameSpace = options.nameSpace + "::" + symbolOf(target.name);
    one.symbolPrefix = prefix + "_" + symbolOf(target.name);
    codegen::EmittedModel build = emitModel(model, one);
    builds.push_back({target.name, target.tier, build.baseName, build.arenaBytes});
    library.builds.push_back(std::move(build));
    if (&target == &library.targets.back()) {
      CompileOptions top = options;
      top.className = className;
      top.target = target.name;
      codegen::EmitOptions emit = emitOptions(top);
      emit.target = options.target;
      library.dispatcher = codegen::emitDispatcher(model.toEmit(), emit, builds);
    }
  }
  return library;
}

std::vector<WrittenFiles> writeTargetLibrary(TargetLibrary library, const std::string& outDir,
                                             const CompileOptions& options) {
  // The builds first: the dispatcher includes their headers (--verify).
  std::vector<WrittenFiles> files(1);
  for (codegen::EmittedModel& build : library.builds)
    files.push_back(writeModel(std::move(build), outDir, options));
  files.front() = writeModel(std::move(library.dispatcher), outDir, options);
  return files;
}

void buildTargetLibrary(const std::vector<Target>& targets, const std::vector<WrittenFiles>& files,
                        const std::string& output, const CompileOptions& options) {
  if (const std::string why = whyNotRunnableHere(targets.front());
      targets.front().arch != findTarget("native").arch)
    userError({options.modelPath, "", ""},
              "{}: cgc run loads the model here; build a library for {} with cgc compile and "
              "cgc_add_graph",
              why, options.target);
  const fs::path dir = fs::path(files.front().sourcePath).parent_path();
  const std::string includes =
      fmt::format("-I{0} -I{1} -Wa,-I{1}", shellQuote(runtimePaths("native").includeDir),
                  shellQuote(dir.string()));
  std::string objects;
  for (size_t i = 0; i < targets.size(); ++i) {
    const Target& target = targets[i];
    const std::string& source = files[i + 1].sourcePath;
    const std::string base = (dir / files[i + 1].emitted.baseName).string();
    progress(options, fmt::format("building the {} build", target.name));
    runBuildStep(fmt::format("{} -fno-gnu-unique {} -c {} -o {}", generatedCodeFlags(target.name),
                             includes, shellQuote(source), shellQuote(base + ".o")));
    // One object of the build and its runtime, then everything but its
    // table made local and its COMDAT groups dissolved, so that the linker
    // never merges one build's copy of a function into another's.
    runBuildStep(fmt::format("ld -r -o {} {} {}", shellQuote(base + ".linked.o"),
                             shellQuote(base + ".o"),
                             shellQuote(runtimePaths(target.name).library)));
    runBuildStep(fmt::format("objcopy -R .group --keep-global-symbol={}_api {} {}",
                             files[i + 1].emitted.baseName, shellQuote(base + ".linked.o"),
                             shellQuote(base + ".build.o")));
    objects += ' ';
    objects += shellQuote(base + ".build.o");
  }
  // The dispatcher runs before any build is chosen: compiled for the
  // family's baseline, with the lowest target's runtime for the public
  // parts (errors, the CPU check, the choice), which are baseline code too.
  const Target& lowest = targets.back();  // any would do: that part is baseline code
  const fs::path temporary = output + fmt::format(".tmp{}", getpid());
  runBuildStep(fmt::format("{} -std=c++20 -O2 -fPIC -Wall -Wextra -shared {} {}{} {} {} -o {}",
                           lowest.compiler(), includes, shellQuote(files.front().sourcePath),
                           objects, shellQuote(runtimePaths(lowest.name).library),
                           runtimeLinkLibraries(lowest.name), shellQuote(temporary.string())));
  fs::rename(temporary, output);
}

}  // namespace cgc::driver
