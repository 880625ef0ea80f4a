// Frontend tests on the committed sample models: import, constant folding
// of shape sub-graphs, and the pipeline's effect on op counts.
#include <catch2/catch.hpp>

#include "ir/verifier.h"
#include "onnx_frontend/onnx_loader.h"
#include "passes/pass_manager.h"

namespace frontend = cgc::frontend;

namespace {
std::string sample(const std::string& name) {
  return std::string(CGC_SAMPLES_DIR) + "/" + name + "/model.onnx";
}
}  // namespace

TEST_CASE("tiny_cnn imports, and Conv+BatchNorm fold away") {
  cgc::ir::Graph graph = frontend::loadOnnx(sample("tiny_cnn"));
  CHECK(graph.countOps("Conv") == 2);
  CHECK(graph.countOps("BatchNormalization") == 2);
  cgc::passes::runPipeline(graph);
  CHECK(graph.countOps("Conv") == 2);
  CHECK(graph.countOps("BatchNormalization") == 0);
  CHECK(graph.inputs.size() == 1);
  CHECK(graph.outputs.size() == 1);
}

TEST_CASE("shape sub-graphs fold to constants at import") {
  cgc::ir::Graph graph = frontend::loadOnnx(sample("shapes"));
  for (const char* op : {"Shape", "Constant", "Unsqueeze", "Squeeze", "Flatten"})
    CHECK(graph.countOps(op) == 0);
  cgc::ir::verifyGraph(graph);
  for (int id : graph.liveNodes())
    for (int out : graph.node(id).outputs)
      for (int64_t d : graph.value(out).type.shape) CHECK(d >= 0);
}

TEST_CASE("shape bindings parse and reject malformed text") {
  CHECK(frontend::parseShape("1x3x224x224") == cgc::ir::Shape{1, 3, 224, 224});
  CHECK(frontend::parseShape("").empty());
  CHECK_THROWS_AS(frontend::parseShape("1x-3"), cgc::CompileError);
  CHECK_THROWS_AS(frontend::parseShape("1xx3"), cgc::CompileError);
  CHECK_THROWS_AS(frontend::parseShape("axb"), cgc::CompileError);
}

TEST_CASE("a missing model file is a user error naming the file") {
  try {
    frontend::loadOnnx("/nonexistent/model.onnx");
    FAIL("no error");
  } catch (const cgc::CompileError& e) {
    CHECK(std::string(e.what()).find("/nonexistent/model.onnx") != std::string::npos);
  }
}

TEST_CASE("If with a run-time condition keeps its branches as subgraphs") {
  cgc::ir::Graph graph = frontend::loadOnnx(sample("branches"));
  // Both of the sample's Ifs test the data: each runs only the branch its
  // condition picks.
  REQUIRE(graph.countOps("If") == 2);
  CHECK(graph.countOps("Where") == 0);
  int ifs = 0;
  for (int id : graph.liveNodes()) {
    const cgc::ir::Node& node = graph.node(id);
    if (node.op != "If") continue;
    REQUIRE(node.subgraphs.size() == 2);
    if (ifs++ == 0) {
      CHECK(node.subgraphs[0]->countOps("Relu") == 1);  // then_branch
      CHECK(node.subgraphs[1]->countOps("Tanh") == 1);  // else_branch
    }
    CHECK(node.subgraphs[0]->inputs.size() + node.subgraphs[1]->inputs.size() + 1 ==
          node.inputs.size());  // the condition, then each branch's captures
  }
  cgc::ir::verifyGraph(graph);
}

TEST_CASE("local functions are inlined") {
  cgc::ir::Graph graph = frontend::loadOnnx(sample("functions"));
  CHECK(graph.countOps("Gated") == 0);
  CHECK(graph.countOps("Sigmoid") == 2);
  cgc::ir::verifyGraph(graph);
}
