// cgc runtime: what every generated model header includes. Small on purpose:
// this is the only part of cgc that ships inside users' binaries.
//
// A generated model class is a thin, readable shell around ModelRuntime,
// which owns what every instance needs: the arena (allocated, or the
// caller's), the weights (embedded, or read once per process and shared by
// every instance), the executor pool and its pinned threads, the first
// error of a run, the guard against two concurrent run() calls, and the
// profiler hook.
//
// C++17: an application that includes a generated model header may be built
// with -std=c++17, so nothing here may need C++20. The executor pool and its
// thread teams (cgc/team.h: C++20 atomic wait and notify) stay behind
// ModelRuntime's pointer, for the runtime's sources and the generated .cpp
// (built with C++20) to include.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "cgc/c_api.h"
#include "cgc/types.h"

namespace cgc {

namespace rt {
/// What a kernel that can fail returns (defined in cgc/kernels/common.h,
/// which generated headers need not include).
enum class Status : int32_t;
/// The threads that run one op (cgc/team.h).
class Team;
}  // namespace rt

/// The threads of one model instance (cgc/team.h).
class ExecutorPool;

using TensorInfo = cgc_tensor_info;
using ModelInfo = cgc_model_info;

/// The outcome of a model call: ok, or a cgc_status code with a message
/// that names the failing node ("node 'embed' (Gather): an index is out of
/// range"). Cheap when ok.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(cgc_status code, std::string message) : code_(code), message_(std::move(message)) {}
  bool ok() const { return code_ == CGC_OK; }
  explicit operator bool() const { return ok(); }
  cgc_status code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  cgc_status code_ = CGC_OK;
  std::string message_;
};

/// What a model's constructor throws (and its C create function reports as
/// NULL plus a message): a missing or wrong weights file, a caller's arena
/// too small, a runtime of another ABI, a CPU without the model's target
/// features.
class Error : public std::runtime_error {
 public:
  Error(cgc_status code, const std::string& message) : std::runtime_error(message), code_(code) {}
  cgc_status code() const { return code_; }

 private:
  cgc_status code_;
};

/// A float32 tensor of a model built with `cgc compile --observe`, as its
/// generated code describes it to Profiler::observe.
struct ObservedTensor {
  int32_t index;     // in the model's table of observed tensors
  const char* name;  // its ONNX name
  int32_t rank;
  const int64_t* shape;
  int64_t count;  // elements
};

/// Collects per-node timings from a model's run() while it is attached with
/// set_profiler(); writes them as profile JSON or as a Chrome trace. With
/// record_statistics(), also the statistics of the tensors a model built
/// with `cgc compile --observe` computes, written as a calibration file.
class Profiler {
 public:
  struct Event {
    int32_t node;  // index into ModelInfo::node_names
    int32_t executor;
    int32_t threads;
    int64_t start_ns;  // steady clock, relative to the profiler's creation
    int64_t end_ns;
  };

  Profiler();

  /// Called by generated code around each node, from one thread of each
  /// executor (so concurrently when there are several).
  int64_t now_ns() const;
  void record(const ModelInfo& model, const Event& event);
  /// Called by a model's runtime after each run; `dims`: the values of its
  /// variable dimensions (cgc compile --dim) in that run, counted per size.
  void end_run(const ModelInfo& model, const int64_t* dims);

  const std::vector<Event>& events() const { return events_; }
  int64_t runs() const { return runs_; }

