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

std::vector<std::string> VariableDims::variableNames(std::vector<std::string> dimNames) const {
  for (size_t k = 0; k < derived.size(); ++k) dimNames.push_back(fmt::format("size_{}", k));
  return dimNames;
}

std::vector<int64_t> VariableDims::variableValues(std::vector<int64_t> sizes) const {
  for (const DerivedSize& d : derived) sizes.push_back(d.at(sizes).value_or(0));
  return sizes;
}

std::string VariableDims::DerivedSize::cpp(const std::vector<std::string>& names) const {
  std::string text = scale == 1 ? "" : std::to_string(scale);
  for (const ir::DimPoly& f : factors) {
    const bool bare = f.singleDim().has_value() || f.isConstant();
    const char* times = text.empty() ? "" : " * ";
    text += bare ? fmt::format("{}{}", times, f.cpp(names))
                 : fmt::format("{}({})", times, f.cpp(names));
  }
  const auto plus = [](int64_t v) {
    return v == 0 ? std::string() : fmt::format(" {} {}", v < 0 ? '-' : '+', v < 0 ? -v : v);
  };
  if (divisor == 1) return text + plus(offset + addend);
  return fmt::format("({}{}) / {}{}", text, plus(offset), divisor, plus(addend));
}

std::optional<int64_t> VariableDims::DerivedSize::at(const std::vector<int64_t>& values) const {
  __int128 numerator = scale;
  for (const ir::DimPoly& f : factors) {
    const auto v = f.at(values);
    if (!v) return std::nullopt;
    numerator *= *v;
  }
  numerator += offset;
  if (numerator < 0 && divisor > 1) return std::nullopt;  // the generated code's division floors
  return static_cast<int64_t>(numerator / divisor + addend);
}

EmittedModel emitModel(const ModelToEmit& model, const EmitOptions& options) {
  ModelLayout layout(model, options);
  EmittedModel emitted;
  emitted.className = layout.className;
  emitted.baseName = layout.prefix;
  emitted.graphHash = layout.graphHash;
  emitted.arenaBytes = layout.arenaBytes();
  emitted.header = emitHeader(layout);
  emitted.source = emitSource(layout);
  if (options.format) {
    emitted.header = formatCpp(emitted.header, layout.prefix + ".h");
    emitted.source = formatCpp(emitted.source, layout.prefix + ".cpp");
  }
  emitted.embedsWeights = options.embedWeights;
  emitted.weights = std::move(layout.weights);  // the layout is done with them
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
