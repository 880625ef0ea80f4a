// See model_emitter.h: the parts put together and formatted.
#include "codegen/model_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "codegen/clang_tools.h"
#include "codegen/emit_parts.h"

namespace cgc::codegen {

std::string withCommas(int64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && digits[i - 1] != '-' && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string describeSchedule(const ModelLayout& layout) {
  const passes::Schedule& schedule = layout.model.schedule;
  return layout.fixedTeam()
             ? fmt::format("{} executor(s) x {} thread(s)", schedule.executors,
                           schedule.threadsPerExecutor)
             : fmt::format("{} executor(s) x all cores (at run time)", schedule.executors);
}

std::string sourceName(const ModelLayout& layout) {
  return std::filesystem::path(layout.model.graph.sourceFile).filename().string();
}

std::vector<std::string> VariableDims::cppNames() const {
  std::vector<std::string> names;
  for (const Dim& d : dims) {
    std::string name = "dim_";
    for (char c : d.name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (std::find(names.begin(), names.end(), name) != names.end())
      name += fmt::format("_{}", names.size());
    names.push_back(name);
  }
  return names;
}

EmittedModel emitModel(const ModelToEmit& model, const EmitOptions& options) {
  const ModelLayout layout(model, options);
  EmittedModel emitted;
  emitted.className = layout.className;
  emitted.baseName = layout.prefix;
  emitted.weights = layout.weights;
  emitted.graphHash = layout.graphHash;
  emitted.arenaBytes = layout.arenaBytes();
  emitted.header = emitHeader(layout);
  emitted.source = emitSource(layout);
  if (options.format) {
    emitted.header = formatCpp(emitted.header, layout.prefix + ".h");
    emitted.source = formatCpp(emitted.source, layout.prefix + ".cpp");
  }
  return emitted;
}

EmittedModel emitDispatcher(const ModelToEmit& model, const EmitOptions& options,
                            const std::vector<TargetBuild>& builds) {
  const ModelLayout layout(model, options);
  EmittedModel emitted;
  emitted.className = layout.className;
  emitted.baseName = layout.prefix;
  emitted.graphHash = layout.graphHash;
  emitted.hasWeightsFile = false;
  emitted.header = emitHeader(layout, &builds);
  emitted.source = emitDispatcherSource(layout, builds);
  if (options.format) {
    emitted.header = formatCpp(emitted.header, layout.prefix + ".h");
    emitted.source = formatCpp(emitted.source, layout.prefix + ".cpp");
  }
  return emitted;
}

}  // namespace cgc::codegen
