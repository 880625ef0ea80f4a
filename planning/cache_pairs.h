// Key/value caches kept in place (cgc compile --cache-in-place): a decoder
// step reads its cache as a graph input (past_k, [1, heads, past, head]) and
// returns it one position longer as a graph output (present_k, the Concat of
// past_k and the new key along the position axis). Paired, the input and the
// output share one buffer with room for the cache's capacity along that axis:
// the Concat writes only the new positions, the readers of the output stride
// over the capacity, and the next step reads the output as its input without
// a copy (set_dim("past", past + 1)).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "lowering/kernel_call.h"

namespace cgc::passes {

struct CachePair {
  int input = -1;        // value ids: the graph input (past_k) ...
  int output = -1;       // ... and the graph output (present_k) sharing its buffer
  int node = -1;         // the Concat, now a CacheAppend
  int axis = 0;          // the position axis
  int64_t capacity = 0;  // positions each block of the axes before it holds
};

struct CachePairing {
  std::vector<CachePair> pairs;
  /// Caches of that form left as they are: "present_k0: read by node 'x'".
  std::vector<std::string> refused;
};

/// The element strides of a value of `shape` stored with room for
/// `capacity` along `axis` (dense strides where capacity is the extent).
std::vector<int64_t> cacheStrides(const std::vector<int64_t>& shape, int axis, int64_t capacity);

/// Finds the Concats of a graph input into a graph output and pairs each
/// whose readers can read it strided: its call becomes a CacheAppend and
/// the readers' strides (a Transpose's, a MatMul's batch strides, a fused
/// attention's K and V strides) step over the capacity. `capacities` (by
/// input name) are the compile at the bounds' (--dim's other sizes keep its
/// layout); where one is missing the output's extent along the axis is the
/// capacity.
CachePairing pairCaches(const ir::Graph& graph, lowering::KernelCalls& calls,
                        const std::map<std::string, int64_t>& capacities);

}  // namespace cgc::passes
