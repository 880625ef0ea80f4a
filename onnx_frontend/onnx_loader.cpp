// See onnx_loader.h.
#include "onnx_frontend/onnx_loader.h"

#include <fmt/ranges.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ir/verifier.h"
#include "onnx_frontend/graph_import.h"
#include "onnx_frontend/tensor_proto.h"

namespace cgc::frontend {
namespace {

onnx::ModelProto readModel(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) userError({path, "", ""}, "cannot open the model file");
  std::stringstream buffer;
  buffer << file.rdbuf();
  std::string bytes = buffer.str();
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    userError({path, "", ""},
              "not a valid ONNX model: the protobuf does not parse (truncated "
              "or not an ONNX file)");
  if (!model.has_graph() || model.ir_version() <= 0)
    userError({path, "", ""},
              "not a valid ONNX model: no graph or no IR version");
  return model;
}

void rejectUnsupported(const std::string& path, const onnx::ModelProto& model) {
  auto unsupported = unsupportedNodes(model);
  if (unsupported.empty()) return;
  userError({path, "", ""}, "{} (cgc inspect lists them all)",
            describeUnsupported(unsupported, 3));
}

std::set<std::string> initializerNames(const onnx::GraphProto& graph) {
  std::set<std::string> names;
  for (const auto& init : graph.initializer()) names.insert(init.name());
  return names;
}

/// Turns the inputs named by --constant into initializers holding the given
/// tensors, checking their element types.
void freezeConstantInputs(const std::string& path, onnx::GraphProto& graph,
                          const LoadOptions& options) {
  for (const auto& [name, file] : options.constantInputs) {
    auto& inputs = *graph.mutable_input();
    auto it = std::find_if(inputs.begin(), inputs.end(),
                           [&](const auto& in) { return in.name() == name; });
    if (it == inputs.end())
      userError({path, "", ""}, "--constant names unknown input '{}'", name);
    HostTensor tensor = readTensorFile(file);
    auto declared = static_cast<DType>(it->type().tensor_type().elem_type());
    if (declared != tensor.type.dtype)
      userError({file, "", ""}, "tensor is {} but input '{}' is {}",
                tensor.type.str(), name, dtypeName(declared));
    tensor.name = name;
    *graph.add_initializer() = tensorToProto(tensor);
    inputs.erase(it);
  }
}

/// The values --shape gives each symbolic dimension it binds (batch = 1
/// from --shape input=1x512 where input is [batch, seq]), so that the same
/// symbol in other inputs is bound too.
std::map<std::string, int64_t> boundSymbols(const std::string& path, const onnx::GraphProto& graph,
                                            const std::map<std::string, ir::Shape>& bindings) {
  std::map<std::string, int64_t> symbols;
  for (const auto& input : graph.input()) {
    auto binding = bindings.find(input.name());
    if (binding == bindings.end() || !input.type().tensor_type().has_shape()) continue;
    const auto& shape = input.type().tensor_type().shape();
    for (int d = 0; d < shape.dim_size() && d < static_cast<int>(binding->second.size()); ++d) {
      const auto& dim = shape.dim(d);
      if (!dim.has_dim_param() || dim.dim_param().empty()) continue;
      auto [it, added] = symbols.emplace(dim.dim_param(), binding->second[d]);
      if (!added && it->second != binding->second[d])
        userError({path, "", ""}, "--shape binds symbolic dimension '{}' to both {} and {}",
                  dim.dim_param(), it->second, binding->second[d]);
    }
  }
  return symbols;
}

/// Writes the --shape bindings into the graph inputs, binds the symbolic
/// dimensions they name in every other input, and checks that every input
/// dimension is then known.
void bindInputShapes(const std::string& path, onnx::GraphProto& graph,
                     const LoadOptions& options) {
  auto initializers = initializerNames(graph);
  std::map<std::string, ir::Shape> bindings(options.shapes.begin(),
                                            options.shapes.end());
  const std::map<std::string, int64_t> symbols = boundSymbols(path, graph, bindings);
  std::vector<std::string> inputNames;
  std::set<std::string> unbound;
  for (auto& input : *graph.mutable_input()) {
    if (initializers.count(input.name())) continue;
    inputNames.push_back(input.name());
    auto* tensorType = input.mutable_type()->mutable_tensor_type();
    auto* shape = tensorType->mutable_shape();
    auto binding = bindings.find(input.name());
    if (binding != bindings.end()) {
      const ir::Shape& wanted = binding->second;
      if (tensorType->has_shape() && shape->dim_size() != static_cast<int>(wanted.size()))
        userError({path, "", ""},
                  "--shape {}={} has rank {}, but the model declares rank {}",
                  input.name(), fmt::join(wanted, "x"), wanted.size(),
                  shape->dim_size());
      if (!tensorType->has_shape() || shape->dim_size() == 0) {
        shape->clear_dim();
        for (size_t i = 0; i < wanted.size(); ++i) shape->add_dim();
      }
      for (int d = 0; d < shape->dim_size(); ++d) {
        auto* dim = shape->mutable_dim(d);
        if (dim->has_dim_value() && dim->dim_value() != wanted[d])
          userError({path, "", ""},
                    "--shape {}={} contradicts the model: dimension {} is {}",
                    input.name(), fmt::join(wanted, "x"), d, dim->dim_value());
        dim->set_dim_value(wanted[d]);
      }
      bindings.erase(binding);
    }
    if (!tensorType->has_shape())
      userError({path, "", ""}, "input '{}' has no shape; give one with --shape {}=...",
                input.name(), input.name());
    for (auto& dim : *shape->mutable_dim()) {
      auto symbol = dim.has_dim_param() ? symbols.find(dim.dim_param()) : symbols.end();
      if (symbol != symbols.end()) dim.set_dim_value(symbol->second);
    }
    for (const auto& dim : shape->dim())
      if (!dim.has_dim_value() || dim.dim_value() < 0)
        unbound.insert(dim.has_dim_param() && !dim.dim_param().empty()
                           ? dim.dim_param()
                           : fmt::format("{}[?]", input.name()));
  }
  if (!bindings.empty())
    userError({path, "", ""}, "--shape names unknown input '{}' (inputs: {})",
              bindings.begin()->first, fmt::join(inputNames, ", "));
  if (!unbound.empty())
    userError({path, "", ""},
              "symbolic dimension{} {} not bound; give the input shapes with "
              "--shape NAME=DxDx...",
              unbound.size() > 1 ? "s" : "", fmt::join(unbound, ", "));
}

/// Fully static shapes that ONNX shape inference found, by value name.
std::unordered_map<std::string, ir::Shape> staticShapes(
    const onnx::GraphProto& graph) {
  std::unordered_map<std::string, ir::Shape> shapes;
  auto add = [&](const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
      return;
    ir::Shape shape;
    for (const auto& dim : info.type().tensor_type().shape().dim()) {
      if (!dim.has_dim_value()) return;
      shape.push_back(dim.dim_value());
    }
    shapes[info.name()] = shape;
  };
  for (const auto& v : graph.value_info()) add(v);
  for (const auto& v : graph.output()) add(v);
  return shapes;
}

std::string graphName(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  return base.substr(0, base.find('.'));
}

}  // namespace

