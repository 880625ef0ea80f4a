// See onnx_loader.h.
#include "onnx_frontend/onnx_loader.h"

#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ir/verifier.h"
#include "onnx_frontend/external_data.h"
#include "onnx_frontend/graph_import.h"
#include "onnx_frontend/model_checks.h"
#include "onnx_frontend/tensor_proto.h"

namespace cgc::frontend {
namespace {

std::set<std::string> initializerNames(const onnx::GraphProto& graph) {
  std::set<std::string> names;
  for (const auto& init : graph.initializer()) names.insert(init.name());
  return names;
}

/// Turns the inputs named by --constant into initializers holding the given
/// tensors, checking their element types.
void freezeConstantInputs(const std::string& path, onnx::GraphProto& graph,
                          const LoadOptions& options) {
  for (const auto& binding : options.constantInputs) {
    // Not a structured binding: Clang 14 (the fuzz build) cannot capture one.
    const std::string& name = binding.first;
    const std::string& file = binding.second;
    auto& inputs = *graph.mutable_input();
    auto it = std::find_if(inputs.begin(), inputs.end(),
                           [&](const auto& in) { return in.name() == name; });
    if (it == inputs.end()) userError({path, "", ""}, "--constant names unknown input '{}'", name);
    HostTensor tensor = readTensorFile(file, name);
    auto declared = static_cast<DType>(it->type().tensor_type().elem_type());
    if (declared != tensor.type.dtype)
      userError({file, "", ""}, "tensor is {} but input '{}' is {}", tensor.type.str(), name,
                dtypeName(declared));
    tensor.name = name;
    *graph.add_initializer() = tensorToProto(tensor);
    inputs.erase(it);
  }
}

/// Its type as "float32[batch,3,224,224]" ("?" for a dimension neither known
/// nor named), its dimensions and their names.
DeclaredTensor declaredTensor(const onnx::ValueInfoProto& info) {
  DeclaredTensor t{info.name(), "(not a tensor)", false, {}, {}};
  if (!info.type().has_tensor_type()) return t;
  const auto& tensor = info.type().tensor_type();
  const char* element = dtypeName(static_cast<DType>(tensor.elem_type()));
  t.type = fmt::format("{}[unknown rank]", element);
  if (!tensor.has_shape()) return t;
  t.ranked = true;
  std::vector<std::string> dims;
  for (const auto& dim : tensor.shape().dim()) {
    const bool named = dim.has_dim_param() && !dim.dim_param().empty();
    t.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    t.symbols.push_back(!dim.has_dim_value() && named ? dim.dim_param() : "");
    dims.push_back(dim.has_dim_value() ? std::to_string(dim.dim_value())
                   : named             ? dim.dim_param()
                                       : "?");
  }
  t.type = fmt::format("{}[{}]", element, fmt::join(dims, ","));
  return t;
}

/// The values --shape gives each symbolic dimension it binds (batch = 1
/// from --shape input=1x512 where input is [batch, seq]), so that the same
/// symbol in other inputs is bound too.
std::map<std::string, int64_t> boundSymbols(const std::string& path, const onnx::GraphProto& graph,
                                            const std::map<std::string, ir::Shape>& bindings,
                                            const std::map<std::string, int64_t>& dims) {
  std::map<std::string, int64_t> symbols = dims;
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

/// Takes the graph inputs of sequence or optional type out of the graph:
/// each must be bound with --constant to a SequenceProto or OptionalProto
/// file (cgc's generated code takes tensors only). Returns them, and the
/// bindings left for tensors.
std::map<std::string, CompositeTensors> takeCompositeInputs(const std::string& path,
                                                            onnx::GraphProto& graph,
                                                            LoadOptions& options) {
  std::map<std::string, CompositeTensors> composites;
  auto& inputs = *graph.mutable_input();
  for (int i = inputs.size() - 1; i >= 0; --i) {
    const onnx::TypeProto& type = inputs.Get(i).type();
    if (!type.has_sequence_type() && !type.has_optional_type()) continue;
    const std::string name = inputs.Get(i).name();
    auto& bindings = options.constantInputs;
    auto bound = std::find_if(bindings.begin(), bindings.end(),
                              [&](const auto& b) { return b.first == name; });
    if (bound == bindings.end())
      userError({path, "", ""},
                "input '{}' ({}) must be a compile-time constant: cgc's generated code takes "
                "tensors only; bind it with --constant {}=FILE.pb (a {})",
                name, type.has_sequence_type() ? "a sequence" : "an optional", name,
                type.has_sequence_type() ? "SequenceProto" : "OptionalProto");
    composites[name] = readCompositeFile(bound->second, type.has_optional_type());
    bindings.erase(bound);
    inputs.DeleteSubrange(i, 1);
  }
  return composites;
}

/// Writes the --shape bindings into the graph inputs, binds the symbolic
/// dimensions they name in every other input, and checks that every input
/// dimension is then known.
void bindInputShapes(const std::string& path, onnx::GraphProto& graph, const LoadOptions& options) {
  auto initializers = initializerNames(graph);
  std::map<std::string, ir::Shape> bindings(options.shapes.begin(), options.shapes.end());
  const std::map<std::string, int64_t> symbols = boundSymbols(path, graph, bindings, options.dims);
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
        userError({path, "", ""}, "--shape {}={} has rank {}, but the model declares rank {}",
                  input.name(), fmt::join(wanted, "x"), wanted.size(), shape->dim_size());
      if (!tensorType->has_shape() || shape->dim_size() == 0) {
        shape->clear_dim();
        for (size_t i = 0; i < wanted.size(); ++i) shape->add_dim();
      }
      for (int d = 0; d < shape->dim_size(); ++d) {
        auto* dim = shape->mutable_dim(d);
        if (dim->has_dim_value() && dim->dim_value() != wanted[d])
          userError({path, "", ""}, "--shape {}={} contradicts the model: dimension {} is {}",
                    input.name(), fmt::join(wanted, "x"), d, dim->dim_value());
        dim->set_dim_value(wanted[d]);
      }
      bindings.erase(binding);
    }
    if (!tensorType->has_shape())
      userError({path, "", ""}, "input '{}' has no shape; give one with {}", input.name(),
                options.spelling == ShapeSpelling::kCMake
                    ? fmt::format("SHAPES {}=... in cgc_add_graph", input.name())
                    : fmt::format("--shape {}=...", input.name()));
    for (auto& dim : *shape->mutable_dim()) {
      auto symbol = dim.has_dim_param() ? symbols.find(dim.dim_param()) : symbols.end();
      if (symbol != symbols.end()) dim.set_dim_value(symbol->second);
    }
    ir::Shape dims;
    for (const auto& dim : shape->dim()) {
      if (!dim.has_dim_value() || dim.dim_value() < 0)
        unbound.insert(dim.has_dim_param() && !dim.dim_param().empty()
                           ? dim.dim_param()
                           : fmt::format("{}[?]", input.name()));
      dims.push_back(std::max<int64_t>(dim.dim_value(), 0));
    }
    // Before ONNX shape inference multiplies them.
    auto dtype = static_cast<DType>(tensorType->elem_type());
    std::string tooLarge = ir::checkShape(dims, dtypeSize(dtype));
    if (!tooLarge.empty()) userError({path, "", ""}, "input '{}': {}", input.name(), tooLarge);
  }
  if (!bindings.empty())
    userError({path, "", ""}, "--shape names unknown input '{}' (inputs: {})",
              bindings.begin()->first, fmt::join(inputNames, ", "));
  if (unbound.empty()) return;
  std::vector<DeclaredTensor> inputs;
  for (const auto& input : graph.input())
    if (!initializers.count(input.name())) inputs.push_back(declaredTensor(input));
  userError({path, "", ""},
            "symbolic dimension{} {} not bound; give the input shapes, e.g. {} (a dimension "
            "bound in one input is bound in every input)",
            unbound.size() > 1 ? "s" : "", fmt::join(unbound, ", "),
            shapeExample(inputs, options.spelling));
}

/// Fully static shapes that ONNX shape inference found, by value name.
std::unordered_map<std::string, ir::Shape> staticShapes(const onnx::GraphProto& graph) {
  std::unordered_map<std::string, ir::Shape> shapes;
  auto add = [&](const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
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

/// The bytes the importer knew of values run time computes (Value::known),
/// which no later stage may take for constants.
void forgetKnown(ir::Graph& graph) {
  for (int v = 0; v < graph.numValues(); ++v) graph.value(v).known.reset();
  for (int id : graph.liveNodes())
    for (const auto& body : graph.node(id).subgraphs)
      if (body) forgetKnown(*body);  // null: a branch that failed to import
}

/// All tensors together within ir::kMaxGraphBytes (the planner's sums rely
/// on it; see ir/graph.h).
void checkGraphBytes(const ir::Graph& graph) {
  int64_t total = 0;
  for (int id = 0; id < graph.numValues(); ++id)
    if (__builtin_add_overflow(total, graph.value(id).type.bytes(), &total) ||
        total > ir::kMaxGraphBytes)
      userError(graph.where(),
                "the model's tensors hold more than 2^50 bytes "
                "together");
}

/// Checks what the importer made against ONNX's shape inference. It runs
/// only now, on a graph cgc's importer accepted: ONNX's inference functions
/// trust their inputs (ONNX 1.12's ConvTranspose dereferences null for
/// rank-1 weights).
void checkInferredShapes(const ir::Graph& graph, onnx::ModelProto& model,
                         const std::vector<DefinedValue>& defined) {
  try {
    onnx::shape_inference::InferShapes(model);
  } catch (const std::exception& e) {
    userError(graph.where(), "ONNX shape inference fails: {}", oneLine(e.what()));
  }
  auto inferred = staticShapes(model.graph());
  for (const DefinedValue& d : defined) {
    auto expected = inferred.find(d.name);
    const ir::Value& value = graph.value(d.value);
    ir::Shape shape = value.type.shape;
    // A data-dependent dimension holds its bound; ONNX (or the model's
    // declared output) may know the size of one example.
    if (expected != inferred.end() && expected->second.size() == shape.size())
      for (int dim : value.dynamic.dims) shape[dim] = expected->second[dim];
    if (expected != inferred.end() && expected->second != shape)
      userError(d.where, "output '{}' has shape {}, but ONNX shape inference says {}", d.name,
                ir::shapeString(shape), ir::shapeString(expected->second));
  }
}

}  // namespace

std::string graphName(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  const size_t dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

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
      throw CompileError(
          fmt::format("cgc: error: shape '{}' is not of the form 1x3x224x224", text));
    shape.push_back(d);
  }
  return shape;
}

namespace {

/// Counts the nodes of `graph` and of the bodies of its nodes (If's
/// branches, Loop's and Scan's body), at any depth.
void countOps(const onnx::GraphProto& graph, bool inBody, ModelSummary& summary) {
  for (const auto& node : graph.node()) {
    ++summary.nodes;
    summary.subgraphNodes += inBody;
    const bool standard = node.domain().empty() || node.domain() == "ai.onnx";
    ++summary.opCounts[standard ? node.op_type() : node.domain() + "." + node.op_type()];
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) countOps(attr.g(), true, summary);
      for (const auto& g : attr.graphs()) countOps(g, true, summary);
    }
  }
}

}  // namespace

