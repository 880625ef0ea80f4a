// Levels (Graphi): level(n) = cost(n) + the largest level among n's
// consumers, i.e. the cost of the longest path from n to the sink. Running
// nodes in decreasing level keeps the critical path moving first, which is
// what lets list scheduling overlap the side branches with it.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "planning/cost_model.h"

namespace cgc::passes {

/// Producers and consumers of every live node among live nodes, by node id,
/// each listed once (a node reading two outputs of another has one edge).
struct NodeEdges {
  std::vector<std::vector<int>> producers;
  std::vector<std::vector<int>> consumers;
};
NodeEdges nodeEdges(const ir::Graph& graph);

/// Level of every live node, by node id (0 for dead nodes).
std::vector<double> computeLevels(const ir::Graph& graph, const CostModel& costs);

}  // namespace cgc::passes
