// An "axis" attribute counted from the end (-1) lowers as its positive
// form: Concat and Gather on hand-built graphs (the importer normalises
// ONNX's nodes, so only such graphs carry a negative axis), interpreted with
// the runtime kernels against the values written out by hand.
#include <catch2/catch.hpp>
#include <cstring>

#include "graph_builder.h"
#include "interpret.h"
#include "ir/printer.h"

using cgc::DType;
using cgc::testing::GraphBuilder;
namespace ir = cgc::ir;

namespace {

int constant(GraphBuilder& b, const std::string& name, ir::Shape shape, DType type,
             const void* values, size_t bytes) {
  std::vector<uint8_t> data(bytes);
  std::memcpy(data.data(), values, bytes);
  return b.graph.addConstant(name, {type, std::move(shape)}, std::move(data));
}

const std::vector<float> kX = {0, 1, 2, 3, 4, 5};  // x: float[2, 3]

}  // namespace

TEST_CASE("Concat and Gather lower a negative axis as the last one") {
  SECTION("Concat axis -1: [2,3] and [2,2] into [2,5]") {
    GraphBuilder b("concat");
    const int x = b.input("x", {2, 3});
    const float more[] = {10, 11, 12, 13};
    const int c = constant(b, "c", {2, 2}, DType::kF32, more, sizeof(more));
    b.output(b.node("Concat", "concat", {x, c}, {2, 5}, {{"axis", int64_t{-1}}}), "y");
    INFO(ir::printGraph(b.graph));
    CHECK(cgc::testing::interpret(b.graph, kX) ==
          std::vector<float>{0, 1, 2, 10, 11, 3, 4, 5, 12, 13});
  }
  SECTION("Gather axis -1: columns 2 and 0 of [2,3]") {
    GraphBuilder b("gather");
    const int x = b.input("x", {2, 3});
    const int64_t columns[] = {2, 0};
    const int i = constant(b, "i", {2}, DType::kI64, columns, sizeof(columns));
    b.output(b.node("Gather", "gather", {x, i}, {2, 2}, {{"axis", int64_t{-1}}}), "y");
    INFO(ir::printGraph(b.graph));
    CHECK(cgc::testing::interpret(b.graph, kX) == std::vector<float>{2, 0, 5, 3});
  }
}
