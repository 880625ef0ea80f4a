// Unit tests of the scheduling passes: cost model, levels, the Graphi
// partitioner, the schedule verifier's deadlock and dependency checks, the
// memory plan under concurrent executors, and reading profiles.
#include "planning/schedule.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "codegen/model_emitter.h"
#include "graph_builder.h"
#include "onnx_frontend/onnx_loader.h"
#include "passes/pass_manager.h"
#include "planning/cost_model.h"
#include "planning/levels.h"
#include "planning/memory_plan.h"
#include "planning/partition.h"

using Catch::Matchers::Contains;
using cgc::testing::GraphBuilder;
namespace passes = cgc::passes;

namespace {

/// Node ids in insertion order: l1 0, l2 1, r1 2, r2 3, sum 4, out 5.
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

/// Two chains from one input, a1 -> a2 and b1 -> b2 (ids 0..3).
GraphBuilder twoChains() {
  GraphBuilder b("chains");
  int x = b.input("x", {64});
  int a1 = b.node("Exp", "a1", {x}, {64});
  int a2 = b.node("Relu", "a2", {a1}, {64});
  int b1 = b.node("Neg", "b1", {x}, {64});
  int b2 = b.node("Tanh", "b2", {b1}, {64});
  b.output(a2, "ya");
  b.output(b2, "yb");
  return b;
}

/// Two branches whose first values die early (their second op broadcasts to
/// a larger shape, so it cannot run in place): l1 0, l2 1, r1 2, r2 3, s 4.
GraphBuilder forked() {
  GraphBuilder b("fork");
  int x = b.input("x", {256});
  int c = b.constant("c", {2, 256}, std::vector<float>(512, 1.f));
  int l1 = b.node("Exp", "l1", {x}, {256});
  int l2 = b.node("Add", "l2", {l1, c}, {2, 256});
  int r1 = b.node("Sigmoid", "r1", {x}, {256});
  int r2 = b.node("Add", "r2", {r1, c}, {2, 256});
  int s = b.node("Add", "s", {l2, r2}, {2, 256});
  b.output(s, "y");
  return b;
}

passes::CostModel costs(std::vector<double> micros) {
  passes::CostModel model;
  model.threads.assign(micros.size(), 0);
  model.micros = std::move(micros);
  return model;
}

int executorOf(const passes::Schedule& schedule, int node) {
  for (size_t e = 0; e < schedule.ops.size(); ++e)
    for (int id : schedule.ops[e])
      if (id == node) return static_cast<int>(e);
  return -1;
}

bool bytesOverlap(const passes::MemoryPlan& plan, int a, int b, const cgc::ir::Graph& graph) {
  int64_t a0 = plan.offsetOf(a), a1 = a0 + graph.value(a).type.bytes();
  int64_t b0 = plan.offsetOf(b), b1 = b0 + graph.value(b).type.bytes();
  return a0 < b1 && b0 < a1;
}

std::string writeTemp(const std::string& name, const std::string& text) {
  auto dir =
      std::filesystem::temp_directory_path() / ("cgc_schedule_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("levels are the costliest path to the sink") {
  GraphBuilder b = diamond();
  auto levels = passes::computeLevels(b.graph, costs({1, 2, 3, 4, 5, 6}));
  // out 6; sum 5+6; l2 2+11; r2 4+11; l1 1+13; r1 3+15.
  CHECK(levels == std::vector<double>{14, 13, 18, 15, 11, 6});
}

TEST_CASE("the analytical cost follows FLOPs or bytes, views are free") {
  GraphBuilder b("gemm");
  int x = b.input("x", {64, 64});
  int w = b.constant("w", {64, 64}, std::vector<float>(64 * 64, 0.5f));
  int g = b.node("Gemm", "g", {x, w}, {64, 64});
  int v = b.node("Reshape", "v", {g}, {4096});
  int r = b.node("Relu", "r", {v}, {4096});
  b.output(r, "y");
  auto model = passes::estimateCosts(b.graph, cgc::lowering::lowerGraph(b.graph));
  // Gemm: 2*64^3 FLOPs at 50 GFLOP/s beat 3 x 16 KiB at 20 GB/s; + 0.3 us.
  CHECK(model.micros[0] == Approx(2.0 * 64 * 64 * 64 / 50e3 + 0.3));
  CHECK(model.micros[1] == 0.0);
  // Relu: 32 KiB moved at 20 GB/s; + 0.3 us.
  CHECK(model.micros[2] == Approx(2 * 16384 / 20e3 + 0.3));
}

TEST_CASE("two independent chains go to two executors without cross waits") {
  GraphBuilder b = twoChains();
  auto model = costs({10, 10, 10, 10});
  auto schedule = passes::partitionGraph(b.graph, model, 2, 1);
  passes::verifySchedule(b.graph, schedule);
  CHECK(executorOf(schedule, 0) == executorOf(schedule, 1));
  CHECK(executorOf(schedule, 2) == executorOf(schedule, 3));
  CHECK(executorOf(schedule, 0) != executorOf(schedule, 2));
  CHECK(schedule.crossDependencies.empty());
  CHECK(passes::simulatedMakespan(b.graph, model, schedule) == Approx(20));
  auto sequential = passes::partitionGraph(b.graph, model, 1, 1);
  CHECK(sequential.ops.size() == 1);
  CHECK(sequential.ops[0] == b.graph.topologicalOrder());
  CHECK(passes::simulatedMakespan(b.graph, model, sequential) == Approx(40));
}

TEST_CASE("a diamond split over two executors waits once, at the join") {
  GraphBuilder b = diamond();
  auto model = costs({10, 10, 10, 10, 5, 5});
  auto schedule = passes::partitionGraph(b.graph, model, 2, 1);
  passes::verifySchedule(b.graph, schedule);
  int left = executorOf(schedule, 0), right = executorOf(schedule, 2);
  CHECK(left != right);
  CHECK(executorOf(schedule, 1) == left);
  CHECK(executorOf(schedule, 3) == right);
  int join = executorOf(schedule, 4);
  CHECK(executorOf(schedule, 5) == join);
  REQUIRE(schedule.crossDependencies.size() == 1);
  const auto& dep = schedule.crossDependencies[0];
  CHECK(dep.consumer == 4);
  CHECK(dep.producer == (join == left ? 3 : 1));
  CHECK(dep.fromExecutor != dep.toExecutor);
  // Branches in parallel (20), one signal (1), then sum and out (10).
  CHECK(passes::simulatedMakespan(b.graph, model, schedule) == Approx(31));
}

TEST_CASE("threads per node scale the simulated time sublinearly") {
  GraphBuilder b = twoChains();
  auto model = costs({10, 10, 10, 10});
  auto schedule = passes::partitionGraph(b.graph, model, 1, 4);
  CHECK(passes::simulatedMakespan(b.graph, model, schedule) == Approx(40 / std::pow(4.0, 0.8)));
  auto narrow = passes::partitionGraph(b.graph, model, 1, 4, {1, 1, 1, 1});
  passes::verifySchedule(b.graph, narrow);
  CHECK(passes::simulatedMakespan(b.graph, model, narrow) == Approx(40));
}

TEST_CASE("the schedule verifier rejects a cycle across executors") {
  GraphBuilder b = twoChains();
  passes::Schedule schedule;
  schedule.executors = 2;
  // Executor 0 runs b2 before a1, executor 1 a2 before b1: each waits for
  // the other (b2 -> a1 -> a2 -> b1 -> b2).
  schedule.ops = {{3, 0}, {1, 2}};
  schedule.crossDependencies = {{0, 1, 0, 1}, {2, 3, 1, 0}};
  CHECK_THROWS_WITH(passes::verifySchedule(b.graph, schedule),
                    Contains("deadlock") && Contains("'a2' -> 'b1' -> 'b2' -> 'a1' -> 'a2'"));
  CHECK_THROWS_AS(passes::HappensBefore(b.graph, schedule), cgc::InternalError);
}

TEST_CASE("the schedule verifier rejects missing, false and stray entries") {
  GraphBuilder b = diamond();
  auto good = passes::partitionGraph(b.graph, costs({10, 10, 10, 10, 5, 5}), 2, 1);
  passes::verifySchedule(b.graph, good);

  auto missing = good;
  missing.crossDependencies.clear();
  CHECK_THROWS_WITH(passes::verifySchedule(b.graph, missing),
                    Contains("crosses executors undeclared"));

  auto unscheduled = good;
  auto& list = unscheduled.ops[executorOf(good, 5)];
  list.erase(std::find(list.begin(), list.end(), 5));
  CHECK_THROWS_WITH(passes::verifySchedule(b.graph, unscheduled),
                    Contains("'out' is not scheduled"));

  auto bogus = good;  // l1 and r1 share no data
  bogus.crossDependencies.push_back({0, 2, executorOf(good, 0), executorOf(good, 2)});
  CHECK_THROWS_WITH(passes::verifySchedule(b.graph, bogus), Contains("is not a data dependency"));

  auto wrongExecutor = good;
  std::swap(wrongExecutor.crossDependencies[0].fromExecutor,
            wrongExecutor.crossDependencies[0].toExecutor);
  CHECK_THROWS_WITH(passes::verifySchedule(b.graph, wrongExecutor), Contains("names executors"));

  auto tooManyThreads = good;
  tooManyThreads.nodeThreads = {0, 1, 2};
  CHECK_THROWS_WITH(passes::verifySchedule(b.graph, tooManyThreads), Contains("runs on 2 threads"));
}

TEST_CASE("happens-before follows program order and cross dependencies only") {
  GraphBuilder b = diamond();
  auto schedule = passes::partitionGraph(b.graph, costs({10, 10, 10, 10, 5, 5}), 2, 1);
  passes::HappensBefore hb(b.graph, schedule);
  CHECK(hb.before(0, 1));
  CHECK(hb.before(2, 3));
  CHECK(hb.before(0, 5));
  CHECK(hb.before(2, 5));
  CHECK_FALSE(hb.before(0, 2));
  CHECK_FALSE(hb.before(2, 0));
  CHECK_FALSE(hb.before(1, 3));
  CHECK_FALSE(hb.before(5, 0));
  CHECK_FALSE(hb.before(4, 4));
}

TEST_CASE("parallel branches never share memory; one executor reuses it") {
  GraphBuilder b = forked();
  const int l1 = b.graph.node(0).outputs[0], l2 = b.graph.node(1).outputs[0];
  const int r1 = b.graph.node(2).outputs[0], r2 = b.graph.node(3).outputs[0];

  auto sharedAcross = [&](const passes::MemoryPlan& plan) {
    int pairs = 0;
    for (int left : {l1, l2})
      for (int right : {r1, r2}) pairs += bytesOverlap(plan, left, right, b.graph);
    return pairs;
  };

  auto one = passes::scheduleSequential(b.graph);
  auto onePlan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), one);
  passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), one, onePlan);
  CHECK(sharedAcross(onePlan) > 0);  // l1 is dead before the right branch

  auto two = passes::partitionGraph(b.graph, costs({10, 10, 10, 10, 5}), 2, 1);
  passes::verifySchedule(b.graph, two);
  REQUIRE(executorOf(two, 0) != executorOf(two, 2));
  auto twoPlan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), two);
  passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), two, twoPlan);
  CHECK(sharedAcross(twoPlan) == 0);
  CHECK(twoPlan.arenaBytes > onePlan.arenaBytes);

  // The one-executor plan is wrong for two executors, and the verifier says so.
  CHECK_THROWS_WITH(
      passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), two, onePlan),
      Contains("may be live at the same time"));
}

