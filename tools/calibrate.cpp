// See calibrate.h.
#include "tools/calibrate.h"

#include <fmt/format.h>
#include <onnx/shape_inference/implementation.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "compiler_config.h"
#include "onnx_frontend/onnx.h"
#include "onnx_frontend/onnx_loader.h"
#include "pipeline/input_shapes.h"
#include "toolchain/model_session.h"
#include "toolchain/target_library.h"

namespace cgc::commands {
namespace fs = std::filesystem;

namespace {

bool isFloat(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kF64;
}

bool isFloat(int32_t onnxElemType) {
  return onnxElemType == onnx::TensorProto_DataType_FLOAT ||
         onnxElemType == onnx::TensorProto_DataType_FLOAT16 ||
         onnxElemType == onnx::TensorProto_DataType_DOUBLE;
}

/// Tensor types by name, as ONNX shape inference finds them (those of a
/// known rank: ONNX's checker wants a graph output's shape), else as cgc's
/// import of the model (`graph`, its shapes bound) has them: ONNX's
/// inference loses shapes that Shape -> Reshape chains compute.
std::unordered_map<std::string, onnx::TypeProto> inferredTypes(const onnx::ModelProto& model,
                                                               const std::string& path,
                                                               const ir::Graph& graph) {
  onnx::ModelProto inferred = model;
  try {
    onnx::shape_inference::InferShapes(inferred);
  } catch (const std::exception& e) {
    userError({path, "", ""}, "ONNX shape inference fails: {}", e.what());
  }
  std::unordered_map<std::string, onnx::TypeProto> types;
  auto add = [&](const onnx::ValueInfoProto& info) {
    if (info.type().has_tensor_type() && info.type().tensor_type().has_shape())
      types[info.name()] = info.type();
  };
  for (const auto& v : inferred.graph().value_info()) add(v);
  for (const auto& v : inferred.graph().output()) add(v);
  for (int id = 0; id < graph.numValues(); ++id) {
    const ir::Value& v = graph.value(id);
    if (v.isConstant() || types.count(v.name) || v.type.dtype == DType::kUndefined ||
        !v.dynamic.empty())
      continue;
    onnx::TypeProto type;
    type.mutable_tensor_type()->set_elem_type(static_cast<int32_t>(v.type.dtype));
    auto* shape = type.mutable_tensor_type()->mutable_shape();
    for (int64_t d : v.type.shape) shape->add_dim()->set_dim_value(d);
    types[v.name] = type;
  }
  return types;
}

/// Makes every float tensor that a top-level node computes from the graph
/// inputs a graph output (constants, and tensors computed from constants
/// only, are weights rather than activations). A node with If/Loop/Scan
/// bodies counts as computed from the inputs: its bodies may read them.
/// Returns the float tensors the nodes compute from the inputs, outputs or
/// not, in graph order.
std::vector<std::string> addObservedOutputs(onnx::ModelProto& model, const std::string& path,
                                            const ir::Graph& imported,
                                            const frontend::LoadOptions& load) {
  const auto types = inferredTypes(model, path, imported);
  onnx::GraphProto& graph = *model.mutable_graph();
  std::set<std::string> initializers, outputs, live;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  for (const auto& [name, file] : load.constantInputs) initializers.insert(name);
  for (const auto& input : graph.input())
    if (!initializers.count(input.name())) live.insert(input.name());
  for (const auto& output : graph.output()) outputs.insert(output.name());
  std::vector<std::string> observed;
  for (const auto& node : graph.node()) {
    bool reads = std::any_of(node.input().begin(), node.input().end(),
                             [&](const std::string& name) { return live.count(name) > 0; });
    for (const auto& attr : node.attribute()) reads |= attr.has_g() || attr.graphs_size() > 0;
    if (!reads) continue;
    for (const std::string& name : node.output()) {
      if (name.empty()) continue;
      live.insert(name);
      const auto type = types.find(name);
      if (type == types.end() || !isFloat(type->second.tensor_type().elem_type())) continue;
      observed.push_back(name);
      if (!outputs.insert(name).second) continue;
      onnx::ValueInfoProto* output = graph.add_output();
      output->set_name(name);
      *output->mutable_type() = type->second;
    }
  }
  return observed;
}

/// One observed tensor: a float input of the loaded model (read from the
/// data set into it) or a float output, and its statistics so far.
struct Observed {
  std::string name;
  bool input = false;
  int index = 0;  // in the model info's inputs or outputs
  DType dtype = DType::kF32;
  ir::Shape shape;  // of the first input set
  int64_t count = 0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  std::vector<int64_t> histogram;
};

/// The float inputs, then the float outputs in `graphOrder` (the others
/// last), each name once: a NaN is reported where it first appears.
std::vector<Observed> observedTensors(const cgc_model_info& info,
                                      const std::vector<std::string>& graphOrder) {
  std::vector<Observed> observed;
  std::set<std::string> seen;
  auto add = [&](const cgc_tensor_info& t, bool input, int index) {
    const auto dtype = static_cast<DType>(t.dtype);
    if (!isFloat(dtype) || !seen.insert(t.name).second) return;
    Observed o;
    o.name = t.name;
    o.input = input;
    o.index = index;
    o.dtype = dtype;
    observed.push_back(std::move(o));
  };
  for (int i = 0; i < info.num_inputs; ++i) add(info.inputs[i], true, i);
  std::unordered_map<std::string, size_t> position;
  for (const std::string& name : graphOrder) position.emplace(name, position.size());
  std::vector<int> outputs(static_cast<size_t>(info.num_outputs));
  for (int i = 0; i < info.num_outputs; ++i) outputs[i] = i;
  auto at = [&](int i) {
    const auto found = position.find(info.outputs[i].name);
    return found == position.end() ? position.size() : found->second;
  };
  std::stable_sort(outputs.begin(), outputs.end(), [&](int a, int b) { return at(a) < at(b); });
  for (int i : outputs) add(info.outputs[i], false, i);
  return observed;
}

frontend::HostTensor tensorOf(driver::LoadedModel& loaded, const Observed& t) {
  if (!t.input) return driver::outputTensor(loaded, t.index);
  const cgc_tensor_info& info = loaded.info().inputs[t.index];
  const auto* bytes = static_cast<const uint8_t*>(loaded.input(t.index));
  return {info.name,
          {static_cast<DType>(info.dtype), ir::Shape(loaded.inputShape(t.index))},
          std::vector<uint8_t>(bytes, bytes + loaded.inputBytes(t.index))};
}

/// Pass 1: min, max and count; a NaN or infinity is the input set's error.
void addRange(Observed& t, const std::vector<double>& values, const std::string& set) {
  for (double v : values) {
    if (!std::isfinite(v))
      userError({set, "", ""},
                "tensor '{}' holds {} on this input set (calibration needs finite values)", t.name,
                std::isnan(v) ? "a NaN"
                : v > 0       ? "+inf"
                              : "-inf");
    t.lo = std::min(t.lo, v);
    t.hi = std::max(t.hi, v);
  }
  t.count += static_cast<int64_t>(values.size());
}

/// Pass 2: bin = floor((v - min) / (max - min) x bins), the last bin
/// holding max; min == max: one bin holds every value.
void addHistogram(Observed& t, const std::vector<double>& values) {
  const auto bins = static_cast<int64_t>(t.histogram.size());
  if (bins == 1) {
    t.histogram[0] += static_cast<int64_t>(values.size());
    return;
  }
  const double range = t.hi - t.lo;
  for (double v : values) {
    const double at = std::floor((v - t.lo) / range * static_cast<double>(bins));
    ++t.histogram[static_cast<size_t>(std::clamp<double>(at, 0, static_cast<double>(bins - 1)))];
  }
}

/// Writes `text` to `path` through a temporary file in its directory and a
/// rename, so that `path` is never left half-written.
void writeAtomically(const std::string& path, const std::string& text) {
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  if (!fs::is_directory(dir)) userError({path, "", ""}, "-o: no such directory");
  const fs::path temp = dir / fmt::format(".{}.{}.tmp", target.filename().string(), getpid());
  std::ofstream out(temp, std::ios::binary);
  out << text;
  out.close();
  std::error_code error;
  if (out) fs::rename(temp, target, error);
  if (!out || error) {
    fs::remove(temp, error);
    userError({path, "", ""}, "cannot write the calibration file");
  }
}

nlohmann::ordered_json report(const CalibrateOptions& options, const std::vector<Observed>& all) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
  for (const Observed& t : all) {
    nlohmann::ordered_json entry = {{"dtype", dtypeName(t.dtype)},
                                    {"shape", t.shape},
                                    {"count", t.count},
                                    {"min", nullptr},
                                    {"max", nullptr},
                                    {"histogram", t.histogram}};
    if (t.count > 0) {
      entry["min"] = t.lo;
      entry["max"] = t.hi;
    }
    tensors[t.name] = std::move(entry);
  }
  return {{"model", fs::path(options.compile.modelPath).filename().string()},
          {"cgc_version", CGC_VERSION},
          {"input_sets", options.inputDirs.size()},
          {"bins", options.bins},
          {"tensors", std::move(tensors)}};
}

/// The model with its observed tensors as outputs, compiled, built (cached)
/// and loaded; `model` is the compiled graph (driver::setInputs reads its input
/// names), `graphOrder` what addObservedOutputs returns.
std::unique_ptr<driver::LoadedModel> buildObservingModel(const driver::CompileOptions& options,
                                                         driver::CompiledModel& model,
                                                         std::vector<std::string>& graphOrder) {
  // cgc's own loader checks the file first: ONNX's shape inference trusts
  // the model it is given.
  // The tensors are the same at any size of --dim's: import at the bounds.
  frontend::LoadOptions load = options.load;
  for (const auto& d : options.dims) load.dims[d.name] = d.largest();
  const ir::Graph imported = driver::withModel(options).overrides.model->import(load);
  onnx::ModelProto proto;
  frontend::readModelProto(options.modelPath, proto);
  const int before = proto.graph().output_size();
  graphOrder = addObservedOutputs(proto, options.modelPath, imported, load);
  driver::progress(options, fmt::format("calibrate: {} intermediate tensors made outputs",
                                        proto.graph().output_size() - before));
  driver::CompileOptions one =
      driver::namesSeveralTargets(options) ? driver::firstTargetOptions(options) : options;
  one.overrides.model = frontend::ModelFile::fromProto(std::move(proto), options.modelPath);
  model = driver::compileModel(one);
  const driver::BuiltModel built = driver::buildCached(model, one);
  return std::make_unique<driver::LoadedModel>(built.library, built.prefix);
}

/// driver::setInputs from `dir`, its errors naming the input set `set` instead.
void setInputSet(const driver::CompiledModel& model, driver::LoadedModel& loaded,
                 const std::string& dir, const std::string& set) {
  try {
    driver::setInputs(model, loaded, dir, false);
  } catch (const CompileError& e) {
    if (set == dir) throw;
    std::string message = e.what();
    for (size_t at; (at = message.find(dir + "/")) != std::string::npos;)
      message.replace(at, dir.size() + 1, set + ": ");
    throw CompileError(message);
  }
}

}  // namespace

