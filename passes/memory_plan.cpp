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

/// For each value written straight into its slice of a Concat's output: that
/// output (else -1), and the slice's byte offset. A Concat qualifies when its
/// parts are contiguous (nothing outside the axis) and each part is a
/// distinct value computed here: not a graph input, constant or output (the
/// caller's buffers), not a view or another Concat (their storage is
/// another value's), and not a part of an earlier Concat.
struct ConcatParts {
  std::vector<int> output;
  std::vector<int64_t> offset;
};

ConcatParts concatParts(const ir::Graph& graph, const std::vector<int>& order) {
  ConcatParts parts{std::vector<int>(graph.numValues(), -1),
                    std::vector<int64_t>(graph.numValues(), 0)};
  for (int id : order) {
    const ir::Node& node = graph.node(id);
    if (node.op != "Concat") continue;
    const lowering::KernelCall call = lowering::lowerNode(graph, node);
    const auto& args = std::get<lowering::ConcatArgs>(call.params);
    bool eligible = args.outer == 1;
    for (size_t i = 0; i < node.inputs.size() && eligible; ++i) {
      const int in = node.inputs[i];
      const int producer = in >= 0 ? graph.value(in).producer : -1;
      eligible = producer >= 0 && !graph.isGraphOutput(in) && parts.output[in] < 0 &&
                 std::count(node.inputs.begin(), node.inputs.end(), in) == 1 &&
                 graph.node(producer).op != "Concat" &&
                 lowering::lowerNode(graph, graph.node(producer)).kernel != lowering::Kernel::kView;
    }
    if (!eligible) continue;
    int64_t offset = 0;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      parts.output[node.inputs[i]] = node.outputs[0];
      parts.offset[node.inputs[i]] = offset;
      offset += args.partBytes[i];
    }
  }
  return parts;
}

}  // namespace

bool MemoryPlan::concatInPlace(const ir::Graph& graph, const ir::Node& node) const {
  if (node.op != "Concat" || !hasStorage(node.outputs[0])) return false;
  const lowering::KernelCall call = lowering::lowerNode(graph, node);
  const auto& args = std::get<lowering::ConcatArgs>(call.params);
  if (args.outer != 1) return false;
  int64_t at = offsetOf(node.outputs[0]);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const int in = node.inputs[i];
    if (in < 0 || !hasStorage(in) || bufferOf[in] != bufferOf[node.outputs[0]] ||
        offsetOf(in) != at)
      return false;
    at += args.partBytes[i];
  }
  return true;
}

