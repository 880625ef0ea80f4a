// See model_layout.h.
#include "codegen/model_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "passes/cost_model.h"

namespace cgc::codegen {

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "t_" + out;
  return out;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

namespace {

/// Unique identifiers: `base`, `base2`, `base3`, ...
class Names {
 public:
  std::string take(const std::string& base) {
    std::string candidate = base;
    for (int i = 2; !used_.insert(candidate).second; ++i) candidate = fmt::format("{}{}", base, i);
    return candidate;
  }

 private:
  std::set<std::string> used_;
};

/// "conv1.weight" -> "kConv1Weight".
std::string constantName(const std::string& tensor) {
  return "k" + toClassName(tensor);
}

}  // namespace

ModelLayout::ModelLayout(const ModelToEmit& model, const EmitOptions& options)
    : model(model), options(options) {
  const ir::Graph& graph = model.graph;
  className = options.className.empty() ? toClassName(graph.name) : options.className;
  prefix = options.symbolPrefix.empty() ? toSymbolPrefix(className) : options.symbolPrefix;
  graphHash = passes::graphHash(graph);
  for (const auto& list : model.schedule.ops) order.insert(order.end(), list.begin(), list.end());
  for (size_t i = 0; i < order.size(); ++i) nodeIndex[order[i]] = static_cast<int>(i);
  for (const auto& dep : model.schedule.crossDependencies)
    signals.emplace(dep.producer, static_cast<int>(signals.size()));
  Names accessors;
  for (int in : graph.inputs)
    inputAccessors.push_back(accessors.take(sanitize(graph.value(in).name) + "_data"));
  for (const auto& name : graph.outputNames)
    outputAccessors.push_back(accessors.take(sanitize(name) + "_data"));
  placeWeights();
  nameOffsets();
}

void ModelLayout::placeWeights() {
  const ir::Graph& graph = model.graph;
  auto place = [&](int v) {
    const ir::Value& value = graph.value(v);
    if (!value.isConstant() || weightOffset_.count(value.data.get())) return;
    weightOffset_[value.data.get()] = static_cast<int64_t>(weights.size());
    weights.insert(weights.end(), value.data->begin(), value.data->end());
    // Round up, and to one block at least, so that even an empty constant
    // has an address inside the blob.
    weights.resize((std::max<size_t>(weights.size(), 1) + 63) / 64 * 64, 0);
  };
  for (int id : order)
    for (int in : model.calls.of(id).inputs)
      if (in >= 0) place(in);
  for (int out : graph.outputs) place(out);
}

void ModelLayout::nameOffsets() {
  const ir::Graph& graph = model.graph;
  Names names;
  valueName_.assign(static_cast<size_t>(graph.numValues()), "");
  auto name = [&](int v) {
    if (v < 0 || !valueName_[v].empty()) return;
    const ir::Value& value = graph.value(v);
    if (value.isConstant()) {
      auto& known = weightName_[value.data.get()];
      if (known.empty()) {
        known = names.take(constantName(value.name));
        weightOffsets.push_back(
            {known, weightOffset_.at(value.data.get()), fmt::format("'{}' {}", value.name, value.type.str())});
      }
      valueName_[v] = known;
      return;
    }
    if (!model.plan.hasStorage(v)) return;
    valueName_[v] = names.take(constantName(value.name));
    std::string role = value.kind == ir::ValueKind::kInput ? ", input"
                       : graph.isGraphOutput(v)             ? ", output"
                       : value.layout == ir::Layout::kChannelBlocked ? ", channel-blocked"
                                                                     : "";
    arenaOffsets.push_back({valueName_[v], model.plan.offsetOf(v),
                            fmt::format("'{}' {}{}", value.name, value.type.str(), role)});
  };
  for (int in : graph.inputs) name(in);
  for (int id : order) {
    for (int in : model.calls.of(id).inputs) name(in);
    for (int out : model.calls.of(id).outputs) name(out);
  }
  for (int out : graph.outputs) name(out);
}

std::string ModelLayout::pointer(int value, const char* arena, const char* weightsName) const {
  if (value < 0) return "nullptr";
  const ir::Value& v = model.graph.value(value);
  CGC_ASSERT(!valueName_[value].empty(), "value '{}' has no storage", v.name);
  return fmt::format("at<{}>({}, {})", lowering::cppType(v.type.dtype),
                     v.isConstant() ? weightsName : arena, valueName_[value]);
}

}  // namespace cgc::codegen
