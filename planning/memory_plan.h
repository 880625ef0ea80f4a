// Static memory plan: every intermediate tensor and graph input gets an
// offset in one 64-byte-aligned arena. Time is the schedule's happens-before
// relation (schedule.h), so the plan stays right when executors run
// concurrently: two buffers share memory (greedy by size, largest first) only
// when every access of one happens-before the other's first write; views
// (Reshape) alias their input; elementwise ops write in place over an input
// when every other access of it happens-before them; a Concat whose parts are
// contiguous slices of its output (nothing outside the axis, batch 1) has
// its inputs written straight into those slices, and copies nothing. With
// one executor this is interval liveness over its op list.
#pragma once

#include <set>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "lowering/kernel_call.h"
#include "planning/schedule.h"

namespace cgc::passes {

struct MemoryPlan {
  static constexpr int64_t kAlignment = 64;

  /// One region of the arena and the values that live in it over time.
  struct Buffer {
    int64_t offset = 0;
    int64_t bytes = 0;
    // Steps are positions in HappensBefore::order() (for one executor, its
    // op list); informational, the plan itself is built from happens-before.
    int firstStep = 0;  // -1: before the first node (graph inputs)
    int lastStep = 0;   // number of steps: after the last node (outputs)
    std::vector<int> values;
    int scratchFor = -1;  // a node's scratch region (no values), else -1
  };

  std::vector<Buffer> buffers;
  std::vector<int> bufferOf;            // per value id; -1 for constants and unused
  std::vector<int64_t> offsetInBuffer;  // per value id: a Concat's part's slice
  int64_t arenaBytes = 0;
  int64_t bytesWithoutReuse = 0;  // every non-view tensor in its own buffer
  int inPlaceNodes = 0;
  /// Concat nodes whose inputs are written into their slices of the
  /// output, so the Concat copies nothing (by node id).
  std::vector<bool> concatInPlace;
  /// Offset of each node's scratch region (KernelCall::scratchBytes), by
  /// node id; -1 where it has none.
  std::vector<int64_t> scratchOffset;

  /// `bytes` rounded up to kAlignment.
  static int64_t aligned(int64_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  /// The lowest aligned offset where `bytes` fit clear of every [begin,
  /// end) region of `busy`.
  static int64_t firstFit(std::vector<std::pair<int64_t, int64_t>> busy, int64_t bytes);

  bool hasStorage(int value) const { return bufferOf[value] >= 0; }
  int64_t offsetOf(int value) const {
    return buffers[bufferOf[value]].offset + offsetInBuffer[value];
  }
  /// Whether Concat node `node` copies nothing (its inputs lie in their
  /// slices of its output).
  bool copiesNothing(int node) const {
    return node >= 0 && static_cast<size_t>(node) < concatInPlace.size() && concatInPlace[node];
  }
};

/// `copyingConcats`: Concat nodes that copy their inputs whatever their
/// layout (cgc compile --dim: where the parts' sizes vary at run time, their
/// slices' offsets do too).
MemoryPlan planMemory(const ir::Graph& graph, const lowering::KernelCalls& calls,
                      const Schedule& schedule, const std::set<int>& copyingConcats = {});

/// Proves the plan legal, recomputing happens-before from graph and
/// schedule: every tensor fits its buffer inside the arena, buffers that
/// overlap in memory are ordered in time (every access of one happens-before
/// every access of the other), and a value shares a buffer with an earlier
/// one only after every read of that one (or as its last read, when written
/// in place by an elementwise op). Graph inputs and outputs are never
/// overwritten.
/// Every Concat the plan says copies nothing has its inputs in their slices.
/// Throws InternalError listing the violations.
void verifyMemoryPlan(const ir::Graph& graph, const lowering::KernelCalls& calls,
                      const Schedule& schedule, const MemoryPlan& plan);

}  // namespace cgc::passes
