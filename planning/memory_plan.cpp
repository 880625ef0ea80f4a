// See memory_plan.h. Time is the schedule's happens-before relation
// (schedule.h), not a step counter: with several executors two nodes may run
// at the same time unless program order or a cross dependency orders them,
// so a buffer may only be reused once every access to it happens-before the
// new value's producer starts. With one executor happens-before is the op
// list's order and this is plain interval liveness.
#include "planning/memory_plan.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "lowering/kernel_call.h"

namespace cgc::passes {
namespace {

int64_t alignUp(int64_t bytes) { return MemoryPlan::aligned(bytes); }

/// Live nodes reading each value, by value id.
std::vector<std::vector<int>> readersByValue(const ir::Graph& graph) {
  std::vector<std::vector<int>> readers(graph.numValues());
  for (int id : graph.liveNodes())
    for (int in : graph.node(id).inputs)
      if (in >= 0 && (readers[in].empty() || readers[in].back() != id)) readers[in].push_back(id);
  return readers;
}

/// When a buffer is touched: the nodes writing or reading any of its values,
/// and whether the caller touches it before the run (an input) or after it
/// (an output). Buffers are ordered when every access of one happens-before
/// every access of the other.
struct Accesses {
  std::vector<int> nodes;
  bool atEntry = false, atExit = false;

  void add(const ir::Graph& graph, const std::vector<std::vector<int>>& readers, int value) {
    const ir::Value& v = graph.value(value);
    if (v.producer >= 0) nodes.push_back(v.producer);
    nodes.insert(nodes.end(), readers[value].begin(), readers[value].end());
    // The caller writes a graph input before run() and may call run()
    // again without rewriting it, so it is live from entry to exit; an
    // output is read by the caller after run().
    const bool input = v.kind == ir::ValueKind::kInput;
    atEntry |= input;
    atExit |= input || graph.isGraphOutput(value);
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

ConcatParts concatParts(const ir::Graph& graph, const lowering::KernelCalls& calls,
                        const std::vector<int>& order, const std::set<int>& copying) {
  ConcatParts parts{std::vector<int>(graph.numValues(), -1),
                    std::vector<int64_t>(graph.numValues(), 0)};
  for (int id : order) {
    const ir::Node& node = graph.node(id);
    const lowering::KernelCall& call = calls.of(id);
    if (call.kernel != lowering::Kernel::kConcat || copying.count(id)) continue;
    const auto& partBytes = call.arrays.at("part_bytes");
    bool eligible = call.get<rt::ConcatParams>().outer == 1;
    for (size_t i = 0; i < node.inputs.size() && eligible; ++i) {
      const int in = node.inputs[i];
      const int producer = in >= 0 ? graph.value(in).producer : -1;
      eligible = producer >= 0 && !graph.isGraphOutput(in) && parts.output[in] < 0 &&
                 std::count(node.inputs.begin(), node.inputs.end(), in) == 1 &&
                 calls.of(producer).kernel != lowering::Kernel::kConcat &&
                 calls.of(producer).kernel != lowering::Kernel::kView;
    }
    if (!eligible) continue;
    int64_t offset = 0;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      parts.output[node.inputs[i]] = node.outputs[0];
      parts.offset[node.inputs[i]] = offset;
      offset += partBytes[i];
    }
  }
  return parts;
}

/// Whether every input of Concat `node` lies in its slice of the output.
bool inputsInSlices(const lowering::KernelCall& call, const MemoryPlan& plan) {
  if (call.kernel != lowering::Kernel::kConcat || !plan.hasStorage(call.outputs[0])) return false;
  const auto& partBytes = call.arrays.at("part_bytes");
  if (call.get<rt::ConcatParams>().outer != 1) return false;
  int64_t at = plan.offsetOf(call.outputs[0]);
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const int in = call.inputs[i];
    if (in < 0 || !plan.hasStorage(in) || plan.bufferOf[in] != plan.bufferOf[call.outputs[0]] ||
        plan.offsetOf(in) != at)
      return false;
    at += partBytes[i];
  }
  return true;
}

/// Builds a MemoryPlan: first which values share a buffer (assign: views,
/// in-place ops, Concat slices), then where each buffer lies (place:
/// largest first, beside every buffer it may be live with).
class Planner {
 public:
  Planner(const ir::Graph& graph, const lowering::KernelCalls& calls, const Schedule& schedule,
          const std::set<int>& copyingConcats)
      : graph_(graph),
        calls_(calls),
        hb_(graph, schedule),
        readers_(readersByValue(graph)),
        copyingConcats_(copyingConcats) {
    CGC_ASSERT(hb_.order().size() == graph.liveNodes().size(),
               "planning memory for a schedule that misses nodes");
    plan_.bufferOf.assign(graph.numValues(), -1);
    plan_.offsetInBuffer.assign(graph.numValues(), 0);
    plan_.concatInPlace.assign(graph.numNodeSlots(), false);
    plan_.scratchOffset.assign(graph.numNodeSlots(), -1);
  }

