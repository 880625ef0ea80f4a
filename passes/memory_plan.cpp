// See memory_plan.h. Time is the schedule's happens-before relation
// (schedule.h), not a step counter: with several executors two nodes may run
// at the same time unless program order or a cross dependency orders them,
// so a buffer may only be reused once every access to it happens-before the
// new value's producer starts. With one executor happens-before is the op
// list's order and this is plain interval liveness.
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

/// Live nodes reading each value, by value id.
std::vector<std::vector<int>> readersByValue(const ir::Graph& graph) {
  std::vector<std::vector<int>> readers(graph.numValues());
  for (int id : graph.liveNodes())
    for (int in : graph.node(id).inputs)
      if (in >= 0 && (readers[in].empty() || readers[in].back() != id))
        readers[in].push_back(id);
  return readers;
}

/// When a buffer is touched: the nodes writing or reading any of its values,
/// and whether the caller touches it before the run (an input) or after it
/// (an output). Buffers are ordered when every access of one happens-before
/// every access of the other.
struct Accesses {
  std::vector<int> nodes;
  bool atEntry = false, atExit = false;

  void add(const ir::Graph& graph, const std::vector<std::vector<int>>& readers,
           int value) {
    const ir::Value& v = graph.value(value);
    if (v.producer >= 0) nodes.push_back(v.producer);
    nodes.insert(nodes.end(), readers[value].begin(), readers[value].end());
    atEntry |= v.kind == ir::ValueKind::kInput;
    atExit |= graph.isGraphOutput(value);
  }
  /// Every access of *this happens-before every access of `later`.
  bool before(const Accesses& later, const HappensBefore& hb) const {
    if (atExit || later.atEntry) return nodes.empty() && !atExit;
    for (int a : nodes)
      for (int b : later.nodes)
        if (!hb.before(a, b)) return false;
    return true;
  }
  bool mayOverlap(const Accesses& other, const HappensBefore& hb) const {
    return !before(other, hb) && !other.before(*this, hb);
  }
};

}  // namespace

