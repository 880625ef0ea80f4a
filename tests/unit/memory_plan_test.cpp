// Unit tests of scheduling and the memory plan: reuse, in-place ops, views,
// and the verifiers rejecting corrupted plans and schedules.
#include "planning/memory_plan.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "graph_builder.h"
#include "planning/schedule.h"

using cgc::testing::GraphBuilder;
namespace passes = cgc::passes;

namespace {

/// x -> relu -> exp -> tanh -> y, 1000 floats each.
GraphBuilder chain() {
  GraphBuilder b("chain");
  int x = b.input("x", {1000});
  int a = b.node("Relu", "a", {x}, {1000});
  int e = b.node("Exp", "e", {a}, {1000});
  int t = b.node("Tanh", "t", {e}, {1000});
  b.output(t, "y");
  return b;
}

/// Two branches joined by Add, then multiplied by the input.
GraphBuilder diamond() {
  GraphBuilder b("diamond");
  int x = b.input("x", {256});
  int l1 = b.node("Exp", "l1", {x}, {256});
  int l2 = b.node("Relu", "l2", {l1}, {256});
  int r1 = b.node("Sigmoid", "r1", {x}, {256});
  int r2 = b.node("Neg", "r2", {r1}, {256});
  int sum = b.node("Add", "sum", {l2, r2}, {256});
  int out = b.node("Mul", "out", {sum, x}, {256});
  b.output(out, "y");
  return b;
}

}  // namespace

TEST_CASE("elementwise chains run in place and the plan verifies") {
  GraphBuilder b = chain();
  auto schedule = passes::scheduleSequential(b.graph);
  passes::verifySchedule(b.graph, schedule);
  auto plan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), schedule);
  passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), schedule, plan);
  // Relu cannot overwrite the graph input; exp and tanh run in place.
  CHECK(plan.inPlaceNodes == 2);
  CHECK(plan.arenaBytes == 2 * 4000 + 2 * 32);  // input + one shared buffer
  CHECK(plan.bytesWithoutReuse > plan.arenaBytes);
}

TEST_CASE("buffers are reused when lifetimes do not overlap") {
  GraphBuilder b = diamond();
  auto schedule = passes::scheduleSequential(b.graph);
  auto plan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), schedule);
  passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), schedule, plan);
  CHECK(plan.arenaBytes < plan.bytesWithoutReuse);
  // The graph input stays untouched: nothing shares its buffer.
  int inputBuffer = plan.bufferOf[b.graph.inputs[0]];
  CHECK(plan.buffers[inputBuffer].values.size() == 1);
}

TEST_CASE("graph inputs keep their bytes after their last reader") {
  // x is read only by the first node; everything after could reuse its
  // bytes within one run, but the caller may call run() again on the same
  // input, so nothing may.
  GraphBuilder b("early_input");
  int x = b.input("x", {1000});
  int a = b.node("Relu", "a", {x}, {1000});
  int e = b.node("Exp", "e", {a}, {1000});
  int s = b.node("Sigmoid", "s", {a}, {1000});
  int sum = b.node("Add", "sum", {e, s}, {1000});
  b.output(sum, "y");
  auto schedule = passes::scheduleSequential(b.graph);
  auto plan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), schedule);
  passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), schedule, plan);
  const auto& in = plan.buffers[plan.bufferOf[x]];
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const auto& other = plan.buffers[i];
    if (static_cast<int>(i) == plan.bufferOf[x]) continue;
    INFO("buffer of " << b.graph.value(other.values[0]).name);
    CHECK((other.offset >= in.offset + in.bytes || in.offset >= other.offset + other.bytes));
  }
}

TEST_CASE("the memory verifier rejects a plan that writes a graph input") {
  GraphBuilder b("early_input");
  int x = b.input("x", {1000});
  int a = b.node("Relu", "a", {x}, {1000});
  int e = b.node("Exp", "e", {a}, {1000});
  b.output(e, "y");
  auto schedule = passes::scheduleSequential(b.graph);
  auto plan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), schedule);
  // Move e's buffer onto the input's bytes: within one run e is written
  // after x's last read, but a second run() would read e's values as x.
  plan.buffers[plan.bufferOf[e]].offset = plan.buffers[plan.bufferOf[x]].offset;
  CHECK_THROWS_WITH(
      passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), schedule, plan),
      Catch::Contains("graph input 'x' shares bytes with"));
}

TEST_CASE("views alias their input") {
  GraphBuilder b("view");
  int x = b.input("x", {2, 3});
  int r = b.node("Relu", "r", {x}, {2, 3});
  int v = b.node("Reshape", "v", {r}, {6});
  int y = b.node("Exp", "y", {v}, {6});
  b.output(y, "y");
  auto schedule = passes::scheduleSequential(b.graph);
  auto plan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), schedule);
  passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), schedule, plan);
  CHECK(plan.bufferOf[v] == plan.bufferOf[r]);
}

TEST_CASE("the memory verifier rejects overlapping live buffers") {
  GraphBuilder b = diamond();
  auto schedule = passes::scheduleSequential(b.graph);
  auto plan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), schedule);
  // Move every buffer to offset 0: the input now overlaps live intermediates.
  for (auto& buffer : plan.buffers) buffer.offset = 0;
  CHECK_THROWS_AS(
      passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), schedule, plan),
      cgc::InternalError);
}

