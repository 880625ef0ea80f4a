// Control flow: If, Loop and Scan.
//
// An If whose condition is known at compile time is replaced by the branch
// it takes (inlineBranch). Otherwise the node keeps its bodies as graphs of
// their own (importSubgraph), compiled and planned separately: at run time
// only the taken branch runs, and a Loop's or Scan's body runs once per
// iteration on buffers planned once. A body reads values of the graphs
// around it; each such value becomes an input of the body and an input of
// the node (a capture), so every graph stays closed. A branch that cannot be
// imported for the bound shapes (it expects another input length) is
// recorded as failed: taking it is a run-time error, the other runs.
#include <cstring>

#include "ir/conventions.h"
#include "onnx_frontend/graph_importer.h"

namespace cgc::frontend::detail {
namespace {

namespace conv = ir::conventions;

const onnx::GraphProto* graphAttr(const onnx::NodeProto& node, const char* name) {
  for (const auto& attr : node.attribute())
    if (attr.name() == name && attr.has_g()) return &attr.g();
  return nullptr;
}

/// A body input's declared type, where it is complete; else `fallback`.
ir::TensorType declaredOr(const onnx::ValueInfoProto& info, ir::TensorType fallback) {
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return fallback;
  ir::TensorType type{static_cast<DType>(info.type().tensor_type().elem_type()), {}};
  for (const auto& dim : info.type().tensor_type().shape().dim()) {
    if (!dim.has_dim_value()) return fallback;
    type.shape.push_back(dim.dim_value());
  }
  // A declaration beyond the limits (a negative dimension) is ignored too.
  return type.dtype == fallback.dtype && type.checkSize().empty() &&
                 type.numElements() == fallback.numElements()
             ? type
             : fallback;
}

/// Makes body output `index` a copy where it is a body input other than
/// `own` (loop-carried values swapped by the body): the loop copies its
/// carried values back one after the other, which must not read an input
/// already overwritten.
void copyPassThrough(ir::Graph& body, size_t index, int own) {
  const int value = body.outputs[index];
  const auto& inputs = body.inputs;
  if (value == own || std::find(inputs.begin(), inputs.end(), value) == inputs.end()) return;
  const ir::TensorType type = body.value(value).type;
  std::vector<uint8_t> shape(type.shape.size() * sizeof(int64_t));
  if (!shape.empty())  // a scalar's shape has no data() to copy from
    std::memcpy(shape.data(), type.shape.data(), shape.size());
  const int shapeId = body.addConstant(body.uniqueValueName(body.value(value).name + "_shape"),
                                       {DType::kI64, {type.rank()}}, std::move(shape));
  const int copy = body.addValue(body.uniqueValueName(body.value(value).name + "_copy"), type);
  body.addNode("Expand", body.value(copy).name, {value, shapeId}, {copy});
  body.outputs[index] = copy;
}

}  // namespace

GraphImporter::Subgraph GraphImporter::importSubgraph(const onnx::GraphProto& body,
                                                      const std::vector<ir::TensorType>& formals,
                                                      const Scope& outer, int opset,
                                                      const std::string& prefix) {
  Subgraph result;
  result.graph = std::make_shared<ir::Graph>();
  ir::Graph& sub = *result.graph;
  sub.name = graph_.name + "/" + prefix;
  sub.sourceFile = graph_.sourceFile;
  sub.sizeSlots = graph_.sizeSlots;
  const DiagLocation where{graph_.sourceFile, prefix, "subgraph"};
  if (body.input_size() != static_cast<int>(formals.size()))
    userError(where, "the body has {} inputs, the node gives {}", body.input_size(),
              formals.size());
  Scope scope;
  for (size_t i = 0; i < formals.size(); ++i) {
    const int id =
        sub.addValue(body.input(static_cast<int>(i)).name(), formals[i], ir::ValueKind::kInput);
    sub.inputs.push_back(id);
    scope.define(body.input(static_cast<int>(i)).name(), id);
  }
  for (const auto& init : body.initializer()) {
    HostTensor t = tensorFromProto(init, where);
    scope.define(init.name(), sub.addConstant(init.name(), t.type, std::move(t.bytes)));
  }
  // A value of an outer graph: its constant, or a new input fed by it.
  std::map<int, int> captured;  // outer id -> body id
  auto capture = [&](int outerId) {
    if (auto it = captured.find(outerId); it != captured.end()) return it->second;
    const ir::Value& value = graph_.value(outerId);
    int id;
    if (value.isConstant()) {
      id = sub.addValue(sub.uniqueValueName(value.name), value.type, ir::ValueKind::kConstant);
      sub.value(id).data = value.data;
    } else {
      id = sub.addValue(sub.uniqueValueName(value.name), value.type, ir::ValueKind::kInput);
      sub.value(id).dynamic = value.dynamic;
      sub.inputs.push_back(id);
      result.captures.push_back(outerId);
    }
    return captured[outerId] = id;
  };
  scope.setCapture([&](const std::string& name) -> int {
    const int outerId = outer.find(name);
    return outerId < 0 ? -1 : capture(outerId);
  });
  // A composite of an outer graph: its items captured.
  scope.setCompositeCapture([&](const std::string& name) -> std::optional<Composite> {
    std::optional<Composite> composite = outer.findComposite(name);
    if (composite)
      for (int& item : composite->items) item = capture(item);
    return composite;
  });
  GraphImporter importer(sub, model_, nullptr, bounds_, sized_);
  importer.importNodes(body.node(), scope, opset, prefix);
  for (const auto& output : body.output()) {
    const Entry entry = scope.lookup(output.name());
    if (!entry.defined()) userError(where, "body output '{}' is not defined", output.name());
    result.composites.push_back(entry.composite);
    if (entry.composite) {
      for (size_t i = 0; i < entry.composite->items.size(); ++i) {
        sub.outputs.push_back(entry.composite->items[i]);
        sub.outputNames.push_back(fmt::format("{}[{}]", output.name(), i));
      }
      continue;
    }
    sub.outputs.push_back(entry.tensor);
    sub.outputNames.push_back(output.name());
  }
  return result;
}

std::vector<Entry> GraphImporter::inlineBranch(const onnx::GraphProto& body, Scope& outer,
                                               int opset, const std::string& prefix) {
  Scope scope(&outer);
  for (const auto& init : body.initializer()) {
    HostTensor t = tensorFromProto(init, {graph_.sourceFile, prefix, "If"});
    scope.define(init.name(), graph_.addConstant(init.name(), t.type, std::move(t.bytes)));
  }
  importNodes(body.node(), scope, opset, prefix);
  std::vector<Entry> outputs;
  for (const auto& output : body.output()) {
    Entry entry = scope.lookup(output.name());
    if (!entry.defined())
      userError({graph_.sourceFile, prefix, "If"}, "branch output '{}' is not defined",
                output.name());
    outputs.push_back(std::move(entry));
  }
  return outputs;
}

std::vector<int> GraphImporter::emitControl(const onnx::NodeProto& node, const std::string& label,
                                            const std::string& op, std::vector<int> inputs,
                                            std::vector<Subgraph> bodies,
                                            const std::vector<std::vector<int>>& formalBindings,
                                            std::vector<ir::TensorType> outputTypes,
                                            std::map<std::string, ir::Attribute> attrs,
                                            std::vector<std::string> outputNames) {
  std::vector<std::shared_ptr<ir::Graph>> graphs;
  for (size_t k = 0; k < bodies.size(); ++k) {
    std::vector<int64_t> bindings(formalBindings[k].begin(), formalBindings[k].end());
    for (int outerId : bodies[k].captures) {
      bindings.push_back(static_cast<int64_t>(inputs.size()));
      inputs.push_back(outerId);
    }
    attrs[conv::subgraphBindings(k)] = bindings;
    graphs.push_back(bodies[k].graph);
  }
  std::vector<int> outputs;
  for (size_t o = 0; o < outputTypes.size(); ++o) {
    const bool named =
        static_cast<int>(o) < node.output_size() && !node.output(static_cast<int>(o)).empty();
    const std::string name = o < outputNames.size() ? outputNames[o]
                             : named                ? node.output(static_cast<int>(o))
                                                    : fmt::format("{}_out{}", label, o);
    outputs.push_back(graph_.addValue(graph_.uniqueValueName(name), outputTypes[o]));
  }
  const int id = graph_.addNode(op, label, std::move(inputs), outputs, std::move(attrs));
  graph_.node(id).subgraphs = std::move(graphs);
  return outputs;
}

namespace {

/// The composites of two branches must agree: the If's outputs are their
/// items, one tensor each.
void checkBranchComposites(const ir::Graph& graph, const DiagLocation& where, int cond,
                           const std::vector<std::optional<Composite>>& then,
                           const std::vector<std::optional<Composite>>& otherwise) {
  for (size_t o = 0; o < then.size() && o < otherwise.size(); ++o) {
    const auto& a = then[o];
    const auto& b = otherwise[o];
    if (!a && !b) continue;
    if (a && b && a->sameStructure(*b)) continue;
    userError(where,
              "input '{}' (the condition) must be a compile-time constant: the branches give "
              "different values for output {} ({} in then_branch, {} in else_branch); bind it "
              "with --constant NAME=FILE.pb",
              graph.value(cond).name, o, a ? a->describe() : "a tensor",
              b ? b->describe() : "a tensor");
  }
}

/// Loop and Scan bodies compiled once output tensors only.
void rejectCompositeOutputs(const DiagLocation& where,
                            const std::vector<std::optional<Composite>>& outputs) {
  for (size_t o = 0; o < outputs.size(); ++o)
    if (outputs[o])
      userError(where,
                "body output {} is {}; cgc takes sequences and optionals in a Loop only when it "
                "unrolls it (its trip count a compile-time constant, a sequence carried)",
                o, outputs[o]->describe());
}

/// A compiled body's outputs are copied out at their static size: one of
/// data-dependent size (NonZero's) would lose it.
void rejectDynamicOutputs(const DiagLocation& where, const ir::Graph* body) {
  if (!body) return;
  for (size_t o = 0; o < body->outputs.size(); ++o)
    if (!body->value(body->outputs[o]).dynamic.empty())
      userError(where,
                "body output '{}' has a size known only at run time; cgc compiles control flow "
                "whose outputs have static sizes (bind the inputs that decide it with "
                "--constant NAME=FILE.pb)",
                body->outputNames[o]);
}

}  // namespace

void GraphImporter::importIf(const onnx::NodeProto& node, const std::string& label,
                             const std::vector<int>& inputs, Scope& scope, int opset) {
  const onnx::GraphProto* branches[2] = {graphAttr(node, "then_branch"),
                                         graphAttr(node, "else_branch")};
  if (inputs.size() != 1 || inputs[0] < 0 || !branches[0] || !branches[1])
    userError(where(label, node), "needs a condition and then_branch/else_branch attributes");
  const ir::Value& cond = graph_.value(inputs[0]);
  if (cond.type.numElements() != 1 || cond.type.dtype != DType::kBool)
    userError(where(label, node), "the condition must be one bool, is {}", cond.type.str());
  if (cond.isConstant()) {
    const bool taken = cond.doubleValues()[0] != 0;
    auto results = inlineBranch(*branches[taken ? 0 : 1], scope, opset,
                                label + (taken ? "/then_branch/" : "/else_branch/"));
    return defineEntries(node, label, results, scope);
  }
  // Each branch a graph of its own; one that cannot be imported for these
  // shapes becomes a run-time error on its path.
  std::vector<Subgraph> bodies(2);
  std::string failure;
  int failed = -1;
  for (int b = 0; b < 2; ++b) {
    try {
      bodies[b] = importSubgraph(*branches[b], {}, scope, opset,
                                 label + (b == 0 ? "/then_branch/" : "/else_branch/"));
    } catch (const CompileError& e) {
      if (failed >= 0) throw;
      failed = b;
      failure = e.what();
    }
  }
  for (const Subgraph& body : bodies) rejectDynamicOutputs(where(label, node), body.graph.get());
  const Subgraph& taken = bodies[failed == 0 ? 1 : 0];
  if (failed < 0)
    checkBranchComposites(graph_, where(label, node), inputs[0], bodies[0].composites,
                          bodies[1].composites);
  if (taken.composites.size() != static_cast<size_t>(node.output_size()))
    userError(where(label, node), "the branch has {} outputs, the node {}", taken.composites.size(),
              node.output_size());
  std::vector<ir::TensorType> types;
  const ir::Graph& first = *taken.graph;
  for (size_t o = 0; o < first.outputs.size(); ++o) {
    const ir::TensorType& type = first.value(first.outputs[o]).type;
    if (failed < 0) {
      const ir::Graph& other = *bodies[1].graph;
      if (other.outputs.size() != first.outputs.size() ||
          other.value(other.outputs[o]).type != type)
        userError(where(label, node),
                  "the condition is only known at run time, and the branches' outputs differ "
                  "(output {}: {} in then_branch, {} in else_branch); bind the inputs that "
                  "decide it with --constant NAME=FILE.pb",
                  o, type.str(),
                  o < other.outputs.size() ? other.value(other.outputs[o]).type.str() : "none");
    }
    types.push_back(type);
  }
  // The node's outputs: one per tensor, one per item of a composite.
  const std::vector<std::optional<Composite>> composites = taken.composites;
  std::vector<std::string> names;
  for (int o = 0; o < node.output_size(); ++o) {
    const std::string name =
        node.output(o).empty() ? fmt::format("{}_out{}", label, o) : node.output(o);
    if (!composites[o]) names.push_back(name);
    for (size_t i = 0; composites[o] && i < composites[o]->items.size(); ++i)
      names.push_back(fmt::format("{}[{}]", name, i));
  }
  std::map<std::string, ir::Attribute> attrs;
  if (failed >= 0) {
    attrs[conv::kFailedBranch] = int64_t{failed};
    attrs[conv::kFailedBranchReason] = failure;
    bodies[failed].graph = nullptr;
  }
  auto results = emitControl(node, label, "If", {inputs[0]}, std::move(bodies), {{}, {}}, types,
                             std::move(attrs), std::move(names));
  std::vector<Entry> entries;
  size_t next = 0;
  for (const auto& composite : composites) {
    if (!composite) {
      entries.push_back({results.at(next++), std::nullopt});
      continue;
    }
    Composite rebuilt = *composite;
    for (int& item : rebuilt.items) item = results.at(next++);
    entries.push_back({-1, std::move(rebuilt)});
  }
  defineEntries(node, label, entries, scope);
}

namespace {

/// The bound of a Loop's iterations for its scan outputs: M where it is a
/// constant (or, computed from the sizes of --dim, its value at these
/// sizes), else --bound NAME=N (the node's name or its first output's).
int64_t loopBound(const ir::Graph& graph, const onnx::NodeProto& node, const std::string& label,
                  int trips, const std::map<std::string, int64_t>& bounds) {
  for (const std::string& name : {label, node.output_size() > 0 ? node.output(0) : label})
    if (auto it = bounds.find(name); it != bounds.end()) return it->second;
  if (trips >= 0 && graph.value(trips).bytesKnown()) {  // a constant, or known at these sizes
    const int64_t m = graph.value(trips).intValues().at(0);
    if (m >= 0 && m <= ir::kMaxTensorBytes) return m;
  }
  // Name the graph input the count comes from: binding it (--constant)
  // makes the count a constant.
  std::vector<int> pending = {trips};
  std::set<int> seen;
  while (!pending.empty()) {
    const int v = pending.back();
    pending.pop_back();
    if (v < 0 || !seen.insert(v).second) continue;
    const ir::Value& value = graph.value(v);
    if (value.kind == ir::ValueKind::kInput)
      userError({graph.sourceFile, label, "Loop"},
                "input '{}' (the trip count of its scan outputs) must be a compile-time "
                "constant; it depends on a graph input (bind one with --constant NAME=FILE.pb, "
                "or bound the scan outputs with --bound {}=N)",
                value.name, label);
    if (value.producer >= 0)
      for (int in : graph.node(value.producer).inputs) pending.push_back(in);
  }
  userError({graph.sourceFile, label, "Loop"},
            "its scan outputs grow with an iteration count known only at run time; give their "
            "bound with --bound {}=N",
            label);
}

}  // namespace

void GraphImporter::importLoop(const onnx::NodeProto& node, const std::string& label,
                               const std::vector<int>& inputs, Scope& scope, int opset) {
  const onnx::GraphProto* body = graphAttr(node, "body");
  if (!body || inputs.size() < 2) userError(where(label, node), "needs M, cond and a body");
  const int trips = inputs[0], cond = inputs[1];
  for (int v : {trips, cond})
    if (v >= 0 && graph_.value(v).type.numElements() != 1)
      userError(where(label, node), "M and cond must be single values");
  const size_t carried = inputs.size() - 2;
  std::vector<ir::TensorType> formals = {declaredOr(body->input(0), {DType::kI64, {}}),
                                         declaredOr(body->input(1), {DType::kBool, {}})};
  std::vector<int> bindings = {-1, -1};
  for (size_t i = 0; i < carried; ++i) {
    if (inputs[2 + i] < 0) userError(where(label, node), "loop-carried value {} is missing", i);
    formals.push_back(graph_.value(inputs[2 + i]).type);
    bindings.push_back(-1);
  }
  if (body->input_size() != static_cast<int>(formals.size()))
    userError(where(label, node), "the body takes {} inputs, the node gives {}", body->input_size(),
              formals.size());
  Subgraph sub = importSubgraph(*body, formals, scope, opset, label + "/body/");
  rejectCompositeOutputs(where(label, node), sub.composites);
  rejectDynamicOutputs(where(label, node), sub.graph.get());
  const ir::Graph& g = *sub.graph;
  for (size_t i = 0; i < carried && 1 + i < g.outputs.size(); ++i)
    copyPassThrough(*sub.graph, 1 + i, g.inputs[2 + i]);
  if (g.outputs.size() < 1 + carried)
    userError(where(label, node), "the body has {} outputs, fewer than 1 + {} loop-carried",
              g.outputs.size(), carried);
  std::vector<ir::TensorType> types;
  for (size_t i = 0; i < carried; ++i) {
    const ir::TensorType& out = g.value(g.outputs[1 + i]).type;
    if (out != formals[2 + i])
      userError(where(label, node), "loop-carried value {} changes from {} to {} in the body", i,
                formals[2 + i].str(), out.str());
    types.push_back(out);
  }
  const size_t scans = g.outputs.size() - 1 - carried;
  const int64_t bound = scans > 0 ? loopBound(graph_, node, label, trips, bounds_) : 0;
  for (size_t i = 0; i < scans; ++i) {
    ir::TensorType type = g.value(g.outputs[1 + carried + i]).type;
    type.shape.insert(type.shape.begin(), bound);
    if (const std::string problem = type.checkSize(); !problem.empty())
      userError(where(label, node), "scan output {}: {}", i, problem);
    types.push_back(type);
  }
  std::vector<int> nodeInputs = {trips, cond};
  for (size_t i = 0; i < carried; ++i) nodeInputs.push_back(inputs[2 + i]);
  auto results = emitControl(node, label, "Loop", nodeInputs, {std::move(sub)}, {bindings}, types,
                             {{conv::kLoopCarried, static_cast<int64_t>(carried)}});
  // The iterations run are known at run time only: the scan outputs' first
  // dimension is dynamic, up to the bound.
  for (size_t i = 0; i < scans; ++i) {
    ir::Value& v = graph_.value(results[carried + i]);
    v.dynamic = {{0}, graph_.newSizeSlots(1)};
  }
  defineOutputs(node, label, results, scope);
}

void GraphImporter::importScan(const onnx::NodeProto& node, const std::string& label,
                               const std::vector<int>& inputs, Scope& scope, int opset) {
  if (opset < 9)
    userError(where(label, node), "Scan before opset 9 (with a batch axis) is not supported");
  const onnx::GraphProto* body = graphAttr(node, "body");
  OpContext ctx(graph_, node, opset, label, inputs);
  const int64_t scanInputs = ctx.attrInt("num_scan_inputs", 0);
  if (!body || scanInputs < 1 || scanInputs > static_cast<int64_t>(inputs.size()))
    userError(where(label, node), "needs a body and 1 to {} scan inputs", inputs.size());
  const size_t states = inputs.size() - static_cast<size_t>(scanInputs);
  auto axes = [&](const char* name, size_t count, const std::vector<int64_t>& ranks) {
    std::vector<int64_t> values = ctx.attrInts(name, std::vector<int64_t>(count, 0));
    if (values.size() != count) userError(where(label, node), "{} needs {} values", name, count);
    for (size_t i = 0; i < count; ++i) values[i] = ctx.normalizeAxis(values[i], ranks[i]);
    return values;
  };
  std::vector<int64_t> ranks;
  for (size_t i = states; i < inputs.size(); ++i)
    ranks.push_back(graph_.value(inputs[i]).type.rank());
  const auto inputAxes = axes("scan_input_axes", scanInputs, ranks);
  const int64_t length = graph_.value(inputs[states]).type.shape.at(inputAxes[0]);
  std::vector<ir::TensorType> formals;
  std::vector<int> bindings;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ir::TensorType type = graph_.value(inputs[i]).type;
    if (i >= states) {
      const int64_t axis = inputAxes[i - states];
      if (type.shape[axis] != length)
        userError(where(label, node), "scan inputs have lengths {} and {}", length,
                  type.shape[axis]);
      type.shape.erase(type.shape.begin() + axis);
    }
    formals.push_back(type);
    bindings.push_back(-1);
  }
  Subgraph sub = importSubgraph(*body, formals, scope, opset, label + "/body/");
  rejectCompositeOutputs(where(label, node), sub.composites);
  rejectDynamicOutputs(where(label, node), sub.graph.get());
  const ir::Graph& g = *sub.graph;
  if (g.outputs.size() < states) userError(where(label, node), "the body has too few outputs");
  for (size_t i = 0; i < states; ++i) copyPassThrough(*sub.graph, i, g.inputs[i]);
  const size_t scanOutputs = g.outputs.size() - states;
  std::vector<int64_t> outRanks;
  for (size_t i = 0; i < scanOutputs; ++i)
    outRanks.push_back(g.value(g.outputs[states + i]).type.rank() + 1);
  const auto outputAxes = axes("scan_output_axes", scanOutputs, outRanks);
  std::vector<ir::TensorType> types;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    ir::TensorType type = g.value(g.outputs[i]).type;
    if (i < states && type != formals[i])
      userError(where(label, node), "state {} changes from {} to {} in the body", i,
                formals[i].str(), type.str());
    if (i >= states) type.shape.insert(type.shape.begin() + outputAxes[i - states], length);
    types.push_back(type);
  }
  std::map<std::string, ir::Attribute> attrs = {
      {"num_scan_inputs", scanInputs},
      {"scan_input_axes", inputAxes},
      {"scan_input_directions",
       ctx.attrInts("scan_input_directions", std::vector<int64_t>(scanInputs, 0))},
      {"scan_output_axes", outputAxes},
      {"scan_output_directions",
       ctx.attrInts("scan_output_directions", std::vector<int64_t>(scanOutputs, 0))}};
  auto results = emitControl(node, label, "Scan", inputs, {std::move(sub)}, {bindings}, types,
                             std::move(attrs));
  defineOutputs(node, label, results, scope);
}

}  // namespace cgc::frontend::detail
