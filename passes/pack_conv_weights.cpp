// pack-conv-weights: a Conv whose layer shape a kernel on rearranged
// weights serves better gets its constant weights rearranged once at
// compile time, and the attribute cgc_packed_weights that lowering reads:
//  - 2 and 3: 3x3 layers at stride 1 on 13x13 or larger planes
//    (rt::convPrefersWinograd): Winograd F(2x2, 3x3), or F(4x4, 3x3) where
//    rt::convWinogradTile says so; 2 also 5x5 and 2x2 layers at stride 1,
//    F(2x2, 5x5) and F(2x2, 2x2) (the phases of decompose-conv-transpose),
//    and 1x7 and 7x1 ones, F(2, 7) along the window; 3 also 1x3 and
//    3x1 ones, F(4, 3) along the window; weights transformed by
//    rt::winogradWeights (ConvParams::winograd, winograd_tile);
//  - 1: other layers the packed direct kernel serves better
//    (rt::convPrefersPackedWeights: windows larger than 1x1, 7x7 pointwise
//    layers, 14x14 ones with 256+ output channels; groups 1), weights in
//    rt::packConvWeights' panels (ConvParams::packed_weights).
// Where the choice depends on the vector width, it is the target's
// (PassTarget). Rearranging at run time would copy every weight on every
// inference; doing it in the model constructor would hold two copies.
// Runs after fold-conv-batchnorm, which rewrites the weights it packs.
#include "cgc/kernels.h"
#include "ir/conventions.h"
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

namespace cgc::passes {

bool packConvolutionWeights(ir::Graph& graph, const PassTarget& target) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    const ir::Node& conv = graph.node(id);
    if (conv.op != "Conv" ||
        ir::conventions::convPacking(conv) != ir::conventions::ConvPacking::kNone)
      continue;
    const ir::Value& w = graph.value(conv.inputs[1]);
    if (!w.isConstant() || w.type.dtype != DType::kF32) continue;
    const lowering::KernelCall call = lowering::lowerNode(graph, conv);
    rt::ConvParams params = std::get<rt::ConvParams>(call.params);
    const bool winograd = rt::convPrefersWinograd(params, target.vectorLanes);
    if (winograd) params.winograd_tile = rt::convWinogradTile(params, target.vectorLanes);
    if (!winograd && !rt::convPrefersPackedWeights(params)) continue;
    const int64_t count =
        winograd ? rt::winogradWeightCount(params) : rt::packedConvWeightCount(params);
    std::vector<float> packed(static_cast<size_t>(count));
    if (winograd)
      rt::winogradWeights(params, w.dataAs<float>(), packed.data());
    else
      rt::packConvWeights(params, w.dataAs<float>(), packed.data());
    // A flat array: the attribute says how its elements are ordered.
    int packedId =
        addFloatConstant(graph, w.name + (winograd ? "_winograd" : "_packed"), {count}, packed);
    ir::Node& node = graph.node(id);  // addConstant may move values, not nodes
    node.inputs[1] = packedId;
    node.attrs[ir::conventions::kPackedWeights] =
        static_cast<int64_t>(!winograd                   ? ir::conventions::ConvPacking::kPanels
                             : params.winograd_tile == 4 ? ir::conventions::ConvPacking::kWinograd4
                                                         : ir::conventions::ConvPacking::kWinograd);
    changed = true;
  }
  return changed;
}

}  // namespace cgc::passes
