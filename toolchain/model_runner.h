// `cgc run` support: builds emitted code into a shared library with the C++
// compiler cgc was configured with (cached by a hash of the emitted code),
// loads it, and drives it through the generated C ABI.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "cgc/runtime.h"
#include "pipeline/pipeline.h"
#include "pipeline/targets.h"

namespace cgc::driver {

/// The options generated code of `target` is compiled with: "-std=c++20 -O2
/// -march=x86-64-v3 ...", with -O`optLevel`.
std::string generatedCodeOptions(const Target& target, int optLevel = 2);
/// Compiler command for generated code of `target`: the target's compiler
/// and generatedCodeOptions.
std::string generatedCodeFlags(const Target& target, int optLevel = 2);

/// `text` quoted for the shell.
std::string shellQuote(const std::string& text);

/// Runs a shell command; its stdout and stderr together go to `output`.
/// Returns its exit status (-1 when it did not exit).
int runCommand(const std::string& command, std::string& output);

/// Builds `files` into `<dir>/<base>.so` unless that library already exists.
/// Returns its path. Throws CompileError with the compiler's output if the
/// build fails.
std::string buildSharedLibrary(const WrittenFiles& files, const CompileOptions& options);

/// runtimePaths(target.name); CompileError naming the runtime library when
/// it is not there (a target whose runtime this cgc was built without).
RuntimePaths installedRuntime(const Target& target);

/// Compiles `source` (whose generated files, and their weights for
/// .incbin, are in `dirs`) with `target`'s flags at -O`optLevel` and its
/// runtime into the shared library `library`, under a temporary name first:
/// concurrent builds of the same model race to the rename, never to a
/// half-written library. CompileError when the target's runtime is not
/// installed; InternalError with the compiler's output when it fails.
void compileShared(const std::filesystem::path& source, const std::vector<std::string>& dirs,
                   const std::filesystem::path& library, const Target& target, int optLevel,
                   const CompileOptions& options);

/// A compiled model loaded with dlopen, driven through its C interface.
class LoadedModel {
 public:
  /// Creates one instance; CompileError naming the library when the
  /// library or its create() fails (with create's message).
  LoadedModel(const std::string& library, const std::string& prefix);
  ~LoadedModel();
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;

  const cgc_model_info& info() const { return *info_; }
  void* input(int index) { return api_->input(instance_, index); }
  const void* output(int index) const { return api_->output(instance_, index); }
  /// Output `index`'s actual shape after the last run.
  std::vector<int64_t> outputShape(int index) const {
    std::vector<int64_t> dims(static_cast<size_t>(info_->outputs[index].rank) + 1);
    dims.resize(
        static_cast<size_t>(std::max(0, api_->output_shape(instance_, index, dims.data()))));
    return dims;
  }
  /// Input `index`'s shape for the next runs (cgc compile --dim); the
  /// status and message of the model's set_input_shape.
  Status setInputShape(int index, const std::vector<int64_t>& shape) {
    const cgc_status code =
        api_->set_input_shape(instance_, index, shape.data(), static_cast<int>(shape.size()));
    if (code == CGC_OK) inputShapes_[static_cast<size_t>(index)] = shape;
    return code == CGC_OK ? Status() : Status(code, api_->error(instance_));
  }
  /// Variable dimension `name` for the next runs (cgc compile --dim); the
  /// inputs' shapes follow it.
  Status setDim(const std::string& name, int64_t value) {
    const cgc_status code = api_->set_dim(instance_, name.c_str(), value);
    if (code != CGC_OK) return Status(code, api_->error(instance_));
    for (int i = 0; i < info_->num_inputs; ++i)
      for (int a = 0; info_->inputs[i].dims && a < info_->inputs[i].rank; ++a) {
        const int dim = info_->inputs[i].dims[a];
        if (dim >= 0 && name == info_->dims[dim].name)
          inputShapes_[static_cast<size_t>(i)][static_cast<size_t>(a)] = value;
      }
    return Status();
  }
  const std::vector<int64_t>& inputShape(int index) const {
    return inputShapes_[static_cast<size_t>(index)];
  }
  /// Bytes output `index` holds after the last run, input `index` now.
  int64_t outputBytes(int index) const {
    return bytesOf(info_->outputs[index], outputShape(index));
  }
  int64_t inputBytes(int index) const { return bytesOf(info_->inputs[index], inputShape(index)); }
  /// Writes input `index` at its current shape from dense `data`, and reads
  /// an input or output so: a cache kept in place is stored over its
  /// capacity (cgc::copy_stored).
  void writeInput(int index, const void* data) {
    copy_stored(*info_, true, index, inputShape(index).data(), data, input(index), true);
  }
  std::vector<uint8_t> readTensor(bool isInput, int index) const {
    const std::vector<int64_t> shape = isInput ? inputShape(index) : outputShape(index);
    std::vector<uint8_t> bytes(
        static_cast<size_t>(isInput ? inputBytes(index) : bytesOf(info_->outputs[index], shape)));
    const void* stored = isInput ? api_->input(instance_, index) : output(index);
    copy_stored(*info_, isInput, index, shape.data(), stored, bytes.data(), false);
    return bytes;
  }
  /// One inference; the status and message of the model's run().
  Status run() {
    const cgc_status code = api_->run(instance_);
    if (code == CGC_OK) return Status();
    // A refused run leaves the instance's message to the run in progress.
    if (code == CGC_ERROR_BUSY)
      return Status(code, std::string(info_->name) +
                              ": run() entered from two threads at once; use one instance per "
                              "thread");
    return Status(code, api_->error(instance_));
  }
  void setProfiler(Profiler* profiler) { api_->set_profiler(instance_, profiler); }
  /// Where the instance's threads run (ExecutorPool::describe_placement).
  std::string placement() const { return api_->placement(instance_); }
  /// The threads per executor the instance runs (decided at creation when
  /// the model says 0, capped to the CPUs): read from placement(), the C
  /// interface's one view of the instance's pool.
  int threadsPerExecutor() const;

 private:
  /// A tensor's bytes at `shape`: dense (a model with variable dimensions),
  /// else the buffer at its bound.
  int64_t bytesOf(const cgc_tensor_info& t, const std::vector<int64_t>& shape) const {
    return info_->num_dims == 0 ? t.bytes : tensor_bytes(t, shape.data());
  }

  void* handle_ = nullptr;
  const cgc_model_api* api_ = nullptr;  // the model's C interface (<prefix>_api)
  void* instance_ = nullptr;
  const cgc_model_info* info_ = nullptr;
  std::vector<std::vector<int64_t>> inputShapes_;  // as set (at first, info_'s)
};

/// The class names (cgc compile --name) of the models that the shared
/// library `library`, loaded as `handle`, holds: each <prefix>_api in its
/// dynamic symbol table with its <prefix>_info beside it; empty when it
/// holds none or is not an ELF file this process can read.
std::vector<std::string> modelsInLibrary(void* handle, const std::string& library);

/// Directory for cached builds: the override (setCacheDirectoryOverride),
/// else $CGC_CACHE_DIR, else $XDG_CACHE_HOME/cgc, else ~/.cache/cgc.
std::string cacheDirectory();

/// Makes cacheDirectory() return `dir` ("": no override) and returns the
/// override it replaces (cache::TrialBuilds: a search's trials are built
/// apart). Not thread-safe: set it around work on one thread.
std::string setCacheDirectoryOverride(std::string dir);

}  // namespace cgc::driver
