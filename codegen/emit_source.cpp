// NAME.cpp: the embedded weights, the model's description (named buffer
// and weight offsets, tensor and node tables, ModelInfo, the ModelSpec its
// runtime checks), the class's members, the executors (emit_executors.cpp)
// and the C interface, whose bodies turn every exception into a status.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "codegen/emit_parts.h"
#include "codegen/template.h"
#include "compiler_config.h"

namespace cgc::codegen {
namespace {

constexpr const char* kEmbeddedWeights =
    R"(// Weights ({{BYTES}} bytes), embedded from {{PREFIX}}.weights.bin by the
// assembler (compile with -Wa,-I<directory of the file>).
__asm__(".section .rodata\n"
        ".balign 64\n"
        ".globl {{PREFIX}}_weights\n"
        ".hidden {{PREFIX}}_weights\n"
        "{{PREFIX}}_weights:\n"
        ".incbin \"{{PREFIX}}.weights.bin\"\n"
        ".previous\n");
extern "C" const unsigned char {{PREFIX}}_weights[];

)";

constexpr const char* kHelpers = R"(template <typename T>
T* at(unsigned char* base, int64_t offset) {
  return reinterpret_cast<T*>(base + offset);
}
template <typename T>
const T* at(const unsigned char* base, int64_t offset) {
  return reinterpret_cast<const T*>(base + offset);
}

)";

// GCC's -Wextra counts a member left out of a designated initializer as
// missing; here that is the point.
constexpr const char* kDefaultFields =
    R"(// Kernel parameters list only the fields that differ from their defaults;
// the fields left out keep them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

)";

constexpr const char* kMembers = R"(
{{CLASS}}::{{CLASS}}(const char* weights_path) : {{CLASS}}(nullptr, 0, weights_path) {}

{{CLASS}}::{{CLASS}}(void* arena, int64_t arena_bytes, const char* weights_path)
    : runtime_(kSpec, weights_path, arena, arena_bytes) {}

const cgc::ModelInfo& {{CLASS}}::info() { return kInfo; }

{{RUN}}
std::vector<int64_t> {{CLASS}}::input_shape(int index) const {
  return runtime_.input_shape(index);
}

cgc::Status {{CLASS}}::set_input_shape(int index, const int64_t* dims, int rank) {
  return runtime_.set_input_shape(index, dims, rank);
}

cgc::Status {{CLASS}}::set_dim(const char* name, int64_t value) {
  return runtime_.set_dim(name, value);
}

)";

constexpr const char* kCInterface = R"(
/// What a C handle points to: the model and the message of its last failed
/// call.
struct {{PREFIX}} {
  {{PREFIX}}(void* arena, int64_t arena_bytes, const char* weights_path)
      : model_(arena, arena_bytes, weights_path) {}
  {{NAMESPACE}}::{{CLASS}} model_;
  mutable std::string error_;
};

namespace {

/// A call's status, remembered as the instance's message. A run refused
/// because another is in progress (CGC_ERROR_BUSY) leaves the message to the
/// run in progress: writing it would race with that run.
cgc_status report(const {{PREFIX}}* model, cgc_status code, std::string message) {
  if (code == CGC_ERROR_BUSY) return code;
  model->error_ = std::move(message);
  return code;
}

/// The size check of set_input and get_output: `bytes` must be what tensor
/// `index` holds at its current shape.
cgc_status checkCopy(const {{PREFIX}}* model, bool input, int index, const void* data,
                     int64_t bytes) {
  const cgc_model_info& info = {{NAMESPACE}}::{{CLASS}}::info();
  if (index < 0 || index >= (input ? info.num_inputs : info.num_outputs))
    return report(model, CGC_ERROR_INVALID_ARGUMENT,
                  "tensor index " + std::to_string(index) + " is out of range");
  const cgc_tensor_info& tensor = (input ? info.inputs : info.outputs)[index];
  const int64_t holds =
      info.num_dims == 0
          ? tensor.bytes
          : cgc::tensor_bytes(tensor, (input ? model->model_.input_shape(index)
                                             : model->model_.output_shape(index))
                                          .data());
  if (bytes != holds)
    return report(model, CGC_ERROR_INVALID_ARGUMENT,
                  std::string("tensor '") + tensor.name + "' holds " + std::to_string(holds) +
                      " bytes, not " + std::to_string(bytes));
  // An empty tensor (a dimension of size 0) may come without data.
  if (!data && holds > 0)
    return report(model, CGC_ERROR_INVALID_ARGUMENT,
                  std::string("tensor '") + tensor.name + "': the data pointer is null");
  return report(model, CGC_OK, "");
}

}  // namespace

