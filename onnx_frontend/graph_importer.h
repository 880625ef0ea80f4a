// The importer of ONNX node lists (graph_import.cpp) and of control flow
// (import_control.cpp): the name scopes of nested graphs, and the class
// that imports nodes, If/Loop/Scan bodies and functions into one ir::Graph.
// Internal to onnx_frontend.
#pragma once

#include <fmt/ranges.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "lowering/kernel_call.h"
#include "onnx_frontend/dynamic_extents.h"
#include "onnx_frontend/graph_import.h"
#include "onnx_frontend/op_import.h"
#include "onnx_frontend/tensor_proto.h"

namespace cgc::frontend::detail {

using NodeList = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

inline bool isDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

inline int defaultOpset(const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& opsets,
                        int fallback) {
  for (const auto& opset : opsets)
    if (isDefaultDomain(opset.domain())) return static_cast<int>(opset.version());
  return fallback;
}

inline std::string nodeLabel(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? fmt::format("{}_{}", node.op_type(), index) : node.name();
}

inline const onnx::FunctionProto* localFunction(const onnx::ModelProto& model,
                                                const onnx::NodeProto& node) {
  for (const auto& function : model.functions())
    if (function.name() == node.op_type() && function.domain() == node.domain()) return &function;
  return nullptr;
}

/// The ONNX schema of a default-domain op that ONNX defines by a function
/// body, or null.
inline const onnx::OpSchema* schemaWithBody(const onnx::NodeProto& node, int opset) {
  if (!isDefaultDomain(node.domain())) return nullptr;
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "");
  if (schema && (schema->HasFunction() || schema->HasContextDependentFunction())) return schema;
  return nullptr;
}

inline bool hasImporter(const onnx::NodeProto& node) {
  return isDefaultDomain(node.domain()) && opImporters().count(node.op_type());
}

/// ONNX's sequence and optional values, known at compile time: the
/// frontend's own (import_sequence.cpp), so that no sequence or optional
/// reaches the IR. A sequence is the list of its tensors; an optional is
/// present or not and holds a tensor or a sequence.
struct Composite {
  enum class Kind { kSequence, kOptional };
  Kind kind = Kind::kSequence;
  std::vector<int> items;              // a sequence's tensors; what a present optional holds
  bool present = true;                 // optionals only
  bool holdsSequence = false;          // optionals only: a sequence (else one tensor)
  DType elemType = DType::kUndefined;  // the tensors' type, known also when there are none

  /// "a sequence of 3 tensors", "an empty optional".
  std::string describe() const;
  /// The same kind, presence and length (the types of the items aside).
  bool sameStructure(const Composite& other) const {
    return kind == other.kind && present == other.present && holdsSequence == other.holdsSequence &&
           items.size() == other.items.size();
  }
};

/// What a name stands for: a tensor (an IR value id) or a composite.
struct Entry {
  int tensor = -1;
  std::optional<Composite> composite;
  bool defined() const { return tensor >= 0 || composite.has_value(); }
};

