// NAME.cpp of a library built for several targets (cgc compile --target
// a,b,c): the model's C interface and class, forwarding every call through
// the cgc_model_api table of the build an instance runs. Each build is a
// whole model of its own (NAME_<target>.cpp, its own C prefix, compiled with
// its target's flags and runtime); which one runs is chosen once per
// process by the runtime's choose_target_variant (the first whose tier the
// CPU has, or CGC_TARGET's), so one binary runs fast on each CPU of a mixed
// fleet and never executes an instruction its CPU lacks.
#include <fmt/format.h>

#include "codegen/emit_parts.h"
#include "codegen/template.h"
#include "compiler_config.h"

namespace cgc::codegen {
namespace {

constexpr const char* kDispatcher = R"(
namespace {

/// The builds, best first, and their tables.
const cgc::TargetVariant kTargets[] = {
{{TARGETS}}
};
const cgc_model_api* (*const kBuilds[])(void) = {
{{BUILDS}}
};

/// The build this process runs, chosen once; null, with `why` set, when
/// the CPU runs none (or CGC_TARGET names one it cannot run).
const cgc_model_api* chosen(std::string* why = nullptr) {
  static std::string reason;
  static const cgc_model_api* const api = [] {
    const int index = cgc::choose_target_variant(kTargets, {{COUNT}}, reason);
    return index < 0 ? nullptr : kBuilds[index]();
  }();
  if (why) *why = reason;
  return api;
}

}  // namespace

/// A C handle: the build's table and its instance, and the values of its
/// variable dimensions (cgc compile --dim) as set (for input_shape()).
struct {{PREFIX}} {
  const cgc_model_api* api;
  void* instance;
  std::vector<int64_t> dims;
};

extern "C" {

{{PREFIX}}* {{PREFIX}}_create(const char* weights_path) {
  return {{PREFIX}}_create_with_arena(weights_path, nullptr, 0);
}

{{PREFIX}}* {{PREFIX}}_create_with_arena(const char* weights_path, void* arena,
                                         int64_t arena_bytes) {
  std::string why;
  const cgc_model_api* api = chosen(&why);
  if (!api) {
    cgc::set_last_create_error("{{CLASS}}: " + why, CGC_ERROR_CPU);
    return nullptr;
  }
  void* instance = api->create_with_arena(weights_path, arena, arena_bytes);
  if (!instance) {
    cgc::set_last_create_error(api->last_error(), api->last_status());
    return nullptr;
  }
  auto* handle = new (std::nothrow) {{PREFIX}}{api, instance, {}};
  if (!handle) {
    api->destroy(instance);
    cgc::set_last_create_error("{{CLASS}}: out of memory", CGC_ERROR_OUT_OF_MEMORY);
    return nullptr;
  }
  const cgc_model_info& info = *api->info();
  for (int j = 0; j < info.num_dims; ++j) handle->dims.push_back(info.dims[j].max);
  return handle;
}

const char* {{PREFIX}}_last_error(void) { return cgc::last_create_error(); }

cgc_status {{PREFIX}}_last_status(void) { return cgc::last_create_status(); }

void {{PREFIX}}_destroy({{PREFIX}}* model) {
  if (!model) return;
  model->api->destroy(model->instance);
  delete model;
}

int64_t {{PREFIX}}_arena_bytes(void) {
  const cgc_model_api* api = chosen();
  return api ? api->arena_bytes() : {{ARENA_BYTES}};
}

cgc_status {{PREFIX}}_run({{PREFIX}}* model) {
  return model ? model->api->run(model->instance) : CGC_ERROR_INVALID_ARGUMENT;
}

const char* {{PREFIX}}_error(const {{PREFIX}}* model) {
  return model ? model->api->error(model->instance) : "no model";
}

void* {{PREFIX}}_input({{PREFIX}}* model, int index) {
  return model ? model->api->input(model->instance, index) : nullptr;
}

const void* {{PREFIX}}_output(const {{PREFIX}}* model, int index) {
  return model ? model->api->output(model->instance, index) : nullptr;
}

cgc_status {{PREFIX}}_set_input({{PREFIX}}* model, int index, const void* data,
                                int64_t bytes) {
  return model ? model->api->set_input(model->instance, index, data, bytes)
               : CGC_ERROR_INVALID_ARGUMENT;
}

cgc_status {{PREFIX}}_get_output(const {{PREFIX}}* model, int index, void* data,
                                 int64_t bytes) {
  return model ? model->api->get_output(model->instance, index, data, bytes)
               : CGC_ERROR_INVALID_ARGUMENT;
}

int {{PREFIX}}_output_shape(const {{PREFIX}}* model, int index, int64_t* dims) {
  return model ? model->api->output_shape(model->instance, index, dims) : -1;
}

/// The description of the build this CPU runs (its `target` says which);
/// the first build's when it runs none.
const cgc_model_info* {{PREFIX}}_info(void) {
  const cgc_model_api* api = chosen();
  return api ? api->info() : kBuilds[0]()->info();
}

const char* {{PREFIX}}_placement(const {{PREFIX}}* model) {
  return model ? model->api->placement(model->instance) : "";
}

void {{PREFIX}}_set_profiler({{PREFIX}}* model, void* profiler) {
  if (model) model->api->set_profiler(model->instance, profiler);
}

int {{PREFIX}}_input_shape(const {{PREFIX}}* model, int index, int64_t* dims) {
  const cgc_model_info& info = *{{PREFIX}}_info();
  if (!model || index < 0 || index >= info.num_inputs) return -1;
  const cgc_tensor_info& tensor = info.inputs[index];
  for (int a = 0; a < tensor.rank; ++a)  // the sizes set, which the dispatcher keeps
    dims[a] = tensor.dims && tensor.dims[a] >= 0 ? model->dims[static_cast<size_t>(tensor.dims[a])]
                                                 : tensor.shape[a];
  return tensor.rank;
}

cgc_status {{PREFIX}}_set_input_shape({{PREFIX}}* model, int index, const int64_t* dims,
                                      int rank) {
  if (!model) return CGC_ERROR_INVALID_ARGUMENT;
  const cgc_status status = model->api->set_input_shape(model->instance, index, dims, rank);
  if (status != CGC_OK) return status;
  const cgc_tensor_info& tensor = model->api->info()->inputs[index];
  for (int a = 0; tensor.dims && a < rank; ++a)
    if (tensor.dims[a] >= 0) model->dims[static_cast<size_t>(tensor.dims[a])] = dims[a];
  return status;
}

cgc_status {{PREFIX}}_set_dim({{PREFIX}}* model, const char* name, int64_t value) {
  if (!model) return CGC_ERROR_INVALID_ARGUMENT;
  const cgc_status status = model->api->set_dim(model->instance, name, value);
  const cgc_model_info& info = *model->api->info();
  for (int j = 0; status == CGC_OK && j < info.num_dims; ++j)
    if (std::strcmp(info.dims[j].name, name) == 0) model->dims[static_cast<size_t>(j)] = value;
  return status;
}

{{API_TABLE}}
}  // extern "C"

namespace {{NAMESPACE}} {

{{CLASS}}::{{CLASS}}(const char* weights_path) : {{CLASS}}(nullptr, 0, weights_path) {}

{{CLASS}}::{{CLASS}}(void* arena, int64_t arena_bytes, const char* weights_path)
    : model_({{PREFIX}}_create_with_arena(weights_path, arena, arena_bytes)) {
  if (!model_) throw cgc::Error({{PREFIX}}_last_status(), {{PREFIX}}_last_error());
  placement_ = {{PREFIX}}_placement(model_);
}

{{CLASS}}::~{{CLASS}}() { {{PREFIX}}_destroy(model_); }

cgc::Status {{CLASS}}::run() {
  const cgc_status status = {{PREFIX}}_run(model_);
  if (status == CGC_OK) return {};
  return {status, {{PREFIX}}_error(model_)};
}

void {{CLASS}}::set_profiler(cgc::Profiler* profiler) {
  {{PREFIX}}_set_profiler(model_, profiler);
}

const cgc::ModelInfo& {{CLASS}}::info() { return *{{PREFIX}}_info(); }

void* {{CLASS}}::input(int index) { return {{PREFIX}}_input(model_, index); }

const void* {{CLASS}}::output(int index) const { return {{PREFIX}}_output(model_, index); }

std::vector<int64_t> {{CLASS}}::output_shape(int index) const {
  if (index < 0 || index >= info().num_outputs) return {};
  std::vector<int64_t> dims(static_cast<size_t>(info().outputs[index].rank));
  const int rank = {{PREFIX}}_output_shape(model_, index, dims.data());
  if (rank < 0) return {};
  dims.resize(static_cast<size_t>(rank));
  return dims;
}

std::vector<int64_t> {{CLASS}}::input_shape(int index) const {
  if (index < 0 || index >= info().num_inputs) return {};
  std::vector<int64_t> dims(static_cast<size_t>(info().inputs[index].rank));
  const int rank = {{PREFIX}}_input_shape(model_, index, dims.data());
  if (rank < 0) return {};
  dims.resize(static_cast<size_t>(rank));
  return dims;
}

cgc::Status {{CLASS}}::set_input_shape(int index, const int64_t* dims, int rank) {
  const cgc_status status = {{PREFIX}}_set_input_shape(model_, index, dims, rank);
  if (status == CGC_OK) return {};
  return {status, {{PREFIX}}_error(model_)};
}

cgc::Status {{CLASS}}::set_dim(const char* name, int64_t value) {
  const cgc_status status = {{PREFIX}}_set_dim(model_, name, value);
  if (status == CGC_OK) return {};
  return {status, {{PREFIX}}_error(model_)};
}

{{ACCESSORS}}
}  // namespace {{NAMESPACE}}
)";

/// The typed accessors, each the untyped one cast.
std::string accessorDefinitions(const ModelLayout& layout) {
  const ir::Graph& graph = layout.model.graph;
  CodeWriter w;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const std::string type = lowering::cppType(graph.value(graph.inputs[i]).type.dtype);
    w.line("{}* {}::{}() {{ return static_cast<{}*>(input({})); }}", type, layout.className,
           layout.inputAccessors[i], type, i);
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const std::string type = lowering::cppType(graph.value(graph.outputs[i]).type.dtype);
    w.line("const {}* {}::{}() const {{ return static_cast<const {}*>(output({})); }}", type,
           layout.className, layout.outputAccessors[i], type, i);
  }
  return w.text();
}

}  // namespace

