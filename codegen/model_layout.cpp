// See model_layout.h.
#include "codegen/model_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "lowering/kernel_table.h"
#include "passes/cost_model.h"

namespace cgc::codegen {

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

int GraphLayout::nodeIndex(int node) const {
  auto it = std::find(order.begin(), order.end(), node);
  CGC_ASSERT(it != order.end(), "node {} is not scheduled", node);
  return firstNodeIndex + static_cast<int>(it - order.begin());
}

std::string ModelLayout::take(const std::string& base) {
  std::string candidate = base;
  for (int i = 2; !usedNames_.insert(candidate).second; ++i)
    candidate = fmt::format("{}{}", base, i);
  return candidate;
}

ModelLayout::ModelLayout(const ModelToEmit& model, const EmitOptions& options)
    : model(model), options(options) {
  const ir::Graph& graph = model.graph;
  className = options.className.empty() ? toClassName(graph.name) : options.className;
  prefix = options.symbolPrefix.empty() ? toSymbolPrefix(className) : options.symbolPrefix;
  graphHash = passes::graphHash(graph);
  numSizeSlots = *graph.sizeSlots;
  sizeSlotsOffset = (model.plan.arenaBytes + 63) / 64 * 64;
  AccessorNames accessors = accessorNames(graph);
  inputAccessors = std::move(accessors.inputs);
  outputAccessors = std::move(accessors.outputs);
  take("kSizeSlots");
  addGraph(model, 0, "");
  placeWeights();
  for (size_t g = 0; g < graphs.size(); ++g)
    nameOffsets(graphs[g], g == 0 ? "" : graphs[g].function + "_");
  if (options.observe) observeTensors();
}

void ModelLayout::observeTensors() {
  const GraphLayout& g = top();
  const ir::Graph& graph = g.graph();
  auto observable = [&](int v) {
    if (v < 0) return false;
    const ir::Value& value = graph.value(v);
    return !value.isConstant() && value.type.dtype == DType::kF32 && value.dynamic.empty() &&
           !observed_.count(v);
  };
  auto add = [&](int v, int storage) {
    observed_[v] = {static_cast<int>(observed.size()), storage};
    observed.push_back(v);
  };
  for (int in : graph.inputs)
    if (observable(in) && !g.valueNames[in].empty()) add(in, in);
  for (int id : g.order) {
    const lowering::KernelCall& call = g.call(id);
    if (lowering::isStructural(call.kernel) && call.kernel != lowering::Kernel::kView) continue;
    for (int out : graph.node(id).outputs) {
      if (!observable(out)) continue;
      if (!g.valueNames[out].empty()) {
        add(out, out);
        continue;
      }
      const auto& inputs = graph.node(id).inputs;
      const int in = inputs.empty() ? -1 : inputs[0];
      if (call.kernel == lowering::Kernel::kView && in >= 0 && !g.valueNames[in].empty() &&
          graph.value(in).type.numElements() == graph.value(out).type.numElements())
        add(out, in);
    }
  }
}

int ModelLayout::observedIndex(int v) const {
  const auto found = observed_.find(v);
  return found == observed_.end() ? -1 : found->second.first;
}

bool ModelLayout::observesOutputOf(const GraphLayout& graph, int node) const {
  const auto& outputs = graph.graph().node(node).outputs;
  return graph.isTop() &&
         std::any_of(outputs.begin(), outputs.end(), [&](int v) { return observedIndex(v) >= 0; });
}

std::string ModelLayout::observedPointer(int v) const {
  return fmt::format("at<float>(arena, {})", top().valueNames[observed_.at(v).second]);
}

/// The graph and, depth first, its control-flow nodes' subgraphs, each at
/// its node's scratch region.
void ModelLayout::addGraph(const ModelToEmit& graph, int64_t base, const std::string& function) {
  const int index = static_cast<int>(graphs.size());
  graphs.push_back({&graph, base, function, {}, numNodes, {}, {}, {}});
  GraphLayout& layout = graphs.back();
  for (const auto& list : graph.schedule.ops)
    layout.order.insert(layout.order.end(), list.begin(), list.end());
  numNodes += static_cast<int>(layout.order.size());
  for (const auto& dep : graph.schedule.crossDependencies)
    layout.signals.emplace(dep.producer, static_cast<int>(layout.signals.size()));
  const std::vector<int> order = layout.order;
  for (int id : order) {
    auto bodies = graph.subgraphs.find(id);
    if (bodies == graph.subgraphs.end()) continue;
    const ir::Node& node = graph.graph.node(id);
    const int64_t scratch = base + graph.plan.scratchOffset.at(id);
    for (size_t k = 0; k < bodies->second.size(); ++k) {
      if (!node.subgraphs[k]) {
        graphs[index].children[id].push_back(-1);
        continue;
      }
      const char* role = node.op == "If" ? (k == 0 ? "_then" : "_else") : "_body";
      graphs[index].children[id].push_back(static_cast<int>(graphs.size()));
      addGraph(bodies->second[k], scratch, take(sanitize(node.name) + role));
    }
  }
}

void ModelLayout::placeWeights() {
  auto place = [&](const ir::Value& value) {
    if (!value.isConstant() || weightOffset_.count(value.data.get())) return;
    weightOffset_[value.data.get()] = static_cast<int64_t>(weights.size());
    weights.insert(weights.end(), value.data->begin(), value.data->end());
    // Round up, and to one block at least, so that even an empty constant
    // has an address inside the blob.
    weights.resize((std::max<size_t>(weights.size(), 1) + 63) / 64 * 64, 0);
  };
  for (const GraphLayout& g : graphs) {
    for (int id : g.order)
      for (int in : g.call(id).inputs)
        if (in >= 0) place(g.graph().value(in));
    for (int out : g.graph().outputs) place(g.graph().value(out));
  }
}

void ModelLayout::nameOffsets(GraphLayout& layout, const std::string& scope) {
  const ir::Graph& graph = layout.graph();
  const passes::MemoryPlan& plan = layout.model->plan;
  layout.valueNames.assign(static_cast<size_t>(graph.numValues()), "");
  auto name = [&](int v) {
    if (v < 0 || !layout.valueNames[v].empty()) return;
    const ir::Value& value = graph.value(v);
    if (value.isConstant()) {
      auto& known = weightName_[value.data.get()];
      if (known.empty()) {
        known = take(fmt::format("k{}", toPascalCase(value.name)));
        weightOffsets.push_back({known, weightOffset_.at(value.data.get()),
                                 fmt::format("'{}' {}", value.name, value.type.str())});
      }
      layout.valueNames[v] = known;
      return;
    }
    if (!plan.hasStorage(v)) return;
    layout.valueNames[v] = take(fmt::format("k{}", toPascalCase(scope + value.name)));
    const std::string role =
        value.kind == ir::ValueKind::kInput ? (layout.isTop() ? ", input" : ", subgraph input")
        : graph.isGraphOutput(v)            ? (layout.isTop() ? ", output" : ", subgraph output")
        : value.layout == ir::Layout::kChannelBlocked ? ", channel-blocked"
                                                      : "";
    arenaOffsets.push_back({layout.valueNames[v], layout.base + plan.offsetOf(v),
                            fmt::format("'{}' {}{}", value.name, value.type.str(), role)});
  };
  for (int in : graph.inputs) name(in);
  for (int id : layout.order) {
    // Views and Concats written in place emit no code: their values are
    // named where a kernel or the graph's outputs name them (else the
    // constant would be unused).
    const lowering::KernelCall& call = layout.call(id);
    if (call.kernel == lowering::Kernel::kView || plan.copiesNothing(id)) continue;
    for (int in : call.inputs) name(in);
    for (int out : call.outputs) name(out);
  }
  for (int out : graph.outputs) name(out);
}

std::string ModelLayout::pointer(const GraphLayout& graph, int value, const char* arena,
                                 const char* weightsName) const {
  if (value < 0) return "nullptr";
  const ir::Value& v = graph.graph().value(value);
  CGC_ASSERT(!graph.valueNames[value].empty(), "value '{}' has no storage", v.name);
  return fmt::format("at<{}>({}, {})", lowering::cppType(v.type.dtype),
                     v.isConstant() ? weightsName : arena, graph.valueNames[value]);
}

std::string ModelLayout::sizeSlot(int slot, const char* arena) const {
  return fmt::format("at<int64_t>({}, kSizeSlots + {})", arena, 8 * slot);
}

}  // namespace cgc::codegen