extern "C" {

{{PREFIX}}* {{PREFIX}}_create(const char* weights_path) {
  return {{PREFIX}}_create_with_arena(weights_path, nullptr, 0);
}

{{PREFIX}}* {{PREFIX}}_create_with_arena(const char* weights_path, void* arena,
                                         int64_t arena_bytes) {
  try {
    return new {{PREFIX}}(arena, arena_bytes, weights_path);
  } catch (const cgc::Error& e) {
    cgc::set_last_create_error(e.what(), e.code());
  } catch (const std::exception& e) {
    cgc::set_last_create_error(e.what());
  } catch (...) {
    cgc::set_last_create_error("{{PREFIX}}_create: unknown failure");
  }
  return nullptr;
}

const char* {{PREFIX}}_last_error(void) { return cgc::last_create_error(); }

cgc_status {{PREFIX}}_last_status(void) { return cgc::last_create_status(); }

void {{PREFIX}}_destroy({{PREFIX}}* model) { delete model; }

int64_t {{PREFIX}}_arena_bytes(void) { return {{NAMESPACE}}::{{CLASS}}::arena_bytes(); }

cgc_status {{PREFIX}}_run({{PREFIX}}* model) {
  if (!model) return CGC_ERROR_INVALID_ARGUMENT;
  const cgc::Status status = model->model_.run();
  return report(model, status.code(), status.message());
}

const char* {{PREFIX}}_error(const {{PREFIX}}* model) {
  return model ? model->error_.c_str() : "no model";
}

void* {{PREFIX}}_input({{PREFIX}}* model, int index) {
  return model ? model->model_.input(index) : nullptr;
}

const void* {{PREFIX}}_output(const {{PREFIX}}* model, int index) {
  return model ? model->model_.output(index) : nullptr;
}

cgc_status {{PREFIX}}_set_input({{PREFIX}}* model, int index, const void* data,
                                int64_t bytes) {
  if (!model) return CGC_ERROR_INVALID_ARGUMENT;
  const cgc_status status = checkCopy(model, true, index, data, bytes);
  if (status == CGC_OK && bytes > 0)
    cgc::copy_stored({{NAMESPACE}}::{{CLASS}}::info(), true, index,
                     model->model_.input_shape(index).data(), data, model->model_.input(index),
                     true);
  return status;
}

cgc_status {{PREFIX}}_get_output(const {{PREFIX}}* model, int index, void* data,
                                 int64_t bytes) {
  if (!model) return CGC_ERROR_INVALID_ARGUMENT;
  const cgc_status status = checkCopy(model, false, index, data, bytes);
  if (status == CGC_OK && bytes > 0)
    cgc::copy_stored({{NAMESPACE}}::{{CLASS}}::info(), false, index,
                     model->model_.output_shape(index).data(), model->model_.output(index), data,
                     false);
  return status;
}

const cgc_model_info* {{PREFIX}}_info(void) { return &{{NAMESPACE}}::{{CLASS}}::info(); }

int {{PREFIX}}_output_shape(const {{PREFIX}}* model, int index, int64_t* dims) {
  if (!model) return -1;
  const std::vector<int64_t> shape = model->model_.output_shape(index);
  const cgc_model_info& info = {{NAMESPACE}}::{{CLASS}}::info();
  if (index < 0 || index >= info.num_outputs) return -1;
  if (dims) std::copy(shape.begin(), shape.end(), dims);
  return static_cast<int>(shape.size());
}

int {{PREFIX}}_input_shape(const {{PREFIX}}* model, int index, int64_t* dims) {
  const cgc_model_info& info = {{NAMESPACE}}::{{CLASS}}::info();
  if (!model || index < 0 || index >= info.num_inputs) return -1;
  const std::vector<int64_t> shape = model->model_.input_shape(index);
  if (dims) std::copy(shape.begin(), shape.end(), dims);
  return static_cast<int>(shape.size());
}

cgc_status {{PREFIX}}_set_input_shape({{PREFIX}}* model, int index, const int64_t* dims,
                                      int rank) {
  if (!model) return CGC_ERROR_INVALID_ARGUMENT;
  const cgc::Status status = model->model_.set_input_shape(index, dims, rank);
  return report(model, status.code(), status.message());
}

cgc_status {{PREFIX}}_set_dim({{PREFIX}}* model, const char* name, int64_t value) {
  if (!model) return CGC_ERROR_INVALID_ARGUMENT;
  const cgc::Status status = model->model_.set_dim(name, value);
  return report(model, status.code(), status.message());
}

const char* {{PREFIX}}_placement(const {{PREFIX}}* model) {
  return model ? model->model_.placement().c_str() : "";
}

void {{PREFIX}}_set_profiler({{PREFIX}}* model, void* profiler) {
  if (model) model->model_.set_profiler(static_cast<cgc::Profiler*>(profiler));
}

{{API_TABLE}}
}  // extern "C"
)";