std::string emitDispatcherSource(const ModelLayout& layout,
                                 const std::vector<TargetBuild>& builds) {
  std::string targets, tables, includes, files;
  std::vector<BuildTarget> sources;
  int64_t arena = layout.arenaBytes();
  for (const TargetBuild& build : builds) {
    sources.push_back({build.target, build.prefix + ".cpp"});
    targets += fmt::format("    {{\"{}\", \"{}\"}},\n", build.target, build.tier);
    tables += fmt::format("    {}_api,\n", build.prefix);
    includes += fmt::format("#include \"{}.h\"\n", build.prefix);
    files += (files.empty() ? "" : ", ") + build.prefix + ".cpp";
    arena = std::max(arena, build.arenaBytes);
  }
  targets.pop_back();
  tables.pop_back();
  Substitutions names = {{"CLASS", layout.className},
                         {"PREFIX", layout.prefix},
                         {"NAMESPACE", layout.options.nameSpace},
                         {"TARGETS", targets},
                         {"BUILDS", tables},
                         {"COUNT", std::to_string(builds.size())},
                         {"ARENA_BYTES", std::to_string(arena)},
                         {"ACCESSORS", accessorDefinitions(layout)}};
  names["API_TABLE"] = expand(kApiTable, names);
  CodeWriter w;
  w.line("// Generated by cgc {} from {}. Do not edit.", CGC_VERSION, sourceName(layout));
  w.line("{}", modelNamesLine({layout.options.nameSpace, layout.className, layout.prefix}));
  w.line("{}", targetLine(sources));
  w.line("//");
  w.line("// {} for {} targets, one build each ({}), each compiled with its", layout.className,
         builds.size(), files);
  w.line("// target's flags and runtime: an instance runs the first build this CPU has,");
  w.line("// or the one the environment variable CGC_TARGET names.");
  w.line("#include \"{}.h\"", layout.prefix);
  w.blank();
  w.raw(includes);
  w.blank();
  w.line("#include <cstring>");
  w.line("#include <new>");
  w.line("#include <string>");
  w.line("#include <vector>");
  w.raw(expand(kDispatcher, names));
  return w.text();
}

}  // namespace cgc::codegen
