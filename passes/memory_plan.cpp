// See memory_plan.h.
#include "passes/memory_plan.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "lowering/kernel_call.h"

namespace cgc::passes {
namespace {

int64_t alignUp(int64_t bytes) {
  return (bytes + MemoryPlan::kAlignment - 1) / MemoryPlan::kAlignment *
         MemoryPlan::kAlignment;
}

/// Step at which each value is defined and last read, over the schedule.
struct Lifetimes {
  std::vector<int> stepOf;  // per node id
  std::vector<int> def;     // per value id
  std::vector<int> lastUse;
  int steps = 0;

  Lifetimes(const ir::Graph& graph, const Schedule& schedule) {
    auto order = schedule.linearOrder();
    steps = static_cast<int>(order.size());
    stepOf.assign(graph.numNodeSlots(), -1);
    for (int i = 0; i < steps; ++i) stepOf[order[i]] = i;
    def.assign(graph.numValues(), -1);
    lastUse.assign(graph.numValues(), -1);
    for (int id : order) {
      // An output nobody reads (LSTM's unnamed Y_c, LayerNormalization's
      // unused Mean) still occupies its buffer while its node writes it.
      for (int out : graph.node(id).outputs) def[out] = lastUse[out] = stepOf[id];
      for (int in : graph.node(id).inputs)
        if (in >= 0) lastUse[in] = std::max(lastUse[in], stepOf[id]);
    }
    for (int out : graph.outputs) lastUse[out] = steps;
    for (int in : graph.inputs) def[in] = -1;
  }
};

bool overlaps(int firstA, int lastA, int firstB, int lastB) {
  return firstA <= lastB && firstB <= lastA;
}

}  // namespace

MemoryPlan planMemory(const ir::Graph& graph, const Schedule& schedule) {
  Lifetimes life(graph, schedule);
  MemoryPlan plan;
  plan.bufferOf.assign(graph.numValues(), -1);
  std::vector<bool> pinned;  // buffer holds a graph input or output

  auto newBuffer = [&](int value) {
    plan.buffers.push_back({0, graph.value(value).type.bytes(), life.def[value],
                            life.lastUse[value], {value}});
    pinned.push_back(graph.value(value).kind == ir::ValueKind::kInput ||
                     graph.isGraphOutput(value));
    plan.bytesWithoutReuse += alignUp(graph.value(value).type.bytes());
    plan.bufferOf[value] = static_cast<int>(plan.buffers.size()) - 1;
  };
  auto join = [&](int buffer, int value) {
    auto& b = plan.buffers[buffer];
    b.values.push_back(value);
    b.lastStep = std::max(b.lastStep, life.lastUse[value]);
    b.bytes = std::max(b.bytes, graph.value(value).type.bytes());
    if (graph.isGraphOutput(value)) pinned[buffer] = true;
    plan.bufferOf[value] = buffer;
  };

  for (int in : graph.inputs) newBuffer(in);
  for (int id : schedule.linearOrder()) {
    const ir::Node& node = graph.node(id);
    lowering::KernelCall call = lowering::lowerNode(graph, node);
    int out = node.outputs[0];
    if (call.kernel == lowering::Kernel::kView &&
        plan.bufferOf[node.inputs[0]] >= 0) {
      join(plan.bufferOf[node.inputs[0]], out);
      continue;
    }
    int reuse = -1;
    if (lowering::mayRunInPlace(call)) {
      size_t candidates = call.kernel == lowering::Kernel::kBinary ? 2 : 1;
      for (size_t i = 0; i < candidates && reuse < 0; ++i) {
        int in = node.inputs[i];
        int buffer = in >= 0 ? plan.bufferOf[in] : -1;
        if (buffer < 0 || pinned[buffer]) continue;
        const ir::TensorType& inType = graph.value(in).type;
        if (inType.bytes() != graph.value(out).type.bytes() ||
            dtypeSize(inType.dtype) != dtypeSize(graph.value(out).type.dtype))
          continue;
        if (plan.buffers[buffer].lastStep == life.stepOf[id]) reuse = buffer;
      }
    }
    if (reuse >= 0) {
      join(reuse, out);
      plan.bytesWithoutReuse += alignUp(graph.value(out).type.bytes());
      ++plan.inPlaceNodes;
    } else {
      newBuffer(out);
    }
    for (size_t o = 1; o < node.outputs.size(); ++o) newBuffer(node.outputs[o]);
  }

  std::vector<int> bySize(plan.buffers.size());
  for (size_t i = 0; i < bySize.size(); ++i) bySize[i] = static_cast<int>(i);
  std::stable_sort(bySize.begin(), bySize.end(), [&](int a, int b) {
    return plan.buffers[a].bytes > plan.buffers[b].bytes;
  });
  std::vector<int> placed;
  for (int index : bySize) {
    MemoryPlan::Buffer& buffer = plan.buffers[index];
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int other : placed) {
      const auto& o = plan.buffers[other];
      if (overlaps(buffer.firstStep, buffer.lastStep, o.firstStep, o.lastStep))
        busy.push_back({o.offset, o.offset + alignUp(o.bytes)});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + alignUp(buffer.bytes) <= begin) break;
      offset = std::max(offset, end);
    }
    buffer.offset = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, offset + alignUp(buffer.bytes));
    placed.push_back(index);
  }
  return plan;
}