MemoryPlan planMemory(const ir::Graph& graph, const Schedule& schedule) {
  HappensBefore hb(graph, schedule);
  CGC_ASSERT(hb.order().size() == graph.liveNodes().size(),
             "planning memory for a schedule that misses nodes");
  auto readers = readersByValue(graph);
  const int steps = static_cast<int>(hb.order().size());
  auto stepOf = [&](int node) { return hb.position(node); };
  MemoryPlan plan;
  plan.bufferOf.assign(graph.numValues(), -1);
  std::vector<bool> pinned;  // buffer holds a graph input or output
  std::vector<Accesses> access;
  std::vector<int> firstWriter;  // per buffer; -1 for graph inputs

  auto touch = [&](int buffer, int value) {
    access[buffer].add(graph, readers, value);
    auto& b = plan.buffers[buffer];
    for (int n : access[buffer].nodes) b.lastStep = std::max(b.lastStep, stepOf(n));
    if (access[buffer].atExit) b.lastStep = steps;
  };
  auto newBuffer = [&](int value) {
    int producer = graph.value(value).producer;
    plan.buffers.push_back({0, graph.value(value).type.bytes(),
                            producer >= 0 ? stepOf(producer) : -1, -1, {value}});
    pinned.push_back(graph.value(value).kind == ir::ValueKind::kInput ||
                     graph.isGraphOutput(value));
    access.emplace_back();
    firstWriter.push_back(producer);
    plan.bytesWithoutReuse += alignUp(graph.value(value).type.bytes());
    plan.bufferOf[value] = static_cast<int>(plan.buffers.size()) - 1;
    touch(plan.bufferOf[value], value);
  };
  auto join = [&](int buffer, int value) {
    auto& b = plan.buffers[buffer];
    b.values.push_back(value);
    b.bytes = std::max(b.bytes, graph.value(value).type.bytes());
    if (graph.isGraphOutput(value)) pinned[buffer] = true;
    plan.bufferOf[value] = buffer;
    touch(buffer, value);
  };

  for (int in : graph.inputs) newBuffer(in);
  for (int id : hb.order()) {
    const ir::Node& node = graph.node(id);
    lowering::KernelCall call = lowering::lowerNode(graph, node);
    int out = node.outputs[0];
    if (call.kernel == lowering::Kernel::kView &&
        plan.bufferOf[node.inputs[0]] >= 0) {
      join(plan.bufferOf[node.inputs[0]], out);
      continue;
    }
    // In place only as the last access of the input's buffer: everything
    // else touching it happens-before this node.
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
        const auto& nodes = access[buffer].nodes;
        if (std::all_of(nodes.begin(), nodes.end(),
                        [&](int a) { return a == id || hb.before(a, id); }))
          reuse = buffer;
      }
    }
    if (reuse >= 0) {
      join(reuse, out);
      plan.bytesWithoutReuse += alignUp(graph.value(out).type.bytes());
      ++plan.inPlaceNodes;
    } else {
      newBuffer(out);
    }
    for (size_t o = 1; o < node.outputs.size(); ++o)
      if (node.outputs[o] >= 0) newBuffer(node.outputs[o]);
  }

  // Buffer A precedes buffer B when all of A's accesses happen-before B's
  // first writer (everything else in B descends from that writer).
  auto precedes = [&](int a, int b) {
    if (access[a].atExit || firstWriter[b] < 0) return false;
    const auto& nodes = access[a].nodes;
    return std::all_of(nodes.begin(), nodes.end(),
                       [&](int n) { return hb.before(n, firstWriter[b]); });
  };
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
      if (!precedes(index, other) && !precedes(other, index))
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
  HappensBefore hb(graph, schedule);
  CGC_ASSERT(hb.order().size() == graph.liveNodes().size(),
             "verifying memory for a schedule that misses nodes");
  auto readers = readersByValue(graph);
  std::vector<std::string> problems;
  auto name = [&](int v) { return graph.value(v).name; };

  std::vector<int> needed(graph.inputs.begin(), graph.inputs.end());
  for (int id : graph.liveNodes())
    for (int out : graph.node(id).outputs)
      if (out >= 0) needed.push_back(out);
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

  // Buffers overlapping in memory must be ordered in time, from scratch.
  std::vector<Accesses> access(plan.buffers.size());
  for (int v : needed)
    if (plan.bufferOf[v] >= 0) access[plan.bufferOf[v]].add(graph, readers, v);
  for (size_t a = 0; a < plan.buffers.size(); ++a)
    for (size_t b = a + 1; b < plan.buffers.size(); ++b) {
      const auto& x = plan.buffers[a];
      const auto& y = plan.buffers[b];
      bool sameBytes = x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
      if (sameBytes && x.bytes > 0 && y.bytes > 0 && !x.values.empty() &&
          !y.values.empty() && access[a].mayOverlap(access[b], hb))
        problems.push_back(fmt::format(
            "buffers of '{}' and '{}' overlap in memory and may be live at the "
            "same time",
            name(x.values[0]), name(y.values[0])));
    }

  // Within a buffer: writers are ordered, and a writer follows every read of
  // the previous writer's data (views read it too), or is the last such
  // read itself when it runs in place.
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
  std::vector<std::vector<int>> touchedBy(graph.numValues());  // root -> nodes
  std::vector<bool> pinned(graph.numValues(), false);
  for (int v : needed) {
    int root = source[v] >= 0 ? source[v] : v;
    int producer = graph.value(v).producer;
    if (producer >= 0) touchedBy[root].push_back(producer);
    touchedBy[root].insert(touchedBy[root].end(), readers[v].begin(), readers[v].end());
    if (graph.isGraphOutput(v) || graph.value(v).kind == ir::ValueKind::kInput)
      pinned[root] = true;
  }
  auto writeStep = [&](int v) {
    int p = graph.value(v).producer;
    return p >= 0 ? hb.position(p) : -1;
  };
  for (auto& [buffer, values] : writers) {
    std::sort(values.begin(), values.end(),
              [&](int a, int b) { return writeStep(a) < writeStep(b); });
    for (size_t i = 1; i < values.size(); ++i) {
      int before = values[i - 1], after = values[i];
      int writer = graph.value(after).producer;
      bool ok = !pinned[before] && writer >= 0;
      bool inPlace = false;
      for (size_t k = 0; ok && k < touchedBy[before].size(); ++k) {
        int n = touchedBy[before][k];
        if (n == writer)
          inPlace = true;
        else
          ok = hb.before(n, writer);
      }
      if (ok && inPlace)
        ok = lowering::mayRunInPlace(lowering::lowerNode(graph, graph.node(writer)));
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
