// pack-rnn-weights: an RNN, GRU or LSTM whose W and R are constants gets
// them repacked once at compile time into rt::packRnnWeights' order (the
// hidden units in blocks of 16, each block [k][gates][16], as the recurrent
// product and the input projection read them), and the attribute
// cgc_packed_weights = 1 that lowering turns into RnnParams::packed_weights.
// Otherwise every call would check its cached packing against the weights
// (reading them and the cache's copy: 12% of a 1024-unit LSTM at batch 1)
// and each thread would hold two more copies of its weights.
#include "cgc/kernels.h"
#include "ir/conventions.h"
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

namespace cgc::passes {

bool packRecurrentWeights(ir::Graph& graph, const PassTarget&) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    const ir::Node& cell = graph.node(id);
    if ((cell.op != "RNN" && cell.op != "GRU" && cell.op != "LSTM") ||
        cell.getInt(ir::conventions::kPackedWeights, 0) != 0)
      continue;
    const int inputs[2] = {cell.inputs[1], cell.inputs[2]};  // W, R
    auto packable = [&](int v) {
      return graph.value(v).isConstant() && graph.value(v).type.dtype == DType::kF32;
    };
    if (!packable(inputs[0]) || !packable(inputs[1])) continue;
    const lowering::KernelCall call = lowering::lowerNode(graph, cell);
    const auto& params = std::get<rt::RnnParams>(call.params);
    int packedIds[2];
    for (bool recurrent : {false, true}) {
      // Looked up again each time: addConstant may move values.
      const ir::Value& weights = graph.value(inputs[recurrent]);
      const std::string name = weights.name + "_packed";
      std::vector<float> packed(static_cast<size_t>(rt::packedRnnWeightCount(params, recurrent)));
      rt::packRnnWeights(params, weights.dataAs<float>(), recurrent, packed.data());
      // A flat array: the attribute says how its elements are ordered.
      packedIds[recurrent] =
          addFloatConstant(graph, name, {static_cast<int64_t>(packed.size())}, packed);
    }
    ir::Node& node = graph.node(id);  // addConstant may move values, not nodes
    node.inputs[1] = packedIds[0];
    node.inputs[2] = packedIds[1];
    node.attrs[ir::conventions::kPackedWeights] = int64_t{1};
    changed = true;
  }
  return changed;
}

}  // namespace cgc::passes
