// Sequential scheduling, the happens-before relation of a schedule and the
// schedule verifier; see schedule.h.
#include "planning/schedule.h"

#include <fmt/ranges.h>

#include <set>
#include <tuple>

namespace cgc::passes {
namespace {

/// The edges the generated code enforces: consecutive ops of one executor
/// and cross dependencies, over the scheduled nodes (unknown or repeated ids
/// are the verifier's to report, and skipped here).
struct ExecutionEdges {
  std::vector<int> executor, index;  // by node id; -1 when not scheduled
  std::vector<std::vector<int>> successors, predecessors;

  ExecutionEdges(const ir::Graph& graph, const Schedule& schedule)
      : executor(graph.numNodeSlots(), -1),
        index(graph.numNodeSlots(), -1),
        successors(graph.numNodeSlots()),
        predecessors(graph.numNodeSlots()) {
    for (size_t e = 0; e < schedule.ops.size(); ++e) {
      int previous = -1;
      for (size_t i = 0; i < schedule.ops[e].size(); ++i) {
        int id = schedule.ops[e][i];
        if (id < 0 || id >= graph.numNodeSlots() || graph.node(id).dead || executor[id] >= 0)
          continue;
        executor[id] = static_cast<int>(e);
        index[id] = static_cast<int>(i);
        if (previous >= 0) add(previous, id);
        previous = id;
      }
    }
    for (const auto& dep : schedule.crossDependencies)
      if (scheduled(dep.producer) && scheduled(dep.consumer)) add(dep.producer, dep.consumer);
  }

  bool scheduled(int id) const {
    return id >= 0 && id < static_cast<int>(executor.size()) && executor[id] >= 0;
  }
  void add(int from, int to) {
    successors[from].push_back(to);
    predecessors[to].push_back(from);
  }

