// `cgc config`: what a build without CMake needs to compile a generated model
// and link it with the runtime (as pkg-config --cflags --libs would print
// it), for the cgc that runs: its install, or the build tree it was built in
// (driver::runtimePaths). The values are the ones cgc run builds with
// (generatedCodeOptions, runtimeLinkLibraries), so there is one place each.
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

#include "compiler/commands.h"
#include "ir/diagnostics.h"
#include "toolchain/model_runner.h"

namespace cgc::commands {
namespace {

/// Appends the words of `flags` to `words`, each once.
void addWords(std::vector<std::string>& words, const std::string& flags) {
  std::istringstream stream(flags);
  for (std::string word; stream >> word;)
    if (std::find(words.begin(), words.end(), word) == words.end()) words.push_back(word);
}

}  // namespace

int config(const ConfigOptions& options) {
  if (!options.cflags && !options.cxxflags && !options.libs)
    userError({"cgc config", "", ""}, "say what to print: --cflags, --cxxflags, --libs");
  const driver::Target target = driver::findTarget(options.target);
  const driver::RuntimePaths runtime = driver::installedRuntime(target);
  // Unquoted, as pkg-config prints them: $(cgc config ...) splits words
  // but removes no quotes.
  const std::string include = "-I" + runtime.includeDir;
  std::vector<std::string> words;
  if (options.cflags) addWords(words, include);
  if (options.cxxflags) addWords(words, driver::generatedCodeOptions(target) + " " + include);
  if (options.libs)
    addWords(words,
             runtime.library + " " + driver::runtimeLinkLibraries(target, /*cxxLibrary=*/true));
  fmt::print("{}\n", fmt::join(words, " "));
  return 0;
}

}  // namespace cgc::commands