void emitOffsets(CodeWriter& w, const char* what, const std::vector<NamedOffset>& offsets) {
  if (offsets.empty()) return;
  w.line("// {}", what);
  for (const NamedOffset& o : offsets)
    w.line("constexpr int64_t {} = {};  // {}", o.name, o.offset, o.comment);
  w.blank();
}

/// <table>Shape<i>: the shape of values[i], for a table of tensors.
void emitShapes(CodeWriter& w, const ir::Graph& graph, const char* table,
                const std::vector<int>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    const auto& shape = graph.value(values[i]).type.shape;
    if (shape.empty())
      w.line("constexpr int64_t {}Shape{}[1] = {{0}};  // a scalar", table, i);
    else
      w.line("constexpr int64_t {}Shape{}[] = {{{}}};", table, i, fmt::join(shape, ", "));
  }
}

/// --dim: k<table>Dims<i>, which variable dimension each axis of values[i]
/// is (-1: fixed), for the tensors with one; whether each has one.
std::vector<bool> emitAxisDims(CodeWriter& w, const char* table,
                               const std::vector<std::vector<ir::DimPoly>>* shapes) {
  std::vector<bool> any;
  if (!shapes) return any;
  for (size_t i = 0; i < shapes->size(); ++i) {
    std::vector<int> axes;
    for (const ir::DimPoly& size : (*shapes)[i]) axes.push_back(size.singleDim().value_or(-1));
    any.push_back(std::any_of(axes.begin(), axes.end(), [](int j) { return j >= 0; }));
    if (any.back())
      w.line("constexpr int32_t {}Dims{}[] = {{{}}};", table, i, fmt::join(axes, ", "));
  }
  return any;
}