  /// Kahn's order, ready nodes taken by (position in their list, executor) so
  /// that one executor gives its own list. On a cycle returns the partial
  /// order and fills `cycle` with its nodes, in edge direction.
  std::vector<int> order(std::vector<int>* cycle) const {
    std::vector<int> pending(executor.size(), 0);
    std::set<std::tuple<int, int, int>> ready;
    int total = 0;
    for (size_t id = 0; id < executor.size(); ++id) {
      if (executor[id] < 0) continue;
      ++total;
      pending[id] = static_cast<int>(predecessors[id].size());
      if (pending[id] == 0) ready.insert({index[id], executor[id], int(id)});
    }
    std::vector<int> result;
    while (!ready.empty()) {
      int id = std::get<2>(*ready.begin());
      ready.erase(ready.begin());
      result.push_back(id);
      for (int s : successors[id])
        if (--pending[s] == 0) ready.insert({index[s], executor[s], s});
    }
    if (static_cast<int>(result.size()) < total && cycle) {
      // Every node left has a predecessor left: walk back until one repeats.
      std::vector<int> seenAt(executor.size(), -1);
      std::vector<int> walk;
      int id = 0;
      while (executor[id] < 0 || pending[id] == 0) ++id;
      while (seenAt[id] < 0) {
        seenAt[id] = static_cast<int>(walk.size());
        walk.push_back(id);
        for (int p : predecessors[id])
          if (pending[p] > 0) {
            id = p;
            break;
          }
      }
      cycle->assign(walk.rbegin(), walk.rend() - seenAt[id]);
    }
    return result;
  }
};

std::string describeCycle(const ir::Graph& graph, const std::vector<int>& cycle) {
  std::vector<std::string> names;
  for (int id : cycle) names.push_back(fmt::format("'{}'", graph.node(id).name));
  names.push_back(names.front());
  return fmt::format(
      "the schedule can deadlock: executors wait on each other "
      "around {}",
      fmt::join(names, " -> "));
}

}  // namespace

std::vector<int> Schedule::linearOrder() const {
  std::vector<int> order;
  size_t longest = 0;
  for (const auto& list : ops) longest = std::max(longest, list.size());
  for (size_t i = 0; i < longest; ++i)
    for (const auto& list : ops)
      if (i < list.size()) order.push_back(list[i]);
  return order;
}

Schedule scheduleSequential(const ir::Graph& graph) {
  Schedule schedule;
  schedule.ops.push_back(graph.topologicalOrder());
  return schedule;
}

HappensBefore::HappensBefore(const ir::Graph& graph, const Schedule& schedule) {
  ExecutionEdges edges(graph, schedule);
  std::vector<int> cycle;
  order_ = edges.order(&cycle);
  if (!cycle.empty()) internalError(__FILE__, __LINE__, describeCycle(graph, cycle));
  position_.assign(graph.numNodeSlots(), -1);
  for (size_t i = 0; i < order_.size(); ++i) position_[order_[i]] = static_cast<int>(i);
  size_t words = (order_.size() + 63) / 64;
  ancestors_.assign(order_.size(), std::vector<uint64_t>(words, 0));
  for (size_t i = 0; i < order_.size(); ++i) {
    auto& mine = ancestors_[i];
    for (int p : edges.predecessors[order_[i]]) {
      int pp = position_[p];
      const auto& theirs = ancestors_[pp];
      for (size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
      mine[pp / 64] |= uint64_t{1} << (pp % 64);
    }
  }
}

void verifySchedule(const ir::Graph& graph, const Schedule& schedule) {
  std::vector<std::string> problems;
  std::vector<int> executorOf(graph.numNodeSlots(), -1);
  std::vector<int> position(graph.numNodeSlots(), -1);
  if (static_cast<int>(schedule.ops.size()) != schedule.executors)
    problems.push_back(
        fmt::format("{} op lists for {} executors", schedule.ops.size(), schedule.executors));
  if (schedule.threadsPerExecutor < 1)
    problems.push_back(fmt::format("{} threads per executor", schedule.threadsPerExecutor));
  for (size_t e = 0; e < schedule.ops.size(); ++e) {
    for (size_t i = 0; i < schedule.ops[e].size(); ++i) {
      int id = schedule.ops[e][i];
      if (id < 0 || id >= graph.numNodeSlots() || graph.node(id).dead) {
        problems.push_back(fmt::format("executor {} runs unknown node {}", e, id));
        continue;
      }
      if (executorOf[id] >= 0)
        problems.push_back(fmt::format("node '{}' is scheduled twice", graph.node(id).name));
      executorOf[id] = static_cast<int>(e);
      position[id] = static_cast<int>(i);
    }
  }
  std::set<std::pair<int, int>> declared, real;
  for (int id : graph.liveNodes()) {
    if (executorOf[id] < 0) {
      problems.push_back(fmt::format("node '{}' is not scheduled", graph.node(id).name));
      continue;
    }
    for (int in : graph.node(id).inputs) {
      if (in < 0) continue;
      int producer = graph.value(in).producer;
      if (producer < 0 || executorOf[producer] < 0) continue;
      real.insert({producer, id});
    }
  }
  for (const auto& dep : schedule.crossDependencies) {
    declared.insert({dep.producer, dep.consumer});
    auto name = [&](int id) {
      return id >= 0 && id < graph.numNodeSlots() ? graph.node(id).name : std::to_string(id);
    };
    if (!real.count({dep.producer, dep.consumer})) {
      problems.push_back(
          fmt::format("cross dependency '{}' -> '{}' is not a data "
                      "dependency",
                      name(dep.producer), name(dep.consumer)));
    } else if (executorOf[dep.producer] == executorOf[dep.consumer] ||
               dep.fromExecutor != executorOf[dep.producer] ||
               dep.toExecutor != executorOf[dep.consumer]) {
      problems.push_back(
          fmt::format("cross dependency '{}' -> '{}' names executors {} -> {}, they run on "
                      "{} and {}",
                      name(dep.producer), name(dep.consumer), dep.fromExecutor, dep.toExecutor,
                      executorOf[dep.producer], executorOf[dep.consumer]));
    }
  }
  for (auto [producer, id] : real) {
    if (executorOf[producer] == executorOf[id]) {
      if (position[producer] >= position[id])
        problems.push_back(fmt::format("node '{}' runs before its producer '{}'",
                                       graph.node(id).name, graph.node(producer).name));
    } else if (!declared.count({producer, id})) {
      problems.push_back(fmt::format("dependency '{}' -> '{}' crosses executors undeclared",
                                     graph.node(producer).name, graph.node(id).name));
    }
  }
  for (size_t id = 0; id < schedule.nodeThreads.size(); ++id) {
    int threads = schedule.nodeThreads[id];
    if (threads < 0 || threads > schedule.threadsPerExecutor)
      problems.push_back(fmt::format(
          "node {} runs on {} threads, its executor has {}",
          id < static_cast<size_t>(graph.numNodeSlots()) ? graph.node(id).name : std::to_string(id),
          threads, schedule.threadsPerExecutor));
  }
  std::vector<int> cycle;
  ExecutionEdges(graph, schedule).order(&cycle);
  if (!cycle.empty()) problems.push_back(describeCycle(graph, cycle));
  if (!problems.empty())
    internalError(__FILE__, __LINE__,
                  fmt::format("schedule verification failed:\n  {}", fmt::join(problems, "\n  ")));
}

}  // namespace cgc::passes
