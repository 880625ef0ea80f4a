// ExecutorPool: the persistent worker threads of one model instance, and the
// process-wide registry of the CPUs that pools hold, so that several
// instances in one process pin their workers to different cores; see
// cgc/team.h.
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include "cgc/team.h"

namespace cgc {
namespace {

constexpr uint64_t kStop = ~uint64_t{0};

/// The CPUs this process may run on, read once, at the first pool, from the
/// calling thread's mask. run() narrows that mask only while it runs
/// (keepCallerOffWorkers, restoreCallerMask): every model library links its own copy of the
/// runtime, so a mask left narrowed would be all that the next library
/// loaded in the process sees (a model built after an accuracy budget's
/// trials ran on one thread of two).
const std::vector<int>& allowedCpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> list;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set)) list.push_back(cpu);
    return list;
  }();
  return cpus;
}

/// The CPUs that another thread of this process is pinned to alone, read
/// from the kernel (/proc/self/task): the workers of pools of another copy
/// of the runtime (every model library links its own, so their registries
/// do not see each other) or threads another library pinned. The calling
/// thread does not count (its mask is its owner's).
std::vector<bool> cpusPinnedByOtherThreads() {
  std::vector<bool> pinned(CPU_SETSIZE, false);
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return pinned;
  const pid_t self = gettid();
  while (const dirent* entry = readdir(tasks)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    cpu_set_t set;
    CPU_ZERO(&set);
    if (tid <= 0 || tid == self || sched_getaffinity(tid, sizeof(set), &set) != 0 ||
        CPU_COUNT(&set) != 1)
      continue;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) pinned[cpu] = true;
  }
  closedir(tasks);
  return pinned;
}

bool pinningWanted() {
  const char* env = std::getenv("CGC_PIN");
  return !env || std::strcmp(env, "0") != 0;
}

/// CGC_OVERSUBSCRIBE=1: run every thread asked for, even beyond the CPUs.
bool oversubscriptionWanted() {
  const char* env = std::getenv("CGC_OVERSUBSCRIBE");
  return env && std::strcmp(env, "1") == 0;
}

/// What a pool of `executors` x `asked` threads that runs `threads` per
/// executor on `cpus` CPUs says when it asks for more threads than the CPUs
/// (a thread without a core is waited for at every barrier: team.h,
/// "Oversubscription"); empty when they fit or `allowed`.
std::string oversubscription(int executors, int asked, int threads, int cpus, bool allowed) {
  if (allowed || executors * asked <= cpus) return {};
  const bool capped = threads != asked, over = executors * threads > cpus;
  const std::string e = std::to_string(executors);
  std::string out = e + " executor(s) x " + std::to_string(asked) +
                    " thread(s) are more threads than the " + std::to_string(cpus) +
                    " CPU(s) this process may use: running ";
  if (capped) out += e + " x " + std::to_string(threads) + (over ? ", still more, " : "");
  if (over) out += "unpinned and more slowly";
  out += " (";
  if (over) out += "compile with --executors " + std::to_string(cpus) + " or fewer";
  if (capped && over) out += "; ";
  if (capped)
    out +=
        "CGC_OVERSUBSCRIBE=1 or cgc run --oversubscribe runs " + e + " x " + std::to_string(asked);
  return out + ")";
}

/// Which CPUs the pools of this copy of the runtime hold. A pool that pins
/// claims one CPU per thread (the caller's, then its workers'), all or none,
/// under the mutex, among the CPUs no other thread of the process is pinned
/// to (another copy's workers: cpusPinnedByOtherThreads); whether a worker
/// is pinned to a CPU is also readable without it (run() asks, to keep the
/// caller off the workers' cores).
class CpuRegistry {
 public:
  /// Never destroyed: a pool in a static object may outlive any static here.
  static CpuRegistry& instance() {
    static CpuRegistry* registry = new CpuRegistry;
    return *registry;
  }

  struct Claim {
    int threads;                 // per executor
    std::vector<int> cpus;       // the caller's, then the workers'; empty: unpinned
    std::string unpinned;        // why not pinned, when there are workers
    std::string capped;          // the threads asked for, when fewer run
    std::string oversubscribed;  // the warning, when more threads than CPUs were asked for
  };