void emitTensorInfos(CodeWriter& w, const ir::Graph& graph, const char* table,
                     const std::vector<int>& values, const std::vector<std::string>& names,
                     const std::vector<std::vector<ir::DimPoly>>* shapes) {
  emitShapes(w, graph, table, values);
  const std::vector<bool> axisDims = emitAxisDims(w, table, shapes);
  if (values.empty()) {
    w.line("constexpr const cgc_tensor_info* {} = nullptr;", table);
    return;
  }
  w.open("constexpr cgc_tensor_info {}[] = {{", table);
  for (size_t i = 0; i < values.size(); ++i) {
    const ir::TensorType& t = graph.value(values[i]).type;
    const std::string dims =
        i < axisDims.size() && axisDims[i] ? fmt::format("{}Dims{}", table, i) : "nullptr";
    w.line("{{\"{}\", /*dtype=*/{}, /*rank=*/{}, {}Shape{}, /*bytes=*/{}, /*dims=*/{}}},",
           escape(names[i]), static_cast<int>(t.dtype), t.rank(), table, i, t.bytes(), dims);
  }
  w.close(";");
}

/// --dim: kDims, the variable dimensions and their bounds.
void emitDims(CodeWriter& w, const VariableDims& dims) {
  w.open("constexpr cgc_dim_info kDims[] = {{");
  for (const VariableDims::Dim& d : dims.dims)
    w.line("{{\"{}\", /*min=*/{}, /*max=*/{}, /*multiple=*/{}}},", escape(d.name), d.min, d.max,
           d.multiple);
  w.close(";");
}

/// kNodeNames / kNodeOps, one entry per line (the trailing comma keeps
/// clang-format from bin-packing, which takes seconds on lists of hundreds).
void emitNodeTables(CodeWriter& w, const ModelLayout& layout) {
  if (layout.numNodes == 0) {
    w.line("constexpr const char* const* kNodeNames = nullptr;");
    w.line("constexpr const char* const* kNodeOps = nullptr;");
    return;
  }
  w.open("constexpr const char* kNodeNames[] = {{");
  // A specialisation's nodes are named with its sizes: "conv1@seq=128".
  for (const GraphLayout& g : layout.graphs)
    for (int id : g.order)
      w.line("\"{}{}{}\",", escape(g.graph().node(id).name), g.sizes.empty() ? "" : "@",
             escape(g.sizes));
  w.close(";");
  w.open("constexpr const char* kNodeOps[] = {{");
  for (const GraphLayout& g : layout.graphs)
    for (int id : g.order) w.line("\"{}\",", escape(g.graph().node(id).op));
  w.close(";");
}

/// --cache-in-place: kCachePairs, by the indices of the inputs and
/// outputs that share a buffer.
void emitCachePairs(CodeWriter& w, const ir::Graph& graph,
                    const std::vector<passes::CachePair>& pairs) {
  auto indexOf = [](const std::vector<int>& values, int v) {
    return std::find(values.begin(), values.end(), v) - values.begin();
  };
  w.open("constexpr cgc_cache_pair kCachePairs[] = {{");
  for (const passes::CachePair& p : pairs)
    w.line("{{/*input=*/{}, /*output=*/{}, /*axis=*/{}, /*capacity=*/{}}},  // {} -> {}",
           indexOf(graph.inputs, p.input), indexOf(graph.outputs, p.output), p.axis, p.capacity,
           graph.value(p.input).name, graph.value(p.output).name);
  w.close(";");
}

