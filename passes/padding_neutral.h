// Whether padding a variable dimension is neutral: the analysis behind a
// bucket of --specialize (pipeline/specializations.h).
//
// A bucket (`--specialize seq=1..64`) runs static code compiled at its
// bound on inputs padded to it, and takes the outputs' leading part. That
// is only the model's answer where every output element at a position
// below the actual size reads only input positions below it along the
// dimension: element-wise ops, matrix products and convolutions that take
// it as a batch or row axis, reductions and Softmax over other axes,
// Reshape and Transpose that carry the axis whole. The analysis compares
// two static imports of the model, one at the bucket's bound and one at a
// smaller size, every other size alike: the axes whose extents differ are
// the dimension's, a constant that differs must hold at the smaller size
// the leading block of its value at the bound (a position embedding sliced
// by the size), and each node reading the dimension must keep its
// positions apart by the rules of its op. Any other node mixes positions
// and is named.
#pragma once

#include <string>

#include "ir/graph.h"

namespace cgc::passes {

struct PaddingVerdict {
  bool neutral = true;
  /// Where it is not: the node that mixes positions, its op, and why
  /// ("normalizes along it").
  std::string node, op, why;

  /// "'/attn/Softmax' (Softmax) normalizes along it".
  std::string str() const;
};

/// `bound`: the model imported statically with the dimension at a
/// bucket's bound; `smaller`: the same at a smaller size (its values and
/// nodes named alike).
PaddingVerdict paddingNeutral(const ir::Graph& bound, const ir::Graph& smaller);

}  // namespace cgc::passes