MemoryPlan planMemory(const ir::Graph& graph, const Schedule& schedule) {
  HappensBefore hb(graph, schedule);
  CGC_ASSERT(hb.order().size() == graph.liveNodes().size(),
             "planning memory for a schedule that misses nodes");
  auto readers = readersByValue(graph);
  const int steps = static_cast<int>(hb.order().size());
  auto stepOf = [&](int node) { return hb.position(node); };
  MemoryPlan plan;
  plan.bufferOf.assign(graph.numValues(), -1);
  plan.offsetInBuffer.assign(graph.numValues(), 0);
  const ConcatParts parts = concatParts(graph, hb.order());
  std::vector<bool> pinned;  // buffer holds a graph input or output
  std::vector<Accesses> access;
  std::vector<std::vector<int>> writers;  // per buffer; -1 for graph inputs

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
    writers.push_back({producer});
    plan.bytesWithoutReuse += alignUp(graph.value(value).type.bytes());
    plan.bufferOf[value] = static_cast<int>(plan.buffers.size()) - 1;
    touch(plan.bufferOf[value], value);
    return plan.bufferOf[value];
  };
  auto join = [&](int buffer, int value) {
    auto& b = plan.buffers[buffer];
    b.values.push_back(value);
    b.bytes = std::max(b.bytes, graph.value(value).type.bytes());
    if (graph.isGraphOutput(value)) pinned[buffer] = true;
    plan.bufferOf[value] = buffer;
    writers[buffer].push_back(graph.value(value).producer);
    touch(buffer, value);
  };
  // The first part of a Concat to be computed brings the buffer of the whole
  // output, and every part takes its slice: all their accesses count from
  // then on, so nothing reuses a slice before the Concat's readers are done.
  auto placeConcat = [&](int output, int step) {
    const int buffer = newBuffer(output);
    plan.buffers[buffer].firstStep = step;
    for (int part : graph.node(graph.value(output).producer).inputs) {
      join(buffer, part);
      plan.offsetInBuffer[part] = parts.offset[part];
      plan.bytesWithoutReuse += alignUp(graph.value(part).type.bytes());
    }
  };

  for (int in : graph.inputs) newBuffer(in);
  for (int id : hb.order()) {
    const ir::Node& node = graph.node(id);
    lowering::KernelCall call = lowering::lowerNode(graph, node);
    int out = node.outputs[0];
    if (call.kernel == lowering::Kernel::kView &&
        plan.bufferOf[node.inputs[0]] >= 0) {
      join(plan.bufferOf[node.inputs[0]], out);
      plan.offsetInBuffer[out] = plan.offsetInBuffer[node.inputs[0]];
      continue;
    }
    for (int o : node.outputs)
      if (o >= 0 && parts.output[o] >= 0 && plan.bufferOf[o] < 0)
        placeConcat(parts.output[o], stepOf(id));
    if (plan.bufferOf[out] >= 0) continue;  // a Concat's part or output, placed
    // In place only as the last access of the input's buffer: everything
    // else touching it happens-before this node.
    int reuse = -1, reusedInput = -1;
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
                        [&](int a) { return a == id || hb.before(a, id); })) {
          reuse = buffer;
          reusedInput = in;
        }
      }
    }
    if (reuse >= 0) {
      join(reuse, out);
      plan.offsetInBuffer[out] = plan.offsetInBuffer[reusedInput];
      plan.bytesWithoutReuse += alignUp(graph.value(out).type.bytes());
      ++plan.inPlaceNodes;
    } else {
      newBuffer(out);
    }
    for (size_t o = 1; o < node.outputs.size(); ++o)
      if (node.outputs[o] >= 0 && plan.bufferOf[node.outputs[o]] < 0)
        newBuffer(node.outputs[o]);
  }

  // Buffer A precedes buffer B when all of A's accesses happen-before each
  // of B's writers (everything else in B descends from one of them).
  auto precedes = [&](int a, int b) {
    if (access[a].atExit) return false;
    const auto& nodes = access[a].nodes;
    return std::all_of(writers[b].begin(), writers[b].end(), [&](int writer) {
      return writer >= 0 && std::all_of(nodes.begin(), nodes.end(),
                                         [&](int n) { return hb.before(n, writer); });
    });
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
  // No sum above can overflow: the frontend admits at most ir::kMaxValues
  // tensors holding at most ir::kMaxGraphBytes (2^50) together, and the
  // passes grow that by a small factor, so every offset and total here is
  // far below 2^63. The arena itself must stay within ir::kMaxArenaBytes.
  if (plan.arenaBytes > ir::kMaxArenaBytes)
    userError(graph.where(),
              "the model needs an arena of {} bytes, over the "
              "limit of 2^40 bytes",
              plan.arenaBytes);
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

  // Graph inputs, then every output in happens-before order (producers
  // before consumers, which the alias roots below rely on).
  std::vector<int> needed(graph.inputs.begin(), graph.inputs.end());
  for (int id : hb.order())
    for (int out : graph.node(id).outputs)
      if (out >= 0) needed.push_back(out);
  for (int v : needed) {
    int b = plan.bufferOf.at(v);
    if (b < 0) {
      problems.push_back(fmt::format("'{}' has no storage", name(v)));
      continue;
    }
    const auto& buffer = plan.buffers[b];
    if (plan.offsetInBuffer.at(v) < 0 ||
        plan.offsetInBuffer[v] + graph.value(v).type.bytes() > buffer.bytes ||
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

  // Within a buffer: writers of overlapping bytes are ordered, and a writer
  // follows every read of the earlier writer's data (views and in-place
  // Concats, which alias the values they read, read it too), or is the last
  // such read itself when it runs in place.
  std::map<int, std::vector<int>> writers;  // buffer -> written values
  std::vector<std::vector<int>> roots(graph.numValues());  // alias -> written values
  for (int v : needed) {
    int producer = graph.value(v).producer;
    const ir::Node* node = producer >= 0 ? &graph.node(producer) : nullptr;
    bool isView = node && node->op == "Reshape" &&
                  plan.bufferOf[node->inputs[0]] == plan.bufferOf[v] &&
                  plan.offsetInBuffer[node->inputs[0]] == plan.offsetInBuffer[v];
    if (isView || (node && plan.concatInPlace(graph, *node))) {
      for (int in : node->inputs)
        roots[v].insert(roots[v].end(), roots[in].begin(), roots[in].end());
    } else {
      roots[v] = {v};
      if (plan.bufferOf[v] >= 0) writers[plan.bufferOf[v]].push_back(v);
    }
  }
  std::vector<std::vector<int>> touchedBy(graph.numValues());  // root -> nodes
  std::vector<bool> pinned(graph.numValues(), false);
  for (int v : needed) {
    int producer = graph.value(v).producer;
    for (int root : roots[v]) {
      if (producer >= 0) touchedBy[root].push_back(producer);
      touchedBy[root].insert(touchedBy[root].end(), readers[v].begin(), readers[v].end());
      if (graph.isGraphOutput(v) || graph.value(v).kind == ir::ValueKind::kInput)
        pinned[root] = true;
    }
  }
  auto writeStep = [&](int v) {
    int p = graph.value(v).producer;
    return p >= 0 ? hb.position(p) : -1;
  };
  auto overlap = [&](int a, int b) {
    const int64_t a0 = plan.offsetInBuffer[a], b0 = plan.offsetInBuffer[b];
    return a0 < b0 + graph.value(b).type.bytes() && b0 < a0 + graph.value(a).type.bytes();
  };
  for (auto& [buffer, values] : writers) {
    std::sort(values.begin(), values.end(),
              [&](int a, int b) { return writeStep(a) < writeStep(b); });
    for (size_t j = 1; j < values.size(); ++j)
      for (size_t i = 0; i < j; ++i) {
        int before = values[i], after = values[j];
        if (!overlap(before, after)) continue;  // a Concat's other parts
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