  /// A new pool's threads per executor (`threads` 0: the free CPUs divided
  /// by the executors, at least 1; more than the CPUs the process may use:
  /// those CPUs divided by the executors, unless `oversubscribe`) and, when
  /// pinning is wanted and that many CPUs are free, the CPUs it claims.
  Claim claim(int executors, int threads, bool pin, bool oversubscribe) {
    const std::vector<int>& allowed = allowedCpus();
    const std::vector<bool> elsewhere = pin ? cpusPinnedByOtherThreads() : std::vector<bool>();
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<int> free;
    for (int cpu : allowed)
      if (state_[cpu].load(std::memory_order_relaxed) == kFree &&
          (elsewhere.empty() || !elsewhere[static_cast<size_t>(cpu)]))
        free.push_back(cpu);
    Claim claim{threads, {}, {}, {}, {}};
    const int cpus = available_cpus();
    if (threads == 0)
      claim.threads =
          std::max(1, (allowed.empty() ? cpus : static_cast<int>(free.size())) / executors);
    else if (!oversubscribe && executors * threads > cpus)
      claim.threads = std::max(1, cpus / executors);
    if (claim.threads != threads && threads != 0)
      claim.capped = std::to_string(executors) + " x " + std::to_string(threads) + " asked, " +
                     std::to_string(cpus) + " CPUs";
    claim.oversubscribed = oversubscription(executors, threads == 0 ? claim.threads : threads,
                                            claim.threads, cpus, oversubscribe);
    const int total = executors * claim.threads;
    if (total <= 1) return claim;  // no workers: nothing to pin
    if (!pin)
      claim.unpinned = "CGC_PIN=0";
    else if (allowed.empty())
      claim.unpinned = "the CPUs this process may use are unknown";
    else if (total > static_cast<int>(allowed.size()))
      claim.unpinned =
          std::to_string(total) + " threads, " + std::to_string(allowed.size()) + " CPUs";
    else if (total > static_cast<int>(free.size()))
      claim.unpinned = "cores held by other instances";
    if (!claim.unpinned.empty()) return claim;
    claim.cpus.assign(free.begin(), free.begin() + total);
    for (int i = 0; i < total; ++i)
      state_[claim.cpus[i]].store(i == 0 ? kCaller : kWorker, std::memory_order_relaxed);
    return claim;
  }

  void release(const std::vector<int>& cpus) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int cpu : cpus) state_[cpu].store(kFree, std::memory_order_relaxed);
  }

  /// Whether a worker of some pool is pinned to `cpu` (no lock).
  bool workerOn(int cpu) const {
    return cpu >= 0 && cpu < CPU_SETSIZE && state_[cpu].load(std::memory_order_relaxed) == kWorker;
  }

  /// The CPUs the process may use that no worker is pinned to.
  std::vector<int> cpusWithoutWorkers() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<int> cpus;
    for (int cpu : allowedCpus())
      if (state_[cpu].load(std::memory_order_relaxed) != kWorker) cpus.push_back(cpu);
    return cpus;
  }

 private:
  enum : uint8_t { kFree, kCaller, kWorker };
  std::mutex mutex_;
  std::atomic<uint8_t> state_[CPU_SETSIZE]{};  // by CPU number
};

}  // namespace