  MemoryPlan run() {
    assign();
    place();
    for (int id : hb_.order()) plan_.concatInPlace[id] = inputsInSlices(calls_.of(id), plan_);
    for (const auto& buffer : plan_.buffers)
      if (buffer.scratchFor >= 0) plan_.scratchOffset[buffer.scratchFor] = buffer.offset;
    return std::move(plan_);
  }

 private:
  void touch(int buffer, int value) {
    access_[buffer].add(graph_, readers_, value);
    auto& b = plan_.buffers[buffer];
    for (int n : access_[buffer].nodes) b.lastStep = std::max(b.lastStep, hb_.position(n));
    if (access_[buffer].atExit) b.lastStep = static_cast<int>(hb_.order().size());
  }

  int newBuffer(int value) {
    const ir::Value& v = graph_.value(value);
    plan_.buffers.push_back(
        {0, v.type.bytes(), v.producer >= 0 ? hb_.position(v.producer) : -1, -1, {value}});
    pinned_.push_back(v.kind == ir::ValueKind::kInput || graph_.isGraphOutput(value));
    access_.emplace_back();
    writers_.push_back({v.producer});
    plan_.bytesWithoutReuse += alignUp(v.type.bytes());
    plan_.bufferOf[value] = static_cast<int>(plan_.buffers.size()) - 1;
    touch(plan_.bufferOf[value], value);
    return plan_.bufferOf[value];
  }

  /// A region only node `id` touches, while it runs.
  void newScratch(int id, int64_t bytes) {
    const int step = hb_.position(id);
    plan_.buffers.push_back({0, bytes, step, step, {}, id});
    pinned_.push_back(false);
    access_.emplace_back();
    access_.back().nodes = {id};
    writers_.push_back({id});
    plan_.bytesWithoutReuse += alignUp(bytes);
  }

  void join(int buffer, int value) {
    auto& b = plan_.buffers[buffer];
    b.values.push_back(value);
    b.bytes = std::max(b.bytes, graph_.value(value).type.bytes());
    if (graph_.isGraphOutput(value)) pinned_[buffer] = true;
    plan_.bufferOf[value] = buffer;
    writers_[buffer].push_back(graph_.value(value).producer);
    touch(buffer, value);
  }

  /// The first part of a Concat to be computed brings the buffer of the
  /// whole output, and every part takes its slice: all their accesses count
  /// from then on, so nothing reuses a slice before the Concat's readers
  /// are done.
  void placeConcat(int output, int step, const ConcatParts& parts) {
    const int buffer = newBuffer(output);
    plan_.buffers[buffer].firstStep = step;
    for (int part : graph_.node(graph_.value(output).producer).inputs) {
      join(buffer, part);
      plan_.offsetInBuffer[part] = parts.offset[part];
      plan_.bytesWithoutReuse += alignUp(graph_.value(part).type.bytes());
    }
  }