  /// From now on, each observed tensor's count, min, max and a histogram of
  /// `bins` (at least 1) equal bins, over every run while attached: the
  /// statistics `cgc calibrate` writes, gathered on live traffic. The
  /// histogram's range starts at the first values' and grows by powers of
  /// two, merging bins, as wider values arrive; NaN and infinities are
  /// counted apart. Only models built with --observe report tensors.
  void record_statistics(int bins = 2048);
  /// Called by generated code (--observe) with the tensor `t` of `model`:
  /// the graph inputs as a run starts, every other after its node.
  void observe(const ModelInfo& model, const ObservedTensor& t, const float* data);
  /// The same with the tensor's `count` elements at a run's sizes (a model
  /// built with --dim).
  void observe(const ModelInfo& model, const ObservedTensor& t, const float* data, int64_t count);
  /// The tensors with statistics so far (0 for a model built without
  /// --observe).
  int64_t observed_tensors() const;
  /// The statistics as a calibration file (`cgc compile --quantize int8
  /// --calibration FILE`; its input_sets: the runs since
  /// record_statistics()), written through a temporary file and a rename,
  /// while no run records. Returns false (and leaves errno set) when it
  /// cannot be written.
  bool write_calibration(const std::string& path) const;

  /// Per-node median microseconds, keyed by node name and the graph hash;
  /// for a model of variable dimensions, also the runs at each size
  /// ("sizes", which a recompile with --profile specialises). Returns false
  /// (and leaves errno set) when the file cannot be written.
  bool write_profile(const std::string& path) const;
  /// Chrome trace (chrome://tracing, Perfetto): one track per executor.
  bool write_trace(const std::string& path) const;

 private:
  std::mutex mutex_;  // executors record concurrently
  const ModelInfo* model_ = nullptr;
  std::vector<Event> events_;
  int64_t runs_ = 0;
  int64_t origin_ns_ = 0;
  std::map<std::vector<int64_t>, int64_t> sizes_;  // variable dimensions' values -> runs
  struct Statistics;                               // profiler.cpp
  std::shared_ptr<Statistics> statistics_;         // null until record_statistics()
};

/// Times one node for a Profiler; costs one branch when none is attached.
class NodeTimer {
 public:
  NodeTimer(Profiler* profiler, const ModelInfo& model, int32_t node, int32_t executor = 0,
            int32_t threads = 1)
      : profiler_(profiler),
        model_(model),
        event_{node, executor, threads, profiler ? profiler->now_ns() : 0, 0} {}
  ~NodeTimer() {
    if (!profiler_) return;
    event_.end_ns = profiler_->now_ns();
    profiler_->record(model_, event_);
  }
  NodeTimer(const NodeTimer&) = delete;
  NodeTimer& operator=(const NodeTimer&) = delete;

 private:
  Profiler* profiler_;
  const ModelInfo& model_;
  Profiler::Event event_;
};

/// What a generated model tells its ModelRuntime about itself (constants of
/// the generated code).
struct ModelSpec {
  const ModelInfo* info;
  int abi_version;  // CGC_RUNTIME_ABI_VERSION of the generating cgc
  int signals;      // cross-executor signals the op lists use
  int64_t weight_bytes;
  /// The weights linked into the binary (.incbin), or null when they are
  /// read from a file.
  const unsigned char* embedded_weights;
  /// The weights file's default name ("tiny_cnn.weights.bin"), looked up
  /// next to the binary that holds `module_symbol` (see default_weights_path).
  const char* weights_file_name;
  const void* module_symbol;
  /// CPU features the generated code and its runtime need, as GCC's
  /// __builtin_cpu_supports names ("avx2", "fma", "avx512f"), null-terminated;
  /// null for none.
  const char* const* cpu_features;
  /// The most LIBXSMM may JIT for (a libxsmm_set_target_arch name: "hsw" for
  /// x86-64-v3), or null for what LIBXSMM finds on this CPU. LIBXSMM's
  /// target is per process: an instance only ever lowers it, so kernels
  /// generated after it never use an ISA its target lacks.
  const char* xsmm_target = nullptr;
  /// Where the values of the variable dimensions (ModelInfo::dims) lie in
  /// the arena: one int64 each.
  int64_t dims_offset = 0;
};

/// 1 when this CPU has `feature` (a GCC __builtin_cpu_supports name; on
/// aarch64 "asimd" or "asimddp"), 0 when it lacks it, -1 when this runtime
/// cannot check that name.
int cpu_has_feature(const char* feature);

