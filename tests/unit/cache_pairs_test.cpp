// Unit tests of key/value caches kept in place (planning/cache_pairs.h): the
// pairs found, the calls rewritten, the memory plan sharing one buffer with
// room for the capacity, and the attention computed over the strided cache
// equal to the dense graph's, step after step.
#include "planning/cache_pairs.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>

#include "graph_builder.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "planning/memory_plan.h"
#include "planning/schedule.h"

using cgc::testing::GraphBuilder;
namespace passes = cgc::passes;
using cgc::lowering::Kernel;

namespace {

constexpr int64_t kHeads = 2, kHead = 4;

/// One attention step over a cache of `past` positions: present_k =
/// Concat(past_k, k), scores = q . present_k^T, y = scores . present_v
/// (`softmax`: y = Softmax(scores) . present_v).
GraphBuilder attention(int64_t past, bool softmax = false) {
  GraphBuilder b("attention");
  const int64_t n = past + 1;
  int pk = b.input("past_k", {1, kHeads, past, kHead});
  int pv = b.input("past_v", {1, kHeads, past, kHead});
  int q = b.input("q", {1, kHeads, 1, kHead});
  int k = b.node("Neg", "k", {q}, {1, kHeads, 1, kHead});
  int v = b.node("Exp", "v", {q}, {1, kHeads, 1, kHead});
  int presentK = b.node("Concat", "cat_k", {pk, k}, {1, kHeads, n, kHead}, {{"axis", int64_t{2}}});
  int presentV = b.node("Concat", "cat_v", {pv, v}, {1, kHeads, n, kHead}, {{"axis", int64_t{2}}});
  int kt = b.node("Transpose", "kt", {presentK}, {1, kHeads, kHead, n},
                  {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  int scores = b.node("MatMul", "scores", {q, kt}, {1, kHeads, 1, n});
  if (softmax)
    scores = b.node("Softmax", "softmax", {scores}, {1, kHeads, 1, n}, {{"axis", int64_t{3}}});
  int y = b.node("MatMul", "y", {scores, presentV}, {1, kHeads, 1, kHead});
  b.output(y, "y");
  b.output(presentK, "present_k");
  b.output(presentV, "present_v");
  return b;
}

/// Runs the graph's calls in one arena laid out by the plan; `inputs` (by
/// input index) are written and the outputs read through their stored
/// strides.
std::vector<std::vector<float>> runInArena(const cgc::ir::Graph& g,
                                           const cgc::lowering::KernelCalls& calls,
                                           const passes::Schedule& schedule,
                                           const passes::MemoryPlan& plan,
                                           const std::map<size_t, std::vector<float>>& inputs,
                                           std::vector<uint8_t>& arena,
                                           const passes::CachePairing& caches) {
  auto at = [&](int v) { return arena.data() + plan.offsetOf(v); };
  auto layout = [&](int v) {
    for (const auto& p : caches.pairs)
      if (p.input == v || p.output == v)
        return passes::cacheStrides(g.value(v).type.shape, p.axis, p.capacity);
    return passes::cacheStrides(g.value(v).type.shape, 0, g.value(v).type.shape[0]);
  };
  // Dense index -> stored element offset, for rank 4.
  auto storedIndex = [&](int v, int64_t i) {
    const auto& shape = g.value(v).type.shape;
    const auto strides = layout(v);
    int64_t offset = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      offset += (i % shape[d]) * strides[d];
      i /= shape[d];
    }
    return offset;
  };
  for (const auto& [i, values] : inputs) {
    auto* data = reinterpret_cast<float*>(at(g.inputs[i]));
    for (size_t e = 0; e < values.size(); ++e)
      data[storedIndex(g.inputs[i], static_cast<int64_t>(e))] = values[e];
  }
  for (int id : schedule.ops[0]) {  // the order the plan reuses buffers in
    const auto& call = calls.of(id);
    std::vector<const void*> ins;
    for (int in : call.inputs) ins.push_back(in >= 0 ? at(in) : nullptr);
    std::vector<void*> outs;
    for (int out : call.outputs) outs.push_back(at(out));
    REQUIRE(cgc::lowering::evaluate(call, ins, outs) == cgc::rt::Status::kOk);
  }
  std::vector<std::vector<float>> result;
  for (int v : g.outputs) {
    const auto* data = reinterpret_cast<const float*>(at(v));
    result.emplace_back(static_cast<size_t>(g.value(v).type.numElements()));
    for (size_t e = 0; e < result.back().size(); ++e)
      result.back()[e] = data[storedIndex(v, static_cast<int64_t>(e))];
  }
  return result;
}

}  // namespace

TEST_CASE("a Concat of a graph input into a graph output is a cache kept in place") {
  GraphBuilder b = attention(5);
  auto calls = cgc::lowering::lowerGraph(b.graph);
  const auto caches = passes::pairCaches(b.graph, calls, {{"past_k", 9}, {"past_v", 9}});
  INFO(cgc::ir::printGraph(b.graph));
  REQUIRE(caches.pairs.size() == 2);
  CHECK(caches.refused.empty());
  for (const auto& p : caches.pairs) {
    CHECK(p.axis == 2);
    CHECK(p.capacity == 9);
    const auto& call = calls.of(p.node);
    REQUIRE(call.kernel == Kernel::kCacheAppend);
    const auto& append = call.get<cgc::rt::CacheAppendParams>();
    CHECK(append.outer == kHeads);
    CHECK(append.block_bytes == 9 * kHead * 4);
    CHECK(append.offset_bytes == 5 * kHead * 4);
    CHECK(append.part_bytes == kHead * 4);
  }
  // The readers step over the capacity: the Transpose's strides, the
  // second MatMul's batch strides.
  for (int id : b.graph.liveNodes()) {
    const auto& node = b.graph.node(id);
    if (node.name == "kt") {
      const auto& p = calls.of(id).get<cgc::rt::StridedCopyParams>();
      CHECK(p.in_strides[1] == 9 * kHead);
      CHECK(p.in_strides[2] == 1);
      CHECK(p.in_strides[3] == kHead);
    }
    if (node.name == "y") {
      const auto& p = calls.of(id).get<cgc::rt::MatMulParams>();
      CHECK(p.b_batch_strides[1] == 9 * kHead);
      CHECK(p.k == 6);
    }
  }
  const auto schedule = passes::scheduleSequential(b.graph);
  const auto plan = passes::planMemory(b.graph, calls, schedule);
  passes::verifyMemoryPlan(b.graph, calls, schedule, plan);
  for (const auto& p : caches.pairs) {
    CHECK(plan.bufferOf[p.input] == plan.bufferOf[p.output]);
    CHECK(plan.offsetOf(p.input) == plan.offsetOf(p.output));
    CHECK(plan.buffers[plan.bufferOf[p.input]].bytes == kHeads * 9 * kHead * 4);
  }
}

TEST_CASE("a cache whose reader cannot stride over it stays copied, with the reason") {
  GraphBuilder b("relu_reader");
  int pk = b.input("past_k", {1, 2, 3, 4});
  int k = b.input("k", {1, 2, 1, 4});
  int present = b.node("Concat", "cat", {pk, k}, {1, 2, 4, 4}, {{"axis", int64_t{2}}});
  int r = b.node("Relu", "relu", {present}, {1, 2, 4, 4});
  b.output(r, "r");
  b.output(present, "present_k");
  auto calls = cgc::lowering::lowerGraph(b.graph);
  const auto caches = passes::pairCaches(b.graph, calls, {});
  INFO(cgc::ir::printGraph(b.graph));
  CHECK(caches.pairs.empty());
  REQUIRE(caches.refused.size() == 1);
  CHECK(caches.refused[0].find("'relu'") != std::string::npos);
  for (int id : b.graph.liveNodes())
    if (b.graph.node(id).name == "cat") CHECK(calls.of(id).kernel == Kernel::kConcat);
}

namespace {

/// Each step: the dense graph (plain Concat) on the cache so far, against
/// the paired graph on the arena the last step left, after writing only q;
/// `fused`: the paired graph's attention is fuse-attention's node.
void requireStepsEqualDense(bool fused) {
  std::mt19937 random(7);
  std::normal_distribution<float> normal;
  const int64_t capacity = 6;
  std::vector<float> cacheK, cacheV;  // dense [1, heads, past, head]
  std::vector<uint8_t> arena;
  std::vector<int64_t> cacheOffsets;  // past_k's and past_v's, the same every step
  for (int64_t past = 0; past + 1 <= capacity; ++past) {
    GraphBuilder dense = attention(past, fused), paired = attention(past, fused);
    if (fused) {
      REQUIRE(passes::fuseAttention(paired.graph));
      passes::eliminateDeadCode(paired.graph);
    }
    std::vector<float> q(kHeads * kHead);
    for (float& x : q) x = normal(random);
    auto denseCalls = cgc::lowering::lowerGraph(dense.graph);
    const auto denseSchedule = passes::scheduleSequential(dense.graph);
    const auto densePlan = passes::planMemory(dense.graph, denseCalls, denseSchedule);
    std::vector<uint8_t> denseArena(static_cast<size_t>(densePlan.arenaBytes));
    const auto expected = runInArena(dense.graph, denseCalls, denseSchedule, densePlan,
                                     {{0, cacheK}, {1, cacheV}, {2, q}}, denseArena, {});
    auto calls = cgc::lowering::lowerGraph(paired.graph);
    const auto caches =
        passes::pairCaches(paired.graph, calls, {{"past_k", capacity}, {"past_v", capacity}});
    REQUIRE(caches.pairs.size() == 2);
    const auto schedule = passes::scheduleSequential(paired.graph);
    const auto plan = passes::planMemory(paired.graph, calls, schedule);
    passes::verifyMemoryPlan(paired.graph, calls, schedule, plan);
    arena.resize(std::max<size_t>(arena.size(), static_cast<size_t>(plan.arenaBytes)));
    const std::vector<int64_t> offsets{plan.offsetOf(paired.graph.inputs[0]),
                                       plan.offsetOf(paired.graph.inputs[1])};
    if (!cacheOffsets.empty()) REQUIRE(offsets == cacheOffsets);
    cacheOffsets = offsets;
    // Only q is written: past_k and past_v are what the last step's
    // present_k and present_v left in the arena.
    const auto got = runInArena(paired.graph, calls, schedule, plan, {{2, q}}, arena, caches);
    INFO("past = " << past);
    REQUIRE(got.size() == expected.size());
    for (size_t o = 0; o < got.size(); ++o)
      for (size_t e = 0; e < got[o].size(); ++e) {
        INFO("output " << o << " element " << e);
        CHECK(got[o][e] == Approx(expected[o][e]));
      }
    cacheK = expected[1];
    cacheV = expected[2];
  }
}

}  // namespace

TEST_CASE("steps on a cache kept in place equal the dense graph's") {
  requireStepsEqualDense(false);
}

TEST_CASE("fused attention reads the cache in place over its capacity") {
  GraphBuilder b = attention(5, true);
  REQUIRE(passes::fuseAttention(b.graph));
  passes::eliminateDeadCode(b.graph);
  auto calls = cgc::lowering::lowerGraph(b.graph);
  const auto caches = passes::pairCaches(b.graph, calls, {{"past_k", 9}, {"past_v", 9}});
  INFO(cgc::ir::printGraph(b.graph));
  REQUIRE(caches.pairs.size() == 2);
  int fusedNodes = 0;
  for (int id : b.graph.liveNodes()) {
    if (calls.of(id).kernel != Kernel::kAttention) continue;
    ++fusedNodes;
    const auto& p = calls.of(id).get<cgc::rt::AttentionParams>();
    CHECK(p.keys == 6);
    CHECK(p.k_head_stride == 9 * kHead);
    CHECK(p.v_head_stride == 9 * kHead);
    CHECK(p.k_key_stride == kHead);
  }
  CHECK(fusedNodes == 1);
  requireStepsEqualDense(true);
}