  /// The buffer of an input `id` may write in place over, or -1: only as
  /// the last access of that buffer (everything else touching it
  /// happens-before the node), and never over the caller's tensors.
  std::pair<int, int> inPlaceCandidate(int id, const lowering::KernelCall& call) {
    if (!lowering::mayRunInPlace(call)) return {-1, -1};
    const ir::Node& node = graph_.node(id);
    const ir::TensorType& outType = graph_.value(node.outputs[0]).type;
    const size_t candidates = call.kernel == lowering::Kernel::kBinary ? 2 : 1;
    for (size_t i = 0; i < candidates; ++i) {
      const int in = node.inputs[i];
      const int buffer = in >= 0 ? plan_.bufferOf[in] : -1;
      if (buffer < 0 || pinned_[buffer]) continue;
      const ir::TensorType& inType = graph_.value(in).type;
      if (inType.bytes() != outType.bytes() || dtypeSize(inType.dtype) != dtypeSize(outType.dtype))
        continue;
      const auto& nodes = access_[buffer].nodes;
      if (std::all_of(nodes.begin(), nodes.end(),
                      [&](int a) { return a == id || hb_.before(a, id); }))
        return {buffer, in};
    }
    return {-1, -1};
  }

  void assign() {
    const ConcatParts parts = concatParts(graph_, calls_, hb_.order(), copyingConcats_);
    for (int in : graph_.inputs) newBuffer(in);
    for (int id : hb_.order()) {
      const ir::Node& node = graph_.node(id);
      const lowering::KernelCall& call = calls_.of(id);
      const int out = node.outputs[0];
      // A view, or a cache kept in place (its output is its first input
      // with the new positions written: planning/cache_pairs.h).
      const bool aliases =
          call.kernel == lowering::Kernel::kView || call.kernel == lowering::Kernel::kCacheAppend;
      if (aliases && plan_.bufferOf[node.inputs[0]] >= 0) {
        const int buffer = plan_.bufferOf[node.inputs[0]];
        join(buffer, out);
        plan_.offsetInBuffer[out] = plan_.offsetInBuffer[node.inputs[0]];
        if (call.kernel == lowering::Kernel::kCacheAppend) {  // room for the capacity
          const auto& p = call.get<rt::CacheAppendParams>();
          plan_.buffers[buffer].bytes =
              std::max(plan_.buffers[buffer].bytes, p.outer * p.block_bytes);
        }
        continue;
      }
      for (int o : node.outputs)
        if (o >= 0 && parts.output[o] >= 0 && plan_.bufferOf[o] < 0)
          placeConcat(parts.output[o], hb_.position(id), parts);
      if (plan_.bufferOf[out] >= 0) continue;  // a Concat's part or output, placed
      if (auto [buffer, input] = inPlaceCandidate(id, call); buffer >= 0) {
        join(buffer, out);
        plan_.offsetInBuffer[out] = plan_.offsetInBuffer[input];
        plan_.bytesWithoutReuse += alignUp(graph_.value(out).type.bytes());
        ++plan_.inPlaceNodes;
      } else {
        newBuffer(out);
      }
      for (size_t o = 1; o < node.outputs.size(); ++o)
        if (node.outputs[o] >= 0 && plan_.bufferOf[node.outputs[o]] < 0) newBuffer(node.outputs[o]);
      if (call.scratchBytes > 0) newScratch(id, call.scratchBytes);
    }
  }

  /// Buffer A precedes buffer B when all of A's accesses happen-before each
  /// of B's writers (everything else in B descends from one of them).
  bool precedes(int a, int b) const {
    if (access_[a].atExit) return false;
    const auto& nodes = access_[a].nodes;
    return std::all_of(writers_[b].begin(), writers_[b].end(), [&](int writer) {
      return writer >= 0 &&
             std::all_of(nodes.begin(), nodes.end(), [&](int n) { return hb_.before(n, writer); });
    });
  }