void verifyMemoryPlan(const ir::Graph& graph, const Schedule& schedule,
                      const MemoryPlan& plan) {
  Lifetimes life(graph, schedule);
  std::vector<std::string> problems;
  auto name = [&](int v) { return graph.value(v).name; };

  std::vector<int> needed(graph.inputs.begin(), graph.inputs.end());
  for (int id : graph.liveNodes())
    for (int out : graph.node(id).outputs) needed.push_back(out);
  for (int v : needed) {
    int b = plan.bufferOf.at(v);
    if (b < 0) {
      problems.push_back(fmt::format("'{}' has no storage", name(v)));
      continue;
    }
    const auto& buffer = plan.buffers[b];
    if (graph.value(v).type.bytes() > buffer.bytes ||
        buffer.offset % MemoryPlan::kAlignment != 0 ||
        buffer.offset + buffer.bytes > plan.arenaBytes)
      problems.push_back(fmt::format("'{}' does not fit its buffer in the arena",
                                     name(v)));
  }

  // Lifetimes of whole buffers, from scratch.
  std::vector<std::pair<int, int>> span(plan.buffers.size(), {1 << 30, -2});
  for (int v : needed) {
    int b = plan.bufferOf[v];
    if (b < 0) continue;
    span[b].first = std::min(span[b].first, life.def[v]);
    span[b].second = std::max(span[b].second, life.lastUse[v]);
  }
  for (size_t a = 0; a < plan.buffers.size(); ++a)
    for (size_t b = a + 1; b < plan.buffers.size(); ++b) {
      const auto& x = plan.buffers[a];
      const auto& y = plan.buffers[b];
      bool sameTime = overlaps(span[a].first, span[a].second, span[b].first,
                               span[b].second);
      bool sameBytes = x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
      if (sameTime && sameBytes && x.bytes > 0 && y.bytes > 0)
        problems.push_back(fmt::format(
            "buffers of '{}' and '{}' overlap in memory while both are live",
            name(x.values[0]), name(y.values[0])));
    }

  // Within a buffer: a writer may only follow the last read of the previous
  // writer's data (views read it too); reads at the writer's own step are
  // allowed for in-place elementwise ops only.
  std::map<int, std::vector<int>> writers;  // buffer -> written values
  std::vector<int> source(graph.numValues(), -1);  // view -> written value
  for (int v : needed) {
    int producer = graph.value(v).producer;
    bool isView = producer >= 0 && graph.node(producer).op == "Reshape" &&
                  plan.bufferOf[graph.node(producer).inputs[0]] == plan.bufferOf[v];
    if (isView) {
      int in = graph.node(producer).inputs[0];
      source[v] = source[in] >= 0 ? source[in] : in;
    } else if (plan.bufferOf[v] >= 0) {
      writers[plan.bufferOf[v]].push_back(v);
    }
  }
  std::vector<int> lastRead(graph.numValues(), -2);
  std::vector<bool> pinned(graph.numValues(), false);
  for (int v : needed) {
    int root = source[v] >= 0 ? source[v] : v;
    lastRead[root] = std::max(lastRead[root], life.lastUse[v]);
    if (graph.isGraphOutput(v) || graph.value(v).kind == ir::ValueKind::kInput)
      pinned[root] = true;
  }
  for (auto& [buffer, values] : writers) {
    std::sort(values.begin(), values.end(),
              [&](int a, int b) { return life.def[a] < life.def[b]; });
    for (size_t i = 1; i < values.size(); ++i) {
      int before = values[i - 1], after = values[i];
      int writeStep = life.def[after];
      bool ok = !pinned[before] && lastRead[before] <= writeStep;
      if (ok && lastRead[before] == writeStep) {
        const ir::Node& writer = graph.node(graph.value(after).producer);
        ok = lowering::mayRunInPlace(lowering::lowerNode(graph, writer));
      }
      if (!ok)
        problems.push_back(fmt::format("'{}' overwrites '{}' while it is still "
                                       "needed",
                                       name(after), name(before)));
    }
  }
  if (!problems.empty())
    internalError(__FILE__, __LINE__,
                  fmt::format("memory plan verification failed:\n  {}",
                              fmt::join(problems, "\n  ")));
}

}  // namespace cgc::passes
