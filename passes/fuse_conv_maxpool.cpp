// fuse-conv-maxpool: a stem Conv (few input channels, rt::convFusesMaxPool)
// whose only reader is a 3x3, stride-2 MaxPool stores the pooling of its
// output instead of the output: the MaxPool goes, and the Conv takes its
// output value, with cgc_conv_shape (the Conv's own output shape) and
// cgc_pool_pads (the pool's top and left pads) for lowering.
// A stem's output is the largest tensor of a CNN (3.2 MB in ResNet-50 and
// GoogLeNet): written to memory and read back by the pool, it cost more than
// the pooling itself. Fused, each band of convolution rows is pooled while
// it is in L2, and only the pooled quarter is stored.
// Runs after fuse-epilogues: the activation goes before the pooling (both
// commute with it, being non-decreasing), and a Conv with a residual is
// left alone, as the residual is added before the activation.
#include "cgc/kernels.h"
#include "ir/conventions.h"
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

namespace cgc::passes {

bool fuseConvMaxPool(ir::Graph& graph, const PassTarget&) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    const ir::Node& conv = graph.node(id);
    if (conv.dead || conv.op != "Conv" || conv.has(ir::conventions::kConvShape) ||
        (conv.inputs.size() > ir::conventions::kConvResidual &&
         conv.inputs[ir::conventions::kConvResidual] >= 0))
      continue;
    const int out = conv.outputs[0];
    const auto readers = graph.consumers(out);
    if (readers.size() != 1 || graph.isGraphOutput(out)) continue;
    const ir::Node& pool = graph.node(readers[0]);
    if (pool.op != "MaxPool" || pool.inputs[0] != out ||
        (pool.outputs.size() > 1 && pool.outputs[1] >= 0))
      continue;
    const lowering::KernelCall convCall = lowering::lowerNode(graph, conv);
    const lowering::KernelCall poolCall = lowering::lowerNode(graph, pool);
    if (!rt::convFusesMaxPool(std::get<rt::ConvParams>(convCall.params),
                              std::get<rt::PoolParams>(poolCall.params)))
      continue;
    const auto& poolParams = std::get<rt::PoolParams>(poolCall.params);
    const int poolId = readers[0], pooled = pool.outputs[0];
    ir::Node& fused = graph.node(id);
    fused.attrs[ir::conventions::kConvShape] = graph.value(out).type.shape;
    fused.attrs[ir::conventions::kPoolPads] =
        std::vector<int64_t>{poolParams.pad_top, poolParams.pad_left};
    graph.removeNode(poolId);
    graph.setNodeOutput(id, 0, pooled);
    changed = true;
  }
  return changed;
}

}  // namespace cgc::passes