  /// Largest first, each at the lowest offset clear of every placed buffer
  /// it is not ordered with.
  void place() {
    std::vector<int> bySize(plan_.buffers.size());
    for (size_t i = 0; i < bySize.size(); ++i) bySize[i] = static_cast<int>(i);
    std::stable_sort(bySize.begin(), bySize.end(),
                     [&](int a, int b) { return plan_.buffers[a].bytes > plan_.buffers[b].bytes; });
    std::vector<int> placed;
    for (int index : bySize) {
      MemoryPlan::Buffer& buffer = plan_.buffers[index];
      std::vector<std::pair<int64_t, int64_t>> busy;
      for (int other : placed) {
        const auto& o = plan_.buffers[other];
        if (!precedes(index, other) && !precedes(other, index))
          busy.push_back({o.offset, o.offset + alignUp(o.bytes)});
      }
      const int64_t offset = MemoryPlan::firstFit(std::move(busy), buffer.bytes);
      buffer.offset = offset;
      plan_.arenaBytes = std::max(plan_.arenaBytes, offset + alignUp(buffer.bytes));
      placed.push_back(index);
    }
  }

  const ir::Graph& graph_;
  const lowering::KernelCalls& calls_;
  HappensBefore hb_;
  std::vector<std::vector<int>> readers_;
  const std::set<int>& copyingConcats_;
  MemoryPlan plan_;
  std::vector<bool> pinned_;  // buffer holds a graph input or output
  std::vector<Accesses> access_;
  std::vector<std::vector<int>> writers_;  // per buffer; -1 for graph inputs
};

}  // namespace

int64_t MemoryPlan::firstFit(std::vector<std::pair<int64_t, int64_t>> busy, int64_t bytes) {
  std::sort(busy.begin(), busy.end());
  int64_t offset = 0;
  for (auto [begin, end] : busy) {
    if (offset + aligned(bytes) <= begin) break;
    offset = std::max(offset, aligned(end));
  }
  return offset;
}

MemoryPlan planMemory(const ir::Graph& graph, const lowering::KernelCalls& calls,
                      const Schedule& schedule, const std::set<int>& copyingConcats) {
  MemoryPlan plan = Planner(graph, calls, schedule, copyingConcats).run();
  // No sum in the planner can overflow: the frontend admits at most
  // ir::kMaxValues tensors holding at most ir::kMaxGraphBytes (2^50)
  // together, and the passes grow that by a small factor, so every offset
  // and total is far below 2^63. The arena itself must stay within
  // ir::kMaxArenaBytes.
  if (plan.arenaBytes > ir::kMaxArenaBytes)
    userError(graph.where(), "the model needs an arena of {} bytes, over the limit of 2^40 bytes",
              plan.arenaBytes);
  return plan;
}

namespace {

/// The checks of verifyMemoryPlan, each recomputing what it needs from the
/// graph, the calls and the schedule (never from the planner's state).
class PlanVerifier {
 public:
  PlanVerifier(const ir::Graph& graph, const lowering::KernelCalls& calls, const Schedule& schedule,
               const MemoryPlan& plan)
      : graph_(graph),
        calls_(calls),
        plan_(plan),
        hb_(graph, schedule),
        readers_(readersByValue(graph)) {
    CGC_ASSERT(hb_.order().size() == graph.liveNodes().size(),
               "verifying memory for a schedule that misses nodes");
    // Graph inputs, then every output in happens-before order (producers
    // before consumers, which the alias roots below rely on).
    needed_.assign(graph.inputs.begin(), graph.inputs.end());
    for (int id : hb_.order())
      for (int out : graph.node(id).outputs)
        if (out >= 0) needed_.push_back(out);
  }

  std::vector<std::string> run() {
    checkStorage();
    checkInputsUntouched();
    checkOverlaps();
    checkConcats();
    checkWriters();
    return std::move(problems_);
  }

 private:
  const std::string& name(int v) const { return graph_.value(v).name; }

  template <typename... Args>
  void problem(fmt::format_string<Args...> format, Args&&... args) {
    problems_.push_back(fmt::format(format, std::forward<Args>(args)...));
  }

