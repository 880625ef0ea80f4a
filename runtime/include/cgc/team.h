// cgc runtime: executors and their thread teams.
//
// A compiled model runs on E executors of T threads each. One persistent
// ExecutorPool per model instance holds the E x T - 1 worker threads (the
// thread calling run() is executor 0's thread 0), each pinned to its own core
// when there are enough; several instances in one process take different
// cores while cores allow (a process-wide registry of the CPUs that pools
// hold). run() opens one parallel region for the whole
// inference (as DeepCPU's ParallelOuterRNN): every thread runs its executor's
// straight-line op list, the threads of one executor meet at a cheap barrier
// after each op, and an executor that needs a tensor produced on another
// waits on that producer's signal (an atomic run counter: spin with pause,
// then sleep on its futex; never a lost wake-up). Between runs the workers sleep on a futex,
// so a model that is never run costs no CPU.
//
// Kernels that split their work take a `const Team&` as their last argument:
// every thread of the team calls the kernel with the same arguments and does
// its share (Team::split); the generated code puts the barrier after the node.
// The default argument, Team::serial(), is one thread and no barrier, which is
// how the constant folder and the tests call them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace cgc::rt {

/// Waits until `ready(value)` holds for an atomic: spins with a pause
/// instruction for up to kSpinMicros (the common case: the other thread is
/// about to arrive, or the caller runs the model again right away), then
/// sleeps on the atomic's futex, so that an idle model costs no CPU and
/// threads sharing a core (more threads than cores) give it up. A futex
/// wake-up costs tens of microseconds, as much as a small model's whole
/// run, hence the spin. Whoever changes the value calls notify_all(), which
/// costs no system call while nobody sleeps.
inline constexpr int64_t kSpinMicros = 100;

template <typename T, typename Ready>
void wait_until(const std::atomic<T>& atomic, Ready ready) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline{};
  bool spinning = true;
  for (uint32_t spins = 0;; ++spins) {
    T value = atomic.load(std::memory_order_acquire);
    if (ready(value)) return;
    if (spinning && spins % 256 == 255) {  // the clock costs more than a pause
      const Clock::time_point now = Clock::now();
      if (deadline == Clock::time_point{})
        deadline = now + std::chrono::microseconds(kSpinMicros);
      else
        spinning = now < deadline;
    }
    if (spinning) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    } else {
      atomic.wait(value, std::memory_order_acquire);
    }
  }
}

/// Sense-reversing barrier for a fixed number of threads.
class SpinBarrier {
 public:
  explicit SpinBarrier(int threads = 1) : threads_(threads) {}
  void wait() {
    if (threads_ <= 1) return;
    uint32_t phase = phase_.load(std::memory_order_relaxed);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {
      arrived_.store(0, std::memory_order_relaxed);
      phase_.store(phase + 1, std::memory_order_release);
      phase_.notify_all();
      return;
    }
    wait_until(phase_, [phase](uint32_t now) { return now != phase; });
  }

  /// A pointer one thread leaves for the others to read after a wait().
  void share(void* pointer) { shared_.store(pointer, std::memory_order_relaxed); }
  void* shared() const { return shared_.load(std::memory_order_relaxed); }

 private:
  int threads_;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<uint32_t> phase_{0};
  std::atomic<void*> shared_{nullptr};
};

/// Contiguous half-open range of work items.
struct Range {
  int64_t begin, end;
  int64_t size() const { return end - begin; }
};

/// What a kernel sees of the threads that run it.
class Team {
 public:
  Team(int thread, int size, SpinBarrier* barrier)
      : thread_(thread), size_(size), barrier_(barrier) {}

  /// One thread, no barrier.
  static const Team& serial() {
    static const Team team(0, 1, nullptr);
    return team;
  }

  int thread() const { return thread_; }
  int size() const { return size_; }

  /// All threads of the team; returns when every one has arrived.
  void barrier() const {
    if (size_ > 1) barrier_->wait();
  }

  /// This thread's share of [0, n): contiguous, in multiples of `grain`
  /// (except the last share), near-equal across the team.
  Range split(int64_t n, int64_t grain = 1) const {
    int64_t chunks = (n + grain - 1) / grain;
    int64_t base = chunks / size_, extra = chunks % size_;
    int64_t first = thread_ * base + std::min<int64_t>(thread_, extra);
    int64_t count = base + (thread_ < extra ? 1 : 0);
    return {std::min(n, first * grain), std::min(n, (first + count) * grain)};
  }

  /// Thread 0's `pointer`, on every thread; a barrier, so every thread must
  /// call it. (The barrier's release and acquire order the store and loads;
  /// the next share() comes after another barrier, once all have read; a
  /// kernel that shares its scratch ends with a barrier, so that thread 0
  /// neither reuses nor frees it while the others read.)
  template <typename T>
  T* shareFromFirst(T* pointer) const {
    if (size_ <= 1) return pointer;
    if (thread_ == 0) barrier_->share(pointer);
    barrier_->wait();
    return static_cast<T*>(barrier_->shared());
  }

 private:
  int thread_;
  int size_;
  SpinBarrier* barrier_;
};

}  // namespace cgc::rt