std::string shapeExample(const std::vector<DeclaredTensor>& inputs, ShapeSpelling spelling) {
  std::set<std::string> bound;
  std::vector<std::string> bindings;
  for (const DeclaredTensor& t : inputs) {
    bool needed = false;
    for (size_t d = 0; d < t.dims.size(); ++d)
      needed |= t.dims[d] < 0 && (t.symbols[d].empty() || !bound.count(t.symbols[d]));
    if (!t.ranked || !needed) continue;
    ir::Shape example;
    for (size_t d = 0; d < t.dims.size(); ++d) {
      example.push_back(t.dims[d] < 0 ? 1 : t.dims[d]);
      if (!t.symbols[d].empty()) bound.insert(t.symbols[d]);
    }
    bindings.push_back(fmt::format("{}={}", t.name, fmt::join(example, "x")));
  }
  if (bindings.empty()) return "";
  if (spelling == ShapeSpelling::kCMake)
    return fmt::format("cgc_add_graph(... SHAPES {})", fmt::join(bindings, " "));
  return fmt::format("--shape {}", fmt::join(bindings, " --shape "));
}

namespace {

ModelSummary summarize(const onnx::ModelProto& model, const std::string& path) {
  ModelSummary summary;
  summary.opset = modelOpset(model);
  const auto initializers = initializerNames(model.graph());
  for (const auto& input : model.graph().input())
    if (!initializers.count(input.name())) summary.inputs.push_back(declaredTensor(input));
  for (const auto& output : model.graph().output())
    summary.outputs.push_back(declaredTensor(output));
  countOps(model.graph(), false, summary);
  summary.unsupported = unsupportedNodes(model);
  summary.externalData = externalDataFiles(model, path);
  return summary;
}

}  // namespace