/// ONNX names visible in one graph body: its own, then those of the graphs
/// around it. A control-flow body is an ir::Graph of its own: its scope has
/// no parent but capture functions, which make a name of the outer graphs
/// visible inside (as a new input of the body, or its constant; a
/// composite as its items so captured).
class Scope {
 public:
  explicit Scope(const Scope* parent = nullptr) : parent_(parent) {}
  void define(const std::string& name, int value) {
    composites_.erase(name);
    names_[name] = value;
  }
  void defineComposite(const std::string& name, Composite value) {
    names_.erase(name);
    composites_[name] = std::move(value);
  }
  void define(const std::string& name, const Entry& entry) {
    if (entry.composite) return defineComposite(name, *entry.composite);
    define(name, entry.tensor);
  }
  void setCapture(std::function<int(const std::string&)> capture) { capture_ = std::move(capture); }
  void setCompositeCapture(std::function<std::optional<Composite>(const std::string&)> capture) {
    compositeCapture_ = std::move(capture);
  }
  /// -1 when the name is not visible or is a composite.
  int find(const std::string& name) const {
    for (const Scope* scope = this; scope; scope = scope->parent_) {
      auto it = scope->names_.find(name);
      if (it != scope->names_.end()) return it->second;
      if (scope->composites_.count(name)) return -1;
      if (scope->capture_) return scope->capture_(name);
    }
    return -1;
  }
  /// The composite a name stands for, or nothing.
  std::optional<Composite> findComposite(const std::string& name) const {
    for (const Scope* scope = this; scope; scope = scope->parent_) {
      if (scope->names_.count(name)) return std::nullopt;
      auto it = scope->composites_.find(name);
      if (it != scope->composites_.end()) return it->second;
      if (scope->capture_)
        return scope->compositeCapture_ ? scope->compositeCapture_(name) : std::nullopt;
    }
    return std::nullopt;
  }
  Entry lookup(const std::string& name) const {
    if (auto composite = findComposite(name)) return {-1, std::move(composite)};
    return {find(name), std::nullopt};
  }

 private:
  const Scope* parent_;
  std::unordered_map<std::string, int> names_;
  std::unordered_map<std::string, Composite> composites_;
  std::function<int(const std::string&)> capture_;
  std::function<std::optional<Composite>(const std::string&)> compositeCapture_;
};

/// The ops on sequences and optionals that the frontend computes itself.
const std::set<std::string>& compositeOps();
bool isCompositeOp(const onnx::NodeProto& node);

/// The control-flow ops, whose bodies the importer imports (import_control.cpp).
inline const std::set<std::string>& controlFlowOps() {
  static const std::set<std::string> ops = {"If", "Loop", "Scan"};
  return ops;
}

inline onnx::TypeProto typeProto(const ir::TensorType& type) {
  onnx::TypeProto proto;
  auto* tensor = proto.mutable_tensor_type();
  tensor->set_elem_type(static_cast<int>(type.dtype));
  auto* shape = tensor->mutable_shape();
  for (int64_t d : type.shape) shape->add_dim()->set_dim_value(d);
  return proto;
}

class GraphImporter {
 public:
  /// `bounds`: the --bound values for data-dependent sizes, by node or
  /// value name; `sized`: the values computed from the sizes of variable
  /// dimensions (LoadOptions::sizedValues).
  GraphImporter(ir::Graph& graph, const onnx::ModelProto& model, const Scope* mainScope,
                const std::map<std::string, int64_t>& bounds, const std::set<std::string>& sized)
      : graph_(graph), model_(model), mainScope_(mainScope), bounds_(bounds), sized_(sized) {}

  /// The values the main graph's nodes defined so far.
  std::vector<DefinedValue> takeDefined() { return std::move(defined_); }

  void importNodes(const NodeList& nodes, Scope& scope, int opset, const std::string& prefix) {
    for (int i = 0; i < nodes.size(); ++i) {
      const auto& node = nodes.Get(i);
      std::string label = prefix + nodeLabel(node, i);
      while (!usedLabels_.insert(label).second) label += "_";
      importNode(node, label, scope, opset);
    }
  }

 private:
  DiagLocation where(const std::string& label, const onnx::NodeProto& node) const {
    return {graph_.sourceFile, label, node.op_type()};
  }

