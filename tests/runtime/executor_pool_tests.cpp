// ExecutorPool placement: what a model instance's threads are pinned to.
#include <pthread.h>
#include <sched.h>

#include <catch2/catch.hpp>
#include <string>
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

}  // namespace

TEST_CASE("a pool built after another on the same thread still pins every worker") {
  // The first pool's run() moves a caller found on its worker's CPU to the
  // other CPUs; the next pool must still see all of the process's CPUs.
  const int available = cgc::available_cpus();
  const std::vector<int> original = threadCpus();
  if (available < 2 || original.size() < 2) {
    WARN("needs 2 CPUs");
    return;
  }
  cgc::ExecutorPool::Body nothing = [](void*, int, const cgc::rt::Team&) {};
  {
    cgc::ExecutorPool first(1, 2, 1);
    REQUIRE(first.placement().at(1) == original[1]);
    setThreadCpus({original[1]});  // the caller on the worker's CPU
    first.run(nothing, nullptr);
    CHECK(threadCpus() != std::vector<int>{original[1]});
  }
  cgc::ExecutorPool second(1, 2, 1);
  CHECK(cgc::available_cpus() == available);
  CHECK(second.placement().at(1) == original[1]);
  CHECK(second.describe_placement().find("unpinned") == std::string::npos);
  setThreadCpus(original);
}
