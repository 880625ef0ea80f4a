// ExecutorPool placement: what a model instance's threads are pinned to,
// and how pools in one process share the CPUs (the registry of claimed
// CPUs, CGC_PIN=0, more threads than CPUs: capped, or CGC_OVERSUBSCRIBE=1).
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cgc/team.h"

namespace {

std::vector<int> threadCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

void setThreadCpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/// Sets an environment variable for a scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// The calling thread's CPUs, as the body of thread 0 sees them during run().
void recordCallerCpus(void* context, int executor, const cgc::rt::Team& team) {
  if (executor == 0 && team.thread() == 0) *static_cast<std::vector<int>*>(context) = threadCpus();
}

/// Counts the threads that ran.
void countThread(void* context, int, const cgc::rt::Team&) {
  static_cast<std::atomic<int>*>(context)->fetch_add(1);
}

}  // namespace

TEST_CASE("a pool built after another on the same thread still pins every worker", "[.cpus2]") {
  // The first pool's run() moves a caller found on its worker's CPU to the
  // other CPUs; the next pool must still see all of the process's CPUs.
  const int available = cgc::available_cpus();
  const std::vector<int> original = threadCpus();
  if (available < 2 || original.size() < 2) FAIL("needs 2 CPUs: ctest's kernels_cpus2 skips it");
  {
    cgc::ExecutorPool first(1, 2, 1);
    REQUIRE(first.placement().at(1) == original[1]);
    setThreadCpus({original[1]});  // the caller on the worker's CPU
    std::vector<int> during;
    first.run(recordCallerCpus, &during);
    CHECK(during != std::vector<int>{original[1]});
    setThreadCpus(original);
  }
  cgc::ExecutorPool second(1, 2, 1);
  CHECK(cgc::available_cpus() == available);
  CHECK(second.placement().at(1) == original[1]);
  CHECK(second.describe_placement().find("unpinned") == std::string::npos);
  setThreadCpus(original);
}

