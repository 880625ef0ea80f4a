// block-activations: the activations that pass from one packed (or
// Winograd) convolution to the next are stored channel-blocked,
// [n][c / 16][spatial][16] (ir::Layout::kChannelBlocked), instead of NCHW.
//
// The packed and Winograd convolution kernels compute vectors of 16 output
// channels. Into NCHW they leave through a transpose in L1 (about 3% of a
// 3x3 layer); into the blocked layout they are stored as they are, with
// bias, residual and activation applied in registers, and the next such
// convolution reads its inputs from it in place.
//
// A value is blocked when the Conv that writes it can write that layout
// (packed or Winograd weights, rt::convTakesBlockedOutput), or a
// layout-transparent node (an Add of same-shape tensors, a Relu:
// ir::conventions::isLayoutTransparent) writes it from blocked inputs, and
// every reader reads it: such a Conv as its input (rt::convTakesBlockedInput)
// or as the residual of a blocked output, a transparent node with a blocked
// output, or a GlobalAveragePool. Anything else (pooling, Concat, the 1x1
// layers left to LIBXSMM's NCHW GEMM, a graph output) keeps NCHW, so no
// layout conversion is ever inserted. PathNet-style graphs, whose
// convolutions meet in sums, stay blocked through them (each convolution's
// NCHW transposes were a fifth of its time on 16 channels). Moving those 1x1 layers to the
// packed kernel to block more of ResNet-50 made them slower (layer1's
// 64-to-256, depth 64), even with both sides blocked. Runs after
// pack-conv-weights, whose choices it follows.
#include <algorithm>
#include <set>

#include "cgc/kernels.h"
#include "ir/conventions.h"
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

namespace conv = ir::conventions;

struct ConvSides {
  bool input = false, output = false;  // can read x / write y blocked
};

ConvSides blockableSides(const ir::Graph& graph, const ir::Node& n) {
  if (!conv::isPackedConv(n)) return {};
  const auto p = std::get<rt::ConvParams>(lowering::lowerNode(graph, n).params);
  return {rt::convTakesBlockedInput(p), rt::convTakesBlockedOutput(p)};
}

}  // namespace

bool blockActivations(ir::Graph& graph, const PassTarget&) {
  std::vector<ConvSides> sides(graph.numNodeSlots());
  for (int id : graph.liveNodes()) sides[id] = blockableSides(graph, graph.node(id));
  auto transparent = [&](const ir::Node& n) {
    if (!conv::isLayoutTransparent(graph, n)) return false;
    const ir::TensorType& t = graph.value(n.outputs[0]).type;
    return t.rank() >= 3 && t.shape[1] % conv::kChannelBlock == 0;
  };

  // Start from every output a Conv could write blocked, and every output of
  // a layout-transparent node, then drop values that some reader cannot
  // take or whose writer cannot write them until none changes (dropping a
  // Conv's output makes its residual unreadable blocked, a Sum's input its
  // other inputs and its output, and so on).
  std::set<int> blocked;
  for (int id : graph.liveNodes()) {
    const ir::Node& n = graph.node(id);
    if ((sides[id].output || transparent(n)) && !graph.isGraphOutput(n.outputs[0]))
      blocked.insert(n.outputs[0]);
  }
  auto readable = [&](int value) {
    for (int reader : graph.consumers(value)) {
      const ir::Node& n = graph.node(reader);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (n.inputs[i] != value) continue;
        // The rule the verifier checks, with this graph's blocked set for
        // the outputs that decide it and the runtime's word on the Conv's input.
        bool takes = false;
        if (n.op == "GlobalAveragePool")
          takes = i == 0;
        else if (transparent(n))
          takes = blocked.count(n.outputs[0]) > 0;
        else if (conv::isPackedConv(n))
          takes = (i == 0 && sides[reader].input) ||
                  (i == conv::kConvResidual && blocked.count(n.outputs[0]));
        if (!takes) return false;
      }
    }
    return true;
  };
  auto writable = [&](int value) {
    const ir::Node& producer = graph.node(graph.value(value).producer);
    if (transparent(producer))
      return std::all_of(producer.inputs.begin(), producer.inputs.end(),
                         [&](int in) { return blocked.count(in) > 0; });
    const size_t residual = conv::kConvResidual;
    return producer.inputs.size() <= residual || producer.inputs[residual] < 0 ||
           blocked.count(producer.inputs[residual]);
  };
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (auto it = blocked.begin(); it != blocked.end();) {
      if (readable(*it) && writable(*it)) {
        ++it;
      } else {
        it = blocked.erase(it);
        dropped = true;
      }
    }
  }
  for (int value : blocked) graph.value(value).layout = ir::Layout::kChannelBlocked;
  return !blocked.empty();
}

}  // namespace cgc::passes
