// fold-conv-batchnorm: a BatchNormalization that is the only reader of a
// Conv's or a group-1 ConvTranspose's output, with constant weights and
// statistics, is folded into the weights and bias at compile time:
//   W'[o] = W[o] * s[o],  b'[o] = (b[o] - mean[o]) * s[o] + beta[o],
//   s = scale / sqrt(var + epsilon),
// o the output channel: a Conv's weights' first axis, a ConvTranspose's
// second ([C_in, C_out, k...]).
// Inference-time BatchNorm is then free, as in every deployed CNN runtime.
#include <cmath>

#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

bool allConstant(const ir::Graph& graph, const std::vector<int>& values) {
  for (int v : values)
    if (v >= 0 && !graph.value(v).isConstant()) return false;
  return true;
}

}  // namespace

bool foldConvBatchNorm(ir::Graph& graph, const PassTarget&) {
  bool changed = false;
  for (int bnId : graph.topologicalOrder()) {
    ir::Node& bn = graph.node(bnId);
    if (bn.op != "BatchNormalization") continue;
    int convOut = bn.inputs[0];
    int convId = graph.value(convOut).producer;
    if (convId < 0) continue;
    ir::Node& conv = graph.node(convId);
    const bool transposed = conv.op == "ConvTranspose";
    if (conv.op != "Conv" && !(transposed && conv.getInt("group", 1) == 1)) continue;
    if (graph.consumers(convOut).size() != 1 || graph.isGraphOutput(convOut)) continue;
    if (!allConstant(graph, {conv.inputs.begin() + 1, conv.inputs.end()}) ||
        !allConstant(graph, {bn.inputs.begin() + 1, bn.inputs.end()}))
      continue;
    if (graph.value(conv.inputs[1]).type.dtype != DType::kF32) continue;

    const ir::Value& weights = graph.value(conv.inputs[1]);
    // Weights as [outer, outChannels, perChannel]: outer 1 for a Conv.
    const int64_t outChannels = weights.type.shape[transposed ? 1 : 0];
    const int64_t outer = transposed ? weights.type.shape[0] : 1;
    const int64_t perChannel = weights.type.numElements() / outChannels / outer;
    auto scale = graph.value(bn.inputs[1]).doubleValues();
    auto beta = graph.value(bn.inputs[2]).doubleValues();
    auto mean = graph.value(bn.inputs[3]).doubleValues();
    auto var = graph.value(bn.inputs[4]).doubleValues();
    double epsilon = bn.getFloat("epsilon", 1e-5);
    std::vector<double> bias(outChannels, 0.0);
    if (conv.inputs.size() > 2 && conv.inputs[2] >= 0)
      bias = graph.value(conv.inputs[2]).doubleValues();

    std::vector<float> newWeights(weights.type.numElements());
    std::vector<float> newBias(outChannels);
    const float* w = weights.dataAs<float>();
    for (int64_t o = 0; o < outChannels; ++o) {
      double s = scale[o] / std::sqrt(var[o] + epsilon);
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t i = 0; i < perChannel; ++i) {
          const int64_t at = (a * outChannels + o) * perChannel + i;
          newWeights[at] = static_cast<float>(w[at] * s);
        }
      newBias[o] = static_cast<float>((bias[o] - mean[o]) * s + beta[o]);
    }
    std::string base = conv.name;
    ir::Shape weightShape = weights.type.shape;  // addConstant may move values
    int wId = addFloatConstant(graph, base + "_bn_weights", weightShape, newWeights);
    int bId = addFloatConstant(graph, base + "_bn_bias", {outChannels}, newBias);
    conv.inputs.resize(3);
    conv.inputs[1] = wId;
    conv.inputs[2] = bId;
    int bnOut = bn.outputs[0];
    graph.removeNode(bnId);
    graph.setNodeOutput(convId, 0, bnOut);
    changed = true;
  }
  return changed;
}

}  // namespace cgc::passes