ModelSummary summarizeModel(const std::string& path) {
  return summarize(parseModelFile(path), path);
}

void readModelProto(const std::string& path, onnx::ModelProto& model) {
  model = parseModelFile(path);
  checkModelProto(path, model);
  loadExternalData(model, path);
}

std::shared_ptr<const ModelFile> ModelFile::open(const std::string& path) {
  return std::shared_ptr<const ModelFile>(new ModelFile(parseModelFile(path), path, false));
}

std::shared_ptr<const ModelFile> ModelFile::fromBytes(std::string_view bytes,
                                                      const std::string& path) {
  return std::shared_ptr<const ModelFile>(new ModelFile(parseModelBytes(bytes, path), path, true));
}

std::shared_ptr<const ModelFile> ModelFile::fromProto(onnx::ModelProto model,
                                                      const std::string& path) {
  return std::shared_ptr<const ModelFile>(new ModelFile(std::move(model), path, true));
}

ModelFile::ModelFile(onnx::ModelProto model, std::string path, bool edited)
    : path_(std::move(path)), edited_(edited) {
  checkModelProto(path_, model);
  ExternalData external(model, path_);
  checkImportable(path_, model);
  summary_ = summarize(model, path_);
  // The weights leave the protobuf one at a time (large external ones read
  // only now) as shared bytes that every import's graph holds: loading holds
  // one copy. Shape inference reads only small initializers' values (a
  // Reshape's shape), never a tensor of kReleasedBytes or more.
  constexpr size_t kReleasedBytes = size_t{1} << 16;
  const DiagLocation where{path_, "", ""};
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    external.read(init);
    if (!init.has_raw_data() || init.raw_data().size() < kReleasedBytes) continue;
    HostTensor t = tensorFromProto(init, where);
    weights_[init.name()] = {t.type, ir::internConstant(std::move(t.bytes))};
    delete init.release_raw_data();
  }
  proto_ = std::make_shared<const onnx::ModelProto>(std::move(model));
}