TEST_CASE("in place only after every other reader, in happens-before order") {
  // a = exp(x); b = sigmoid(a); c = neg(a); out = b + c.
  GraphBuilder g("readers");
  int x = g.input("x", {256});
  int a = g.node("Exp", "a", {x}, {256});
  int b = g.node("Sigmoid", "b", {a}, {256});
  int c = g.node("Neg", "c", {a}, {256});
  int out = g.node("Add", "out", {b, c}, {256});
  g.output(out, "y");

  auto one = passes::scheduleSequential(g.graph);
  auto onePlan = passes::planMemory(g.graph, cgc::lowering::lowerGraph(g.graph), one);
  passes::verifyMemoryPlan(g.graph, cgc::lowering::lowerGraph(g.graph), one, onePlan);
  CHECK(onePlan.bufferOf[c] == onePlan.bufferOf[a]);  // b read a before c ran
  CHECK(onePlan.inPlaceNodes == 2);

  auto two = passes::partitionGraph(g.graph, costs({10, 10, 10, 5}), 2, 1);
  passes::verifySchedule(g.graph, two);
  REQUIRE(executorOf(two, 1) != executorOf(two, 2));  // b and c in parallel
  auto twoPlan = passes::planMemory(g.graph, cgc::lowering::lowerGraph(g.graph), two);
  passes::verifyMemoryPlan(g.graph, cgc::lowering::lowerGraph(g.graph), two, twoPlan);
  CHECK(twoPlan.bufferOf[b] != twoPlan.bufferOf[a]);
  CHECK(twoPlan.bufferOf[c] != twoPlan.bufferOf[a]);
  CHECK(twoPlan.inPlaceNodes == 1);  // out over whichever input it waited on
}