  void importNode(const onnx::NodeProto& node, const std::string& label, Scope& scope, int opset) {
    std::vector<Entry> entries;
    std::vector<int> inputs;
    bool composite = false;
    for (const auto& name : node.input()) {
      Entry entry = name.empty() ? Entry{} : scope.lookup(name);
      if (!name.empty() && !entry.defined())
        userError(where(label, node), "input '{}' is not defined", name);
      composite |= entry.composite.has_value();
      inputs.push_back(entry.tensor);
      entries.push_back(std::move(entry));
    }
    const bool standard = isDefaultDomain(node.domain());
    if (isCompositeOp(node)) return importCompositeOp(node, label, entries, scope, opset);
    if (standard && node.op_type() == "Identity" && composite)
      return defineEntries(node, label, entries, scope);
    if (standard && node.op_type() == "Loop" && (composite || readsOuterComposite(node, scope)))
      return unrollLoop(node, label, entries, scope, opset);
    const auto* function = localFunction(model_, node);
    const auto* schema = schemaWithBody(node, opset);
    if (composite && !function && !schema) rejectComposites(node, label, entries);
    if (hasImporter(node)) return importOp(node, label, inputs, scope, opset);
    if (standard && node.op_type() == "If") return importIf(node, label, inputs, scope, opset);
    if (standard && node.op_type() == "Loop") return importLoop(node, label, inputs, scope, opset);
    if (standard && node.op_type() == "Scan") return importScan(node, label, inputs, scope, opset);
    if (function)
      return inlineFunction(node, label, entries, *function, nullptr, scope,
                            defaultOpset(function->opset_import(), opset));
    if (schema) {
      if (schema->HasFunction())
        return inlineFunction(node, label, entries, *schema->GetFunction(), schema, scope, opset);
      std::vector<onnx::TypeProto> types;
      for (const Entry& entry : entries)
        types.push_back(entry.composite    ? compositeTypeProto(*entry.composite)
                        : entry.tensor < 0 ? onnx::TypeProto()
                                           : typeProto(graph_.value(entry.tensor).type));
      onnx::FunctionBodyBuildContextImpl context(node, types);
      onnx::FunctionProto body;
      bool built = false;
      try {
        built = schema->BuildContextDependentFunction(context, body);
      } catch (const std::exception& e) {
        userError(where(label, node), "ONNX cannot expand this op: {}", e.what());
      }
      if (!built) userError(where(label, node), "ONNX cannot expand this op for its inputs");
      return inlineFunction(node, label, entries, body, schema, scope, opset);
    }
    userError(where(label, node), "unsupported op");
  }

  /// One op through its importer; the new nodes are folded at once, unless
  /// their outputs would exceed ir::kMaxFoldBytes or what is left of
  /// ir::kMaxGeneratedBytes (they run at run time), or the op computes a
  /// value from the sizes of variable dimensions (they run at run time,
  /// their outputs known at this compile's sizes).
  void importOp(const onnx::NodeProto& node, const std::string& label, std::vector<int> inputs,
                Scope& scope, int opset) {
    OpContext ctx(graph_, node, opset, label, std::move(inputs));
    ctx.results.assign(node.output_size(), -1);
    ctx.generateBudget = std::min(ir::kMaxFoldBytes, ir::kMaxGeneratedBytes - generated_);
    ctx.bounds = &bounds_;
    ctx.sized = sized_.empty() ? nullptr : &sized_;
    const int64_t budget = ctx.generateBudget;
    int firstNewNode = graph_.numNodeSlots();
    int firstNewValue = graph_.numValues();
    opImporters().at(node.op_type())(ctx);
    propagateDynamicExtents(graph_, firstNewNode, ctx.inputs, ctx.results, node.op_type(),
                            where(label, node));
    generated_ += budget - ctx.generateBudget;
    // Every value an importer made is within the size limits, whichever way
    // it was made (emit checks its outputs, some importers add values
    // themselves).
    for (int id = firstNewValue; id < graph_.numValues(); ++id)
      ctx.checkType(graph_.value(id).type, fmt::format("value '{}'", graph_.value(id).name));
    if (graph_.numNodeSlots() > ir::kMaxNodes || graph_.numValues() > ir::kMaxValues)
      userError(where(label, node),
                "the model has more than {} nodes or {} "
                "values after inlining its functions",
                ir::kMaxNodes, ir::kMaxValues);
    bool sized = false;
    for (size_t o = 0; o < ctx.results.size(); ++o) sized |= ctx.isSized(o);
    for (int id = firstNewNode; id < graph_.numNodeSlots(); ++id) {
      ir::Node& created = graph_.node(id);
      // Quantised weights stay int8 for fuse-quantized (fold-constants folds the rest).
      if (created.op == "DequantizeLinear") continue;
      if (sized) {
        created.sized = true;
        lowering::evaluateNode(graph_, id);
        continue;
      }
      int64_t bytes = ir::foldBytes(graph_, created, ir::kMaxGeneratedBytes - generated_);
      if (bytes < 0) continue;
      std::vector<int> before = created.outputs;
      std::vector<int> after = lowering::foldNode(graph_, id);
      if (!after.empty()) generated_ += bytes;
      for (size_t o = 0; o < after.size(); ++o)
        for (int& r : ctx.results)
          if (r == before[o]) r = after[o];
    }
    defineOutputs(node, label, ctx.results, scope);
  }

