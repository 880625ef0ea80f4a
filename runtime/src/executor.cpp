// ExecutorPool: the persistent worker threads of one model instance; see
// cgc/team.h.
#include <pthread.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "cgc/team.h"

namespace cgc {
namespace {

constexpr uint64_t kStop = ~uint64_t{0};

/// The CPUs this process may run on, read once, at the first pool: the
/// calling thread's own mask is no guide later, since keepCallerOffWorkers
/// narrows it (a second model built on that thread saw one CPU, left its
/// workers unpinned on the caller's CPU and ran at half speed).
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

bool pinningWanted() {
  const char* env = std::getenv("CGC_PIN");
  return !env || std::strcmp(env, "0") != 0;
}

}  // namespace

int available_cpus() {
  const auto& cpus = allowedCpus();
  if (!cpus.empty()) return static_cast<int>(cpus.size());
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

ExecutorPool::ExecutorPool(int executors, int threads_per_executor, int signals)
    : executors_(std::max(1, executors)),
      threads_(std::max(1, threads_per_executor)),
      signals_(new Signal[std::max(1, signals)]) {
  for (int e = 0; e < executors_; ++e)
    for (int k = 1; k <= threads_; ++k)
      barriers_.push_back(std::make_unique<rt::SpinBarrier>(k));
  int total = executors_ * threads_;
  const std::vector<int>& cpus = allowedCpus();
  bool pin = pinningWanted() && total <= static_cast<int>(cpus.size());
  placement_.assign(total, -1);
  // The caller usually sits on the first CPU; the workers take the others.
  for (int slot = 1; slot < total; ++slot)
    if (pin) placement_[slot] = cpus[slot];
  workers_.reserve(total - 1);
  for (int slot = 1; slot < total; ++slot) {
    workers_.emplace_back([this, slot] { worker(slot); });
    if (placement_[slot] >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(placement_[slot], &set);
      if (pthread_setaffinity_np(workers_.back().native_handle(), sizeof(set),
                                 &set) != 0)
        placement_[slot] = -1;
    }
  }
  for (int slot = 1; slot < total; ++slot)
    if (placement_[slot] >= 0) {
      if (placement_[slot] >= static_cast<int>(workerCpu_.size()))
        workerCpu_.resize(placement_[slot] + 1, 0);
      workerCpu_[placement_[slot]] = 1;
    }
  if (!workerCpu_.empty())
    for (int cpu : cpus)
      if (cpu >= static_cast<int>(workerCpu_.size()) || !workerCpu_[cpu])
        callerCpus_.push_back(cpu);
  description_ = describe();
}

void ExecutorPool::keepCallerOffWorkers() {
  const int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= static_cast<int>(workerCpu_.size()) || !workerCpu_[cpu]) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : callerCpus_) CPU_SET(c, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

ExecutorPool::~ExecutorPool() {
  generation_.store(kStop, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

rt::SpinBarrier* ExecutorPool::barrier_for(int executor, int threads) {
  return barriers_[executor * threads_ + (threads - 1)].get();
}

void ExecutorPool::run(Body body, void* context) {
  if (!callerCpus_.empty()) keepCallerOffWorkers();
  body_ = body;
  context_ = context;
  ++run_epoch_;
  finished_.store(0, std::memory_order_relaxed);
  if (!workers_.empty()) {
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
  }
  body(context, 0, rt::Team(0, threads_, barrier_for(0, threads_)));
  const int workers = static_cast<int>(workers_.size());
  rt::wait_until(finished_, [workers](int finished) { return finished == workers; });
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
    body_(context_, executor,
          rt::Team(thread, threads_, barrier_for(executor, threads_)));
    finished_.fetch_add(1, std::memory_order_acq_rel);
    finished_.notify_all();
  }
}

std::string ExecutorPool::describe() const {
  std::string out = std::to_string(executors_) + " executor(s) x " +
                    std::to_string(threads_) + " thread(s):";
  for (int e = 0; e < executors_; ++e) {
    out += " e" + std::to_string(e) + " [";
    for (int t = 0; t < threads_; ++t) {
      int slot = e * threads_ + t;
      if (t > 0) out += ", ";
      out += slot == 0 ? "caller"
             : placement_[slot] < 0 ? "unpinned"
                                    : "cpu " + std::to_string(placement_[slot]);
    }
    out += "]";
  }
  return out;
}

}  // namespace cgc