void emitInfo(CodeWriter& w, const ModelLayout& layout) {
  const ir::Graph& graph = layout.model.graph;
  const passes::Schedule& schedule = layout.model.schedule;
  std::vector<std::string> inputNames;
  for (int in : graph.inputs) inputNames.push_back(graph.value(in).name);
  const VariableDims* dims = layout.model.dims.get();
  emitTensorInfos(w, graph, "kInputs", graph.inputs, inputNames,
                  dims ? &dims->inputShapes : nullptr);
  emitTensorInfos(w, graph, "kOutputs", graph.outputs, graph.outputNames,
                  dims ? &dims->outputShapes : nullptr);
  if (dims) emitDims(w, *dims);
  const auto& caches = layout.model.caches;
  if (!caches.empty()) emitCachePairs(w, graph, caches);
  emitNodeTables(w, layout);
  w.open("constexpr cgc_model_info kInfo = {{");
  w.line(".name = \"{}\",", layout.className);
  w.line(".source = \"{}\",", escape(sourceName(layout)));
  w.line(".graph_hash = \"{}\",", layout.graphHash);
  w.line(".num_inputs = {},", graph.inputs.size());
  w.line(".inputs = kInputs,");
  w.line(".num_outputs = {},", graph.outputs.size());
  w.line(".outputs = kOutputs,");
  w.line(".arena_bytes = {},", layout.arenaBytes());
  w.line(".arena_bytes_no_reuse = {},", layout.model.plan.bytesWithoutReuse);
  w.line(".weight_bytes = {},", layout.weights.size());
  w.line(".num_nodes = {},", layout.numNodes);
  w.line(".node_names = kNodeNames,");
  w.line(".node_ops = kNodeOps,");
  w.line(".executors = {},", schedule.executors);
  w.line(".threads_per_executor = {},{}", layout.fixedTeam() ? schedule.threadsPerExecutor : 0,
         layout.fixedTeam() ? "" : "  // every core the process may use");
  w.line(".cgc_version = \"{}\",", CGC_VERSION);
  w.line(".target = \"{}\",", escape(layout.options.target));
  if (dims) {
    w.line(".num_dims = {},", dims->dims.size());
    w.line(".dims = kDims,");
  }
  if (!caches.empty()) {
    w.line(".num_cache_pairs = {},", caches.size());
    w.line(".cache_pairs = kCachePairs,");
  }
  w.close(";");
}

/// --observe: kObserved, the tensors the profiler is shown, by index.
void emitObservedTable(CodeWriter& w, const ModelLayout& layout) {
  if (layout.observed.empty()) return;
  const ir::Graph& graph = layout.model.graph;
  emitShapes(w, graph, "kObserved", layout.observed);
  w.open("constexpr cgc::ObservedTensor kObserved[] = {{");
  for (size_t i = 0; i < layout.observed.size(); ++i) {
    const ir::Value& v = graph.value(layout.observed[i]);
    w.line("{{{}, \"{}\", /*rank=*/{}, kObservedShape{}, /*count=*/{}}},", i, escape(v.name),
           v.type.rank(), i, v.type.numElements());
  }
  w.close(";");
}

void emitSpec(CodeWriter& w, const ModelLayout& layout) {
  std::vector<std::string> features;
  for (const auto& f : layout.options.cpuFeatures) features.push_back(fmt::format("\"{}\"", f));
  features.push_back("nullptr");
  w.line("constexpr const char* kCpuFeatures[] = {{{}}};", fmt::join(features, ", "));
  const bool embedded = layout.options.embedWeights && !layout.weights.empty();
  w.open("constexpr cgc::ModelSpec kSpec = {{");
  w.line(".info = &kInfo,");
  w.line(".abi_version = CGC_RUNTIME_ABI_VERSION,");
  size_t signals = 0;  // a run takes one path: they share them
  for (const GraphLayout& g : layout.graphs) signals = std::max(signals, g.signals.size());
  w.line(".signals = {},", signals);
  w.line(".weight_bytes = {},", layout.weights.size());
  w.line(".embedded_weights = {},", embedded ? layout.prefix + "_weights" : "nullptr");
  w.line(".weights_file_name = \"{}.weights.bin\",", layout.prefix);
  w.line(".module_symbol = &kInfo,");
  w.line(".cpu_features = kCpuFeatures,");
  if (!layout.options.xsmmTarget.empty())
    w.line(".xsmm_target = \"{}\",", escape(layout.options.xsmmTarget));
  if (layout.model.dims)
    w.line(".dims_offset = kSizeSlots + 8 * {},", layout.model.dims->firstSlot);
  w.close(";");
}

