// A graph interpreted node by node with the runtime kernels
// (lowering::evaluate), for pass tests that compare a graph's outputs before
// and after a pass. One float input; a view (Reshape, Flatten) copies its
// input.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "ir/graph.h"
#include "lowering/kernel_call.h"

namespace cgc::testing {

/// Every graph output, as floats.
inline std::vector<std::vector<float>> interpretAll(const ir::Graph& g,
                                                    const std::vector<float>& x) {
  std::map<int, std::vector<uint8_t>> buffers;
  auto data = [&](int v) -> const void* {
    if (g.value(v).isConstant()) return g.value(v).data->data();
    return buffers.at(v).data();
  };
  buffers[g.inputs[0]].resize(x.size() * sizeof(float));
  std::memcpy(buffers[g.inputs[0]].data(), x.data(), x.size() * sizeof(float));
  for (int id : g.topologicalOrder()) {
    auto call = lowering::lowerNode(g, g.node(id));
    const int out = g.node(id).outputs[0];
    buffers[out].resize(g.value(out).type.bytes());
    if (call.kernel == lowering::Kernel::kView) {
      std::memcpy(buffers[out].data(), data(call.inputs[0]), buffers[out].size());
      continue;
    }
    std::vector<const void*> ins;
    for (int in : call.inputs) ins.push_back(in >= 0 ? data(in) : nullptr);
    lowering::evaluate(call, ins, {buffers[out].data()});
  }
  std::vector<std::vector<float>> result;
  for (int v : g.outputs) {
    const auto& bytes = buffers.at(v);
    result.emplace_back(bytes.size() / sizeof(float));
    std::memcpy(result.back().data(), bytes.data(), bytes.size());
  }
  return result;
}

/// The first graph output.
inline std::vector<float> interpret(const ir::Graph& g, const std::vector<float>& x) {
  return interpretAll(g, x).front();
}

}  // namespace cgc::testing
