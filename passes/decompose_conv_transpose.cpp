// decompose-conv-transpose: a 2-D ConvTranspose with constant weights
// becomes ordinary convolutions, so that it runs on the packed and
// Winograd kernels instead of the runtime's GEMM + col2im scatter:
//  - on a 1x1 input without padding, a MatMul: y[n, (co, kh, kw)] =
//    x[n, :] W[:, (co, kh, kw)] (DCGAN's first layer; the Conv form would
//    multiply mostly padding);
//  - otherwise the sub-pixel decomposition: output row o = s*h + i of phase
//    i (0 <= i < s) reads only the taps t = r + s*j, r = (i + pad) mod s,
//    at input row h + d - j, d = (i + pad - r) / s; that is a stride-1
//    convolution of x with the flipped taps W[r + s*(J-1-m)], m < J =
//    ceil((k - r) / s), padded by J-1-d in front. One Conv per phase (s_h *
//    s_w of them, each c_in*J_h*J_w deep, no multiplication by inserted
//    zeros), their outputs stacked by a Concat on axis 0 (written in place:
//    one slice each), then one Transpose interleaves the phases:
//    [s_h, s_w, N, C, H/s_h, W/s_w] -> [N, C, H/s_h, s_h, W/s_w, s_w].
//    At stride 1 there is one phase and no Concat or Transpose.
// Needs group 1, unit dilations and an output whose extent each stride
// divides, with every phase's padding non-negative, and for phases at least
// 16 output channels (one vector of the packed kernel): with fewer, the
// runtime's GEMM over c_out*k_h*k_w rows is the wider product (DCGAN's
// 64-to-3 output layer runs faster there than as four 3-channel Convs).
// Other ConvTransposes keep the runtime's kernel.
#include <fmt/format.h>

#include <cstring>

#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

/// One phase along one axis: the taps W[first + stride*(taps-1-m)], m <
/// taps, and the padding of the stride-1 convolution.
struct Phase {
  int64_t first, taps, padBegin, padEnd;
};

/// The phases of one axis, or none where the decomposition does not apply.
std::vector<Phase> phasesOf(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad) {
  if (out % stride != 0) return {};
  std::vector<Phase> phases;
  for (int64_t i = 0; i < stride; ++i) {
    const int64_t r = (i + pad) % stride;
    if (r >= kernel) return {};
    const int64_t taps = (kernel - r + stride - 1) / stride;
    const int64_t d = (i + pad - r) / stride;
    const Phase phase{r, taps, taps - 1 - d, out / stride - in - (taps - 1 - d) + taps - 1};
    if (phase.padBegin < 0 || phase.padEnd < 0) return {};
    phases.push_back(phase);
  }
  return phases;
}

/// A new float32 value of `shape`, named after `name`.
int newValue(ir::Graph& graph, const std::string& name, ir::Shape shape) {
  return graph.addValue(graph.uniqueValueName(name), {DType::kF32, std::move(shape)});
}

bool decomposable(const ir::Graph& graph, const ir::Node& n) {
  if (n.op != "ConvTranspose" || n.getInt("group", 1) != 1) return false;
  const ir::Value& w = graph.value(n.inputs[1]);
  if (graph.value(n.inputs[0]).type.shape.size() != 4 || !w.isConstant() ||
      w.type.dtype != DType::kF32)
    return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !graph.value(n.inputs[2]).isConstant())
    return false;
  for (int64_t d : n.getInts("dilations", {1, 1}))
    if (d != 1) return false;
  return true;
}

/// x [N, C_in, 1, 1] without padding: MatMul (+ bias per column), Reshape.
bool asMatMul(ir::Graph& graph, int id) {
  const ir::Node n = graph.node(id);
  // Copies: adding values below moves the graph's.
  const ir::Shape x = graph.value(n.inputs[0]).type.shape;
  const ir::Shape w = graph.value(n.inputs[1]).type.shape;
  const ir::Shape y = graph.value(n.outputs[0]).type.shape;
  for (int64_t p : n.getInts("pads", {0, 0, 0, 0}))
    if (p != 0) return false;
  if (x[2] != 1 || x[3] != 1 || y[2] != w[2] || y[3] != w[3]) return false;
  const int64_t columns = w[1] * w[2] * w[3];
  const ir::Value& weights = graph.value(n.inputs[1]);
  std::vector<float> matrix(weights.dataAs<float>(), weights.dataAs<float>() + x[1] * columns);
  const int wId = addFloatConstant(graph, n.name + "_matrix", {x[1], columns}, matrix);
  const int rows = newValue(graph, n.name + "_rows", {x[0], x[1]});
  graph.removeNode(id);
  graph.addNode("Reshape", n.name + "/rows", {n.inputs[0]}, {rows});
  int product = newValue(graph, n.name + "_product", {x[0], columns});
  graph.addNode("MatMul", n.name + "/matmul", {rows, wId}, {product});
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const std::vector<double> bias = graph.value(n.inputs[2]).doubleValues();
    std::vector<float> perColumn(columns);
    for (int64_t c = 0; c < columns; ++c)
      perColumn[c] = static_cast<float>(bias[c / (w[2] * w[3])]);
    const int bId = addFloatConstant(graph, n.name + "_column_bias", {columns}, perColumn);
    const int sum = newValue(graph, n.name + "_biased", {x[0], columns});
    graph.addNode("Add", n.name + "/bias", {product, bId}, {sum});
    product = sum;
  }
  graph.addNode("Reshape", n.name + "/planes", {product}, {n.outputs[0]});
  return true;
}