/// The feature names cpu_has_feature can check on this processor family
/// (every feature of the instruction-set tiers of cgc/isa_tiers.def that
/// belong to it), null-terminated.
const char* const* checkable_cpu_features();

/// The instruction-set tier this runtime library was built for: the last
/// tier of cgc/isa_tiers.def whose features its compiler flags enable.
const char* runtime_isa_tier();

/// 1 when this CPU has every feature of tier `name` (cgc/isa_tiers.def) and
/// of its bases, 0 when it lacks one, -1 for an unknown tier or one of
/// another processor family.
int cpu_has_tier(const char* name);

/// The bytes tensor `t` holds at `shape` (rank entries), densely: what a
/// model compiled with variable dimensions stores at its current sizes.
inline int64_t tensor_bytes(const TensorInfo& t, const int64_t* shape) {
  int64_t bound = 1, actual = 1;
  for (int d = 0; d < t.rank; ++d) bound *= t.shape[d], actual *= shape[d];
  return bound == 0 ? 0 : t.bytes / bound * actual;
}

/// The key/value cache that tensor `index` (an input, else an output) is
/// part of (ModelInfo::cache_pairs), or null: such a tensor is stored with
/// room for the cache's capacity along its axis, not densely.
const cgc_cache_pair* cache_pair_of(const ModelInfo& info, bool input, int index);

/// The element strides of tensor `index` (an input, else an output) at
/// `shape` as the arena stores it: dense, or over a cache's capacity.
void stored_strides(const ModelInfo& info, bool input, int index, const int64_t* shape,
                    int64_t* strides);

/// Copies tensor `index` at `shape` between a dense buffer and its stored
/// layout (set_input: to_stored; get_output: from it).
void copy_stored(const ModelInfo& info, bool input, int index, const int64_t* shape,
                 const void* from, void* to, bool to_stored);

/// Copies a dense tensor of `from_shape` into a dense tensor of `to_shape`
/// (the same rank, >= 1): the elements both shapes hold, each at its
/// index; every other element of `to` zeroed. A --specialize bucket pads
/// its inputs so and takes its outputs' leading part.
void copy_padded(const void* from, const int64_t* from_shape, void* to, const int64_t* to_shape,
                 int rank, int64_t element_bytes);

/// The state of one model instance. Construction checks the runtime ABI and
/// the CPU's features, then takes the arena and the weights; it throws Error
/// on any failure (the instance is then not created).
class ModelRuntime {
 public:
  /// `weights_path`: null or "" for the default (embedded, or the spec's file
  /// next to the binary). `arena`: null to allocate one of
  /// info->arena_bytes (zeroed); otherwise the caller's memory of
  /// `arena_bytes` (at least info->arena_bytes, 64-byte aligned), used as
  /// given (not zeroed, never freed), which must outlive the instance;
  /// nothing is allocated per run.
  ModelRuntime(const ModelSpec& spec, const char* weights_path = nullptr, void* arena = nullptr,
               int64_t arena_bytes = 0);
  /// Destroying an instance while another thread is inside its run() is a
  /// programming error: the destructor reports it on stderr and aborts.
  ~ModelRuntime();
  ModelRuntime(const ModelRuntime&) = delete;
  ModelRuntime& operator=(const ModelRuntime&) = delete;

  unsigned char* arena() const { return arena_; }
  const unsigned char* weights() const { return weights_; }
  const ModelInfo& info() const { return *spec_.info; }

  /// One inference: runs `body` on every executor thread. Returns
  /// CGC_ERROR_BUSY without running when another thread is inside run() of
  /// this instance; otherwise the first failure a node reported (fail), or
  /// ok. A run after a failed run starts afresh.
  /// `body` is an ExecutorPool::Body.
  Status run(void (*body)(void* context, int executor, const rt::Team& team), void* model);

