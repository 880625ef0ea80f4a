// See model_layout.h.
#include "codegen/model_layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "lowering/kernel_table.h"
#include "planning/cost_model.h"

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
  const ModelNames byFile = defaultNames(graph.name);
  className = options.className.empty() ? byFile.className : options.className;
  prefix = !options.symbolPrefix.empty() ? options.symbolPrefix
           : options.className.empty()   ? byFile.prefix
                                         : toSymbolPrefix(className);
  graphHash = passes::graphHash(graph);
  numSizeSlots = *graph.sizeSlots;
  sizeSlotsOffset = passes::MemoryPlan::aligned(model.plan.arenaBytes);
  AccessorNames accessors = accessorNames(graph);
  inputAccessors = std::move(accessors.inputs);
  outputAccessors = std::move(accessors.outputs);
  take("kSizeSlots");
  addGraph(model, 0, "");
  for (size_t k = 0; k < model.specializations.size(); ++k) addSpecialization(static_cast<int>(k));
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
  GraphLayout& layout = graphs.emplace_back();
  layout.model = &graph;
  layout.base = base;
  layout.function = function;
  layout.firstNodeIndex = numNodes;
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

void ModelLayout::addSpecialization(int index) {
  const ModelToEmit& spec = model.specializations[static_cast<size_t>(index)];
  const ir::Graph& general = model.graph;
  // The general code's inputs, outputs and size slots stay as they are.
  std::vector<std::pair<int64_t, int64_t>> busy = {
      {sizeSlotsOffset, sizeSlotsOffset + 8 * static_cast<int64_t>(numSizeSlots)}};
  for (const std::vector<int>* values : {&general.inputs, &general.outputs})
    for (int v : *values)
      if (model.plan.hasStorage(v))
        busy.push_back(
            {model.plan.offsetOf(v), model.plan.offsetOf(v) + general.value(v).type.bytes()});
  const int64_t base = passes::MemoryPlan::firstFit(std::move(busy), spec.plan.arenaBytes);
  specializedEnd_ = std::max(specializedEnd_, base + spec.plan.arenaBytes);
  std::string label = "spec";
  std::vector<std::string> sizes;
  const std::vector<std::string> names = model.dims->cppNames();
  for (size_t j = 0; j < spec.specializedAt.size(); ++j) {
    const int64_t least = spec.specializedAt[j], largest = spec.specializedMax[j];
    if (least < 0) continue;
    const std::string& name = model.dims->dims[j].name;
    if (least == largest) {
      label += fmt::format("_{}{}", names[j].substr(4), least);
      sizes.push_back(fmt::format("{}={}", name, least));
    } else {
      label += fmt::format("_{}{}to{}", names[j].substr(4), least, largest);
      sizes.push_back(fmt::format("{}={}..{}", name, least, largest));
    }
  }
  const size_t at = graphs.size();  // addGraph adds the bodies after it
  addGraph(spec, base, take(label));
  GraphLayout& layout = graphs[at];
  layout.specialization = index;
  layout.sizes = fmt::format("{}", fmt::join(sizes, ","));
  // A padded bucket keeps its own inputs and outputs: run() copies them.
  if (!isPadded(spec)) shareInputsAndOutputs(layout);
}

void ModelLayout::shareInputsAndOutputs(GraphLayout& layout) {
  const ir::Graph& graph = layout.graph();
  const passes::MemoryPlan& plan = layout.model->plan;
  // The inputs' buffers (each an input and its views, never written) move
  // to where the general code keeps them.
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const int in = graph.inputs[i], general = model.graph.inputs[i];
    if (!plan.hasStorage(in)) continue;
    CGC_ASSERT(plan.buffers[plan.bufferOf[in]].bytes <= model.graph.value(general).type.bytes(),
               "input '{}' of a specialisation outgrows the general code's", graph.value(in).name);
    layout.movedBuffers[plan.bufferOf[in]] = model.plan.offsetOf(general) - plan.offsetInBuffer[in];
  }
  // An output's buffer moves to the general code's output where it starts
  // there, fits and holds no other graph input or output (the values it
  // held before are the specialisation's own: the general code does not
  // run meanwhile); other outputs are copied there after their node.
  std::map<int, int> outputsIn;  // buffer -> graph outputs in it
  for (int out : graph.outputs)
    if (plan.hasStorage(out)) ++outputsIn[plan.bufferOf[out]];
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const int out = graph.outputs[i], general = model.graph.outputs[i];
    const int buffer = plan.hasStorage(out) ? plan.bufferOf[out] : -1;
    if (buffer >= 0 && !layout.movedBuffers.count(buffer) && outputsIn[buffer] == 1 &&
        plan.offsetInBuffer[out] == 0 && model.plan.hasStorage(general) &&
        plan.buffers[buffer].bytes <= model.graph.value(general).type.bytes()) {
      layout.movedBuffers[buffer] = model.plan.offsetOf(general);
      continue;
    }
    layout.outputCopies[graph.value(out).producer].push_back(static_cast<int>(i));
  }
}

