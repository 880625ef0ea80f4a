// fold-pad: a Pad of zeros on the spatial axes whose only reader is a Conv
// or an AveragePool becomes that op's own padding, as ONNX Runtime's
// PadFusion does, so the padded copy is never made (torchvision's
// Inception-v3 exports each branch pool, avg_pool2d(x, 3, 1, padding=1),
// as Pad then AveragePool: 9 copies of up to 288x37x37 floats). A Conv
// adds the Pad's amounts to its own. An AveragePool counts the Pad's zeros
// in its windows, so it takes them with count_include_pad = 1: where it
// has no padding of its own (else its windows would mix the two kinds),
// and where no window runs past the padded input's end (ceil_mode), since
// count_include_pad would count that overhang too.
#include <algorithm>

#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

/// The spatial pads [begins..., ends...] of a Pad of zeros on a rank-r
/// tensor, or none where it pads more than the spatial axes.
std::vector<int64_t> spatialZeroPads(const ir::Graph& graph, const ir::Node& pad) {
  if (pad.op != "Pad" || pad.getString("mode", "constant") != "constant" ||
      pad.getFloat("value", 0.0) != 0.0 || pad.numPresentInputs() != 1)
    return {};
  const size_t rank = graph.value(pad.inputs[0]).type.shape.size();
  const std::vector<int64_t> pads = pad.getInts("pads");
  if (rank < 3 || pads.size() != 2 * rank || pads[0] || pads[1] || pads[rank] || pads[rank + 1])
    return {};
  std::vector<int64_t> spatial(pads.begin() + 2, pads.begin() + rank);
  spatial.insert(spatial.end(), pads.begin() + rank + 2, pads.end());
  return spatial;
}

/// Whether no window of AveragePool `pool` (its pads `pads`, its input the
/// unpadded `x`) runs past the padded input's end.
bool windowsInside(const ir::Graph& graph, const ir::Node& pool, const ir::Shape& x,
                   const std::vector<int64_t>& pads) {
  const ir::Shape& y = graph.value(pool.outputs[0]).type.shape;
  const size_t spatial = x.size() - 2;
  const std::vector<int64_t> k = pool.getInts("kernel_shape");
  const std::vector<int64_t> s = pool.getInts("strides", std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> d = pool.getInts("dilations", std::vector<int64_t>(spatial, 1));
  for (size_t i = 0; i < spatial; ++i)
    if ((y[i + 2] - 1) * s[i] + (k[i] - 1) * d[i] + 1 > x[i + 2] + pads[i] + pads[i + spatial])
      return false;
  return true;
}

}  // namespace

bool foldPad(ir::Graph& graph, const PassTarget&) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    const ir::Node& pad = graph.node(id);
    const std::vector<int64_t> extra = spatialZeroPads(graph, pad);
    if (extra.empty()) continue;
    const int padded = pad.outputs[0];
    const std::vector<int> readers = graph.consumers(padded);
    if (readers.size() != 1 || graph.isGraphOutput(padded)) continue;
    ir::Node& reader = graph.node(readers[0]);
    if ((reader.op != "Conv" && reader.op != "AveragePool") || reader.inputs[0] != padded ||
        std::count(reader.inputs.begin(), reader.inputs.end(), padded) != 1)
      continue;
    std::vector<int64_t> pads = reader.getInts("pads", std::vector<int64_t>(extra.size(), 0));
    if (pads.size() != extra.size()) continue;
    const bool pool = reader.op == "AveragePool";
    bool ownPadding = false;
    for (size_t i = 0; i < pads.size(); ++i) {
      ownPadding |= pads[i] != 0;
      pads[i] += extra[i];
    }
    const ir::Shape x = graph.value(pad.inputs[0]).type.shape;
    if (pool && ((ownPadding && reader.getInt("count_include_pad", 0) == 0) ||
                 !windowsInside(graph, reader, x, pads)))
      continue;
    reader.attrs["pads"] = pads;
    if (pool) reader.attrs["count_include_pad"] = int64_t{1};
    reader.inputs[0] = pad.inputs[0];
    graph.removeNode(id);
    changed = true;
  }
  return changed;
}

}  // namespace cgc::passes
