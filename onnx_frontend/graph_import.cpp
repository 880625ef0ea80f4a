// See graph_import.h.
#include "onnx_frontend/graph_import.h"

#include <fmt/ranges.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <map>
#include <set>

#include "lowering/kernel_call.h"
#include "onnx_frontend/graph_importer.h"
#include "onnx_frontend/op_import.h"
#include "onnx_frontend/tensor_proto.h"

namespace cgc::frontend {
namespace {

using namespace detail;

void collectUnsupported(const onnx::ModelProto& model, const NodeList& nodes, int opset,
                        const std::string& prefix, std::set<std::string>& visitedFunctions,
                        std::vector<UnsupportedNode>& result) {
  for (int i = 0; i < nodes.size(); ++i) {
    const auto& node = nodes.Get(i);
    std::string label = prefix + nodeLabel(node, i);
    if (hasImporter(node) || isCompositeOp(node)) continue;
    if (isDefaultDomain(node.domain()) && controlFlowOps().count(node.op_type())) {
      for (const auto& attr : node.attribute())
        if (attr.has_g())
          collectUnsupported(model, attr.g().node(), opset, label + "/" + attr.name() + "/",
                             visitedFunctions, result);
      continue;
    }
    if (const auto* function = localFunction(model, node)) {
      if (visitedFunctions.insert(function->domain() + "." + function->name()).second)
        collectUnsupported(model, function->node(), defaultOpset(function->opset_import(), opset),
                           label + "/", visitedFunctions, result);
      continue;
    }
    if (const auto* schema = schemaWithBody(node, opset)) {
      if (schema->HasFunction())
        collectUnsupported(model, schema->GetFunction()->node(), opset, label + "/",
                           visitedFunctions, result);
      continue;
    }
    result.push_back({label, node.op_type(), node.domain()});
  }
}

}  // namespace

bool isOnnxRuntimeDomain(const std::string& domain) {
  return domain == "com.microsoft" || domain.rfind("com.microsoft.", 0) == 0;
}

std::string unsupportedAdvice(const std::vector<UnsupportedNode>& nodes) {
  std::set<std::string> domains;
  for (const auto& u : nodes)
    if (isOnnxRuntimeDomain(u.domain)) domains.insert(u.domain);
  if (!domains.empty())
    return fmt::format(
        "the {} ops are ONNX Runtime's internal ops, which its optimiser writes into a model it "
        "saves: compile the original model",
        fmt::join(domains, " and "));
  return "the supported ops are listed in docs/OPS.md and by cgc inspect --ops";
}

SupportedOps supportedOps() {
  SupportedOps ops;
  for (const auto& entry : opImporters()) ops.imported.push_back(entry.first);
  ops.controlFlow.assign(controlFlowOps().begin(), controlFlowOps().end());
  ops.compileTime.assign(compositeOps().begin(), compositeOps().end());
  std::map<std::string, int> functions;
  for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
    const std::string& name = schema.Name();
    if (!isDefaultDomain(schema.domain()) || opImporters().count(name) ||
        compositeOps().count(name) || controlFlowOps().count(name) ||
        !(schema.HasFunction() || schema.HasContextDependentFunction()))
      continue;
    auto [it, added] = functions.emplace(name, schema.SinceVersion());
    if (!added) it->second = std::min(it->second, schema.SinceVersion());
  }
  ops.functions.assign(functions.begin(), functions.end());
  return ops;
}

int modelOpset(const onnx::ModelProto& model) { return defaultOpset(model.opset_import(), 1); }

std::string describeUnsupported(const std::vector<UnsupportedNode>& nodes, size_t shown) {
  std::map<std::string, std::vector<std::string>> byOp;
  for (const auto& u : nodes)
    byOp[u.domain.empty() ? u.op : u.domain + "." + u.op].push_back(fmt::format("'{}'", u.node));
  std::vector<std::string> parts;
  for (const auto& [op, names] : byOp) {
    const std::vector<std::string> first(names.begin(),
                                         names.begin() + std::min(shown, names.size()));
    parts.push_back(fmt::format("{} {} (node{} {}{})", names.size(), op,
                                names.size() > 1 ? "s" : "", fmt::join(first, ", "),
                                names.size() > shown ? ", ..." : ""));
  }
  return fmt::format("unsupported op{}: {}", byOp.size() > 1 ? "s" : "", fmt::join(parts, ", "));
}

std::vector<UnsupportedNode> unsupportedNodes(const onnx::ModelProto& model) {
  std::vector<UnsupportedNode> result;
  std::set<std::string> visitedFunctions;
  collectUnsupported(model, model.graph().node(), modelOpset(model), "", visitedFunctions, result);
  return result;
}

std::vector<DefinedValue> importGraphNodes(
    ir::Graph& graph, const onnx::ModelProto& model,
    const std::unordered_map<std::string, int>& names, const std::map<std::string, int64_t>& bounds,
    const std::set<std::string>& sized, const std::map<std::string, CompositeTensors>& composites) {
  Scope scope;
  for (const auto& [name, id] : names) scope.define(name, id);
  for (const auto& [name, value] : composites) {
    Composite composite;
    composite.kind = value.optional ? Composite::Kind::kOptional : Composite::Kind::kSequence;
    composite.present = value.present;
    composite.holdsSequence = value.optional && value.sequence;
    composite.elemType = value.elemType;
    for (size_t i = 0; i < value.tensors.size(); ++i) {
      const HostTensor& t = value.tensors[i];
      composite.items.push_back(graph.addConstant(fmt::format("{}[{}]", name, i), t.type, t.bytes));
    }
    scope.defineComposite(name, std::move(composite));
  }
  GraphImporter importer(graph, model, &scope, bounds, sized);
  importer.importNodes(model.graph().node(), scope, modelOpset(model), "");
  for (const auto& output : model.graph().output()) {
    const Entry entry = scope.lookup(output.name());
    if (!entry.defined())
      userError(graph.where(), "graph output '{}' is not defined", output.name());
    // A sequence (or optional) output is its tensors, NAME[0], NAME[1], ...
    if (entry.composite) {
      for (size_t i = 0; i < entry.composite->items.size(); ++i) {
        graph.outputs.push_back(entry.composite->items[i]);
        graph.outputNames.push_back(fmt::format("{}[{}]", output.name(), i));
      }
      continue;
    }
    graph.outputs.push_back(entry.tensor);
    graph.outputNames.push_back(output.name());
  }
  return importer.takeDefined();
}

}  // namespace cgc::frontend