TEST_CASE("the memory verifier rejects overwriting a value still needed") {
  GraphBuilder b = diamond();
  auto schedule = passes::scheduleSequential(b.graph);
  auto plan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), schedule);
  // Put the left branch's first value and the right branch's into one buffer.
  auto order = schedule.ops[0];
  int l1 = b.graph.node(order[0]).outputs[0];
  int r1 = b.graph.node(order[2]).outputs[0];
  plan.buffers[plan.bufferOf[l1]].values.push_back(r1);
  plan.bufferOf[r1] = plan.bufferOf[l1];
  CHECK_THROWS_AS(
      passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), schedule, plan),
      cgc::InternalError);
}

namespace {

/// a = relu(x), b = exp(x): [1, 4, 3] each; c = concat(a, b) on `axis`;
/// y = tanh(c); and z = neg(a) when `readAfter`, a part read again.
GraphBuilder concatOfTwo(int64_t axis, bool readAfter = false) {
  GraphBuilder b("concat");
  int x = b.input("x", {1, 4, 3});
  int a = b.node("Relu", "a", {x}, {1, 4, 3});
  int e = b.node("Exp", "b", {x}, {1, 4, 3});
  cgc::ir::Shape shape = {1, 4, 3};
  shape[static_cast<size_t>(axis)] *= 2;
  int c = b.node("Concat", "c", {a, e}, shape, {{"axis", int64_t{axis}}});
  b.output(b.node("Tanh", "t", {c}, shape), "y");
  if (readAfter) b.output(b.node("Neg", "n", {a}, {1, 4, 3}), "z");
  return b;
}

}  // namespace

TEST_CASE("a Concat's inputs are written into their slices of its output") {
  for (bool readAfter : {false, true}) {
    INFO((readAfter ? "a part read after the concat" : "parts read once"));
    GraphBuilder b = concatOfTwo(1, readAfter);
    const cgc::ir::Node& concat = b.graph.node(2);
    auto schedule = passes::scheduleSequential(b.graph);
    auto plan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), schedule);
    passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), schedule, plan);
    const int a = concat.inputs[0], e = concat.inputs[1], c = concat.outputs[0];
    CHECK(plan.copiesNothing(concat.id));
    CHECK(plan.offsetOf(a) == plan.offsetOf(c));
    CHECK(plan.offsetOf(e) == plan.offsetOf(c) + 4 * 3 * 4);
    // Tanh may not run in place over the concat while neg still reads a.
    if (readAfter) {
      const auto& order = schedule.ops[0];
      REQUIRE(std::find(order.begin(), order.end(), 3) <
              std::find(order.begin(), order.end(), 4));  // tanh, then neg
      CHECK(plan.bufferOf[b.graph.node(3).outputs[0]] != plan.bufferOf[c]);
    }
  }
}

TEST_CASE("a Concat copies when its parts are not contiguous or not its own") {
  GraphBuilder strided = concatOfTwo(2);  // rows of 3 + 3: interleaved parts
  auto schedule = passes::scheduleSequential(strided.graph);
  auto plan = passes::planMemory(strided.graph, cgc::lowering::lowerGraph(strided.graph), schedule);
  passes::verifyMemoryPlan(strided.graph, cgc::lowering::lowerGraph(strided.graph), schedule, plan);
  CHECK_FALSE(plan.copiesNothing(2));

  GraphBuilder b("input part");  // the graph input stays where the caller put it
  int x = b.input("x", {1, 4});
  int r = b.node("Relu", "r", {x}, {1, 4});
  int c = b.node("Concat", "c", {x, r}, {1, 8}, {{"axis", int64_t{1}}});
  b.output(c, "y");
  auto s2 = passes::scheduleSequential(b.graph);
  auto p2 = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), s2);
  passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), s2, p2);
  CHECK_FALSE(p2.copiesNothing(1));
}

TEST_CASE("the memory verifier rejects Concat slices that overlap") {
  GraphBuilder b = concatOfTwo(1);
  auto schedule = passes::scheduleSequential(b.graph);
  auto plan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), schedule);
  const int e = b.graph.node(2).inputs[1];
  plan.offsetInBuffer[e] -= 4;  // one float into a's slice
  CHECK_THROWS_WITH(
      passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), schedule, plan),
      Catch::Matchers::Contains("while it is still needed"));
  plan.offsetInBuffer[e] += 8;  // one float past the end of the buffer
  CHECK_THROWS_WITH(
      passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), schedule, plan),
      Catch::Matchers::Contains("does not fit its buffer"));
}

TEST_CASE("the schedule verifier rejects a consumer before its producer") {
  GraphBuilder b = chain();
  auto schedule = passes::scheduleSequential(b.graph);
  std::swap(schedule.ops[0][0], schedule.ops[0][1]);
  CHECK_THROWS_AS(passes::verifySchedule(b.graph, schedule), cgc::InternalError);
}

TEST_CASE("the schedule verifier rejects undeclared cross-executor edges") {
  GraphBuilder b = chain();
  auto schedule = passes::scheduleSequential(b.graph);
  schedule.executors = 2;
  schedule.ops.push_back({schedule.ops[0].back()});
  schedule.ops[0].pop_back();
  CHECK_THROWS_AS(passes::verifySchedule(b.graph, schedule), cgc::InternalError);
}