std::string defaultCalibrationPath(const std::string& modelPath) {
  fs::path path(modelPath);
  return (path.parent_path() / (path.stem().string() + ".calib.json")).string();
}

int calibrate(const CalibrateOptions& given) {
  CalibrateOptions options = given;
  if (options.inputDirs.empty())
    throw CompileError("cgc: error: calibrate needs at least one --inputs DIR");
  if (options.bins < 1) throw CompileError("cgc: error: --bins must be at least 1");
  for (const std::string& dir : options.inputDirs)
    if (!fs::is_directory(dir)) userError({dir, "", ""}, "--inputs: no such directory");
  if (options.output.empty()) options.output = defaultCalibrationPath(options.compile.modelPath);
  bindShapesFromInputs(options.compile, options.inputDirs.front());
  driver::checkedNames(options.compile);

  driver::CompiledModel model;
  std::vector<std::string> graphOrder;
  const auto loaded = buildObservingModel(options.compile, model, graphOrder);
  std::vector<Observed> observed = observedTensors(loaded->info(), graphOrder);
  const size_t sets = options.inputDirs.size();
  for (int pass = 1; pass <= 2; ++pass) {
    for (size_t k = 0; k < sets; ++k) {
      const std::string& dir = options.inputDirs[k];
      const std::string& set = options.inputNames.empty() ? dir : options.inputNames[k];
      driver::progress(options.compile, fmt::format("calibrate: pass {}/2, input set {}/{} ({})",
                                                    pass, k + 1, sets, set));
      setInputSet(model, *loaded, dir, set);
      driver::runOnce(*loaded, options.compile.modelPath);
      for (Observed& t : observed) {
        const frontend::HostTensor tensor = tensorOf(*loaded, t);
        const std::vector<double> values = driver::toDoubles(tensor);
        if (pass == 2) {
          addHistogram(t, values);
          continue;
        }
        if (k == 0) t.shape = tensor.type.shape;
        addRange(t, values, set);
      }
    }
    if (pass == 1)
      for (Observed& t : observed)
        t.histogram.assign(t.lo < t.hi ? static_cast<size_t>(options.bins) : 1, 0);
  }
  writeAtomically(options.output, report(options, observed).dump() + "\n");
  driver::progress(options.compile, fmt::format("calibrate: wrote {} ({} tensors)", options.output,
                                                observed.size()));
  return 0;
}

}  // namespace cgc::commands
