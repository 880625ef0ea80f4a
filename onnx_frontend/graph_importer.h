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

inline int defaultOpset(
    const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& opsets,
    int fallback) {
  for (const auto& opset : opsets)
    if (isDefaultDomain(opset.domain())) return static_cast<int>(opset.version());
  return fallback;
}

inline std::string nodeLabel(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? fmt::format("{}_{}", node.op_type(), index)
                             : node.name();
}

inline const onnx::FunctionProto* localFunction(const onnx::ModelProto& model,
                                         const onnx::NodeProto& node) {
  for (const auto& function : model.functions())
    if (function.name() == node.op_type() && function.domain() == node.domain())
      return &function;
  return nullptr;
}

/// The ONNX schema of a default-domain op that ONNX defines by a function
/// body, or null.
inline const onnx::OpSchema* schemaWithBody(const onnx::NodeProto& node, int opset) {
  if (!isDefaultDomain(node.domain())) return nullptr;
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "");
  if (schema && (schema->HasFunction() || schema->HasContextDependentFunction()))
    return schema;
  return nullptr;
}

inline bool hasImporter(const onnx::NodeProto& node) {
  return isDefaultDomain(node.domain()) && opImporters().count(node.op_type());
}

/// ONNX names visible in one graph body: its own, then those of the graphs
/// around it. A control-flow body is an ir::Graph of its own: its scope has
/// no parent but a `capture` function, which makes a name of the outer
/// graphs visible inside (as a new input of the body, or its constant).
class Scope {
 public:
  explicit Scope(const Scope* parent = nullptr) : parent_(parent) {}
  void define(const std::string& name, int value) { names_[name] = value; }
  void setCapture(std::function<int(const std::string&)> capture) {
    capture_ = std::move(capture);
  }
  /// -1 when the name is not visible.
  int find(const std::string& name) const {
    for (const Scope* scope = this; scope; scope = scope->parent_) {
      auto it = scope->names_.find(name);
      if (it != scope->names_.end()) return it->second;
      if (scope->capture_) return scope->capture_(name);
    }
    return -1;
  }

