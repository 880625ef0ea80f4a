// See partition.h.
#include "planning/partition.h"

#include <algorithm>
#include <limits>
#include <set>

#include "planning/levels.h"

namespace cgc::passes {
namespace {

double durationOf(const CostModel& costs, const Schedule& schedule, int node) {
  return costs.of(node) / parallelSpeedup(schedule.threadsOf(node));
}

}  // namespace

Schedule partitionGraph(const ir::Graph& graph, const CostModel& costs, int executors,
                        int threadsPerExecutor, std::vector<int> nodeThreads) {
  CGC_ASSERT(executors >= 1 && threadsPerExecutor >= 1, "{} executors x {} threads", executors,
             threadsPerExecutor);
  Schedule schedule;
  schedule.executors = executors;
  schedule.threadsPerExecutor = threadsPerExecutor;
  schedule.nodeThreads = std::move(nodeThreads);
  schedule.ops.resize(executors);
  auto topological = graph.topologicalOrder();
  if (executors == 1) {
    schedule.ops[0] = topological;
    return schedule;
  }

  NodeEdges edges = nodeEdges(graph);
  std::vector<double> level = computeLevels(graph, costs);
  std::vector<int> rank(graph.numNodeSlots(), 0);  // ties: topological order
  for (size_t i = 0; i < topological.size(); ++i) rank[topological[i]] = int(i);
  auto later = [&](int a, int b) {  // priority: higher level first
    if (level[a] != level[b]) return level[a] > level[b];
    return rank[a] < rank[b];
  };
  std::set<int, decltype(later)> ready(later);
  std::vector<int> pending(graph.numNodeSlots(), 0);
  for (int id : topological) {
    pending[id] = static_cast<int>(edges.producers[id].size());
    if (pending[id] == 0) ready.insert(id);
  }

  std::vector<int> executorOf(graph.numNodeSlots(), -1);
  std::vector<double> finish(graph.numNodeSlots(), 0.0);
  std::vector<double> freeAt(executors, 0.0);
  while (!ready.empty()) {
    int id = *ready.begin();
    ready.erase(ready.begin());
    double duration = durationOf(costs, schedule, id);

    // A cheap node follows its last-finishing producer (or any executor
    // when it has none).
    int stayWith = -1;
    if (costs.of(id) <= kCrossExecutorMicros) {
      double latest = -1;
      for (int p : edges.producers[id])
        if (finish[p] > latest) latest = finish[p], stayWith = executorOf[p];
    }
    int best = -1, bestCross = 0;
    double bestStart = std::numeric_limits<double>::infinity();
    for (int e = 0; e < executors; ++e) {
      if (stayWith >= 0 && e != stayWith) continue;
      double start = freeAt[e];
      int cross = 0;
      for (int p : edges.producers[id]) {
        bool remote = executorOf[p] != e;
        cross += remote;
        start = std::max(start, finish[p] + (remote ? kCrossExecutorMicros : 0.0));
      }
      // Equal starts: fewer cross waits, then the lower executor.
      if (start < bestStart || (start == bestStart && cross < bestCross)) {
        best = e;
        bestStart = start;
        bestCross = cross;
      }
    }
    executorOf[id] = best;
    finish[id] = bestStart + duration;
    freeAt[best] = finish[id];
    schedule.ops[best].push_back(id);
    for (int c : edges.consumers[id])
      if (--pending[c] == 0) ready.insert(c);
  }

  for (int id : topological)
    for (int p : edges.producers[id])
      if (executorOf[p] != executorOf[id])
        schedule.crossDependencies.push_back({p, id, executorOf[p], executorOf[id]});
  return schedule;
}

double simulatedMakespan(const ir::Graph& graph, const CostModel& costs, const Schedule& schedule) {
  HappensBefore hb(graph, schedule);
  std::vector<int> executorOf(graph.numNodeSlots(), -1), previous(graph.numNodeSlots(), -1);
  for (size_t e = 0; e < schedule.ops.size(); ++e)
    for (size_t i = 0; i < schedule.ops[e].size(); ++i) {
      executorOf[schedule.ops[e][i]] = static_cast<int>(e);
      if (i > 0) previous[schedule.ops[e][i]] = schedule.ops[e][i - 1];
    }
  std::vector<std::vector<int>> waitsOn(graph.numNodeSlots());
  for (const auto& dep : schedule.crossDependencies) waitsOn[dep.consumer].push_back(dep.producer);
  std::vector<double> finish(graph.numNodeSlots(), 0.0);
  double makespan = 0;
  for (int id : hb.order()) {  // producers and predecessors first
    double start = previous[id] >= 0 ? finish[previous[id]] : 0.0;
    for (int p : waitsOn[id]) start = std::max(start, finish[p] + kCrossExecutorMicros);
    finish[id] = start + durationOf(costs, schedule, id);
    makespan = std::max(makespan, finish[id]);
  }
  return makespan;
}

}  // namespace cgc::passes