  void defineOutputs(const onnx::NodeProto& node, const std::string& label,
                     const std::vector<int>& results, Scope& scope) {
    for (int o = 0; o < node.output_size(); ++o) {
      const std::string& name = node.output(o);
      if (name.empty()) continue;
      int value = o < static_cast<int>(results.size()) ? results[o] : -1;
      if (value < 0) userError(where(label, node), "output '{}' is not supported", name);
      if (&scope == mainScope_) defined_.push_back({name, value, where(label, node)});
      scope.define(name, value);
    }
  }

  /// defineOutputs for results that may be composites.
  void defineEntries(const onnx::NodeProto& node, const std::string& label,
                     const std::vector<Entry>& results, Scope& scope) {
    std::vector<int> tensors(results.size(), -1);
    onnx::NodeProto tensorsOnly;
    for (int o = 0; o < node.output_size(); ++o) {
      const bool composite = o < static_cast<int>(results.size()) && results[o].composite;
      tensorsOnly.add_output(composite ? "" : node.output(o));
      if (node.output(o).empty() || o >= static_cast<int>(results.size())) continue;
      if (composite)
        scope.defineComposite(node.output(o), *results[o].composite);
      else
        tensors[o] = results[o].tensor;
    }
    tensorsOnly.set_op_type(node.op_type());
    defineOutputs(tensorsOnly, label, tensors, scope);
  }

  // Sequences and optionals (import_sequence.cpp).

  void importCompositeOp(const onnx::NodeProto& node, const std::string& label,
                         const std::vector<Entry>& inputs, Scope& scope, int opset);
  /// A Loop that carries sequences or optionals (or reads them from outer
  /// graphs) with a trip count known at compile time, unrolled: its body
  /// imported once per iteration into this graph.
  void unrollLoop(const onnx::NodeProto& node, const std::string& label,
                  const std::vector<Entry>& inputs, Scope& scope, int opset);
  /// Whether the Loop's body reads a composite of the graphs around it.
  bool readsOuterComposite(const onnx::NodeProto& node, const Scope& scope) const;
  /// The error for an op that takes a composite where it takes tensors.
  [[noreturn]] void rejectComposites(const onnx::NodeProto& node, const std::string& label,
                                     const std::vector<Entry>& inputs) const;
  /// An ONNX op made by the frontend (opset 13 forms) on IR values,
  /// imported as the model's are; returns its outputs.
  std::vector<int> importSynthetic(const std::string& op, const std::string& label,
                                   const std::vector<int>& inputs, int outputs,
                                   const std::map<std::string, int64_t>& attrs, Scope& scope);
  /// ONNX's type of a composite (for ONNX's function builders).
  onnx::TypeProto compositeTypeProto(const Composite& composite) const;

  // Control flow (import_control.cpp).