/// --dim: output_shape()'s axes that follow the variable dimensions.
void emitOutputDims(CodeWriter& w, const ModelLayout& layout) {
  const VariableDims* dims = layout.model.dims.get();
  if (!dims) return;
  const std::vector<std::string> names = dims->variableNames(dims->cppNames());
  std::vector<bool> read(names.size());
  for (size_t j = 0; j < names.size(); ++j)
    for (const auto& shape : dims->outputShapes)
      for (const ir::DimPoly& axis : shape) read[j] = read[j] || axis.uses(static_cast<int>(j));
  read = withFactors(*dims, std::move(read));
  for (size_t j = 0; j < names.size(); ++j)
    if (j < dims->dims.size())
      w.line("[[maybe_unused]] const int64_t {} = runtime_.dim({});", names[j], j);
    else if (read[j])
      w.line("const int64_t {} = {};", names[j], dims->derived[j - dims->dims.size()].cpp(names));
  for (size_t i = 0; i < dims->outputShapes.size(); ++i)
    for (size_t d = 0; d < dims->outputShapes[i].size(); ++d)
      if (!dims->outputShapes[i][d].isConstant())
        w.line("if (index == {}) shape[{}] = {};", i, d, dims->outputShapes[i][d].cpp(names));
}

/// output_shape(): the bound shape, with data-dependent extents read from
/// their size slots.
void emitOutputShape(CodeWriter& w, const ModelLayout& layout) {
  const ir::Graph& graph = layout.model.graph;
  w.open("std::vector<int64_t> {}::output_shape(int index) const {{", layout.className);
  w.line("if (index < 0 || index >= kInfo.num_outputs) return {{}};");
  w.line("const cgc_tensor_info& tensor = kInfo.outputs[index];");
  w.line("std::vector<int64_t> shape(tensor.shape, tensor.shape + tensor.rank);");
  emitOutputDims(w, layout);
  bool any = false;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const ir::Value& v = graph.value(graph.outputs[i]);
    if (v.dynamic.empty()) continue;
    if (!any) w.line("const unsigned char* const arena = runtime_.arena();");
    any = true;
    for (size_t d = 0; d < v.dynamic.dims.size(); ++d)
      w.line("if (index == {}) shape[{}] = *{};", i, v.dynamic.dims[d],
             layout.sizeSlot(v.dynamic.sizeSlot + static_cast<int>(d)));
  }
  w.line("return shape;");
  w.close();
  w.blank();
}

void emitAccessors(CodeWriter& w, const ModelLayout& layout) {
  const ir::Graph& graph = layout.model.graph;
  const std::string& cls = layout.className;
  auto pointer = [&](int v) {
    return layout.pointer(layout.top(), v, "runtime_.arena()", "runtime_.weights()");
  };
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    w.line("{}* {}::{}() {{ return {}; }}",
           lowering::cppType(graph.value(graph.inputs[i]).type.dtype), cls,
           layout.inputAccessors[i], pointer(graph.inputs[i]));
  for (size_t i = 0; i < graph.outputs.size(); ++i)
    w.line("const {}* {}::{}() const {{ return {}; }}",
           lowering::cppType(graph.value(graph.outputs[i]).type.dtype), cls,
           layout.outputAccessors[i], pointer(graph.outputs[i]));
  w.blank();
  auto byIndex = [&](const std::string& signature, const std::vector<std::string>& names) {
    w.open("{} {{", signature);
    w.open("switch (index) {{");
    for (size_t i = 0; i < names.size(); ++i) w.line("case {}: return {}();", i, names[i]);
    w.line("default: return nullptr;");
    w.close();
    w.close();
    w.blank();
  };
  byIndex(fmt::format("void* {}::input(int index)", cls), layout.inputAccessors);
  byIndex(fmt::format("const void* {}::output(int index) const", cls), layout.outputAccessors);
  emitOutputShape(w, layout);
}