/// The weights of phase (ph, pw) as a Conv's [C_out, C_in, J_h, J_w].
std::vector<float> phaseWeights(const ir::Value& weights, const Phase& ph, const Phase& pw,
                                int64_t stride_h, int64_t stride_w) {
  const ir::Shape& s = weights.type.shape;  // [C_in, C_out, k_h, k_w]
  const float* w = weights.dataAs<float>();
  std::vector<float> out(s[1] * s[0] * ph.taps * pw.taps);
  float* to = out.data();
  for (int64_t co = 0; co < s[1]; ++co)
    for (int64_t ci = 0; ci < s[0]; ++ci)
      for (int64_t mh = 0; mh < ph.taps; ++mh)
        for (int64_t mw = 0; mw < pw.taps; ++mw) {
          const int64_t kh = ph.first + stride_h * (ph.taps - 1 - mh);
          const int64_t kw = pw.first + stride_w * (pw.taps - 1 - mw);
          *to++ = w[((ci * s[1] + co) * s[2] + kh) * s[3] + kw];
        }
  return out;
}

/// The sub-pixel decomposition (see the header).
bool asPhases(ir::Graph& graph, int id) {
  const ir::Node n = graph.node(id);
  const ir::Shape x = graph.value(n.inputs[0]).type.shape;
  const ir::Shape y = graph.value(n.outputs[0]).type.shape;
  const std::vector<int64_t> k = n.getInts("kernel_shape"), s = n.getInts("strides", {1, 1}),
                             pads = n.getInts("pads", {0, 0, 0, 0});
  constexpr int64_t kMinChannels = 16;
  if (y[1] < kMinChannels) return false;
  const std::vector<Phase> rows = phasesOf(x[2], y[2], k[0], s[0], pads[0]);
  const std::vector<Phase> cols = phasesOf(x[3], y[3], k[1], s[1], pads[1]);
  if (rows.empty() || cols.empty()) return false;
  const ir::Shape part{x[0], y[1], y[2] / s[0], y[3] / s[1]};
  const bool single = s[0] == 1 && s[1] == 1;
  graph.removeNode(id);
  std::vector<int> parts;
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < cols.size(); ++j) {
      const std::string name = single ? n.name : fmt::format("{}/phase{}{}", n.name, i, j);
      const int wId =
          addFloatConstant(graph, name + "_weights", {y[1], x[1], rows[i].taps, cols[j].taps},
                           phaseWeights(graph.value(n.inputs[1]), rows[i], cols[j], s[0], s[1]));
      std::vector<int> inputs{n.inputs[0], wId};
      if (n.inputs.size() > 2 && n.inputs[2] >= 0) inputs.push_back(n.inputs[2]);
      const int out = single ? n.outputs[0] : newValue(graph, name + "_out", part);
      parts.push_back(out);
      graph.addNode("Conv", name, inputs, {out},
                    {{"kernel_shape", std::vector<int64_t>{rows[i].taps, cols[j].taps}},
                     {"strides", std::vector<int64_t>{1, 1}},
                     {"dilations", std::vector<int64_t>{1, 1}},
                     {"pads", std::vector<int64_t>{rows[i].padBegin, cols[j].padBegin,
                                                   rows[i].padEnd, cols[j].padEnd}},
                     {"group", int64_t{1}}});
    }
  if (single) return true;
  const int stacked =
      newValue(graph, n.name + "_phases", {s[0] * s[1] * x[0], y[1], part[2], part[3]});
  graph.addNode("Concat", n.name + "/phases", parts, {stacked}, {{"axis", int64_t{0}}});
  const int split =
      newValue(graph, n.name + "_phase_grid", {s[0], s[1], x[0], y[1], part[2], part[3]});
  graph.addNode("Reshape", n.name + "/phase_grid", {stacked}, {split});
  const int moved =
      newValue(graph, n.name + "_interleaved", {x[0], y[1], part[2], s[0], part[3], s[1]});
  graph.addNode("Transpose", n.name + "/interleave", {split}, {moved},
                {{"perm", std::vector<int64_t>{2, 3, 4, 0, 5, 1}}});
  graph.addNode("Reshape", n.name + "/planes", {moved}, {n.outputs[0]});
  return true;
}

}  // namespace

bool decomposeConvTranspose(ir::Graph& graph, const PassTarget&) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    if (!decomposable(graph, graph.node(id))) continue;
    changed |= asMatMul(graph, id) || asPhases(graph, id);
  }
  return changed;
}

}  // namespace cgc::passes