ir::Shape parseShape(const std::string& text) {
  ir::Shape shape;
  if (text.empty() || text == "scalar") return shape;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, 'x')) {
    size_t used = 0;
    int64_t d = -1;
    try {
      d = std::stoll(part, &used);
    } catch (const std::exception&) {
    }
    if (part.empty() || used != part.size() || d < 0)
      throw CompileError(fmt::format(
          "cgc: error: shape '{}' is not of the form 1x3x224x224", text));
    shape.push_back(d);
  }
  return shape;
}

/// "float32[batch,3,224,224]"; "?" for a dimension neither known nor named.
static std::string describeType(const onnx::TypeProto& type) {
  if (!type.has_tensor_type()) return "(not a tensor)";
  const auto& tensor = type.tensor_type();
  const char* element = dtypeName(static_cast<DType>(tensor.elem_type()));
  if (!tensor.has_shape()) return fmt::format("{}[unknown rank]", element);
  std::vector<std::string> dims;
  for (const auto& dim : tensor.shape().dim())
    dims.push_back(dim.has_dim_value() ? std::to_string(dim.dim_value())
                   : dim.has_dim_param() && !dim.dim_param().empty() ? dim.dim_param()
                                                                       : "?");
  return fmt::format("{}[{}]", element, fmt::join(dims, ","));
}

ModelSummary summarizeModel(const std::string& path) {
  onnx::ModelProto model = readModel(path);
  ModelSummary summary;
  summary.opset = modelOpset(model);
  summary.nodes = model.graph().node_size();
  const auto initializers = initializerNames(model.graph());
  for (const auto& input : model.graph().input())
    if (!initializers.count(input.name()))
      summary.inputs.push_back({input.name(), describeType(input.type())});
  for (const auto& output : model.graph().output())
    summary.outputs.push_back({output.name(), describeType(output.type())});
  for (const auto& node : model.graph().node()) ++summary.opCounts[node.op_type()];
  summary.unsupported = unsupportedNodes(model);
  return summary;
}

ir::Graph loadOnnx(const std::string& path, const LoadOptions& options) {
  onnx::ModelProto model = readModel(path);
  rejectUnsupported(path, model);
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    userError({path, "", ""}, "the ONNX checker rejects the model: {}", e.what());
  }
  std::vector<std::string> onnxInputNames;
  auto declaredInitializers = initializerNames(model.graph());
  for (const auto& input : model.graph().input())
    if (!declaredInitializers.count(input.name()))
      onnxInputNames.push_back(input.name());
  freezeConstantInputs(path, *model.mutable_graph(), options);
  bindInputShapes(path, *model.mutable_graph(), options);
  try {
    onnx::shape_inference::InferShapes(model);
  } catch (const std::exception& e) {
    userError({path, "", ""}, "ONNX shape inference fails: {}", e.what());
  }
  const onnx::GraphProto& proto = model.graph();
  auto onnxShapes = staticShapes(proto);

  ir::Graph graph;
  graph.name = graphName(path);
  graph.sourceFile = path;
  graph.onnxInputNames = onnxInputNames;
  std::unordered_map<std::string, int> byName;
  DiagLocation where{path, "", ""};

  for (const auto& init : proto.initializer()) {
    HostTensor t = tensorFromProto(init, where);
    byName[init.name()] = graph.addConstant(init.name(), t.type, std::move(t.bytes));
  }
  for (const auto& input : proto.input()) {
    if (byName.count(input.name())) continue;
    const auto& tensorType = input.type().tensor_type();
    ir::TensorType type{static_cast<DType>(tensorType.elem_type()), {}};
    if (dtypeSize(type.dtype) == 0)
      userError(where, "input '{}' has unsupported element type {}",
                input.name(), tensorType.elem_type());
    for (const auto& dim : tensorType.shape().dim())
      type.shape.push_back(dim.dim_value());
    int id = graph.addValue(input.name(), type, ir::ValueKind::kInput);
    graph.inputs.push_back(id);
    byName[input.name()] = id;
  }

  importGraphNodes(graph, model, byName, onnxShapes);
  ir::verifyGraph(graph);
  return graph;
}

}  // namespace cgc::frontend
