// The schedule: which executor runs which node, in what order. A schedule is
// a list of ordered op lists, one per executor, plus the dependencies that
// cross executors (the generated code waits on those). scheduleSequential
// runs the graph on one executor in topological order; passes/partition.h
// fills several. The only orderings the generated code enforces are each
// executor's program order and the cross dependencies: HappensBefore is that
// relation, and the memory planner uses it as time. A schedule is free of
// deadlock exactly when those edges form no cycle.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace cgc::passes {

struct CrossDependency {
  int producer;  // node id
  int consumer;  // node id
  int fromExecutor;
  int toExecutor;
};

struct Schedule {
  int executors = 1;
  int threadsPerExecutor = 1;
  /// The team size is decided when the model is created (every core the
  /// process may use), not by the compiler; threadsPerExecutor is then only
  /// the count the costs were estimated with, and no node has a thread
  /// count of its own.
  bool threadsAtRunTime = false;
  /// The threads per executor the compiler fixed, 0 where decided at run
  /// time (as --threads takes them).
  int fixedThreads() const { return threadsAtRunTime ? 0 : threadsPerExecutor; }
  std::vector<std::vector<int>> ops;  // per executor, in execution order
  std::vector<CrossDependency> crossDependencies;
  /// Threads each node runs with, by node id (per-op thread counts, as Liu
  /// et al.); a missing entry or 0 means all of its executor's threads.
  std::vector<int> nodeThreads;

  int threadsOf(int node) const {
    int n = node < static_cast<int>(nodeThreads.size()) ? nodeThreads[node] : 0;
    return n > 0 ? n : threadsPerExecutor;
  }

  /// Every node once, executors interleaved in the order the memory planner
  /// uses as time (step i = position in this list).
  std::vector<int> linearOrder() const;
};

/// One executor, topological order.
Schedule scheduleSequential(const ir::Graph& graph);

/// Throws InternalError unless every live node appears exactly once, each
/// executor's list respects data dependencies, every dependency between
/// executors is listed in crossDependencies and every listed one is a real
/// data dependency between different executors, per-node thread counts fit
/// the executor, and the schedule cannot deadlock (program order plus cross
/// dependencies are acyclic; the message names the nodes of a cycle).
void verifySchedule(const ir::Graph& graph, const Schedule& schedule);

/// Node a happens-before node b when a path of program-order edges (one
/// executor's consecutive ops) and cross dependencies leads from a to b: a
/// has finished before b starts in every run. Bitsets of ancestors by
/// position, O(n^2 / 64) bits; fine for graphs of a few thousand nodes.
class HappensBefore {
 public:
  /// Throws InternalError naming a cycle when the schedule would deadlock.
  HappensBefore(const ir::Graph& graph, const Schedule& schedule);

  /// Strict: before(a, a) is false. Both must be scheduled node ids.
  bool before(int a, int b) const {
    int pa = position_[a], pb = position_[b];
    return (ancestors_[pb][pa / 64] >> (pa % 64)) & 1;
  }
  /// Scheduled nodes in an order consistent with happens-before; for one
  /// executor, its op list.
  const std::vector<int>& order() const { return order_; }
  /// Index in order() by node id; -1 when not scheduled.
  int position(int node) const { return position_[node]; }

 private:
  std::vector<int> order_;
  std::vector<int> position_;
  std::vector<std::vector<uint64_t>> ancestors_;  // by position
};

}  // namespace cgc::passes