ir::Graph ModelFile::import(const LoadOptions& options) const {
  onnx::ModelProto model = *proto_;
  const std::string& path = path_;
  std::vector<std::string> onnxInputNames;
  auto declaredInitializers = initializerNames(model.graph());
  for (const auto& input : model.graph().input())
    if (!declaredInitializers.count(input.name())) onnxInputNames.push_back(input.name());
  LoadOptions tensorOptions = options;
  const auto composites = takeCompositeInputs(path, *model.mutable_graph(), tensorOptions);
  freezeConstantInputs(path, *model.mutable_graph(), tensorOptions);
  bindInputShapes(path, *model.mutable_graph(), tensorOptions);
  const onnx::GraphProto& proto = model.graph();

  ir::Graph graph;
  graph.name = graphName(path);
  graph.sourceFile = path;
  graph.onnxInputNames = onnxInputNames;
  std::unordered_map<std::string, int> byName;
  DiagLocation where{path, "", ""};
  for (const auto& init : proto.initializer()) {
    const auto weight = weights_.find(init.name());
    if (weight != weights_.end()) {
      byName[init.name()] =
          graph.addConstant(init.name(), weight->second.type, weight->second.bytes);
    } else {
      HostTensor t = tensorFromProto(init, where);
      byName[init.name()] = graph.addConstant(init.name(), t.type, std::move(t.bytes));
    }
  }
  for (const auto& input : proto.input()) {
    if (byName.count(input.name())) continue;
    const auto& tensorType = input.type().tensor_type();
    ir::TensorType type{static_cast<DType>(tensorType.elem_type()), {}};
    if (dtypeSize(type.dtype) == 0)
      userError(where, "input '{}' has unsupported element type {}", input.name(),
                tensorType.elem_type());
    for (const auto& dim : tensorType.shape().dim()) type.shape.push_back(dim.dim_value());
    std::string tooLarge = type.checkSize();
    if (!tooLarge.empty()) userError(where, "input '{}': {}", input.name(), tooLarge);
    int id = graph.addValue(input.name(), type, ir::ValueKind::kInput);
    graph.inputs.push_back(id);
    byName[input.name()] = id;
  }

  auto defined =
      importGraphNodes(graph, model, byName, options.bounds, options.sizedValues, composites);
  forgetKnown(graph);
  checkGraphBytes(graph);
  checkInferredShapes(graph, model, defined);
  ir::verifyGraph(graph);
  return graph;
}

ir::Graph loadOnnx(const std::string& path, const LoadOptions& options) {
  return ModelFile::open(path)->import(options);
}

ir::Graph loadOnnxFromBytes(std::string_view bytes, const std::string& path,
                            const LoadOptions& options) {
  return ModelFile::fromBytes(bytes, path)->import(options);
}

}  // namespace cgc::frontend
