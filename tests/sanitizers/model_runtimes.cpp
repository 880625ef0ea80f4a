// Two ModelRuntime instances run concurrently from two threads, built with
// ThreadSanitizer: instance A (1 executor x 2 threads, on the caller's
// arena) and instance B (2 executors x 2 threads, its own arena, a
// cross-executor signal) each run a body of real team work 100 times (the
// threads split a loop writing the arena, meet at a barrier, then each sums
// another thread's share), and every 10th run two threads report failures
// at once. A third thread calls A's run() meanwhile: it must get ok or
// CGC_ERROR_BUSY, and the body's state passes between the threads that
// run A only through run()'s guard. Any report, wrong sum or wrong status
// fails.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "cgc/kernels/common.h"
#include "cgc/runtime.h"

using cgc::rt::Team;

namespace {

constexpr int64_t kItems = 4096;
constexpr int kRuns = 100;

const char* const kNames[] = {"write", "sum"};
const char* const kOps[] = {"Fill", "ReduceSum"};

cgc_model_info makeInfo(const char* name, int executors, int threads) {
  cgc_model_info info{};
  info.name = name;
  info.arena_bytes = (kItems + 64) * static_cast<int64_t>(sizeof(int64_t));
  info.num_nodes = 2;
  info.node_names = kNames;
  info.node_ops = kOps;
  info.executors = executors;
  info.threads_per_executor = threads;
  return info;
}

cgc::ModelSpec makeSpec(const cgc_model_info& info) {
  return {&info, CGC_RUNTIME_ABI_VERSION, 1, 0, nullptr, "none.weights.bin", nullptr, nullptr};
}

/// What a body sees: plain fields, touched only inside run().
struct Work {
  cgc::ModelRuntime* runtime = nullptr;
  int64_t run = 0;  // bumped by executor 0's thread 0 at the start of a run
  int wrong = 0;    // sums that came out wrong (thread 0 of the summing executor)
};

/// Writes this run's values over this thread's share of the arena.
void writeShare(Work& work, const Team& team) {
  auto* data = reinterpret_cast<int64_t*>(work.runtime->arena());
  const cgc::rt::Range share = team.split(kItems, 16);
  for (int64_t i = share.begin; i < share.end; ++i) data[i] = work.run * kItems + i;
}

/// Sums the next thread's share into this thread's slot; thread 0 checks
/// the total.
void sumShares(Work& work, const Team& team) {
  auto* data = reinterpret_cast<int64_t*>(work.runtime->arena());
  int64_t* sums = data + kItems;
  const Team next((team.thread() + 1) % team.size(), team.size(), nullptr);
  const cgc::rt::Range share = next.split(kItems, 16);
  int64_t sum = 0;
  for (int64_t i = share.begin; i < share.end; ++i) sum += data[i];
  sums[team.thread()] = sum;
  team.barrier();
  if (team.thread() != 0) return;
  int64_t total = 0;
  for (int t = 0; t < team.size(); ++t) total += sums[t];
  if (total != work.run * kItems * kItems + kItems * (kItems - 1) / 2) ++work.wrong;
}

/// A: one executor writes, then sums.
void bodyA(void* context, int, const Team& team) {
  Work& work = *static_cast<Work*>(context);
  if (team.thread() == 0) ++work.run;
  team.barrier();
  writeShare(work, team);
  team.barrier();
  if (work.run % 10 == 0) work.runtime->fail(team.thread(), cgc::rt::Status::kIndexOutOfRange);
  sumShares(work, team);
  team.barrier();
}

/// B: executor 0 writes and publishes signal 0; executor 1 waits for it and
/// sums.
void bodyB(void* context, int executor, const Team& team) {
  Work& work = *static_cast<Work*>(context);
  cgc::ExecutorPool& pool = work.runtime->pool();
  if (executor == 0) {
    if (team.thread() == 0) ++work.run;
    team.barrier();
    writeShare(work, team);
    team.barrier();
    if (work.run % 10 == 0) work.runtime->fail(0, cgc::rt::Status::kSizeBeyondBound);
    if (team.thread() == 0) pool.publish(0);
  } else {
    pool.wait(0);
    if (work.run % 10 == 0) work.runtime->fail(1, cgc::rt::Status::kSizeBeyondBound);
    sumShares(work, team);
    team.barrier();
  }
}

/// Runs `runtime` kRuns times; returns the number of wrong statuses.
int runMany(cgc::ModelRuntime& runtime, cgc::ExecutorPool::Body body, Work& work,
            const std::string& failure) {
  int bad = 0;
  for (int i = 0; i < kRuns;) {
    const cgc::Status status = runtime.run(body, &work);
    if (status.code() == CGC_ERROR_BUSY) continue;  // the third thread was inside
    ++i;
    // Whether this run failed: its counter, read after run() returned.
    const bool failing = work.run % 10 == 0;
    if (failing ? status.message().find(failure) == std::string::npos : !status.ok()) {
      std::fprintf(stderr, "%s run %ld: unexpected status %d '%s'\n", runtime.info().name,
                   static_cast<long>(work.run), status.code(), status.message().c_str());
      ++bad;
    }
  }
  return bad;
}

}  // namespace

int main() {
  const cgc_model_info infoA = makeInfo("RuntimeA", 1, 2), infoB = makeInfo("RuntimeB", 2, 2);
  const cgc::ModelSpec specA = makeSpec(infoA), specB = makeSpec(infoB);
  alignas(64) static unsigned char callerArena[(kItems + 64) * sizeof(int64_t)];
  cgc::ModelRuntime a(specA, nullptr, callerArena, sizeof callerArena);
  cgc::ModelRuntime b(specB);
  Work workA{&a}, workB{&b};
  std::printf("A: %s\nB: %s\n", a.placement().c_str(), b.placement().c_str());

  std::atomic<bool> done{false};
  std::atomic<int> busy{0}, intruderBad{0};
  int badA = 0, badB = 0;
  std::thread threadA([&] { badA = runMany(a, bodyA, workA, "an index is out of range"); });
  std::thread threadB([&] { badB = runMany(b, bodyB, workB, "bound"); });
  std::thread intruder([&] {  // A's run() from a second thread
    auto idle = [](void*, int, const Team&) {};
    while (!done.load()) {
      const cgc::Status status = a.run(idle, nullptr);
      if (status.code() == CGC_ERROR_BUSY)
        ++busy;
      else if (!status.ok())
        ++intruderBad;
      std::this_thread::yield();
    }
  });
  threadA.join();
  threadB.join();
  done = true;
  intruder.join();
  const int wrong = workA.wrong + workB.wrong;
  if (badA || badB || wrong || intruderBad) {
    std::fprintf(stderr, "model runtimes: %d + %d wrong statuses, %d wrong sums, %d intruder\n",
                 badA, badB, wrong, intruderBad.load());
    return EXIT_FAILURE;
  }
  std::printf("model runtimes: 2 instances x %d runs from two threads (%d busy refusals)\n", kRuns,
              busy.load());
  return EXIT_SUCCESS;
}
