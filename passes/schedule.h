// The schedule: which executor runs which node, in what order. A schedule is
// a list of ordered op lists, one per executor, plus the dependencies that
// cross executors (the generated code waits on those). Today's partitioner
// emits one executor running the graph in topological order; the data
// structure is the one the critical-path partitioner fills.
#pragma once

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
/// executor's list respects data dependencies, and every dependency between
/// executors is listed in crossDependencies.
void verifySchedule(const ir::Graph& graph, const Schedule& schedule);

}  // namespace cgc::passes
