// pretranspose-gemm-weights: a Gemm with transB = 1 and a constant B (every
// PyTorch Linear layer exports this way) gets B transposed once at compile
// time and transB = 0. The runtime GEMM reads B row-major, so a transposed B
// would otherwise be repacked on every inference: for a batch-1 classifier
// head that copy costs as much as the product itself.

#include "passes/pass_manager.h"

namespace cgc::passes {

bool pretransposeGemmWeights(ir::Graph& graph, const PassTarget&) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    ir::Node& gemm = graph.node(id);
    if (gemm.op != "Gemm" || gemm.getInt("transB", 0) == 0) continue;
    const ir::Value& b = graph.value(gemm.inputs[1]);
    if (!b.isConstant() || b.type.dtype != DType::kF32 || b.type.rank() != 2) continue;
    const int64_t n = b.type.shape[0], k = b.type.shape[1];
    const float* src = b.dataAs<float>();
    std::vector<float> transposed(static_cast<size_t>(n * k));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t q = 0; q < k; ++q) transposed[q * n + j] = src[j * k + q];
    int bt = addFloatConstant(graph, b.name + "_transposed", {k, n}, transposed);
    ir::Node& node = graph.node(id);  // addConstant may move values, not nodes
    node.inputs[1] = bt;
    node.attrs["transB"] = int64_t{0};
    changed = true;
  }
  return changed;
}

}  // namespace cgc::passes