int available_cpus() {
  const auto& cpus = allowedCpus();
  if (!cpus.empty()) return static_cast<int>(cpus.size());
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

ExecutorPool::ExecutorPool(int executors, int threads_per_executor, int signals)
    : executors_(std::max(1, executors)), signals_(new Signal[std::max(1, signals)]) {
  CpuRegistry::Claim claim = CpuRegistry::instance().claim(
      executors_, threads_per_executor == 0 ? 0 : std::max(1, threads_per_executor),
      pinningWanted(), oversubscriptionWanted());
  threads_ = claim.threads;
  claimed_ = std::move(claim.cpus);
  for (int e = 0; e < executors_; ++e)
    for (int k = 1; k <= threads_; ++k) barriers_.push_back(std::make_unique<rt::SpinBarrier>(k));
  const int total = executors_ * threads_;
  placement_.assign(total, -1);
  // The caller's CPU is claimed_[0]; worker `slot` takes claimed_[slot].
  if (!claimed_.empty())
    for (int slot = 1; slot < total; ++slot) placement_[slot] = claimed_[slot];
  try {
    startWorkers();
  } catch (...) {
    stopWorkers();
    CpuRegistry::instance().release(claimed_);
    throw;
  }
  description_ = describe(claim.unpinned, claim.capped);
  oversubscription_ = std::move(claim.oversubscribed);
}

void ExecutorPool::startWorkers() {
  const int total = executors_ * threads_;
  workers_.reserve(total - 1);
  for (int slot = 1; slot < total; ++slot) {
    workers_.emplace_back([this, slot] { worker(slot); });
    if (placement_[slot] < 0) continue;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(placement_[slot], &set);
    if (pthread_setaffinity_np(workers_.back().native_handle(), sizeof(set), &set) != 0) {
      // Not pinned after all: give its CPU back.
      CpuRegistry::instance().release({placement_[slot]});
      std::erase(claimed_, placement_[slot]);
      placement_[slot] = -1;
    }
  }
}

void ExecutorPool::stopWorkers() {
  generation_.store(kStop, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

ExecutorPool::~ExecutorPool() {
  stopWorkers();
  CpuRegistry::instance().release(claimed_);
}

namespace {

/// The calling thread's mask before keepCallerOffWorkers narrowed it, for
/// run() to give back.
struct CallerMask {
  cpu_set_t cpus;
  bool narrowed = false;
};
thread_local CallerMask callerMask;

/// Gives the calling thread the mask it had before keepCallerOffWorkers.
void restoreCallerMask() {
  if (!callerMask.narrowed) return;
  callerMask.narrowed = false;
  pthread_setaffinity_np(pthread_self(), sizeof(callerMask.cpus), &callerMask.cpus);
}

}  // namespace

void ExecutorPool::keepCallerOffWorkers() {
  CpuRegistry& registry = CpuRegistry::instance();
  if (callerMask.narrowed || !registry.workerOn(sched_getcpu())) return;
  const std::vector<int> cpus = registry.cpusWithoutWorkers();
  if (cpus.empty() ||
      pthread_getaffinity_np(pthread_self(), sizeof(callerMask.cpus), &callerMask.cpus) != 0)
    return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  callerMask.narrowed = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

rt::SpinBarrier* ExecutorPool::barrier_for(int executor, int threads) {
  return barriers_[executor * threads_ + (threads - 1)].get();
}

void ExecutorPool::run(Body body, void* context) {
  // Only a pool that pins workers moves the caller (as before the registry),
  // and only while it runs.
  struct Restore {
    ~Restore() { restoreCallerMask(); }
  } restore;
  if (claimed_.size() > 1) keepCallerOffWorkers();
  body_ = body;
  context_ = context;
  ++run_epoch_;
  finished_.store(0, std::memory_order_relaxed);
  if (!workers_.empty()) {
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
  }
  std::exception_ptr thrown;
  try {
    body(context, 0, rt::Team(0, threads_, barrier_for(0, threads_)));
  } catch (...) {
    thrown = std::current_exception();
  }
  const int workers = static_cast<int>(workers_.size());
  rt::wait_until(finished_, [workers](int finished) { return finished == workers; });
  if (thrown) std::rethrow_exception(thrown);
}

void ExecutorPool::worker(int slot) {
  const int executor = slot / threads_, thread = slot % threads_;
  uint64_t seen = 0;
  for (;;) {
    // Spin briefly for back-to-back runs, then sleep until the next one.
    rt::wait_until(generation_, [seen](uint64_t now) { return now != seen; });
    const uint64_t generation = generation_.load(std::memory_order_acquire);
    if (generation == kStop) return;
    seen = generation;
    body_(context_, executor, rt::Team(thread, threads_, barrier_for(executor, threads_)));
    finished_.fetch_add(1, std::memory_order_acq_rel);
    finished_.notify_all();
  }
}

std::string ExecutorPool::describe(const std::string& unpinned, const std::string& capped) const {
  std::string out =
      std::to_string(executors_) + " executor(s) x " + std::to_string(threads_) + " thread(s):";
  for (int e = 0; e < executors_; ++e) {
    out += " e" + std::to_string(e) + " [";
    for (int t = 0; t < threads_; ++t) {
      int slot = e * threads_ + t;
      if (t > 0) out += ", ";
      out += slot == 0              ? "caller"
             : placement_[slot] < 0 ? "unpinned"
                                    : "cpu " + std::to_string(placement_[slot]);
    }
    out += "]";
  }
  if (!capped.empty()) out += "; capped: " + capped;
  if (!unpinned.empty()) out += "; unpinned: " + unpinned;
  return out;
}

}  // namespace cgc