namespace cgc {

/// The threads of one model instance: E executors x T threads, one parallel
/// region per run(). Not reentrant: one run() at a time per pool.
///
/// Placement. The process keeps a registry of the CPUs its pools hold, so
/// that several instances in one process run on different cores: a pool
/// whose E x T threads fit in the CPUs that no other pool holds (of those the
/// process may use) claims E x T of them, in order: the first for the thread
/// that calls run() (which is not pinned, but no other pool's worker is
/// pinned there either) and one per worker, which is pinned to it. The pool
/// gives them back when it is destroyed. When fewer CPUs are free, or E x T
/// exceeds the CPUs, or CGC_PIN=0, the workers run unpinned and
/// describe_placement() says why ("unpinned: cores held by other
/// instances"). A pool of one thread has no workers and claims nothing.
///
/// Oversubscription. More threads than the CPUs the process may use is
/// ruinous (a barrier waits for a thread that has no core: a model runs
/// tens of times slower at 3 threads on 2 cores), so a pool given E x T above them runs
/// max(1, CPUs / E) threads per executor instead, and oversubscription()
/// says so (a model compiled for a bigger machine still runs well on a
/// smaller one). CGC_OVERSUBSCRIBE=1 in the environment runs E x T as given.
/// Executors cannot be capped (the schedule is compiled): more executors
/// than CPUs run unpinned, and oversubscription() says that too.
class ExecutorPool {
 public:
  /// What one executor runs: its thread of `team` executes op list `executor`.
  /// `team` is the whole executor team; Team(thread, k, barrier(k)) for the
  /// first k threads gives a node fewer threads (see barrier_for).
  using Body = void (*)(void* context, int executor, const rt::Team& team);

  /// `signals`: how many cross-executor signals the op lists use.
  /// `threads_per_executor` 0 decides here: the CPUs the process may use
  /// that no other pool holds, divided by the executors, at least 1 (every
  /// CPU the process may use when it is the only pool); see
  /// threads_per_executor(). Pinning and capping: see the class comment. The calling
  /// thread is not pinned, but when run() finds it on a CPU that a worker (of
  /// any pool) is pinned to, its affinity is narrowed to the CPUs no worker
  /// holds until run() returns (left narrowed, it is all a model library
  /// loaded later would see). Throws std::system_error if threads cannot start.
  ExecutorPool(int executors, int threads_per_executor, int signals);
  ~ExecutorPool();
  ExecutorPool(const ExecutorPool&) = delete;
  ExecutorPool& operator=(const ExecutorPool&) = delete;

  /// Runs `body` on every thread and returns when all have finished. When
  /// the calling thread's body throws, run() still waits for the workers,
  /// then rethrows (so a body must not throw while its team mates wait for
  /// it at a barrier: they would wait forever).
  void run(Body body, void* context);

  /// Marks cross-executor signal `signal` as produced in this run. Call from
  /// one thread of the producing executor, after its barrier.
  void publish(int signal) {
    signals_[signal].value.store(run_epoch_, std::memory_order_release);
    signals_[signal].value.notify_all();
  }
  /// Waits until `signal` has been published in this run.
  void wait(int signal) const {
    const uint64_t epoch = run_epoch_;
    rt::wait_until(signals_[signal].value, [epoch](uint64_t value) { return value >= epoch; });
  }

  /// Barrier for the first `threads` threads of `executor` (1 <= threads <= T).
  rt::SpinBarrier* barrier_for(int executor, int threads);

  int executors() const { return executors_; }
  /// T: as given, capped to the CPUs (see the class comment), or as decided
  /// at construction when given 0.
  int threads_per_executor() const { return threads_; }
  /// Empty, or a warning when E x T as given exceed the CPUs the process
  /// may use and CGC_OVERSUBSCRIBE=1 is not set: "1 executor(s) x 64
  /// thread(s) are more threads than the 2 CPU(s) this process may use:
  /// running 1 x 2 (CGC_OVERSUBSCRIBE=1 or cgc run --oversubscribe runs
  /// 1 x 64)".
  const std::string& oversubscription() const { return oversubscription_; }
  /// CPU of each thread, executor-major; -1 where not pinned (thread 0 is the
  /// caller's thread).
  const std::vector<int>& placement() const { return placement_; }
  /// "2 executor(s) x 1 thread(s): e0 [caller] e1 [cpu 1]"; when the threads
  /// were capped, followed by what was asked ("; capped: 1 x 64 asked, 2
  /// CPUs"); when the workers are unpinned, followed by why ("; unpinned:
  /// cores held by other instances", "; unpinned: CGC_PIN=0", "; unpinned:
  /// 4 threads, 2 CPUs").
  const std::string& describe_placement() const { return description_; }

 private:
  struct alignas(64) Signal {
    std::atomic<uint64_t> value{0};
  };
  void worker(int slot);
  void startWorkers();
  void stopWorkers();
  std::string describe(const std::string& unpinned, const std::string& capped) const;
  void keepCallerOffWorkers();

  int executors_, threads_ = 1;
  std::vector<int> placement_;
  std::vector<int> claimed_;  // CPUs held in the registry: the caller's, then the workers'
  std::string description_;
  std::string oversubscription_;
  std::unique_ptr<Signal[]> signals_;
  std::vector<std::unique_ptr<rt::SpinBarrier>> barriers_;  // [e * T + (k-1)]
  std::vector<std::thread> workers_;
  uint64_t run_epoch_ = 0;
  Body body_ = nullptr;
  void* context_ = nullptr;
  alignas(64) std::atomic<uint64_t> generation_{0};  // bumped to start a run; ~0 to stop
  alignas(64) std::atomic<int> finished_{0};
};

/// CPUs this process may run on (sched_getaffinity), or hardware_concurrency.
int available_cpus();

}  // namespace cgc