TEST_CASE("a Concat joining two executors' branches keeps its parts in place") {
  GraphBuilder b("branches");
  int x = b.input("x", {1, 256});
  int l1 = b.node("Exp", "l1", {x}, {1, 256});
  int l2 = b.node("Relu", "l2", {l1}, {1, 256});
  int r1 = b.node("Sigmoid", "r1", {x}, {1, 256});
  int r2 = b.node("Neg", "r2", {r1}, {1, 256});
  int c = b.node("Concat", "c", {l2, r2}, {1, 512}, {{"axis", int64_t{1}}});
  b.output(b.node("Tanh", "t", {c}, {1, 512}), "y");
  auto two = passes::partitionGraph(b.graph, costs({10, 10, 10, 10, 1, 5}), 2, 1);
  passes::verifySchedule(b.graph, two);
  REQUIRE(executorOf(two, 1) != executorOf(two, 3));  // the parts in parallel
  auto plan = passes::planMemory(b.graph, cgc::lowering::lowerGraph(b.graph), two);
  passes::verifyMemoryPlan(b.graph, cgc::lowering::lowerGraph(b.graph), two, plan);
  CHECK(plan.copiesNothing(4));
  CHECK(plan.offsetOf(r2) == plan.offsetOf(l2) + 1024);
  // Neither branch's first value may share bytes with the other's part.
  CHECK_FALSE(bytesOverlap(plan, l1, r2, b.graph));
  CHECK_FALSE(bytesOverlap(plan, r1, l2, b.graph));
}

