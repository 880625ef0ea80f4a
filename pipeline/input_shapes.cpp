// See input_shapes.h.
#include "pipeline/input_shapes.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "onnx_frontend/onnx_loader.h"
#include "onnx_frontend/tensor_proto.h"

namespace cgc::commands {

std::vector<std::pair<std::string, ir::Shape>> shapesFromInputs(
    const driver::CompileOptions& options, const std::string& inputsDir) {
  if (inputsDir.empty() || !std::filesystem::is_directory(inputsDir)) return {};
  const frontend::ModelSummary summary = frontend::summarizeModel(options.modelPath);
  // Each symbolic dimension's size, and what bound it: --shape, then the files.
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  std::set<std::string> bound;  // inputs --shape or --constant binds
  for (const auto& [name, shape] : options.load.shapes) {
    bound.insert(name);
    for (const frontend::DeclaredTensor& t : summary.inputs)
      if (t.name == name && t.symbols.size() == shape.size())
        for (size_t d = 0; d < shape.size(); ++d)
          if (!t.symbols[d].empty()) symbols.emplace(t.symbols[d], std::pair{shape[d], "--shape"});
  }
  for (const auto& binding : options.load.constantInputs) bound.insert(binding.first);
  std::vector<std::pair<std::string, ir::Shape>> bindings;
  // Test-data files are numbered in the model's input order (summary.inputs).
  for (size_t i = 0; i < summary.inputs.size(); ++i) {
    const frontend::DeclaredTensor& t = summary.inputs[i];
    // Axes of --dim's dimensions stay variable; those a --shape range
    // fixed by name are bound.
    bool unknown = !t.ranked;
    for (size_t d = 0; d < t.dims.size(); ++d)
      unknown |= t.dims[d] < 0 && !options.load.dims.count(t.symbols[d]) &&
                 std::none_of(options.dims.begin(), options.dims.end(),
                              [&](const auto& dim) { return dim.name == t.symbols[d]; });
    const std::string path = fmt::format("{}/input_{}.pb", inputsDir, i);
    if (!unknown || bound.count(t.name) || !std::filesystem::exists(path)) continue;
    const ir::TensorType type = frontend::readTensorFile(path).type;
    const std::string file = std::filesystem::path(path).filename().string();
    auto contradicts = [&] {
      userError({path, "", ""}, "tensor is {} but input '{}' of the model is {}", type.str(),
                t.name, t.type);
    };
    if (t.ranked && type.shape.size() != t.dims.size()) contradicts();
    for (size_t d = 0; d < t.dims.size(); ++d) {
      if (t.dims[d] >= 0 && t.dims[d] != type.shape[d]) contradicts();
      if (t.symbols[d].empty()) continue;
      const auto [it, added] = symbols.emplace(t.symbols[d], std::pair{type.shape[d], file});
      if (!added && it->second.first != type.shape[d])
        userError({path, "", ""},
                  "tensor is {}, which makes dimension '{}' of input '{}' {}, but {} makes it {}",
                  type.str(), t.symbols[d], t.name, type.shape[d], it->second.second,
                  it->second.first);
    }
    bindings.emplace_back(t.name, type.shape);
  }
  return bindings;
}

void bindShapesFromInputs(driver::CompileOptions& options, const std::string& inputsDir) {
  const auto fromFiles = shapesFromInputs(options, inputsDir);
  if (fromFiles.empty()) return;
  std::vector<std::string> shown;
  for (const auto& [name, shape] : fromFiles) {
    options.load.shapes.emplace_back(name, shape);
    shown.push_back(fmt::format("{}={}", name, fmt::join(shape, "x")));
  }
  driver::progress(options,
                   fmt::format("input shapes from {}: {}", inputsDir, fmt::join(shown, ", ")));
}

}  // namespace cgc::commands