  /// Variable dimensions (cgc compile --dim, ModelInfo::dims): their values
  /// for the coming runs, held in the arena, so each instance has its own;
  /// each starts at its largest. set_input_shape sets those of input
  /// `index`'s axes: its fixed axes must be the model's, every value within
  /// its bounds and a multiple of its step, and another input set since
  /// the last run must not have given a dimension another value; else it
  /// sets nothing, returns an error naming the axis or the dimension, and
  /// run() fails with it until the input's shape is set right. set_dim
  /// sets one dimension; a value outside its bounds fails run() too.
  Status set_input_shape(int index, const int64_t* dims, int rank);
  Status set_dim(const char* name, int64_t value);
  int64_t dim(int index) const;
  /// Input `index`'s shape at the current dimensions; empty if out of range.
  std::vector<int64_t> input_shape(int index) const;
  /// Records a node's failure (first one wins; any thread, lock-free).
  void fail(int node, rt::Status status) noexcept;

  Profiler* profiler() const { return profiler_; }
  void set_profiler(Profiler* profiler) { profiler_ = profiler; }
  /// The executor pool (cgc/team.h has its definition).
  ExecutorPool& pool() { return *pool_; }
  /// Where this instance's threads run: "1 executor(s) x 2 thread(s): e0 [caller, cpu 1]".
  const std::string& placement() const;

 private:
  ModelSpec spec_;
  unsigned char* arena_ = nullptr;
  bool ownsArena_ = false;
  std::shared_ptr<const unsigned char> fileWeights_;  // shared per process and file
  const unsigned char* weights_ = nullptr;
  Profiler* profiler_ = nullptr;
  std::atomic<bool> running_{false};
  std::atomic<int64_t> failure_{-1};  // node << 8 | status, -1 when none
  std::unique_ptr<ExecutorPool> pool_;
  std::vector<int> dimSetBy_;  // per dimension: the input that set it since the last run
  /// Per input: why its last set_input_shape failed ("" when it did not);
  /// run() fails while one has.
  std::vector<std::string> inputErrors_;
  /// One run on the executors: the first failure a node reported, or ok.
  Status runOnPool(void (*body)(void* context, int executor, const rt::Team& team), void* model);
  int64_t* dimValues() const;
  std::string whyNotDim(int index, int64_t value) const;
  Status checkDims() const;
  std::string whyNotShape(int index, const int64_t* dims, int rank) const;
};

/// "<directory of the binary holding `module_symbol`>/<file_name>", or
/// file_name alone when that directory cannot be found.
std::string default_weights_path(const void* module_symbol, const char* file_name);

/// A weights file's `bytes` bytes, 64-byte aligned, read once per process:
/// every caller naming the same file (by its canonical path) shares one copy.
/// Throws Error (CGC_ERROR_WEIGHTS) naming the file when it cannot be read
/// or does not hold exactly `bytes` bytes.
std::shared_ptr<const unsigned char> shared_weights(const std::string& path, int64_t bytes);

/// Allocates a zeroed 64-byte-aligned arena (std::free to release); throws
/// Error (CGC_ERROR_OUT_OF_MEMORY).
unsigned char* allocate_arena(int64_t bytes);

/// The message and code of the last failed create on this thread, for C
/// interfaces (each generated model exports them as <prefix>_last_error()
/// and <prefix>_last_status()).
const char* last_create_error();
cgc_status last_create_status();
void set_last_create_error(const std::string& message, cgc_status code = CGC_ERROR_INTERNAL);

/// One build of a model in a library built for several targets (cgc
/// compile --target a,b,c): its target and that target's tier.
struct TargetVariant {
  const char* target;
  const char* tier;
};

/// The build this process runs, as an index into `variants` (best first):
/// the one the environment variable CGC_TARGET names, else the first whose
/// tier this CPU has. -1, with `why` set, when CGC_TARGET names a target the
/// library lacks or one this CPU cannot run, or when the CPU runs none.
int choose_target_variant(const TargetVariant* variants, int count, std::string& why);

}  // namespace cgc
