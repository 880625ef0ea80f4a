// See onnx_loader.h.
#include "onnx_frontend/onnx_loader.h"

#include <fcntl.h>
#include <fmt/ranges.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ir/verifier.h"
#include "onnx_frontend/external_data.h"
#include "onnx_frontend/graph_import.h"
#include "onnx_frontend/tensor_proto.h"

namespace cgc::frontend {
namespace {

[[noreturn]] void notParsed(const std::string& path) {
  userError({path, "", ""},
            "not a valid ONNX model: the protobuf does not parse (truncated or not an ONNX file)");
}

onnx::ModelProto checkParsed(onnx::ModelProto model, const std::string& path) {
  if (!model.has_graph() || model.ir_version() <= 0)
    userError({path, "", ""}, "not a valid ONNX model: no graph or no IR version");
  return model;
}

onnx::ModelProto parseModel(std::string_view bytes, const std::string& path) {
  onnx::ModelProto model;
  if (bytes.empty() || bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    notParsed(path);
  return checkParsed(std::move(model), path);
}

/// The model file parsed as it is read: the file's bytes are never held
/// beside the message (an inline model's weights would be twice in memory).
onnx::ModelProto parseModelFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    userError({path, "", ""}, "is a directory, not an ONNX model file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) userError({path, "", ""}, "cannot open the ONNX model file");
  google::protobuf::io::FileInputStream stream(fd);
  stream.SetCloseOnDelete(true);
  struct stat info {};
  if (::fstat(fd, &info) == 0 && info.st_size == 0)
    userError({path, "", ""}, "is empty, not an ONNX model");
  onnx::ModelProto model;
  if (info.st_size > INT_MAX || !model.ParseFromZeroCopyStream(&stream)) notParsed(path);
  return checkParsed(std::move(model), path);
}

// ------------------------------------------------- checks before ONNX's own

/// `text` with control characters shown as \xNN, for diagnostics.
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text)
    out +=
        c < 0x20 || c == 0x7f ? fmt::format("\\x{:02x}", c) : std::string(1, static_cast<char>(c));
  return out;
}

/// Names reach diagnostics (one line each) and comments in the generated
/// code, where a line break would end the comment and let the rest of the
/// name be compiled: no control characters.
void checkName(const DiagLocation& where, const char* what, const std::string& name) {
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f)
      userError(where, "{} '{}' contains a control character", what, printable(name));
}

void checkGraphProto(const std::string& path, const onnx::GraphProto& graph);

void checkNodeProto(const std::string& path, const onnx::NodeProto& node) {
  DiagLocation where{path, "", ""};
  checkName(where, "node name", node.name());
  checkName(where, "op type", node.op_type());
  checkName(where, "domain", node.domain());
  where = {path, node.name(), node.op_type()};
  for (const auto& name : node.input()) checkName(where, "input", name);
  for (const auto& name : node.output()) checkName(where, "output", name);
  for (const auto& attr : node.attribute()) {
    checkName(where, "attribute", attr.name());
    if (attr.has_sparse_tensor() || attr.sparse_tensors_size() > 0)
      userError(where,
                "attribute '{}' holds a sparse tensor, which is not "
                "supported",
                attr.name());
    if (attr.has_t()) checkTensorSizes(attr.t(), where);
    for (const auto& t : attr.tensors()) checkTensorSizes(t, where);
    if (attr.has_g()) checkGraphProto(path, attr.g());
    for (const auto& g : attr.graphs()) checkGraphProto(path, g);
  }
}

/// Every tensor the file stores (initializers and tensor attributes, in
/// nested graphs too) must match its dims and lie within the size limits
/// before ONNX's checker and shape inference read it, and every name must be
/// printable. Protobuf bounds the nesting depth (100), and so this recursion.
void checkGraphProto(const std::string& path, const onnx::GraphProto& graph) {
  DiagLocation where{path, "", ""};
  if (graph.sparse_initializer_size() > 0)
    userError(where, "sparse initializers are not supported");
  for (const auto& info : graph.input()) checkName(where, "graph input", info.name());
  for (const auto& info : graph.output()) checkName(where, "graph output", info.name());
  for (const auto& info : graph.value_info()) checkName(where, "value", info.name());
  for (const auto& init : graph.initializer()) {
    checkName(where, "initializer", init.name());
    checkTensorSizes(init, where);
  }
  for (const auto& node : graph.node()) checkNodeProto(path, node);
}

void checkModelProto(const std::string& path, const onnx::ModelProto& model) {
  checkGraphProto(path, model.graph());
  DiagLocation where{path, "", ""};
  for (const auto& function : model.functions()) {
    checkName(where, "function", function.name());
    checkName(where, "function domain", function.domain());
    for (const auto& name : function.input()) checkName(where, "function input", name);
    for (const auto& name : function.output()) checkName(where, "function output", name);
    for (const auto& node : function.node()) checkNodeProto(path, node);
  }
}

std::string functionKey(const std::string& domain, const std::string& name) {
  return (domain == "ai.onnx" ? "" : domain) + "." + name;
}