/// The graph inputs that --observe shows the profiler.
std::vector<int> observedInputs(const ModelLayout& layout) {
  std::vector<int> inputs;
  for (int in : layout.model.graph.inputs)
    if (layout.observedIndex(in) >= 0) inputs.push_back(in);
  return inputs;
}

/// `graph`'s function of executor `executor` (`model->executor0(team);`),
/// or a switch over the executors.
void emitExecutorCalls(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph) {
  const int executors = layout.model.schedule.executors;
  if (executors == 1) {
    w.line("model->{}(team);", executorFunction(graph, 0));
    return;
  }
  w.open("switch (executor) {{");
  for (int e = 0; e < executors; ++e)
    w.line("case {}: model->{}(team); break;", e, executorFunction(graph, e));
  w.close();
}

/// --specialize: a specialisation's executors where the dimensions have its
/// sizes (checked by run() before any executor starts).
void emitSpecializationGuards(CodeWriter& w, const ModelLayout& layout) {
  if (layout.model.specializations.empty()) return;
  const std::vector<std::string> names = layout.model.dims->cppNames();
  std::vector<bool> tested(names.size(), false);
  for (const GraphLayout& g : layout.graphs)
    for (size_t j = 0; j < g.model->specializedAt.size(); ++j)
      tested[j] = tested[j] || g.model->specializedAt[j] >= 0;
  for (size_t j = 0; j < names.size(); ++j)
    if (tested[j]) w.line("const int64_t {} = model->runtime_.dim({});", names[j], j);
  for (const GraphLayout& g : layout.graphs) {
    if (!g.isSpecialization()) continue;
    w.open("if ({}) {{", specializationTest(g, names));
    emitExecutorCalls(w, layout, g);
    w.line("return;");
    w.close();
  }
}

/// run_executor: executor e's function; with --observe, executor 0 shows
/// the profiler the graph inputs first.
void emitRunExecutor(CodeWriter& w, const ModelLayout& layout) {
  const std::string& cls = layout.className;
  const int executors = layout.model.schedule.executors;
  const std::vector<int> inputs = observedInputs(layout);
  const bool named = executors > 1 || !inputs.empty();
  w.open("void {}::run_executor(void* self, int{}, const cgc::rt::Team& team) {{", cls,
         named ? " executor" : "");
  w.line("auto* const model = static_cast<{}*>(self);", cls);
  if (!inputs.empty()) {  // before executor 0's first node, which may write in place
    w.open("if (executor == 0) {{");
    w.open(
        "if (cgc::Profiler* const profiler = team.thread() == 0 ? model->runtime_.profiler() "
        ": nullptr) {{");
    w.line("unsigned char* const arena = model->runtime_.arena();");
    std::vector<std::string> dims;  // --dim: the dimensions' values
    for (size_t j = 0; layout.model.dims && j < layout.model.dims->dims.size(); ++j)
      dims.push_back(fmt::format("model->runtime_.dim({})", j));
    for (int in : inputs) emitObserve(w, layout, in, dims);
    w.close();
    w.line("team.barrier();");
    w.close();
  }
  emitSpecializationGuards(w, layout);
  emitExecutorCalls(w, layout, layout.top());
  w.close();
}

}  // namespace

