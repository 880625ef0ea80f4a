// See levels.h.
#include "planning/levels.h"

#include <algorithm>

namespace cgc::passes {

NodeEdges nodeEdges(const ir::Graph& graph) {
  NodeEdges edges;
  edges.producers.resize(graph.numNodeSlots());
  edges.consumers.resize(graph.numNodeSlots());
  for (int id : graph.liveNodes()) {
    auto& producers = edges.producers[id];
    for (int in : graph.node(id).inputs) {
      if (in < 0) continue;
      int p = graph.value(in).producer;
      if (p < 0 || graph.node(p).dead) continue;
      if (std::find(producers.begin(), producers.end(), p) != producers.end()) continue;
      producers.push_back(p);
      edges.consumers[p].push_back(id);
    }
  }
  return edges;
}

std::vector<double> computeLevels(const ir::Graph& graph, const CostModel& costs) {
  NodeEdges edges = nodeEdges(graph);
  std::vector<double> level(graph.numNodeSlots(), 0.0);
  auto order = graph.topologicalOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    double below = 0;
    for (int c : edges.consumers[*it]) below = std::max(below, level[c]);
    level[*it] = costs.of(*it) + below;
  }
  return level;
}

}  // namespace cgc::passes
