// Constant folding of one node: its kernel call, run on the constants'
// bytes by the same runtime kernels that generated code calls (evaluate, in
// kernel_table.cpp), and its outputs replaced by the results (or, for a
// value computed from the sizes of variable dimensions, made known while
// the node stays for run time). An output of
// data-dependent size (NonZero of a constant) becomes a constant of the
// size the kernel found: its shape is static from then on.
#include <algorithm>
#include <cstring>
#include <optional>

#include "lowering/kernel_call.h"

namespace cgc::lowering {
namespace {

/// The actual shape of a dynamic output, from the extents the kernel wrote
/// for the node's first output (whose size slots the others share).
ir::Shape actualShape(const ir::Graph& graph, const ir::Node& node, const ir::Value& v,
                      const int64_t* extents) {
  const ir::DynamicExtent& first = graph.value(node.outputs[0]).dynamic;
  ir::Shape shape = v.type.shape;
  for (size_t i = 0; i < v.dynamic.dims.size(); ++i) {
    const int slot = v.dynamic.sizeSlot + static_cast<int>(i) - first.sizeSlot;
    CGC_ASSERT(slot >= 0 && slot < static_cast<int>(first.dims.size()),
               "output '{}' of '{}' has a size slot its first output does not write", v.name,
               node.name);
    shape[v.dynamic.dims[i]] = std::clamp<int64_t>(extents[slot], 0, shape[v.dynamic.dims[i]]);
  }
  return shape;
}

/// The elements of `bytes` (stored at the bound shape) within `actual`.
std::vector<uint8_t> crop(const std::vector<uint8_t>& bytes, const ir::TensorType& bound,
                          const ir::Shape& actual) {
  const size_t elem = static_cast<size_t>(dtypeSize(bound.dtype));
  const int64_t count = ir::numElements(actual);
  std::vector<uint8_t> out(static_cast<size_t>(count) * elem);
  std::vector<int64_t> index(actual.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t at = 0;
    for (size_t d = 0; d < actual.size(); ++d) at = at * bound.shape[d] + index[d];
    std::memcpy(out.data() + e * elem, bytes.data() + at * elem, elem);
    for (int d = static_cast<int>(actual.size()) - 1; d >= 0; --d) {
      if (++index[d] < actual[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

/// What folding the node gives: each output's type and bytes, or nothing
/// when it does not fold (an input neither constant nor known, no kernel,
/// a view or data-dependent output `keep` rules out). `keep`: the node
/// stays (evaluateNode), so no output of data-dependent size.
std::optional<std::vector<std::pair<ir::TensorType, std::vector<uint8_t>>>> compute(
    ir::Graph& graph, const ir::Node& node, bool keep) {
  if (node.dead || (node.sized && !keep)) return std::nullopt;
  for (int v : node.inputs)
    if (v >= 0 && !graph.value(v).bytesKnown()) return std::nullopt;
  Lowered lowered = tryLower(graph, node);
  const KernelCall* call = std::get_if<KernelCall>(&lowered);
  if (!call || (isStructural(call->kernel) && call->kernel != Kernel::kView)) return std::nullopt;
  // Sizes that follow variable dimensions (--dim) stay for run time.
  if (call->kernel == Kernel::kSizes && !keep) return std::nullopt;
  // A view or an op that only passes a run-time extent on (its input is a
  // constant now, so it would be a source of one) is left to the passes.
  const bool sized =
      !node.outputs.empty() && node.outputs[0] >= 0 &&
      !graph.value(node.outputs[0]).dynamic.empty() && call->kernel != Kernel::kView &&
      std::find(kernelInfo(call->kernel).args.begin(), kernelInfo(call->kernel).args.end(),
                ArgKind::kExtents) != kernelInfo(call->kernel).args.end();
  // A sized node folds before anything reads it (on import): readers
  // already imported carry its extent on.
  for (int v : node.outputs)
    if (v >= 0 && !graph.value(v).dynamic.empty() &&
        (keep || !sized || !graph.consumers(v).empty()))
      return std::nullopt;
  std::vector<std::pair<ir::TensorType, std::vector<uint8_t>>> results;
  if (call->kernel == Kernel::kView) {
    results.emplace_back(graph.value(node.outputs[0]).type,
                         *graph.value(call->inputs[0]).bytesKnown());
    return results;
  }
  std::vector<const void*> inputPtrs;
  for (int v : call->inputs)
    inputPtrs.push_back(v >= 0 ? graph.value(v).bytesKnown()->data() : nullptr);
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<void*> outputPtrs;
  // An output the kernel may skip (-1, a null pointer) has no value.
  for (int v : call->outputs) {
    buffers.emplace_back(v >= 0 ? graph.value(v).type.bytes() : 0);
    outputPtrs.push_back(v >= 0 ? buffers.back().data() : nullptr);
  }
  int64_t extents[rt::kMaxRank] = {};
  const rt::Status status = evaluate(*call, inputPtrs, outputPtrs, extents);
  if (status != rt::Status::kOk)
    userError(graph.where(node), "{} (in constant inputs)", rt::statusMessage(status));
  for (size_t i = 0; i < call->outputs.size() && call->outputs[i] >= 0; ++i) {
    const ir::Value& result = graph.value(call->outputs[i]);
    ir::TensorType type = result.type;
    std::vector<uint8_t> bytes = std::move(buffers[i]);
    if (!result.dynamic.empty()) {
      type.shape = actualShape(graph, node, result, extents);
      bytes = crop(bytes, result.type, type.shape);
    }
    results.emplace_back(std::move(type), std::move(bytes));
  }
  return results;
}

}  // namespace

std::vector<int> foldNode(ir::Graph& graph, int nodeId) {
  auto results = compute(graph, graph.node(nodeId), /*keep=*/false);
  if (!results) return {};
  const std::vector<int> outputs = graph.node(nodeId).outputs;
  std::vector<int> constants;
  for (size_t i = 0; i < results->size(); ++i)
    constants.push_back(graph.addConstant(graph.value(outputs[i]).name + "_folded",
                                          std::move((*results)[i].first),
                                          std::move((*results)[i].second)));
  for (size_t i = 0; i < constants.size(); ++i) graph.replaceAllUses(outputs[i], constants[i]);
  graph.removeNode(nodeId);
  return constants;
}

bool evaluateNode(ir::Graph& graph, int nodeId) {
  auto results = compute(graph, graph.node(nodeId), /*keep=*/true);
  if (!results) return false;
  const std::vector<int> outputs = graph.node(nodeId).outputs;
  for (size_t i = 0; i < results->size(); ++i)
    graph.value(outputs[i]).known =
        std::make_shared<const std::vector<uint8_t>>(std::move((*results)[i].second));
  return true;
}

}  // namespace cgc::lowering
