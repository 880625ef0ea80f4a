// ModelRuntime: the state every generated model instance shares (see
// cgc/runtime.h): the checks at creation (runtime ABI, CPU features, the
// caller's arena), the weights (embedded or shared per file), the executor
// pool (and its warning when the model asks for more threads than the
// CPUs), the first failure of a run, the guard against two concurrent run()
// calls, and where the weights file is looked up by default.
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <thread>

#include "cgc/kernels/common.h"
#include "cgc/runtime.h"
#include "cgc/team.h"
#include "gemm/gemm_core.h"

namespace cgc {
namespace {

struct CreateFailure {
  std::string message;
  cgc_status code = CGC_OK;
};

CreateFailure& lastCreateFailure() {
  thread_local CreateFailure failure;
  return failure;
}

const char* modelName(const ModelSpec& spec) {
  return spec.info && spec.info->name ? spec.info->name : "(unnamed model)";
}

/// `spec`, after checking the runtime ABI and the CPU's features.
const ModelSpec& checked(const ModelSpec& spec) {
  if (!spec.info) throw Error(CGC_ERROR_INVALID_ARGUMENT, "cgc: a ModelSpec without its info");
  if (spec.abi_version != CGC_RUNTIME_ABI_VERSION) {
    const char* version = spec.info && spec.info->cgc_version ? spec.info->cgc_version : nullptr;
    throw Error(CGC_ERROR_RUNTIME_MISMATCH,
                std::string("model ") + modelName(spec) + " was generated" +
                    (version ? std::string(" by cgc ") + version : std::string()) +
                    " for runtime ABI " + std::to_string(spec.abi_version) +
                    ", but is linked with a cgc runtime of ABI " +
                    std::to_string(CGC_RUNTIME_ABI_VERSION) +
                    " (compile the model and link the runtime of the same cgc)");
  }
  std::string missing;
  int count = 0;
  for (const char* const* f = spec.cpu_features; f && *f; ++f) {
    const int has = cpu_has_feature(*f);
    if (has < 0)
      throw Error(CGC_ERROR_CPU, std::string("model ") + modelName(spec) + " needs CPU feature '" +
                                     *f + "', which this cgc runtime cannot check");
    if (has == 0) missing += (count++ ? ", " : "") + std::string(*f);
  }
  if (count > 0) {
    const char* target = spec.info && spec.info->target ? spec.info->target : nullptr;
    throw Error(CGC_ERROR_CPU, std::string("model ") + modelName(spec) +
                                   (target ? std::string(" (target ") + target + ")" : "") +
                                   " was compiled for a CPU with " + missing + "; this CPU lacks " +
                                   (count > 1 ? "them" : "it"));
  }
  if (spec.xsmm_target) rt::detail::limitXsmmTarget(spec.xsmm_target);
  return spec;
}

/// The caller's arena after checking it, or null (allocated later).
unsigned char* callerArena(const ModelSpec& spec, void* arena, int64_t arena_bytes) {
  if (!arena) return nullptr;
  const int64_t needed = spec.info->arena_bytes;
  if (arena_bytes < needed)
    throw Error(CGC_ERROR_ARENA, std::string("model ") + modelName(spec) + " needs an arena of " +
                                     std::to_string(needed) + " bytes; the caller's holds " +
                                     std::to_string(arena_bytes));
  if (reinterpret_cast<uintptr_t>(arena) % 64 != 0)
    throw Error(CGC_ERROR_ARENA, std::string("model ") + modelName(spec) +
                                     ": the caller's arena (" + std::to_string(arena_bytes) +
                                     " bytes) must be 64-byte aligned");
  return static_cast<unsigned char*>(arena);
}

/// The weights file's copy, or null when the weights are embedded or none.
std::shared_ptr<const unsigned char> fileWeights(const ModelSpec& spec, const char* path) {
  const bool named = path && *path;
  if (spec.weight_bytes == 0 || (!named && spec.embedded_weights)) return nullptr;
  return shared_weights(
      named ? std::string(path) : default_weights_path(spec.module_symbol, spec.weights_file_name),
      spec.weight_bytes);
}

/// Maps the embedded weights (read-only data of the binary, paged in from
/// the file on first touch) at construction in one call, not by the first
/// run's page faults, one per 64 KiB. Best effort: kernels before Linux 5.14
/// lack MADV_POPULATE_READ, and then the first run faults them in as before.
void populateWeights(const unsigned char* weights, int64_t bytes) {
#ifdef __linux__
  constexpr int kPopulateRead = 22;  // MADV_POPULATE_READ, Linux 5.14
  if (!weights || bytes <= 0) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(weights) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(weights) + static_cast<uintptr_t>(bytes);
  madvise(reinterpret_cast<void*>(begin), end - begin, kPopulateRead);
#else
  (void)weights;
  (void)bytes;
#endif
}

std::unique_ptr<ExecutorPool> startPool(const ModelSpec& spec) {
  try {
    return std::make_unique<ExecutorPool>(spec.info->executors, spec.info->threads_per_executor,
                                          spec.signals);
  } catch (const std::system_error& e) {
    throw Error(CGC_ERROR_INTERNAL, std::string("model ") + modelName(spec) +
                                        ": cannot start its threads (" + e.what() + ")");
  }
}

/// The pool's oversubscription warning on stderr (see ExecutorPool), once
/// per process for each model and warning: a server that creates many
/// instances says it once. The warning of a deployed library too: the model
/// runs, but not with the threads it was compiled for.
void warnOversubscribed(const ModelSpec& spec, const ExecutorPool& pool) {
  if (pool.oversubscription().empty()) return;
  static auto* mutex = new std::mutex;  // never destroyed, as instances in statics may outlive it
  static auto* said = new std::set<std::string>;
  const std::string line =
      std::string("cgc: warning: model ") + modelName(spec) + ": " + pool.oversubscription();
  std::lock_guard<std::mutex> lock(*mutex);
  if (said->insert(line).second) std::fprintf(stderr, "%s\n", line.c_str());
}

/// CGC_ERROR_INTERNAL for an exception inside run(); never throws.
Status internalError(const char* model, const char* what) noexcept {
  try {
    return Status(CGC_ERROR_INTERNAL, std::string(model) + ": run() failed: " + what);
  } catch (...) {
    return Status(CGC_ERROR_INTERNAL, {});
  }
}

}  // namespace

ModelRuntime::ModelRuntime(const ModelSpec& spec, const char* weights_path, void* arena,
                           int64_t arena_bytes)
    : spec_(checked(spec)),
      arena_(callerArena(spec, arena, arena_bytes)),
      ownsArena_(arena == nullptr),
      fileWeights_(fileWeights(spec, weights_path)),
      weights_(fileWeights_ ? fileWeights_.get() : spec.embedded_weights),
      pool_(startPool(spec)) {
  warnOversubscribed(spec_, *pool_);
  // LIBXSMM sets itself up on another thread while this one allocates the
  // arena and pages the weights in, not in the first run's first GEMM.
  std::thread xsmm;
  try {
    xsmm = std::thread(rt::detail::initXsmm);
  } catch (const std::system_error&) {
    rt::detail::initXsmm();
  }
  // Allocated last, so that nothing before it can throw and leak it (a
  // constructor that throws runs no destructor; the members' do run).
  try {
    if (ownsArena_) arena_ = allocate_arena(spec.info->arena_bytes);
  } catch (...) {
    if (xsmm.joinable()) xsmm.join();
    throw;
  }
  if (!fileWeights_) populateWeights(weights_, spec.weight_bytes);
  if (xsmm.joinable()) xsmm.join();
  dimSetBy_.assign(static_cast<size_t>(spec.info->num_dims), -1);
  inputErrors_.resize(static_cast<size_t>(spec.info->num_inputs));
  for (int j = 0; j < spec.info->num_dims; ++j) dimValues()[j] = spec.info->dims[j].max;
}

ModelRuntime::~ModelRuntime() {
  if (running_.load(std::memory_order_acquire)) {
    std::fprintf(stderr, "cgc: %s destroyed while run() is in progress on another thread\n",
                 modelName(spec_));
    std::abort();
  }
  if (ownsArena_) std::free(arena_);
}

void ModelRuntime::fail(int node, rt::Status status) noexcept {
  if (status == rt::Status::kOk) return;
  // Non-negative whatever the node: the node's 32 bits, then the status's 8.
  const int64_t failure = static_cast<int64_t>(static_cast<uint32_t>(node)) << 8 |
                          (static_cast<int64_t>(status) & 0xff);
  int64_t none = -1;
  failure_.compare_exchange_strong(none, failure, std::memory_order_acq_rel,
                                   std::memory_order_relaxed);
}

const std::string& ModelRuntime::placement() const { return pool_->describe_placement(); }

Status ModelRuntime::runOnPool(ExecutorPool::Body body, void* model) {
  failure_.store(-1, std::memory_order_relaxed);
  pool_->run(body, model);
  if (profiler_) profiler_->end_run(*spec_.info, spec_.info->num_dims > 0 ? dimValues() : nullptr);
  const int64_t failure = failure_.load(std::memory_order_acquire);
  if (failure < 0) return {};
  const int node = static_cast<int>(static_cast<uint32_t>(failure >> 8));
  const auto status = static_cast<rt::Status>(failure & 0xff);
  const ModelInfo& info = *spec_.info;
  const bool known = node >= 0 && node < info.num_nodes && info.node_names && info.node_ops;
  return Status(
      static_cast<cgc_status>(status),
      (known ? std::string("node '") + info.node_names[node] + "' (" + info.node_ops[node] + ")"
             : "node #" + std::to_string(node)) +
          ": " + rt::statusMessage(status));
}

Status ModelRuntime::run(ExecutorPool::Body body, void* model) {
  if (running_.exchange(true, std::memory_order_acquire)) {
    try {
      return Status(CGC_ERROR_BUSY, std::string(modelName(spec_)) +
                                        ": run() entered from two threads at once; use one "
                                        "instance per thread");
    } catch (...) {  // no memory for the message
      return Status(CGC_ERROR_BUSY, {});
    }
  }
  Status result;
  try {
    // Variable dimensions: each set since the last run is set anew.
    result = checkDims();
    std::fill(dimSetBy_.begin(), dimSetBy_.end(), -1);
    if (result.ok()) result = runOnPool(body, model);
  } catch (const std::exception& e) {
    result = internalError(modelName(spec_), e.what());
  } catch (...) {
    result = internalError(modelName(spec_), "an unknown exception");
  }
  running_.store(false, std::memory_order_release);
  return result;
}

std::string default_weights_path(const void* module_symbol, const char* file_name) {
  const std::string name = file_name ? file_name : "";
  Dl_info symbol{};
  link_map* module = nullptr;
  if (!module_symbol ||
      !dladdr1(module_symbol, &symbol, reinterpret_cast<void**>(&module), RTLD_DL_LINKMAP))
    return name;
  std::error_code error;
  std::filesystem::path binary;
  if (module && module->l_name && *module->l_name)
    binary = std::filesystem::absolute(module->l_name, error);  // a shared object
  else  // the executable, whose dli_fname is only argv[0]
    binary = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error || binary.empty() || !binary.has_parent_path()) return name;
  return (binary.parent_path() / name).string();
}

const char* last_create_error() { return lastCreateFailure().message.c_str(); }

cgc_status last_create_status() { return lastCreateFailure().code; }

void set_last_create_error(const std::string& message, cgc_status code) {
  lastCreateFailure() = {message, code};
}

}  // namespace cgc