TEST_CASE("a pool leaves the CPU that another copy of the runtime pinned a thread to", "[.cpus2]") {
  // Every model library links its own runtime, whose registry does not see
  // this one's: what another copy holds, the kernel says (a thread pinned to
  // one CPU). Here a plain thread pinned to the last CPU stands for it.
  const std::vector<int> original = threadCpus();
  if (original.size() < 2) FAIL("needs 2 CPUs: ctest's kernels_cpus2 skips it");
  const int held = original.back();
  std::mutex mutex;
  std::condition_variable changed;
  bool pinned = false, done = false;
  std::thread other([&] {
    setThreadCpus({held});
    std::unique_lock<std::mutex> lock(mutex);
    pinned = true;
    changed.notify_all();
    changed.wait(lock, [&] { return done; });
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return pinned; });
  }
  {
    cgc::ExecutorPool pool(1, static_cast<int>(original.size()), 1);
    CHECK(pool.describe_placement().ends_with("unpinned: cores held by other instances"));
    if (original.size() > 2) {
      cgc::ExecutorPool fewer(1, 2, 1);
      for (int cpu : fewer.placement()) CHECK(cpu != held);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  changed.notify_all();
  other.join();
  cgc::ExecutorPool all(1, static_cast<int>(original.size()), 1);  // the CPU is free again
  CHECK(all.describe_placement().find("unpinned") == std::string::npos);
}

TEST_CASE("CGC_PIN=0 leaves the workers unpinned and claims no CPU", "[.cpus2]") {
  if (cgc::available_cpus() < 2) FAIL("needs 2 CPUs: ctest's kernels_cpus2 skips it");
  std::optional<cgc::ExecutorPool> unpinned;
  {
    ScopedEnv env("CGC_PIN", "0");
    unpinned.emplace(1, 2, 1);
  }
  CHECK(unpinned->placement().at(1) == -1);
  CHECK(unpinned->describe_placement() ==
        "1 executor(s) x 2 thread(s): e0 [caller, unpinned]; unpinned: CGC_PIN=0");
  cgc::ExecutorPool pinned(1, 2, 1);  // every CPU still free
  CHECK(pinned.placement().at(1) >= 0);
  std::atomic<int> ran{0};
  unpinned->run(countThread, &ran);
  CHECK(ran == 2);
}

TEST_CASE("more threads than CPUs are capped to them, saying so") {
  const int cpus = cgc::available_cpus();
  cgc::ExecutorPool pool(1, cpus + 1, 1);
  CHECK(pool.threads_per_executor() == cpus);
  const std::string asked = "1 x " + std::to_string(cpus + 1);
  CHECK(pool.describe_placement().find("; capped: " + asked + " asked, " + std::to_string(cpus) +
                                       " CPUs") != std::string::npos);
  CHECK(pool.oversubscription() ==
        "1 executor(s) x " + std::to_string(cpus + 1) + " thread(s) are more threads than the " +
            std::to_string(cpus) + " CPU(s) this process may use: running 1 x " +
            std::to_string(cpus) + " (CGC_OVERSUBSCRIBE=1 or cgc run --oversubscribe runs " +
            asked + ")");
  std::atomic<int> ran{0};
  pool.run(countThread, &ran);
  CHECK(ran == cpus);
}

TEST_CASE("more executors than CPUs run one thread each, unpinned, saying so") {
  const int cpus = cgc::available_cpus();
  cgc::ExecutorPool pool(cpus + 1, 2, 1);
  CHECK(pool.threads_per_executor() == 1);
  CHECK(pool.describe_placement().ends_with("; unpinned: " + std::to_string(cpus + 1) +
                                            " threads, " + std::to_string(cpus) + " CPUs"));
  CHECK(pool.oversubscription().find("running " + std::to_string(cpus + 1) +
                                     " x 1, still more, unpinned and more slowly (compile with "
                                     "--executors " +
                                     std::to_string(cpus) + " or fewer; ") != std::string::npos);
}

TEST_CASE("CGC_OVERSUBSCRIBE=1: more threads than CPUs run unpinned, saying so") {
  const int cpus = cgc::available_cpus();
  std::optional<cgc::ExecutorPool> pool;
  {
    ScopedEnv env("CGC_OVERSUBSCRIBE", "1");
    pool.emplace(1, cpus + 1, 1);
  }
  CHECK(pool->threads_per_executor() == cpus + 1);
  CHECK(pool->oversubscription().empty());
  CHECK(pool->describe_placement().ends_with("; unpinned: " + std::to_string(cpus + 1) +
                                             " threads, " + std::to_string(cpus) + " CPUs"));
  std::atomic<int> ran{0};
  pool->run(countThread, &ran);
  CHECK(ran == cpus + 1);
  // It claimed nothing: a pool that fits still pins.
  if (cpus >= 2) {
    cgc::ExecutorPool fits(1, 2, 1);
    CHECK(fits.placement().at(1) >= 0);
  }
}

TEST_CASE("threads decided at creation: every free CPU, at least one") {
  const int cpus = cgc::available_cpus();
  cgc::ExecutorPool all(1, 0, 1);
  CHECK(all.threads_per_executor() == cpus);
  cgc::ExecutorPool rest(1, 0, 1);  // every CPU is held
  CHECK(rest.threads_per_executor() == 1);
  CHECK(rest.describe_placement() == "1 executor(s) x 1 thread(s): e0 [caller]");
  cgc::ExecutorPool two(2, 0, 1);
  CHECK(two.threads_per_executor() == 1);
  if (cpus >= 2)
    CHECK(two.describe_placement().ends_with("unpinned: cores held by other instances"));
}

TEST_CASE("a caller on a core that another pool's worker holds is moved off it", "[.cpus4]") {
  const std::vector<int> original = threadCpus();
  if (cgc::available_cpus() < 4 || original.size() < 4)
    FAIL("needs 4 CPUs: ctest's kernels_cpus4 skips it");
  cgc::ExecutorPool first(1, 2, 1), second(1, 2, 1);
  const int firstWorker = first.placement().at(1);
  REQUIRE(firstWorker >= 0);
  REQUIRE(second.placement().at(1) >= 0);
  CHECK(second.placement().at(1) != firstWorker);
  setThreadCpus({firstWorker});
  std::vector<int> now;
  second.run(recordCallerCpus, &now);
  CHECK(std::find(now.begin(), now.end(), firstWorker) == now.end());
  CHECK(std::find(now.begin(), now.end(), second.placement().at(1)) == now.end());
  setThreadCpus(original);
}

TEST_CASE("run() gives the caller the CPUs it had: a runtime loaded later sees them all",
          "[.cpus2]") {
  // Each model library links its own runtime, whose CPU list is the
  // calling thread's mask when its first pool is made: a mask left
  // narrowed by an earlier model's run() gave every later one a single CPU.
  const std::vector<int> original = threadCpus();
  if (cgc::available_cpus() < 2 || original.size() < 2)
    FAIL("needs 2 CPUs: ctest's kernels_cpus2 skips it");
  cgc::ExecutorPool pool(1, 2, 1);
  const int worker = pool.placement().at(1);
  REQUIRE(worker >= 0);
  setThreadCpus({worker});  // the caller on the worker's CPU: run() moves it
  std::vector<int> during;
  pool.run(recordCallerCpus, &during);
  CHECK(std::find(during.begin(), during.end(), worker) == during.end());
  CHECK(threadCpus() == std::vector<int>{worker});
  setThreadCpus(original);
  pool.run(recordCallerCpus, &during);
  CHECK(threadCpus() == original);
}