  /// A body imported as a graph of its own (see Scope): `formals` are the
  /// types of its first inputs, the body's declared ones; the values it
  /// reads from outer scopes become further inputs, and `captures` the
  /// outer values that feed them.
  struct Subgraph {
    std::shared_ptr<ir::Graph> graph;
    std::vector<int> captures;  // outer value ids, for inputs formals.size()...
    /// Per ONNX body output: the composite it is (its items flattened into
    /// the graph's outputs), or nothing for a tensor.
    std::vector<std::optional<Composite>> composites;
  };
  Subgraph importSubgraph(const onnx::GraphProto& body, const std::vector<ir::TensorType>& formals,
                          const Scope& outer, int opset, const std::string& prefix);
  /// A branch's nodes inlined into this graph (for a condition known at
  /// compile time); returns its output values.
  std::vector<Entry> inlineBranch(const onnx::GraphProto& body, Scope& outer, int opset,
                                  const std::string& prefix);
  void importIf(const onnx::NodeProto& node, const std::string& label,
                const std::vector<int>& inputs, Scope& scope, int opset);
  void importLoop(const onnx::NodeProto& node, const std::string& label,
                  const std::vector<int>& inputs, Scope& scope, int opset);
  void importScan(const onnx::NodeProto& node, const std::string& label,
                  const std::vector<int>& inputs, Scope& scope, int opset);
  /// The control-flow node `op` with its subgraphs: node inputs `inputs`
  /// then every subgraph's captures, recorded as each subgraph's bindings.
  std::vector<int> emitControl(const onnx::NodeProto& node, const std::string& label,
                               const std::string& op, std::vector<int> inputs,
                               std::vector<Subgraph> bodies,
                               const std::vector<std::vector<int>>& formalBindings,
                               std::vector<ir::TensorType> outputTypes,
                               std::map<std::string, ir::Attribute> attrs,
                               std::vector<std::string> outputNames = {});

  /// Inlines a function call: the body sees only its parameters, and its
  /// attribute references take the call's attributes (or the schema's
  /// defaults).
  void inlineFunction(const onnx::NodeProto& call, const std::string& label,
                      const std::vector<Entry>& inputs, const onnx::FunctionProto& function,
                      const onnx::OpSchema* schema, Scope& scope, int opset) {
    if (call.input_size() > function.input_size() || call.output_size() > function.output_size())
      userError(where(label, call),
                "has more inputs or outputs than function "
                "'{}' declares",
                function.name());
    if (std::find(inlining_.begin(), inlining_.end(), &function) != inlining_.end())
      userError(where(label, call), "function '{}' calls itself", function.name());
    std::map<std::string, onnx::AttributeProto> attributes;
    if (schema)
      for (const auto& [name, attr] : schema->attributes())
        if (attr.default_value.type() != onnx::AttributeProto::UNDEFINED)
          attributes[name] = attr.default_value;
    for (const auto& attr : call.attribute()) attributes[attr.name()] = attr;

    Scope body;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].defined()) body.define(function.input(static_cast<int>(i)), inputs[i]);
    NodeList nodes;
    for (const auto& original : function.node()) {
      onnx::NodeProto& node = *nodes.Add();
      node = original;
      node.clear_attribute();
      for (const auto& attr : original.attribute()) {
        if (attr.ref_attr_name().empty()) {
          *node.add_attribute() = attr;
          continue;
        }
        auto given = attributes.find(attr.ref_attr_name());
        if (given == attributes.end()) continue;
        auto& resolved = *node.add_attribute() = given->second;
        resolved.set_name(attr.name());
      }
    }
    inlining_.push_back(&function);
    importNodes(nodes, body, opset, label + "/");
    inlining_.pop_back();
    std::vector<Entry> results;
    for (int o = 0; o < call.output_size(); ++o)
      results.push_back(call.output(o).empty() ? Entry{} : body.lookup(function.output(o)));
    defineEntries(call, label, results, scope);
  }

  ir::Graph& graph_;
  const onnx::ModelProto& model_;
  const Scope* mainScope_;
  const std::map<std::string, int64_t>& bounds_;
  const std::set<std::string>& sized_;
  std::vector<DefinedValue> defined_;  // by the main graph's nodes
  int64_t generated_ = 0;              // constant bytes computed so far (folds, fills)
  std::set<std::string> usedLabels_;
  std::vector<const onnx::FunctionProto*> inlining_;  // the calls being inlined
};

}  // namespace cgc::frontend::detail
