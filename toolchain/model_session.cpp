// See model_session.h.
#include "toolchain/model_session.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "onnx_frontend/tensor_proto.h"
#include "toolchain/build_cache.h"
#include "toolchain/build_library.h"
#include "toolchain/target_library.h"

namespace cgc::driver {
namespace fs = std::filesystem;

namespace {

uint64_t fnv1a(const void* data, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

ir::TensorType typeOf(const cgc_tensor_info& info) {
  return {static_cast<DType>(info.dtype), ir::Shape(info.shape, info.shape + info.rank)};
}

/// Input `i` from a TensorProto file: of the model's type and shape, or of
/// any shape its variable dimensions allow (cgc compile --dim).
void loadInput(const std::string& path, LoadedModel& model, int i) {
  const cgc_tensor_info& info = model.info().inputs[i];
  frontend::HostTensor tensor = frontend::readTensorFile(path, info.name);
  ir::TensorType expected = typeOf(info);
  const bool variable = info.dims && tensor.type.rank() == info.rank;
  if (tensor.type.dtype != expected.dtype || (tensor.type.shape != expected.shape && !variable))
    userError({path, "", ""}, "tensor '{}' is {} but input '{}' of the model is {}", tensor.name,
              tensor.type.str(), info.name, expected.str());
  if (variable)
    if (const Status status = model.setInputShape(i, tensor.type.shape); !status.ok())
      userError({path, "", ""}, "input '{}' is {}: {}", info.name, tensor.type.str(),
                status.message());
  model.writeInput(i, tensor.bytes.data());
}

/// `key` extended by the emitted code, the flags it is built with and the
/// runtime linked into it (a rebuilt runtime must not be shadowed by an old
/// build of the same emitted code).
uint64_t hashBuild(const codegen::EmittedModel& emitted, const Target& target, uint64_t key) {
  key = fnv1a(emitted.header.data(), emitted.header.size(), key);
  key = fnv1a(emitted.source.data(), emitted.source.size(), key);
  emitted.weights.forEachChunk(
      [&](const uint8_t* data, size_t bytes) { key = fnv1a(data, bytes, key); });
  std::string flags = generatedCodeFlags(target);
  key = fnv1a(flags.data(), flags.size(), key);
  std::ifstream runtime(runtimePaths(target).library, std::ios::binary);
  std::string runtimeBytes((std::istreambuf_iterator<char>(runtime)), {});
  return fnv1a(runtimeBytes.data(), runtimeBytes.size(), key);
}

fs::path cacheEntry(uint64_t key) {
  return fs::path(cacheDirectory()) / fmt::format("{:016x}", key);
}

/// The library of builds for several targets (cached like buildCached).
BuiltModel buildTargetLibraryCached(const CompileOptions& options) {
  TargetLibrary library = emitTargetLibrary(options);
  uint64_t key = hashBuild(library.dispatcher, library.targets.back(), 1469598103934665603ull);
  for (size_t i = 0; i < library.targets.size(); ++i)
    key = hashBuild(library.builds[i], library.targets[i], key);
  const fs::path dir = cacheEntry(key);
  const std::string prefix = library.dispatcher.baseName;
  const fs::path shared = dir / (prefix + ".so");
  if (fs::exists(shared)) {
    cache::markUsed(dir);
    return {shared.string(), prefix};
  }
  std::vector<TargetSource> builds;
  for (const Target& target : library.targets) builds.push_back({target, ""});
  const auto files = writeTargetLibrary(std::move(library), dir.string(), options);
  for (size_t i = 0; i < builds.size(); ++i) builds[i].source = files[i + 1].sourcePath;
  linkTargetLibrary(files.front().sourcePath, builds, shared.string(), 2, options);
  cache::markUsed(dir);
  cache::evict(dir);
  return {shared.string(), prefix};
}

}  // namespace

void fillDeterministic(const cgc_tensor_info& info, void* data) {
  uint64_t state = 0x9E3779B97F4A7C15ull ^ fnv1a(info.name, std::strlen(info.name));
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  ir::TensorType type = typeOf(info);
  int64_t n = type.numElements();
  auto fill = [&](auto* p, auto value) {
    for (int64_t i = 0; i < n; ++i) p[i] = value(i);
  };
  switch (type.dtype) {
    case DType::kF32:
      fill(static_cast<float*>(data), [&](int64_t) { return next() / 2147483648.0f - 1.0f; });
      break;
    case DType::kF64:
      fill(static_cast<double*>(data), [&](int64_t) { return next() / 2147483648.0 - 1.0; });
      break;
    case DType::kI64:
      fill(static_cast<int64_t*>(data), [&](int64_t) { return int64_t(next() % 10); });
      break;
    case DType::kI32:
      fill(static_cast<int32_t*>(data), [&](int64_t) { return int32_t(next() % 10); });
      break;
    case DType::kBool:
      fill(static_cast<uint8_t*>(data), [&](int64_t i) { return uint8_t(i % 2); });
      break;
    default:
      fill(static_cast<uint8_t*>(data), [&](int64_t) { return uint8_t(next() % 10); });
      std::memset(data, 0, type.bytes());
  }
}

frontend::HostTensor outputTensor(const LoadedModel& model, int i) {
  const cgc_tensor_info& info = model.info().outputs[i];
  const ir::Shape shape = model.outputShape(i);
  frontend::HostTensor t{info.name, {static_cast<DType>(info.dtype), shape}, {}};
  const auto* bytes = static_cast<const uint8_t*>(model.output(i));
  const ir::Shape bound(info.shape, info.shape + info.rank);
  if (shape == bound || model.info().num_dims > 0) {  // dense, or a cache over its capacity
    t.bytes = model.readTensor(false, i);
    return t;
  }
  const int64_t elem = dtypeSize(t.type.dtype);
  t.bytes.resize(static_cast<size_t>(t.type.numElements() * elem));
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t e = 0; e < t.type.numElements(); ++e) {
    int64_t at = 0;
    for (size_t d = 0; d < shape.size(); ++d) at = at * bound[d] + index[d];
    std::memcpy(t.bytes.data() + e * elem, bytes + at * elem, static_cast<size_t>(elem));
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return t;
}

std::vector<double> toDoubles(const frontend::HostTensor& t) {
  ir::Value value;
  value.type = t.type;
  value.kind = ir::ValueKind::kConstant;
  value.data = std::make_shared<const std::vector<uint8_t>>(t.bytes);
  return value.doubleValues();
}

BuiltModel buildCached(const CompiledModel& model, const CompileOptions& options) {
  auto emitted = emitModel(model, options);
  fs::path dir = cacheEntry(hashBuild(emitted, options.target(), 1469598103934665603ull));
  std::string prefix = emitted.baseName;
  WrittenFiles files;
  const bool built = fs::exists(dir / (prefix + ".so"));
  if (built) {
    files.emitted = std::move(emitted);
    files.sourcePath = (dir / (prefix + ".cpp")).string();
  } else {
    files = writeModel(std::move(emitted), dir.string(), options);
  }
  BuiltModel result{buildSharedLibrary(files, options), prefix};
  // Weights the library embeds (.incbin) are not kept twice.
  if (std::error_code ignored; !built && files.emitted.embedsWeights && !files.weightsPath.empty())
    fs::remove(files.weightsPath, ignored);
  cache::markUsed(dir);
  if (!built) cache::evict(dir);
  return result;
}

BuiltModel compileAndBuild(const CompileOptions& options, CompiledModel& model) {
  const bool several = namesSeveralTargets(options);
  model = compileModel(several ? firstTargetOptions(options) : options);
  return several ? buildTargetLibraryCached(options) : buildCached(model, options);
}

BuiltModel compileOnce(const CompileOptions& options, std::vector<std::string>& onnxInputs) {
  const std::optional<uint64_t> key = cache::compileKey(options);
  if (key)
    if (std::optional<cache::Compiled> hit = cache::lookup(*key)) {
      progress(options,
               fmt::format("compiled before with these options: loading {}", hit->library));
      onnxInputs = hit->onnxInputs;
      return {hit->library, hit->prefix};
    }
  CompiledModel model;
  BuiltModel built = compileAndBuild(options, model);
  onnxInputs = model.graph.onnxInputNames;
  if (key) cache::remember(*key, {built.library, built.prefix, onnxInputs});
  return built;
}

void setInputs(const std::vector<std::string>& onnxInputs, LoadedModel& loaded,
               const std::string& inputsDir, bool fillMissing, bool note) {
  const auto& info = loaded.info();
  if (!inputsDir.empty() && !fs::is_directory(inputsDir))
    userError({inputsDir, "", ""}, "--inputs: no such directory");
  const std::string extra = fmt::format("{}/input_{}.pb", inputsDir, onnxInputs.size());
  if (!inputsDir.empty() && fs::exists(extra))
    userError({extra, "", ""},
              "no input reads this file (the model has {} input(s): {}, from "
              "input_0.pb)",
              onnxInputs.size(), fmt::join(onnxInputs, ", "));
  if (inputsDir.empty() && !fillMissing && info.num_inputs > 0)
    throw CompileError(
        "cgc: error: the model has inputs: give --inputs DIR, or --fill-missing-inputs for "
        "deterministic data");
  std::vector<std::string> filled;
  // Test-data files are numbered in the ONNX model's input order, which
  // still counts inputs that --constant turned into constants.
  for (int i = 0; i < info.num_inputs; ++i) {
    const auto& names = onnxInputs;
    auto position = std::find(names.begin(), names.end(), info.inputs[i].name);
    const std::string path = fmt::format("{}/input_{}.pb", inputsDir, position - names.begin());
    if (!inputsDir.empty() && fs::exists(path)) {
      loadInput(path, loaded, i);
      continue;
    }
    if (!fillMissing)
      userError({path, "", ""}, "input '{}' has no file (--fill-missing-inputs fills it)",
                info.inputs[i].name);
    fillDeterministic(info.inputs[i], loaded.input(i));
    filled.push_back(info.inputs[i].name);
  }
  if (!filled.empty() && note)
    std::cerr << fmt::format("cgc: note: filled input(s) {} with deterministic data\n",
                             fmt::join(filled, ", "));
}

void runOnce(LoadedModel& loaded, const std::string& modelPath) {
  const Status status = loaded.run();
  if (!status.ok()) userError({modelPath, "", ""}, "run() failed: {}", status.message());
}

}  // namespace cgc::driver
