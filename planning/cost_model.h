// Cost model: how long each node runs, the input to levels and partitioning.
//
// Two sources. The analytical estimate counts FLOPs and bytes moved per node
// (from its lowered KernelCall) and converts them to microseconds with a
// one-core roofline; it is cheap and needs no measurement, but only ranks
// nodes roughly. A profile written by a model's run (cgc run --profile-out)
// gives measured medians; nodes the profile lacks fall back to the estimate,
// rescaled so both speak the same units. Either way `micros` is the time on
// ONE thread: the partitioner divides by parallelSpeedup() for teams.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "lowering/kernel_call.h"

namespace cgc::passes {

struct CostModel {
  std::vector<double> micros;  // by node id; 0 for dead nodes and views
  /// Threads each node ran with when it was measured (by node id; 0 when the
  /// cost is an estimate), so `cgc tune` can start its search from them.
  std::vector<int> threads;
  bool measured = false;  // some cost came from a profile

  double of(int node) const { return node < static_cast<int>(micros.size()) ? micros[node] : 0.0; }
};

/// Speedup of one op run by a team of `threads`. Sublinear (threads^0.8):
/// kernels share memory bandwidth and pay a barrier per phase, so doubling
/// the team buys a factor of 2^0.8, not 2. Used to turn measured team times into
/// one-thread costs and back.
double parallelSpeedup(int threads);

/// Analytical cost of every live node.
CostModel estimateCosts(const ir::Graph& graph, const lowering::KernelCalls& calls);

/// 16 hex digits of FNV-1a over "name|op|outputs" of the live nodes in
/// topological order: identifies the graph a profile was measured on,
/// independently of how it was scheduled.
std::string graphHash(const ir::Graph& graph);

/// Costs from a profile JSON (runtime/src/profiler.cpp write_profile).
/// Throws CompileError naming the file when it cannot be read or parsed, or
/// when it was measured on a different graph.
CostModel costsFromProfile(const ir::Graph& graph, const lowering::KernelCalls& calls,
                           const std::string& path);
/// The same from a profile already read (a section of the file at `path`,
/// which errors name).
CostModel costsFromProfile(const ir::Graph& graph, const lowering::KernelCalls& calls,
                           const nlohmann::json& profile, const std::string& path);

}  // namespace cgc::passes
