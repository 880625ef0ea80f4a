// Partition (Graphi): list scheduling of the graph onto E executors of T
// threads each. Ready nodes are taken by decreasing level (critical path
// first, passes/levels.h); each goes to the executor where it can start
// earliest, given when that executor is free and when its inputs are ready
// (an input from another executor costs a signal, kCrossExecutorMicros).
// Nodes cheaper than that signal stay with their producer: moving them
// cannot win time and would add cross waits.
//
// Deadlock freedom by construction: nodes are appended to executors in one
// global order in which producers come first, so program order and cross
// dependencies all point forward in that order and cannot form a cycle.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "planning/cost_model.h"
#include "planning/schedule.h"

namespace cgc::passes {

/// What one wait on another executor's signal costs in the simulation: the
/// signal, and the producer's output arriving from another core's cache.
inline constexpr double kCrossExecutorMicros = 1.0;

/// `nodeThreads` (by node id, 0 = all of the executor's threads) is copied
/// into the schedule and used in the simulation; `cgc tune` varies it. One
/// executor gets the topological order: on one executor every order takes
/// the same time, and that one is what the memory plan was tuned on.
Schedule partitionGraph(const ir::Graph& graph, const CostModel& costs, int executors,
                        int threadsPerExecutor, std::vector<int> nodeThreads = {});

/// Predicted microseconds for one run of a (verified) schedule: executors run
/// their lists in order, a node starts when its executor is free and its
/// cross-executor inputs are signalled, and takes cost / parallelSpeedup.
double simulatedMakespan(const ir::Graph& graph, const CostModel& costs, const Schedule& schedule);

}  // namespace cgc::passes
