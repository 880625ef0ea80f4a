// Structural checks of the IR; see verifier.h.
#include "ir/verifier.h"

#include <fmt/format.h>

#include <functional>

#include "ir/conventions.h"

namespace cgc::ir {
namespace {

namespace conv = conventions;

/// A channel-blocked value must be the output of a packed Conv or a
/// layout-transparent node, of channels in 16s, never a graph output, and be
/// read only where mayReadBlocked; a blocked Conv output's residual, and a
/// blocked transparent node's inputs, must be blocked too.
void checkLayouts(const Graph& graph, const std::function<void(std::string)>& problem) {
  for (int id : graph.liveNodes()) {
    const Node& n = graph.node(id);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] < 0 || n.inputs[i] >= graph.numValues()) continue;
      const bool blocked = graph.value(n.inputs[i]).layout == Layout::kChannelBlocked;
      const bool reads = conv::mayReadBlocked(graph, n, i);
      if (blocked && !reads)
        problem(fmt::format("node '{}' ({}) reads channel-blocked '{}' as plain", n.name, n.op,
                            graph.value(n.inputs[i]).name));
      if (!blocked && reads && (i == conv::kConvResidual || conv::isLayoutTransparent(graph, n)))
        problem(fmt::format("node '{}' writes a channel-blocked output but reads plain '{}'",
                            n.name, graph.value(n.inputs[i]).name));
    }
    for (int out : n.outputs) {
      if (out < 0 || out >= graph.numValues()) continue;
      const Value& v = graph.value(out);
      if (v.layout != Layout::kChannelBlocked) continue;
      if (!(conv::isPackedConv(n) || conv::isLayoutTransparent(graph, n)) || v.type.rank() < 3 ||
          v.type.shape[1] % conv::kChannelBlock != 0 || graph.isGraphOutput(out))
        problem(fmt::format("value '{}' ({}) of node '{}' ({}) cannot be channel-blocked", v.name,
                            v.type.str(), n.name, n.op));
    }
  }
}

}  // namespace

void verifyGraph(const Graph& graph) {
  std::vector<std::string> problems;
  auto problem = [&](std::string text) { problems.push_back(std::move(text)); };
  std::vector<int> producerOf(graph.numValues(), -1);

  for (int id : graph.liveNodes()) {
    const Node& n = graph.node(id);
    for (int in : n.inputs) {
      if (in >= graph.numValues())
        problem(fmt::format("node '{}' reads unknown value {}", n.name, in));
    }
    for (int out : n.outputs) {
      if (out < 0 || out >= graph.numValues()) {
        problem(fmt::format("node '{}' writes unknown value {}", n.name, out));
        continue;
      }
      if (producerOf[out] >= 0)
        problem(fmt::format("value '{}' is written by '{}' and '{}'", graph.value(out).name,
                            graph.node(producerOf[out]).name, n.name));
      producerOf[out] = id;
      if (graph.value(out).producer != id)
        problem(fmt::format("value '{}' does not name its producer '{}'", graph.value(out).name,
                            n.name));
      if (graph.value(out).kind != ValueKind::kIntermediate)
        problem(fmt::format("node '{}' writes non-intermediate value '{}'", n.name,
                            graph.value(out).name));
    }
  }

  for (int id : graph.liveNodes()) {
    for (int in : graph.node(id).inputs) {
      if (in < 0 || in >= graph.numValues()) continue;
      const Value& v = graph.value(in);
      if (v.kind == ValueKind::kIntermediate && producerOf[in] < 0)
        problem(fmt::format("node '{}' reads '{}', which nothing produces", graph.node(id).name,
                            v.name));
    }
  }

  for (int v = 0; v < graph.numValues(); ++v) {
    const Value& value = graph.value(v);
    bool used = producerOf[v] >= 0 || value.kind != ValueKind::kIntermediate;
    if (!used) continue;
    if (value.type.dtype == DType::kUndefined || dtypeSize(value.type.dtype) == 0)
      problem(fmt::format("value '{}' has no element type", value.name));
    for (int64_t d : value.type.shape)
      if (d < 0)
        problem(
            fmt::format("value '{}' has a negative dimension in {}", value.name, value.type.str()));
    if (value.isConstant() &&
        (!value.data || static_cast<int64_t>(value.data->size()) != value.type.bytes()))
      problem(fmt::format("constant '{}' has no data of {} bytes", value.name, value.type.bytes()));
  }

  for (int out : graph.outputs) {
    if (out < 0 || out >= graph.numValues()) {
      problem(fmt::format("graph output id {} is unknown", out));
      continue;
    }
    const Value& v = graph.value(out);
    if (v.kind == ValueKind::kIntermediate && producerOf[out] < 0)
      problem(fmt::format("graph output '{}' has no producer", v.name));
  }

  checkLayouts(graph, problem);

  if (problems.empty()) {
    try {
      graph.topologicalOrder();
    } catch (const InternalError& e) {
      problem(e.what());
    }
  }
  if (!problems.empty())
    internalError(__FILE__, __LINE__,
                  fmt::format("IR verification failed:\n  {}", fmt::join(problems, "\n  ")));
}

}  // namespace cgc::ir