 private:
  const Scope* parent_;
  std::unordered_map<std::string, int> names_;
  std::function<int(const std::string&)> capture_;
};

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
  /// value name.
  GraphImporter(ir::Graph& graph, const onnx::ModelProto& model, const Scope* mainScope,
                const std::map<std::string, int64_t>& bounds)
      : graph_(graph), model_(model), mainScope_(mainScope), bounds_(bounds) {}

  /// The values the main graph's nodes defined so far.
  std::vector<DefinedValue> takeDefined() { return std::move(defined_); }

  void importNodes(const NodeList& nodes, Scope& scope, int opset,
                   const std::string& prefix) {
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

  void importNode(const onnx::NodeProto& node, const std::string& label,
                  Scope& scope, int opset) {
    std::vector<int> inputs;
    for (const auto& name : node.input()) {
      int id = name.empty() ? -1 : scope.find(name);
      if (!name.empty() && id < 0)
        userError(where(label, node), "input '{}' is not defined", name);
      inputs.push_back(id);
    }
    if (hasImporter(node)) return importOp(node, label, inputs, scope, opset);
    if (isDefaultDomain(node.domain()) && node.op_type() == "If")
      return importIf(node, label, inputs, scope, opset);
    if (isDefaultDomain(node.domain()) && node.op_type() == "Loop")
      return importLoop(node, label, inputs, scope, opset);
    if (isDefaultDomain(node.domain()) && node.op_type() == "Scan")
      return importScan(node, label, inputs, scope, opset);
    if (const auto* function = localFunction(model_, node))
      return inlineFunction(node, label, inputs, *function, nullptr, scope,
                            defaultOpset(function->opset_import(), opset));
    if (const auto* schema = schemaWithBody(node, opset)) {
      if (schema->HasFunction())
        return inlineFunction(node, label, inputs, *schema->GetFunction(),
                              schema, scope, opset);
      std::vector<onnx::TypeProto> types;
      for (int id : inputs)
        types.push_back(id < 0 ? onnx::TypeProto() : typeProto(graph_.value(id).type));
      onnx::FunctionBodyBuildContextImpl context(node, types);
      onnx::FunctionProto body;
      bool built = false;
      try {
        built = schema->BuildContextDependentFunction(context, body);
      } catch (const std::exception& e) {
        userError(where(label, node), "ONNX cannot expand this op: {}",
                  e.what());
      }
      if (!built)
        userError(where(label, node), "ONNX cannot expand this op for its inputs");
      return inlineFunction(node, label, inputs, body, schema, scope, opset);
    }
    userError(where(label, node), "unsupported op");
  }

  /// One op through its importer; the new nodes are folded at once, unless
  /// their outputs would exceed ir::kMaxFoldBytes or what is left of
  /// ir::kMaxGeneratedBytes (they run at run time).
  void importOp(const onnx::NodeProto& node, const std::string& label,
                std::vector<int> inputs, Scope& scope, int opset) {
    OpContext ctx(graph_, node, opset, label, std::move(inputs));
    ctx.results.assign(node.output_size(), -1);
    ctx.generateBudget =
        std::min(ir::kMaxFoldBytes, ir::kMaxGeneratedBytes - generated_);
    const int64_t budget = ctx.generateBudget;
    int firstNewNode = graph_.numNodeSlots();
    int firstNewValue = graph_.numValues();
    opImporters().at(node.op_type())(ctx);
    propagateDynamicExtents(graph_, firstNewNode, where(label, node));
    generated_ += budget - ctx.generateBudget;
    // Every value an importer made is within the size limits, whichever way
    // it was made (emit checks its outputs, some importers add values
    // themselves).
    for (int id = firstNewValue; id < graph_.numValues(); ++id)
      ctx.checkType(graph_.value(id).type,
                    fmt::format("value '{}'", graph_.value(id).name));
    if (graph_.numNodeSlots() > ir::kMaxNodes ||
        graph_.numValues() > ir::kMaxValues)
      userError(where(label, node),
                "the model has more than {} nodes or {} "
                "values after inlining its functions",
                ir::kMaxNodes, ir::kMaxValues);
    for (int id = firstNewNode; id < graph_.numNodeSlots(); ++id) {
      const ir::Node& created = graph_.node(id);
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
      if (value < 0)
        userError(where(label, node), "output '{}' is not supported", name);
      if (&scope == mainScope_) defined_.push_back({name, value, where(label, node)});
      scope.define(name, value);
    }
  }

  // Control flow (import_control.cpp).

  /// A body imported as a graph of its own (see Scope): `formals` are the
  /// types of its first inputs, the body's declared ones; the values it
  /// reads from outer scopes become further inputs, and `captures` the
  /// outer values that feed them.
  struct Subgraph {
    std::shared_ptr<ir::Graph> graph;
    std::vector<int> captures;  // outer value ids, for inputs formals.size()...
  };
  Subgraph importSubgraph(const onnx::GraphProto& body, const std::vector<ir::TensorType>& formals,
                          const Scope& outer, int opset, const std::string& prefix);
  /// A branch's nodes inlined into this graph (for a condition known at
  /// compile time); returns its output values.
  std::vector<int> inlineBranch(const onnx::GraphProto& body, Scope& outer, int opset,
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
                               std::map<std::string, ir::Attribute> attrs);

  /// Inlines a function call: the body sees only its parameters, and its
  /// attribute references take the call's attributes (or the schema's
  /// defaults).
  void inlineFunction(const onnx::NodeProto& call, const std::string& label,
                      const std::vector<int>& inputs,
                      const onnx::FunctionProto& function,
                      const onnx::OpSchema* schema, Scope& scope, int opset) {
    if (call.input_size() > function.input_size() ||
        call.output_size() > function.output_size())
      userError(where(label, call), "has more inputs or outputs than function "
                "'{}' declares", function.name());
    if (std::find(inlining_.begin(), inlining_.end(), &function) !=
        inlining_.end())
      userError(where(label, call), "function '{}' calls itself",
                function.name());
    std::map<std::string, onnx::AttributeProto> attributes;
    if (schema)
      for (const auto& [name, attr] : schema->attributes())
        if (attr.default_value.type() != onnx::AttributeProto::UNDEFINED)
          attributes[name] = attr.default_value;
    for (const auto& attr : call.attribute()) attributes[attr.name()] = attr;

    Scope body;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] >= 0) body.define(function.input(static_cast<int>(i)), inputs[i]);
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
    std::vector<int> results;
    for (int o = 0; o < call.output_size(); ++o)
      results.push_back(call.output(o).empty() ? -1 : body.find(function.output(o)));
    defineOutputs(call, label, results, scope);
  }

  ir::Graph& graph_;
  const onnx::ModelProto& model_;
  const Scope* mainScope_;
  const std::map<std::string, int64_t>& bounds_;
  std::vector<DefinedValue> defined_;  // by the main graph's nodes
  int64_t generated_ = 0;  // constant bytes computed so far (folds, fills)
  std::set<std::string> usedLabels_;
  std::vector<const onnx::FunctionProto*> inlining_;  // the calls being inlined
};

}  // namespace cgc::frontend::detail
