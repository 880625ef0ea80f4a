// Sequential scheduling and the schedule verifier; see schedule.h.
#include "passes/schedule.h"

#include <fmt/ranges.h>

#include <set>

namespace cgc::passes {

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

void verifySchedule(const ir::Graph& graph, const Schedule& schedule) {
  std::vector<std::string> problems;
  std::vector<int> executorOf(graph.numNodeSlots(), -1);
  std::vector<int> position(graph.numNodeSlots(), -1);
  if (static_cast<int>(schedule.ops.size()) != schedule.executors)
    problems.push_back(fmt::format("{} op lists for {} executors",
                                   schedule.ops.size(), schedule.executors));
  for (size_t e = 0; e < schedule.ops.size(); ++e) {
    for (size_t i = 0; i < schedule.ops[e].size(); ++i) {
      int id = schedule.ops[e][i];
      if (id < 0 || id >= graph.numNodeSlots() || graph.node(id).dead) {
        problems.push_back(fmt::format("executor {} runs unknown node {}", e, id));
        continue;
      }
      if (executorOf[id] >= 0)
        problems.push_back(fmt::format("node '{}' is scheduled twice",
                                       graph.node(id).name));
      executorOf[id] = static_cast<int>(e);
      position[id] = static_cast<int>(i);
    }
  }
  std::set<std::pair<int, int>> declared;
  for (const auto& dep : schedule.crossDependencies)
    declared.insert({dep.producer, dep.consumer});
  for (int id : graph.liveNodes()) {
    if (executorOf[id] < 0) {
      problems.push_back(fmt::format("node '{}' is not scheduled",
                                     graph.node(id).name));
      continue;
    }
    for (int in : graph.node(id).inputs) {
      if (in < 0) continue;
      int producer = graph.value(in).producer;
      if (producer < 0 || executorOf[producer] < 0) continue;
      if (executorOf[producer] == executorOf[id]) {
        if (position[producer] >= position[id])
          problems.push_back(fmt::format("node '{}' runs before its producer '{}'",
                                         graph.node(id).name,
                                         graph.node(producer).name));
      } else if (!declared.count({producer, id})) {
        problems.push_back(fmt::format(
            "dependency '{}' -> '{}' crosses executors undeclared",
            graph.node(producer).name, graph.node(id).name));
      }
    }
  }
  if (!problems.empty())
    internalError(__FILE__, __LINE__,
                  fmt::format("schedule verification failed:\n  {}",
                              fmt::join(problems, "\n  ")));
}

}  // namespace cgc::passes