TEST_CASE("graphHash matches the hash codegen emits and tracks the graph") {
  GraphBuilder b = diamond();
  auto schedule = passes::scheduleSequential(b.graph);
  const auto calls = cgc::lowering::lowerGraph(b.graph);
  auto plan = passes::planMemory(b.graph, calls, schedule);
  auto model = cgc::codegen::emitModel({b.graph, schedule, plan, calls}, {});
  std::string hash = passes::graphHash(b.graph);
  CHECK(hash.size() == 16);
  CHECK(hash == model.graphHash);
  GraphBuilder other = diamond();
  other.graph.node(3).name = "renamed";
  CHECK(passes::graphHash(other.graph) != hash);
}

TEST_CASE("profiles give measured costs and refuse other graphs") {
  GraphBuilder b = diamond();
  auto estimate = passes::estimateCosts(b.graph, cgc::lowering::lowerGraph(b.graph));
  std::string hash = passes::graphHash(b.graph);
  auto profile = [&](const std::string& h) {
    return "{\"model\": \"diamond\", \"graph_hash\": \"" + h +
           "\", \"runs\": 3, \"nodes\": [\n"
           "  {\"name\": \"l1\", \"op\": \"Exp\", \"median_us\": 12.0, "
           "\"executor\": 0, \"threads\": 1},\n"
           "  {\"name\": \"r1\", \"op\": \"Sigmoid\", \"median_us\": 8.0, "
           "\"executor\": 1, \"threads\": 2},\n"
           "  {\"name\": \"sum\", \"op\": \"Add\", \"median_us\": 3.0, "
           "\"executor\": 0, \"threads\": 1}]}\n";
  };

  auto path = writeTemp("good.json", profile(hash));
  auto measured = passes::costsFromProfile(b.graph, cgc::lowering::lowerGraph(b.graph), path);
  CHECK(measured.measured);
  CHECK(measured.micros[0] == Approx(12.0));
  CHECK(measured.micros[2] == Approx(8.0 * std::pow(2.0, 0.8)));  // one thread
  CHECK(measured.threads[2] == 2);
  CHECK(measured.micros[4] == Approx(3.0));
  // Missing nodes: the estimate times the median measured/estimated ratio.
  std::vector<double> ratios = {12.0 / estimate.micros[0],
                                8.0 * std::pow(2.0, 0.8) / estimate.micros[2],
                                3.0 / estimate.micros[4]};
  std::sort(ratios.begin(), ratios.end());
  CHECK(measured.micros[1] == Approx(estimate.micros[1] * ratios[1]));
  CHECK(measured.micros[5] == Approx(estimate.micros[5] * ratios[1]));
  CHECK(measured.threads[1] == 0);

  auto stale = writeTemp("stale.json", profile("0123456789abcdef"));
  CHECK_THROWS_AS(passes::costsFromProfile(b.graph, cgc::lowering::lowerGraph(b.graph), stale),
                  cgc::CompileError);
  CHECK_THROWS_WITH(
      passes::costsFromProfile(b.graph, cgc::lowering::lowerGraph(b.graph), stale),
      Contains("measured on a different graph") && Contains("0123456789abcdef") && Contains(hash));
  auto broken = writeTemp("broken.json", "{\"graph_hash\": ");
  CHECK_THROWS_WITH(passes::costsFromProfile(b.graph, cgc::lowering::lowerGraph(b.graph), broken),
                    Contains("broken.json") && Contains("not a valid profile"));
  CHECK_THROWS_WITH(
      passes::costsFromProfile(b.graph, cgc::lowering::lowerGraph(b.graph), path + ".absent"),
      Contains("cannot read"));
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_CASE("sample models partition into verified schedules and memory plans") {
  for (const char* name : {"tiny_cnn", "mlp", "branches", "shapes", "deconv"}) {
    INFO(name);
    auto graph = cgc::frontend::loadOnnx(std::string(CGC_SAMPLES_DIR) + "/" + name + "/model.onnx");
    passes::runPipeline(graph);
    auto model = passes::estimateCosts(graph, cgc::lowering::lowerGraph(graph));
    auto one = passes::scheduleSequential(graph);
    auto onePlan = passes::planMemory(graph, cgc::lowering::lowerGraph(graph), one);
    double sequential = passes::simulatedMakespan(graph, model, one);
    for (int executors : {1, 2, 4}) {
      auto schedule = passes::partitionGraph(graph, model, executors, 1);
      passes::verifySchedule(graph, schedule);
      auto plan = passes::planMemory(graph, cgc::lowering::lowerGraph(graph), schedule);
      passes::verifyMemoryPlan(graph, cgc::lowering::lowerGraph(graph), schedule, plan);
      CHECK(passes::simulatedMakespan(graph, model, schedule) <= sequential + 1e-9);
      if (executors == 1) CHECK(plan.arenaBytes == onePlan.arenaBytes);
    }
  }
}