  void checkStorage() {
    for (int v : needed_) {
      const int b = plan_.bufferOf.at(v);
      if (b < 0) {
        problem("'{}' has no storage", name(v));
        continue;
      }
      const auto& buffer = plan_.buffers[b];
      if (plan_.offsetInBuffer.at(v) < 0 ||
          plan_.offsetInBuffer[v] + graph_.value(v).type.bytes() > buffer.bytes ||
          buffer.offset % MemoryPlan::kAlignment != 0 ||
          buffer.offset + buffer.bytes > plan_.arenaBytes)
        problem("'{}' does not fit its buffer in the arena", name(v));
    }
  }

  /// Graph inputs belong to the caller, who may call run() again without
  /// rewriting them: no other buffer may share their bytes at any time.
  void checkInputsUntouched() {
    for (int in : graph_.inputs) {
      const int b = plan_.bufferOf.at(in);
      if (b < 0) continue;
      const auto& mine = plan_.buffers[b];
      for (size_t o = 0; o < plan_.buffers.size(); ++o) {
        const auto& other = plan_.buffers[o];
        if (static_cast<int>(o) == b || (other.values.empty() && other.scratchFor < 0) ||
            other.bytes == 0)
          continue;
        if (other.offset < mine.offset + mine.bytes && mine.offset < other.offset + other.bytes)
          problem("graph input '{}' shares bytes with {}, which run() writes", name(in),
                  other.scratchFor >= 0
                      ? fmt::format("the scratch of '{}'", graph_.node(other.scratchFor).name)
                      : fmt::format("'{}'", name(other.values[0])));
      }
    }
  }

  /// Buffers overlapping in memory must be ordered in time, from scratch.
  void checkOverlaps() {
    std::vector<Accesses> access(plan_.buffers.size());
    for (int v : needed_)
      if (plan_.bufferOf[v] >= 0) access[plan_.bufferOf[v]].add(graph_, readers_, v);
    for (size_t b = 0; b < plan_.buffers.size(); ++b)
      if (plan_.buffers[b].scratchFor >= 0) access[b].nodes = {plan_.buffers[b].scratchFor};
    for (size_t a = 0; a < plan_.buffers.size(); ++a)
      for (size_t b = a + 1; b < plan_.buffers.size(); ++b) {
        const auto& x = plan_.buffers[a];
        const auto& y = plan_.buffers[b];
        const bool sameBytes = x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
        auto label = [&](const MemoryPlan::Buffer& buffer) {
          return buffer.scratchFor >= 0
                     ? fmt::format("the scratch of '{}'", graph_.node(buffer.scratchFor).name)
                     : fmt::format("'{}'", name(buffer.values[0]));
        };
        const bool xUsed = !x.values.empty() || x.scratchFor >= 0;
        const bool yUsed = !y.values.empty() || y.scratchFor >= 0;
        if (sameBytes && x.bytes > 0 && y.bytes > 0 && xUsed && yUsed &&
            access[a].mayOverlap(access[b], hb_))
          problem("buffers of {} and {} overlap in memory and may be live at the same time",
                  label(x), label(y));
      }
  }

  void checkConcats() {
    for (int id : hb_.order())
      if (plan_.copiesNothing(id) && !inputsInSlices(calls_.of(id), plan_))
        problem("Concat '{}' copies nothing but its inputs are not in their slices",
                graph_.node(id).name);
  }