/// Local functions called in `nodes` (and in graphs nested in them), by index.
void collectCalls(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                  const std::map<std::string, int>& functions, std::set<int>& calls) {
  for (const auto& node : nodes) {
    auto it = functions.find(functionKey(node.domain(), node.op_type()));
    if (it != functions.end()) calls.insert(it->second);
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) collectCalls(attr.g().node(), functions, calls);
      for (const auto& g : attr.graphs()) collectCalls(g.node(), functions, calls);
    }
  }
}

/// Local functions may neither call themselves (directly or through others)
/// nor nest deeper than kMaxFunctionDepth: ONNX's shape inference and the
/// importer inline them recursively, and would run out of stack.
void checkFunctionCalls(const std::string& path, const onnx::ModelProto& model) {
  constexpr int kMaxFunctionDepth = 64;
  std::map<std::string, int> index;
  for (int f = 0; f < model.functions_size(); ++f)
    index.emplace(functionKey(model.functions(f).domain(), model.functions(f).name()), f);
  std::vector<std::set<int>> calls(model.functions_size());
  for (int f = 0; f < model.functions_size(); ++f)
    collectCalls(model.functions(f).node(), index, calls[f]);
  // Kahn's algorithm over the calls, callees first (no recursion here),
  // with the longest call chain below each function.
  const int n = model.functions_size();
  std::vector<int> pending(n), depth(n, 0), ready;
  std::vector<std::vector<int>> callers(n);
  for (int f = 0; f < n; ++f) {
    pending[f] = static_cast<int>(calls[f].size());
    for (int callee : calls[f]) callers[callee].push_back(f);
    if (pending[f] == 0) ready.push_back(f);
  }
  int done = 0;
  while (!ready.empty()) {
    int f = ready.back();
    ready.pop_back();
    ++done;
    if (depth[f] > kMaxFunctionDepth)
      userError({path, "", ""}, "functions nest more than {} deep", kMaxFunctionDepth);
    for (int caller : callers[f]) {
      depth[caller] = std::max(depth[caller], depth[f] + 1);
      if (--pending[caller] == 0) ready.push_back(caller);
    }
  }
  if (done == n) return;
  // What is left calls into a cycle; n steps along calls still pending end
  // on one.
  int f = static_cast<int>(
      std::find_if(pending.begin(), pending.end(), [](int p) { return p > 0; }) - pending.begin());
  for (int step = 0; step < n; ++step)
    for (int callee : calls[f])
      if (pending[callee] > 0) {
        f = callee;
        break;
      }
  userError({path, "", ""},
            "function '{}' calls itself, directly or through "
            "other functions",
            printable(model.functions(f).name()));
}

/// ONNX's messages span several lines; a diagnostic is one.
std::string oneLine(const std::string& text) {
  std::string out;
  for (char c : text) {
    bool space = c == '\n' || c == '\r' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return printable(out);
}

void rejectUnsupported(const std::string& path, const onnx::ModelProto& model) {
  auto unsupported = unsupportedNodes(model);
  if (unsupported.empty()) return;
  userError({path, "", ""}, "{} (cgc inspect lists them all); {}",
            describeUnsupported(unsupported, 3), unsupportedAdvice(unsupported));
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

ModelSummary summarizeModel(const std::string& path) {
  onnx::ModelProto model = parseModelFile(path);
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

void readModelProto(const std::string& path, onnx::ModelProto& model) {
  model = parseModelFile(path);
  checkModelProto(path, model);
  loadExternalData(model, path);
}

namespace {

/// The graph of a parsed model, which it consumes.
ir::Graph loadModel(onnx::ModelProto model, const std::string& path, const LoadOptions& options) {
  checkModelProto(path, model);
  ExternalData external(model, path);
  checkFunctionCalls(path, model);
  rejectUnsupported(path, model);
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    userError({path, "", ""}, "the ONNX checker rejects the model: {}", oneLine(e.what()));
  }
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

  // The weights move into the graph one at a time (large external ones read
  // only now): each initializer's bytes in the model are released once the
  // graph holds them, so loading holds one copy. Shape inference, later,
  // reads only small initializers' values (a Reshape's shape), never a
  // tensor of kReleasedBytes or more.
  constexpr size_t kReleasedBytes = size_t{1} << 16;
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    external.read(init);
    HostTensor t = tensorFromProto(init, where);
    byName[init.name()] = graph.addConstant(init.name(), t.type, std::move(t.bytes));
    if (init.has_raw_data() && init.raw_data().size() >= kReleasedBytes)
      delete init.release_raw_data();
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

}  // namespace

ir::Graph loadOnnx(const std::string& path, const LoadOptions& options) {
  return loadModel(parseModelFile(path), path, options);
}

ir::Graph loadOnnxFromBytes(std::string_view bytes, const std::string& path,
                            const LoadOptions& options) {
  return loadModel(parseModel(bytes, path), path, options);
}

}  // namespace cgc::frontend
