// See target_library.h.
#include "toolchain/target_library.h"

#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

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

bool namesSeveralTargets(const CompileOptions& options) { return options.targets.size() > 1; }

std::vector<Target> listedTargets(const CompileOptions& options) {
  std::vector<Target> targets = options.targets;
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
  first.targets = {listedTargets(options).front()};
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
    one.targets = {target};
    one.weightsGiven = true;  // each build embeds its weights
    const CompiledModel model = compileModel(one);
    one.className = className;
    one.nameSpace = options.nameSpace + "::" + symbolOf(target.name);
    one.symbolPrefix = prefix + "_" + symbolOf(target.name);
    codegen::EmittedModel build = emitModel(model, one);
    builds.push_back({target.name, target.tier, build.baseName, build.arenaBytes});
    library.builds.push_back(std::move(build));
    if (&target == &library.targets.back()) {
      CompileOptions top = options;
      top.className = className;
      top.targets = {target};
      codegen::EmitOptions emit = emitOptions(top);
      emit.target = targetList(options.targets);
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

void linkTargetLibrary(const std::string& dispatcher, const std::vector<TargetSource>& builds,
                       const std::string& output, int optLevel, const CompileOptions& options) {
  const Target& best = builds.front().target;
  if (const std::string why = whyNotRunnableHere(best); best.arch != nativeTarget().arch)
    userError({dispatcher, "", ""},
              "{}: a library for several targets is linked here, with this machine's linker; "
              "build one for {} with cgc_add_graph",
              why, best.name);
  std::vector<std::string> runtimes;
  for (const TargetSource& build : builds)
    runtimes.push_back(installedRuntime(build.target).library);
  const fs::path dir = fs::path(dispatcher).parent_path();
  const std::string includes = fmt::format(
      "-I{0} -I{1} -Wa,-I{1}", shellQuote(runtimePaths().includeDir), shellQuote(dir.string()));
  // Every file under a name of this process's until it is complete:
  // concurrent builds of one library race to the renames only.
  const std::string mine = fmt::format(".tmp{}", getpid());
  fs::path stem = output;
  stem.replace_extension();
  std::vector<std::pair<std::string, std::string>> objects;  // this process's, the kept name
  std::string inputs;
  for (size_t i = 0; i < builds.size(); ++i) {
    const Target& target = builds[i].target;
    const std::string object = stem.string() + "." + target.name + ".o";
    const std::string compiled = object + mine + ".c.o", linked = object + mine + ".r.o";
    progress(options, fmt::format("building the {} build", target.name));
    runBuildStep(fmt::format("{} -fno-gnu-unique {} -c {} -o {}",
                             generatedCodeFlags(target, optLevel), includes,
                             shellQuote(builds[i].source), shellQuote(compiled)));
    // One object of the build and its runtime, then everything but its
    // table made local and its COMDAT groups dissolved, so that the linker
    // never merges one build's copy of a function into another's.
    runBuildStep(fmt::format("ld -r -o {} {} {}", shellQuote(linked), shellQuote(compiled),
                             shellQuote(runtimes[i])));
    runBuildStep(fmt::format("objcopy -R .group --keep-global-symbol={}_api {} {}",
                             fs::path(builds[i].source).stem().string(), shellQuote(linked),
                             shellQuote(object + mine)));
    std::error_code ignored;
    fs::remove(compiled, ignored);
    fs::remove(linked, ignored);
    objects.emplace_back(object + mine, object);
    inputs += ' ' + shellQuote(object + mine);
  }
  // The dispatcher runs before any build is chosen: compiled for the
  // family's baseline, with the lowest target's runtime for the public
  // parts (errors, the CPU check, the choice), which are baseline code too.
  const Target& lowest = builds.back().target;
  runBuildStep(fmt::format("{} -std=c++20 -O{} -fPIC -Wall -Wextra -shared {} {}{} {} {} -o {}",
                           lowest.compiler(), optLevel, includes, shellQuote(dispatcher), inputs,
                           shellQuote(runtimes.back()), runtimeLinkLibraries(lowest),
                           shellQuote(output + mine)));
  for (const auto& [temporary, kept] : objects) fs::rename(temporary, kept);
  fs::rename(output + mine, output);
}

}  // namespace cgc::driver
