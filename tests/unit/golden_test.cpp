// Golden tests of emitted code: tiny graphs are compiled and their header and
// source compared byte for byte with tests/golden/*.golden. Refresh with
// CGC_UPDATE_GOLDEN=1 after an intended change, and review the diff.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "codegen/model_emitter.h"
#include "graph_builder.h"
#include "passes/pass_manager.h"
#include "pipeline/pipeline.h"
#include "planning/cost_model.h"
#include "planning/partition.h"

using cgc::testing::GraphBuilder;
namespace passes = cgc::passes;

namespace {

std::string readFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

/// First differing line, for a readable failure.
std::string firstDifference(const std::string& expected, const std::string& actual) {
  std::istringstream e(expected), a(actual);
  std::string le, la;
  for (int line = 1;; ++line) {
    bool he = static_cast<bool>(std::getline(e, le));
    bool ha = static_cast<bool>(std::getline(a, la));
    if (!he && !ha) return "";
    if (le != la || he != ha)
      return "line " + std::to_string(line) + ":\n  expected: " + le + "\n  actual:   " + la;
  }
}

/// The model through the driver's pipeline, every verifier included;
/// threads 0 leaves the team size to run time, as cgc's default.
cgc::codegen::EmittedModel emit(GraphBuilder& b, bool embedWeights, int executors, int threads) {
  cgc::driver::CompileOptions options;
  options.quiet = true;
  options.embedWeights = embedWeights;
  options.executors = executors;
  options.threadsPerExecutor = threads;
  // A fixed target: native's CPU features are the machine's.
  options.targets = {cgc::driver::findTarget("x86-64-v3")};
  const auto model = cgc::driver::compileGraph(std::move(b.graph), options);
  return cgc::driver::emitModel(model, options);
}

void checkGolden(GraphBuilder& b, bool embedWeights = true, int executors = 1, int threads = 1) {
  const std::string name = b.graph.name;
  auto model = emit(b, embedWeights, executors, threads);
  const bool update = std::getenv("CGC_UPDATE_GOLDEN") != nullptr;
  for (auto [suffix, text] : {std::pair{".h", model.header}, {".cpp", model.source}}) {
    const std::string& formatted = text;
    std::string path = std::string(CGC_GOLDEN_DIR) + "/" + name + suffix + ".golden";
    if (update) {
      std::ofstream(path) << formatted;
      continue;
    }
    std::string expected = readFile(path);
    INFO(path << " differs at " << firstDifference(expected, formatted)
              << "\n(refresh with CGC_UPDATE_GOLDEN=1)");
    CHECK(expected == formatted);
  }
}

}  // namespace

TEST_CASE("golden: elementwise chain with in-place ops") {
  GraphBuilder b("relu_chain");
  int x = b.input("x", {4, 8});
  int c = b.constant("half", {1}, {0.5f});
  int r = b.node("Relu", "relu", {x}, {4, 8});
  int m = b.node("Mul", "scale", {r, c}, {4, 8});
  int s = b.node("Sigmoid", "sigmoid", {m}, {4, 8});
  b.output(s, "y");
  // The default: the team is every core the process may use, at run time.
  checkGolden(b, /*embedWeights=*/true, /*executors=*/1, /*threads=*/0);
}

TEST_CASE("golden: convolution, pooling and Gemm") {
  GraphBuilder b("conv_pool");
  int x = b.input("image", {1, 2, 6, 6});
  std::vector<float> w(4 * 2 * 3 * 3, 0.25f);
  int weights = b.constant("w", {4, 2, 3, 3}, w);
  int conv = b.node(
      "Conv", "conv1", {x, weights}, {1, 4, 6, 6},
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  int relu = b.node("Relu", "relu1", {conv}, {1, 4, 6, 6});
  int pool = b.node(
      "MaxPool", "pool1", {relu}, {1, 4, 3, 3},
      {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  int flat = b.node("Reshape", "flatten", {pool}, {1, 36});
  int fc = b.constant("fc", {36, 3}, std::vector<float>(108, 0.1f));
  int logits = b.node("Gemm", "fc1", {flat, fc}, {1, 3});
  int probs = b.node("Softmax", "softmax", {logits}, {1, 3}, {{"axis", int64_t{1}}});
  b.output(probs, "probs");
  checkGolden(b);
}

TEST_CASE("golden: data movement with two outputs") {
  GraphBuilder b("slices");
  int x = b.input("x", {4, 6});
  int t = b.node("Transpose", "transpose", {x}, {6, 4}, {{"perm", std::vector<int64_t>{1, 0}}});
  int s = b.node("Slice", "slice", {t}, {3, 4},
                 {{"starts", std::vector<int64_t>{0, 0}}, {"steps", std::vector<int64_t>{2, 1}}});
  int c = b.node("Concat", "concat", {s, s}, {6, 4}, {{"axis", int64_t{0}}});
  int i = b.node("Cast", "to_int", {c}, {6, 4}, {{"to", int64_t{7}}}, cgc::DType::kI64);
  b.output(c, "joined");
  b.output(i, "as_int");
  checkGolden(b);
}

TEST_CASE("golden: weights read from a file") {
  GraphBuilder b("file_weights");
  int x = b.input("x", {2, 3});
  int w = b.constant("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  int y = b.node("MatMul", "matmul", {x, w}, {2, 2});
  b.output(y, "y");
  checkGolden(b, /*embedWeights=*/false);
}

TEST_CASE("golden: two branches on two executors of two threads") {
  GraphBuilder b("two_executors");
  int x = b.input("x", {64, 64});
  int x2 = b.input("x2", {64, 64});
  int w1 = b.constant("w1", {64, 64}, std::vector<float>(64 * 64, 0.01f));
  int w2 = b.constant("w2", {64, 64}, std::vector<float>(64 * 64, 0.02f));
  int left = b.node("MatMul", "left", {x, w1}, {64, 64});
  int right = b.node("MatMul", "right", {x2, w2}, {64, 64});
  int l = b.node("Tanh", "left_tanh", {left}, {64, 64});
  int r = b.node("Sigmoid", "right_sigmoid", {right}, {64, 64});
  int sum = b.node("Add", "sum", {l, r}, {64, 64});
  b.output(sum, "y");
  checkGolden(b, /*embedWeights=*/true, /*executors=*/2, /*threads=*/2);
}

TEST_CASE("codegen: long op lists are split into functions") {
  GraphBuilder b("long_chain");
  int v = b.input("x", {8});
  for (int i = 0; i < 150; ++i)
    v = b.node(i % 2 ? "Sigmoid" : "Tanh", "act" + std::to_string(i), {v}, {8});
  b.output(v, "y");
  auto model = emit(b, /*embedWeights=*/true, 1, 1);
  CHECK(model.source.find("executor0_part2(team);") != std::string::npos);
  CHECK(model.source.find("executor0_part3") == std::string::npos);
  CHECK(model.header.find("void executor0_part0(const cgc::rt::Team& team);") != std::string::npos);
}