std::vector<int> ModelLayout::dimIndices(const GraphLayout& graph) const {
  std::vector<int> indices;
  if (!graph.model->dims) return indices;
  for (const VariableDims::Dim& d : graph.model->dims->dims) {
    const auto& all = model.dims->dims;
    const auto it = std::find_if(all.begin(), all.end(),
                                 [&](const VariableDims::Dim& top) { return top.name == d.name; });
    CGC_ASSERT(it != all.end(), "dimension '{}' is not the model's", d.name);
    indices.push_back(static_cast<int>(it - all.begin()));
  }
  return indices;
}

std::vector<std::string> ModelLayout::dimNames(const GraphLayout& graph) const {
  std::vector<std::string> names;
  if (!graph.model->dims) return names;
  const std::vector<std::string> all = model.dims->cppNames();
  for (int j : dimIndices(graph)) names.push_back(all[static_cast<size_t>(j)]);
  return graph.model->dims->variableNames(names);
}

void ModelLayout::placeWeights() {
  // A specialisation's constants are its own copies: equal bytes are
  // stored once.
  std::multimap<std::pair<size_t, uint64_t>, const std::vector<uint8_t>*> byContent;
  std::vector<WeightsBlob::Bytes> placed;  // in the blob's order
  size_t size = 0;
  auto place = [&](const ir::Value& value) {
    if (!value.isConstant() || weightOffset_.count(value.data.get())) return;
    const std::vector<uint8_t>& data = *value.data;
    uint64_t hash = 1469598103934665603ull;  // FNV-1a
    for (uint8_t byte : data) hash = (hash ^ byte) * 1099511628211ull;
    const auto key = std::make_pair(data.size(), hash);
    for (auto [it, end] = byContent.equal_range(key); it != end; ++it)
      if (*it->second == data) {
        weightOffset_[value.data.get()] = weightOffset_.at(it->second);
        return;
      }
    byContent.emplace(key, &data);
    weightOffset_[value.data.get()] = static_cast<int64_t>(size);
    placed.push_back(value.data);
    // Round up, and to one block at least, so that even an empty constant
    // has an address inside the blob.
    size = (std::max<size_t>(size + data.size(), 1) + 63) / 64 * 64;
  };
  for (const GraphLayout& g : graphs) {
    for (int id : g.order)
      for (int in : g.call(id).inputs)
        if (in >= 0) place(g.graph().value(in));
    for (int out : g.graph().outputs) place(g.graph().value(out));
  }
  for (const WeightsBlob::Bytes& data : placed)
    weights.add(weightOffset_.at(data.get()), data, static_cast<int64_t>(size));
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
    const auto moved = layout.movedBuffers.find(plan.bufferOf[v]);
    const char* where = layout.isTop() || layout.isSpecialization() ? "" : "subgraph ";
    const std::string role = value.kind == ir::ValueKind::kInput ? fmt::format(", {}input", where)
                             : graph.isGraphOutput(v)            ? fmt::format(", {}output", where)
                             : value.layout == ir::Layout::kChannelBlocked ? ", channel-blocked"
                                                                           : "";
    arenaOffsets.push_back({layout.valueNames[v],
                            moved != layout.movedBuffers.end()
                                ? moved->second + plan.offsetInBuffer[v]
                                : layout.base + plan.offsetOf(v),
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

std::vector<bool> withFactors(const VariableDims& dims, std::vector<bool> read) {
  for (size_t k = dims.derived.size(); k-- > 0;)
    if (read.at(dims.dims.size() + k))
      for (const ir::DimPoly& factor : dims.derived[k].factors)
        for (size_t j = 0; j < dims.dims.size() + k; ++j)
          read[j] = read[j] || factor.uses(static_cast<int>(j));
  return read;
}

}  // namespace cgc::codegen