  /// The values whose bytes each value is (a view or a Concat that copies
  /// nothing aliases the values it reads), and the written values by buffer.
  void findRoots(std::vector<std::vector<int>>& roots,
                 std::map<int, std::vector<int>>& writers) const {
    for (int v : needed_) {
      const int producer = graph_.value(v).producer;
      const ir::Node* node = producer >= 0 ? &graph_.node(producer) : nullptr;
      // A view, or a cache kept in place: the bytes of its first input
      // (the new positions it writes are no input's).
      const lowering::Kernel kernel = node ? calls_.of(producer).kernel : lowering::Kernel::kView;
      const bool isView =
          node && (kernel == lowering::Kernel::kView || kernel == lowering::Kernel::kCacheAppend) &&
          plan_.bufferOf[node->inputs[0]] == plan_.bufferOf[v] &&
          plan_.offsetInBuffer[node->inputs[0]] == plan_.offsetInBuffer[v];
      if (isView && kernel == lowering::Kernel::kCacheAppend) {
        roots[v] = roots[node->inputs[0]];
      } else if (isView || (node && plan_.copiesNothing(producer))) {
        for (int in : node->inputs)
          roots[v].insert(roots[v].end(), roots[in].begin(), roots[in].end());
      } else {
        roots[v] = {v};
        if (plan_.bufferOf[v] >= 0) writers[plan_.bufferOf[v]].push_back(v);
      }
    }
  }

  /// Within a buffer: writers of overlapping bytes are ordered, and a writer
  /// follows every read of the earlier writer's data (views and in-place
  /// Concats read it too), or is the last such read itself when it runs in
  /// place.
  void checkWriters() {
    std::map<int, std::vector<int>> writers;  // buffer -> written values
    std::vector<std::vector<int>> roots(graph_.numValues());
    findRoots(roots, writers);
    std::vector<std::vector<int>> touchedBy(graph_.numValues());  // root -> nodes
    std::vector<bool> pinned(graph_.numValues(), false);
    for (int v : needed_) {
      const int producer = graph_.value(v).producer;
      for (int root : roots[v]) {
        if (producer >= 0) touchedBy[root].push_back(producer);
        touchedBy[root].insert(touchedBy[root].end(), readers_[v].begin(), readers_[v].end());
        if (graph_.isGraphOutput(v) || graph_.value(v).kind == ir::ValueKind::kInput)
          pinned[root] = true;
      }
    }
    auto writeStep = [&](int v) {
      const int p = graph_.value(v).producer;
      return p >= 0 ? hb_.position(p) : -1;
    };
    auto overlap = [&](int a, int b) {
      const int64_t a0 = plan_.offsetInBuffer[a], b0 = plan_.offsetInBuffer[b];
      return a0 < b0 + graph_.value(b).type.bytes() && b0 < a0 + graph_.value(a).type.bytes();
    };
    for (auto& [buffer, values] : writers) {
      std::sort(values.begin(), values.end(),
                [&](int a, int b) { return writeStep(a) < writeStep(b); });
      for (size_t j = 1; j < values.size(); ++j)
        for (size_t i = 0; i < j; ++i) {
          const int before = values[i], after = values[j];
          if (!overlap(before, after)) continue;  // a Concat's other parts
          const int writer = graph_.value(after).producer;
          bool ok = !pinned[before] && writer >= 0, inPlace = false;
          for (size_t k = 0; ok && k < touchedBy[before].size(); ++k) {
            const int n = touchedBy[before][k];
            if (n == writer)
              inPlace = true;
            else
              ok = hb_.before(n, writer);
          }
          if (ok && inPlace) ok = lowering::mayRunInPlace(calls_.of(writer));
          if (!ok)
            problem("'{}' overwrites '{}' while it is still needed", name(after), name(before));
        }
    }
  }

  const ir::Graph& graph_;
  const lowering::KernelCalls& calls_;
  const MemoryPlan& plan_;
  HappensBefore hb_;
  std::vector<std::vector<int>> readers_;
  std::vector<int> needed_;
  std::vector<std::string> problems_;
};

}  // namespace

void verifyMemoryPlan(const ir::Graph& graph, const lowering::KernelCalls& calls,
                      const Schedule& schedule, const MemoryPlan& plan) {
  const std::vector<std::string> problems = PlanVerifier(graph, calls, schedule, plan).run();
  if (!problems.empty())
    internalError(
        __FILE__, __LINE__,
        fmt::format("memory plan verification failed:\n  {}", fmt::join(problems, "\n  ")));
}

}  // namespace cgc::passes