const char* const kApiTable = R"(const cgc_model_api* {{PREFIX}}_api(void) {
  using M = {{PREFIX}};
  static const cgc_model_api api = {
      [](const char* weights_path, void* arena, int64_t arena_bytes) -> void* {
        return {{PREFIX}}_create_with_arena(weights_path, arena, arena_bytes);
      },
      {{PREFIX}}_last_error,
      {{PREFIX}}_last_status,
      [](void* model) { {{PREFIX}}_destroy(static_cast<M*>(model)); },
      {{PREFIX}}_arena_bytes,
      [](void* model) { return {{PREFIX}}_run(static_cast<M*>(model)); },
      [](const void* model) { return {{PREFIX}}_error(static_cast<const M*>(model)); },
      [](void* model, int index) { return {{PREFIX}}_input(static_cast<M*>(model), index); },
      [](const void* model, int index) {
        return {{PREFIX}}_output(static_cast<const M*>(model), index);
      },
      [](void* model, int index, const void* data, int64_t bytes) {
        return {{PREFIX}}_set_input(static_cast<M*>(model), index, data, bytes);
      },
      [](const void* model, int index, void* data, int64_t bytes) {
        return {{PREFIX}}_get_output(static_cast<const M*>(model), index, data, bytes);
      },
      [](const void* model, int index, int64_t* dims) {
        return {{PREFIX}}_output_shape(static_cast<const M*>(model), index, dims);
      },
      {{PREFIX}}_info,
      [](const void* model) { return {{PREFIX}}_placement(static_cast<const M*>(model)); },
      [](void* model, void* profiler) {
        {{PREFIX}}_set_profiler(static_cast<M*>(model), profiler);
      },
      [](void* model, int index, const int64_t* dims, int rank) {
        return {{PREFIX}}_set_input_shape(static_cast<M*>(model), index, dims, rank);
      },
      [](void* model, const char* name, int64_t value) {
        return {{PREFIX}}_set_dim(static_cast<M*>(model), name, value);
      },
  };
  return &api;
}
)";

std::string emitSource(const ModelLayout& layout) {
  Substitutions names = {{"CLASS", layout.className},
                         {"PREFIX", layout.prefix},
                         {"NAMESPACE", layout.options.nameSpace},
                         {"BYTES", std::to_string(layout.weights.size())}};
  CodeWriter run;
  emitRun(run, layout);
  names["RUN"] = run.text();
  CodeWriter w;
  w.line("// Generated by cgc {} from {}. Do not edit.", CGC_VERSION, sourceName(layout));
  w.line("{}", modelNamesLine({layout.options.nameSpace, layout.className, layout.prefix}));
  w.line("{}", targetLine({{layout.options.target, ""}}));
  w.line("#include \"{}.h\"", layout.prefix);
  w.blank();
  w.line("#include <cgc/kernels.h>");
  w.blank();
  w.line("#include <algorithm>");
  w.line("#include <cstring>");
  w.line("#include <limits>");
  w.line("#include <string>");
  w.blank();
  if (layout.options.embedWeights && !layout.weights.empty())
    w.raw(expand(kEmbeddedWeights, names));
  w.raw(kDefaultFields);
  w.open("namespace {} {{", layout.options.nameSpace);
  w.open("namespace {{");
  w.blank();
  emitOffsets(w, "Buffers in the arena (byte offsets), named after the tensors they hold.",
              layout.arenaOffsets);
  if (layout.numSizeSlots > 0) {
    w.line("// The actual extents of data-dependent sizes{}, {} int64 slot(s).",
           layout.model.dims ? " and the variable dimensions' values" : "", layout.numSizeSlots);
    w.line("constexpr int64_t kSizeSlots = {};", layout.sizeSlotsOffset);
    w.blank();
  }
  emitOffsets(w, "Weights (byte offsets into the weights blob).", layout.weightOffsets);
  w.raw(kHelpers);
  emitInfo(w, layout);
  emitObservedTable(w, layout);
  emitSpec(w, layout);
  w.blank();
  w.close("  // namespace");
  w.raw(expand(kMembers, names));
  emitAccessors(w, layout);
  emitRunExecutor(w, layout);
  emitExecutors(w, layout);
  w.blank();
  w.close(fmt::format("  // namespace {}", layout.options.nameSpace));
  Substitutions withTable = names;
  withTable["API_TABLE"] = expand(kApiTable, names);
  w.raw(expand(kCInterface, withTable));
  return w.text();
}

}  // namespace cgc::codegen
