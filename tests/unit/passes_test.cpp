// Unit tests of the graph passes on tiny graphs built in C++: each runs one
// pass, then counts ops and checks the graph still verifies.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "graph_builder.h"
#include "interpret.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir_check.h"
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

using cgc::testing::checkIr;
using cgc::testing::GraphBuilder;
namespace ir = cgc::ir;
namespace passes = cgc::passes;

TEST_CASE("canonicalize removes Identity and collapses Reshape chains") {
  GraphBuilder b("canon");
  int x = b.input("x", {2, 6});
  int id = b.node("Identity", "id", {x}, {2, 6});
  int r1 = b.node("Reshape", "r1", {id}, {3, 4});
  int r2 = b.node("Reshape", "r2", {r1}, {12});
  int y = b.node("Relu", "relu", {r2}, {12});
  b.output(y, "y");
  REQUIRE(passes::canonicalize(b.graph));
  REQUIRE(passes::eliminateDeadCode(b.graph));
  ir::verifyGraph(b.graph);
  CHECK(b.graph.countOps("Identity") == 0);
  CHECK(b.graph.countOps("Reshape") == 1);
  CHECK(b.graph.node(b.graph.value(r2).producer).inputs[0] == x);
  CHECK_FALSE(passes::canonicalize(b.graph));
}

TEST_CASE("fold-constants evaluates constant sub-graphs") {
  GraphBuilder b("fold");
  int x = b.input("x", {3});
  int c1 = b.constant("c1", {3}, {1, 2, 3});
  int c2 = b.constant("c2", {3}, {10, 20, 30});
  int sum = b.node("Add", "sum", {c1, c2}, {3});
  int scaled = b.node("Mul", "scaled", {sum, c1}, {3});
  int y = b.node("Add", "y", {x, scaled}, {3});
  b.output(y, "y");
  REQUIRE(passes::foldConstants(b.graph));
  passes::eliminateDeadCode(b.graph);
  ir::verifyGraph(b.graph);
  CHECK(b.graph.liveNodes().size() == 1);
  const ir::Node& add = b.graph.node(b.graph.value(b.graph.outputs[0]).producer);
  const ir::Value& folded = b.graph.value(add.inputs[1]);
  REQUIRE(folded.isConstant());
  CHECK(folded.doubleValues() == std::vector<double>{11, 44, 99});
}

TEST_CASE("fold-constants keeps a node computed from the sizes of --dim") {
  // A causal mask Sliced from a constant at rows that follow the sizes: the
  // Slice's starts are parameters, its only input the constant.
  GraphBuilder b("sized");
  int x = b.input("x", {1, 2});
  int table = b.constant("table", {3, 2}, {1, 0, 1, 1, 1, 1});
  int rows =
      b.node("Slice", "rows", {table}, {1, 2},
             {{"starts", std::vector<int64_t>{1, 0}}, {"steps", std::vector<int64_t>{1, 1}}});
  int y = b.node("Mul", "y", {x, rows}, {1, 2});
  b.output(y, "y");
  b.graph.node(b.graph.value(rows).producer).sized = true;
  INFO(ir::printGraph(b.graph));
  CHECK(ir::printGraph(b.graph).find("sized: computed at run time") != std::string::npos);
  CHECK_FALSE(passes::foldConstants(b.graph));
  CHECK(b.graph.countOps("Slice") == 1);
  b.graph.node(b.graph.value(rows).producer).sized = false;
  CHECK(passes::foldConstants(b.graph));
  CHECK(b.graph.countOps("Slice") == 0);
}

TEST_CASE("fold-conv-batchnorm removes BatchNormalization and keeps results") {
  GraphBuilder b("convbn");
  int x = b.input("x", {1, 2, 4, 4});
  std::vector<float> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.7f * i);
  int weights = b.constant("w", {3, 2, 3, 3}, w);
  int bias = b.constant("b", {3}, {0.1f, -0.2f, 0.3f});
  int conv = b.node("Conv", "conv", {x, weights, bias}, {1, 3, 4, 4},
                    {{"kernel_shape", std::vector<int64_t>{3, 3}},
                     {"strides", std::vector<int64_t>{1, 1}},
                     {"dilations", std::vector<int64_t>{1, 1}},
                     {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                     {"group", int64_t{1}}});
  int scale = b.constant("scale", {3}, {1.5f, 0.5f, 2.0f});
  int shift = b.constant("shift", {3}, {0.0f, 1.0f, -1.0f});
  int mean = b.constant("mean", {3}, {0.2f, -0.1f, 0.4f});
  int var = b.constant("var", {3}, {0.9f, 1.3f, 0.25f});
  int bn = b.node("BatchNormalization", "bn", {conv, scale, shift, mean, var}, {1, 3, 4, 4},
                  {{"epsilon", 1e-5}});
  b.output(bn, "y");

  std::vector<float> input(32);
  for (size_t i = 0; i < input.size(); ++i) input[i] = std::cos(0.3f * i);
  auto before = cgc::testing::interpret(b.graph, input);
  REQUIRE(passes::foldConvBatchNorm(b.graph));
  passes::eliminateDeadCode(b.graph);
  ir::verifyGraph(b.graph);
  checkIr(b.graph,
          {"%conv_bn_weights = constant float32[3,2,3,3]", "%conv_bn_bias = constant float32[3]",
           "conv = Conv(%x, %conv_bn_weights, %conv_bn_bias) -> %bn_out float32[1,3,4,4]",
           "NOT: BatchNormalization"});
  auto after = cgc::testing::interpret(b.graph, input);
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i)
    CHECK(after[i] == Approx(before[i]).epsilon(1e-5).margin(1e-5));
}

TEST_CASE("fold-conv-batchnorm leaves a Conv whose output has other readers") {
  GraphBuilder b("convbn_shared");
  int x = b.input("x", {1, 1, 3, 3});
  int w = b.constant("w", {1, 1, 1, 1}, {2});
  int conv =
      b.node("Conv", "conv", {x, w}, {1, 1, 3, 3}, {{"kernel_shape", std::vector<int64_t>{1, 1}}});
  int one = b.constant("one", {1}, {1});
  int zero = b.constant("zero", {1}, {0});
  int bn = b.node("BatchNormalization", "bn", {conv, one, zero, zero, one}, {1, 1, 3, 3});
  int sum = b.node("Add", "sum", {bn, conv}, {1, 1, 3, 3});
  b.output(sum, "y");
  CHECK_FALSE(passes::foldConvBatchNorm(b.graph));
  CHECK(b.graph.countOps("BatchNormalization") == 1);
}

namespace {

/// A graph of one ConvTranspose with constant weights and bias, as ONNX
/// lays them out ([C_in, C_out, k_h, k_w]).
GraphBuilder convTranspose(const std::string& name, ir::Shape x, ir::Shape w, ir::Shape y,
                           std::vector<int64_t> strides, std::vector<int64_t> pads) {
  GraphBuilder b(name);
  const int in = b.input("x", x);
  std::vector<float> weights(w[0] * w[1] * w[2] * w[3]), bias(w[1]);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = std::sin(0.37f * i);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * i;
  const int wId = b.constant("w", w, weights), bId = b.constant("b", {w[1]}, bias);
  b.output(b.node("ConvTranspose", "up", {in, wId, bId}, y,
                  {{"kernel_shape", std::vector<int64_t>{w[2], w[3]}},
                   {"strides", strides},
                   {"dilations", std::vector<int64_t>{1, 1}},
                   {"pads", pads},
                   {"group", int64_t{1}}}),
           "y");
  return b;
}

/// Runs decompose-conv-transpose on `b`; checks the IR, then that the
/// outputs match the runtime's ConvTranspose kernel's.
void checkDecomposition(GraphBuilder& b, const std::vector<std::string>& ir) {
  std::vector<float> input(b.graph.value(b.graph.inputs[0]).type.numElements());
  for (size_t i = 0; i < input.size(); ++i) input[i] = std::cos(0.3f * i);
  const auto before = cgc::testing::interpret(b.graph, input);
  REQUIRE(passes::decomposeConvTranspose(b.graph));
  passes::eliminateDeadCode(b.graph);
  ir::verifyGraph(b.graph);
  checkIr(b.graph, ir);
  const auto after = cgc::testing::interpret(b.graph, input);
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i)
    CHECK(after[i] == Approx(before[i]).epsilon(1e-5).margin(1e-5));
}

}  // namespace

TEST_CASE("decompose-conv-transpose: stride 2 as one Conv per phase, interleaved") {
  // 4x4 stride 2 pad 1 (DCGAN): four 2x2 phases; row phase 0 reads rows
  // h-1 and h (padding 1 in front), phase 1 rows h and h+1 (1 behind).
  GraphBuilder b =
      convTranspose("up2", {2, 3, 3, 4}, {3, 16, 4, 4}, {2, 16, 6, 8}, {2, 2}, {1, 1, 1, 1});
  checkDecomposition(
      b, {"up/phase00 = Conv(%x, %up/phase00_weights, %b) -> %up/phase00_out "
          "float32[2,16,3,4]",
          "SAME: pads = [1, 1, 0, 0]", "up/phase01 = Conv", "SAME: pads = [1, 0, 0, 1]",
          "up/phase11 = Conv", "SAME: pads = [0, 0, 1, 1]",
          "up/phases = Concat(%up/phase00_out, %up/phase01_out, %up/phase10_out, "
          "%up/phase11_out)",
          "up/interleave = Transpose", "SAME: perm = [2, 3, 4, 0, 5, 1]", "NOT: ConvTranspose"});
}

TEST_CASE("decompose-conv-transpose: stride 1 as one Conv, a 1x1 input as a MatMul") {
  GraphBuilder one =
      convTranspose("up1", {1, 4, 5, 5}, {4, 16, 3, 3}, {1, 16, 5, 6}, {1, 1}, {0, 1, 2, 0});
  checkDecomposition(one, {"up = Conv(%x, %up_weights, %b) -> %up_out float32[1,16,5,6]",
                           "SAME: pads = [2, 1, 0, 2]", "NOT: Transpose"});
  GraphBuilder flat =
      convTranspose("up_flat", {3, 5, 1, 1}, {5, 16, 4, 4}, {3, 16, 4, 4}, {1, 1}, {0, 0, 0, 0});
  checkDecomposition(flat, {"up/matmul = MatMul(%up_rows, %up_matrix)", "up/bias = Add",
                            "up/planes = Reshape", "NOT: Conv"});
}

TEST_CASE("decompose-conv-transpose leaves what its phases cannot express") {
  // Padding 5 with a 4x4 window at stride 2: a phase would start 1 row
  // inside the input (negative padding); 3 output channels.
  GraphBuilder padded =
      convTranspose("padded", {1, 2, 8, 8}, {2, 16, 4, 4}, {1, 16, 8, 8}, {2, 2}, {5, 5, 5, 5});
  CHECK_FALSE(passes::decomposeConvTranspose(padded.graph));
  GraphBuilder narrow =
      convTranspose("narrow", {1, 16, 6, 6}, {16, 3, 4, 4}, {1, 3, 12, 12}, {2, 2}, {1, 1, 1, 1});
  CHECK_FALSE(passes::decomposeConvTranspose(narrow.graph));
}

TEST_CASE("fold-pad gives a Pad of zeros to the Conv or AveragePool that reads it") {
  auto build = [](const std::string& reader, std::vector<int64_t> readerPads, int64_t includePad) {
    GraphBuilder b("padded_" + reader);
    const int x = b.input("x", {1, 2, 5, 6});
    const int padded = b.node("Pad", "pad", {x}, {1, 2, 7, 9},
                              {{"pads", std::vector<int64_t>{0, 0, 1, 2, 0, 0, 1, 1}},
                               {"mode", std::string("constant")},
                               {"value", 0.0}});
    std::map<std::string, ir::Attribute> window = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                                   {"strides", std::vector<int64_t>{1, 2}},
                                                   {"dilations", std::vector<int64_t>{1, 1}},
                                                   {"pads", readerPads}};
    const int64_t rows = 7 + readerPads[0] + readerPads[2] - 2;
    const int64_t cols = (9 + readerPads[1] + readerPads[3] - 3) / 2 + 1;
    if (reader == "Conv") {
      std::vector<float> w(3 * 2 * 9);
      for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.4f * i);
      window["group"] = int64_t{1};
      b.output(b.node("Conv", "conv", {padded, b.constant("w", {3, 2, 3, 3}, w)},
                      {1, 3, rows, cols}, window),
               "y");
    } else {
      window["count_include_pad"] = includePad;
      b.output(b.node("AveragePool", "pool", {padded}, {1, 2, rows, cols}, window), "y");
    }
    return b;
  };
  auto check = [](GraphBuilder& b, const std::vector<std::string>& ir) {
    std::vector<float> input(60);
    for (size_t i = 0; i < input.size(); ++i) input[i] = std::sin(0.3f * i);
    const auto before = cgc::testing::interpret(b.graph, input);
    REQUIRE(passes::foldPad(b.graph));
    ir::verifyGraph(b.graph);
    checkIr(b.graph, ir);
    const auto after = cgc::testing::interpret(b.graph, input);
    REQUIRE(before.size() == after.size());
    for (size_t i = 0; i < before.size(); ++i)
      CHECK(after[i] == Approx(before[i]).epsilon(1e-6).margin(1e-6));
  };
  GraphBuilder conv = build("Conv", {1, 0, 0, 1}, 0);
  check(conv, {"conv = Conv(%x, %w)", "SAME: pads = [2, 2, 1, 2]", "NOT: Pad"});
  GraphBuilder pool = build("AveragePool", {0, 0, 0, 0}, 0);
  check(pool, {"pool = AveragePool(%x)", "SAME: count_include_pad = 1", "SAME: pads = [1, 2, 1, 1]",
               "NOT: Pad"});
  // Its own padding, not counted in its windows: the two kinds would mix.
  GraphBuilder mixed = build("AveragePool", {1, 0, 1, 0}, 0);
  CHECK_FALSE(passes::foldPad(mixed.graph));
  GraphBuilder counted = build("AveragePool", {1, 0, 1, 0}, 1);
  check(counted, {"pool = AveragePool(%x)", "SAME: pads = [2, 2, 2, 1]"});
}

TEST_CASE("dead-code keeps graph outputs and removes unread nodes") {
  GraphBuilder b("dead");
  int x = b.input("x", {4});
  b.node("Exp", "unused", {x}, {4});
  int y = b.node("Relu", "relu", {x}, {4});
  b.output(y, "y");
  REQUIRE(passes::eliminateDeadCode(b.graph));
  CHECK(b.graph.liveNodes().size() == 1);
  CHECK(b.graph.countOps("Exp") == 0);
}

TEST_CASE("the pipeline rejects an unknown pass name") {
  GraphBuilder b("pipeline");
  int x = b.input("x", {1});
  b.output(b.node("Relu", "r", {x}, {1}), "y");
  passes::PipelineOptions options;
  options.disabled = {"no-such-pass"};
  CHECK_THROWS_AS(passes::runPipeline(b.graph, options), cgc::CompileError);
}

TEST_CASE("the verifier catches a value with two producers") {
  GraphBuilder b("broken");
  int x = b.input("x", {2});
  int y = b.node("Relu", "a", {x}, {2});
  b.output(y, "y");
  ir::verifyGraph(b.graph);
  ir::Node& second = b.graph.node(b.graph.addNode("Neg", "b", {x}, {}));
  second.outputs.push_back(y);  // bypasses addNode's own check
  CHECK_THROWS_AS(ir::verifyGraph(b.graph), cgc::InternalError);
}

TEST_CASE("fuse-epilogues folds Add and Relu into Conv, Add and Clip into MatMul") {
  GraphBuilder b("epilogues");
  int x = b.input("x", {1, 2, 4, 4});
  std::vector<float> w(2 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.7f * i);
  int weights = b.constant("w", {2, 2, 3, 3}, w);
  int conv = b.node(
      "Conv", "conv", {x, weights}, {1, 2, 4, 4},
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  int sum = b.node("Add", "residual", {x, conv}, {1, 2, 4, 4});
  int relu = b.node("Relu", "relu", {sum}, {1, 2, 4, 4});
  std::vector<float> m(4 * 3);
  for (size_t i = 0; i < m.size(); ++i) m[i] = std::cos(1.3f * i);
  int mat = b.constant("m", {4, 3}, m);
  int mm = b.node("MatMul", "mm", {relu, mat}, {1, 2, 4, 3});
  int bias = b.constant("bias", {3}, {0.5f, -0.5f, 0.25f});
  int biased = b.node("Add", "bias_add", {mm, bias}, {1, 2, 4, 3});
  int clip = b.node("Clip", "clip", {biased}, {1, 2, 4, 3}, {{"min", -0.5}, {"max", 1.0}});
  b.output(clip, "y");

  std::vector<float> input(32);
  for (size_t i = 0; i < input.size(); ++i) input[i] = std::cos(0.3f * i);
  auto before = cgc::testing::interpret(b.graph, input);
  REQUIRE(passes::fuseEpilogues(b.graph));
  passes::eliminateDeadCode(b.graph);
  ir::verifyGraph(b.graph);
  checkIr(b.graph, {"graph epilogues (inputs: %x float32[1,2,4,4]; outputs: y = %clip_out)",
                    "conv = Conv(%x, %w, none, %x) -> %relu_out float32[1,2,4,4] "
                    "{cgc_activation = \"Relu\", kernel_shape = [3, 3], pads = [1, 1, 1, 1]}",
                    "NOT: Add(",
                    "mm = MatMul(%relu_out, %m, %bias) -> %clip_out float32[1,2,4,3] "
                    "{cgc_act_max = 1, cgc_act_min = -0.5, cgc_activation = \"Clip\"}",
                    "NOT: = "});
  auto after = cgc::testing::interpret(b.graph, input);
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i)
    CHECK(after[i] == Approx(before[i]).epsilon(1e-5).margin(1e-5));
}

TEST_CASE("fuse-conv-maxpool stores a stem's 3x3 stride-2 max pooling from the Conv") {
  // conv 3 -> 8 channels, 3x3 stride 2 on 40x36 (19x17), Relu, MaxPool with
  // ceil mode (10x9); a second stem whose output has another reader stays.
  GraphBuilder b("stem_pool");
  int x = b.input("x", {1, 3, 40, 36});
  std::vector<float> w(8 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * i);
  int weights = b.constant("w", {8, 3, 3, 3}, w);
  auto convAttrs = std::map<std::string, ir::Attribute>{
      {"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}}};
  auto poolAttrs =
      std::map<std::string, ir::Attribute>{{"kernel_shape", std::vector<int64_t>{3, 3}},
                                           {"strides", std::vector<int64_t>{2, 2}},
                                           {"ceil_mode", int64_t{1}}};
  int conv = b.node("Conv", "stem", {x, weights}, {1, 8, 19, 17}, convAttrs);
  int relu = b.node("Relu", "relu", {conv}, {1, 8, 19, 17});
  int pooled = b.node("MaxPool", "pool", {relu}, {1, 8, 10, 9}, poolAttrs);
  b.output(pooled, "y");
  int conv2 = b.node("Conv", "stem2", {x, weights}, {1, 8, 19, 17}, convAttrs);
  int pooled2 = b.node("MaxPool", "pool2", {conv2}, {1, 8, 10, 9}, poolAttrs);
  b.output(pooled2, "z");
  b.output(conv2, "unpooled");

  std::vector<float> input(3 * 40 * 36);
  for (size_t i = 0; i < input.size(); ++i) input[i] = std::cos(0.11f * i);
  auto before = cgc::testing::interpret(b.graph, input);
  REQUIRE(passes::fuseEpilogues(b.graph));
  REQUIRE(passes::fuseConvMaxPool(b.graph));
  passes::eliminateDeadCode(b.graph);
  ir::verifyGraph(b.graph);
  // stem stores the pooled 10x9 planes and keeps its own 19x17 shape; pool2
  // stays, as its Conv is also a graph output.
  checkIr(b.graph, {"stem = Conv(%x, %w) -> %pool_out float32[1,8,10,9] {",
                    "SAME: cgc_activation = \"Relu\", cgc_conv_shape = [1, 8, 19, 17], "
                    "cgc_pool_pads = [0, 0]",
                    "stem2 = Conv(%x, %w) -> %stem2_out float32[1,8,19,17] {kernel_shape",
                    "pool2 = MaxPool(%stem2_out) -> %pool2_out float32[1,8,10,9]"});
  CHECK(b.graph.liveNodes().size() == 3);
  auto after = cgc::testing::interpret(b.graph, input);
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i)
    CHECK(after[i] == Approx(before[i]).epsilon(1e-5).margin(1e-5));
}

TEST_CASE("fuse-epilogues leaves outputs with other readers and self-adds") {
  GraphBuilder b("no_epilogues");
  int x = b.input("x", {1, 1, 3, 3});
  int w = b.constant("w", {1, 1, 1, 1}, {2});
  auto attrs = std::map<std::string, ir::Attribute>{{"kernel_shape", std::vector<int64_t>{1, 1}}};
  int conv = b.node("Conv", "conv", {x, w}, {1, 1, 3, 3}, attrs);
  int twice = b.node("Add", "twice", {conv, conv}, {1, 1, 3, 3});
  int conv2 = b.node("Conv", "conv2", {twice, w}, {1, 1, 3, 3}, attrs);
  int relu = b.node("Relu", "relu", {conv2}, {1, 1, 3, 3});
  b.output(relu, "y");
  b.output(conv2, "z");  // a graph output cannot be fused away
  CHECK_FALSE(passes::fuseEpilogues(b.graph));
  CHECK(b.graph.countOps("Add") == 1);
  CHECK(b.graph.countOps("Relu") == 1);
}

TEST_CASE("pack-rnn-weights packs constant W and R once and keeps the results") {
  // A bidirectional GRU without linear_before_reset: R packs in two parts.
  const int64_t seq = 3, batch = 2, input = 5, hidden = 20, gates = 3;
  auto cell = [&](GraphBuilder& b, int x, int w) {
    std::vector<float> r(2 * gates * hidden * hidden), bias(2 * 2 * gates * hidden);
    for (size_t i = 0; i < r.size(); ++i) r[i] = 0.2f * std::sin(0.37f * i);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * std::cos(0.9f * i);
    const int rw = b.constant("r", {2, gates * hidden, hidden}, r);
    const int bw = b.constant("b", {2, 2 * gates * hidden}, bias);
    const std::vector<int64_t> codes = {0, 1, 1, 0, 1, 1};  // sigmoid, tanh per direction
    return b.node("GRU", "gru", {x, w, rw, bw}, {seq, 2, batch, hidden},
                  {{"hidden_size", hidden},
                   {"num_directions", int64_t{2}},
                   {"reverse", int64_t{0}},
                   {"batch_major", int64_t{0}},
                   {"linear_before_reset", int64_t{0}},
                   {"input_forget", int64_t{0}},
                   {"activations", codes},
                   {"activation_alpha", std::vector<double>(6, 0.0)},
                   {"activation_beta", std::vector<double>(6, 0.0)}});
  };
  GraphBuilder b("gru");
  const int x = b.input("x", {seq, batch, input});
  std::vector<float> w(2 * gates * hidden * input);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.3f * std::cos(0.53f * i);
  b.output(cell(b, x, b.constant("w", {2, gates * hidden, input}, w)), "y");

  std::vector<float> in(seq * batch * input);
  for (size_t i = 0; i < in.size(); ++i) in[i] = std::sin(0.21f * i);
  auto before = cgc::testing::interpret(b.graph, in);
  REQUIRE(passes::packRecurrentWeights(b.graph));
  ir::verifyGraph(b.graph);
  // 20 units pad to two blocks of 16: W 2 x 32 x 3 gates x 5, R 2 x 32 x 3 x 20.
  checkIr(b.graph, {"%w_packed = constant float32[960]", "%r_packed = constant float32[3840]",
                    "gru = GRU(%x, %w_packed, %r_packed, %b) -> %gru_out float32[3,2,2,20] {",
                    "SAME: cgc_packed_weights = 1, hidden_size = 20"});
  CHECK_FALSE(passes::packRecurrentWeights(b.graph));  // packed once
  auto after = cgc::testing::interpret(b.graph, in);
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == Approx(before[i]).margin(1e-6));

  // W given at run time: the kernel packs it per call, the pass leaves it.
  GraphBuilder runtimeW("gru_runtime_w");
  const int x2 = runtimeW.input("x", {seq, batch, input});
  runtimeW.output(cell(runtimeW, x2, runtimeW.input("w", {2, gates * hidden, input})), "y");
  CHECK_FALSE(passes::packRecurrentWeights(runtimeW.graph));
}

namespace {

/// x [1,32,side,side] -> Conv a (32 to 32) -> Conv b (32 to 32) + a, Relu
/// -> GlobalAveragePool, 3x3 convolutions that keep the plane's size; with
/// `pooledA`, a is also max-pooled (a reader that takes only NCHW) and that
/// pool's average added to the output.
GraphBuilder convChain(bool pooledA, int64_t side = 6) {
  GraphBuilder b("chain");
  auto weights = [&](const std::string& name, int64_t out, int64_t in) {
    std::vector<float> w(out * in * 9);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.2f * std::sin(0.37f * i + out);
    return b.constant(name, {out, in, 3, 3}, w);
  };
  const std::map<std::string, ir::Attribute> same{{"kernel_shape", std::vector<int64_t>{3, 3}},
                                                  {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  int x = b.input("x", {1, 32, side, side});
  int a = b.node("Conv", "a", {x, weights("wa", 32, 32)}, {1, 32, side, side}, same);
  int convB = b.node("Conv", "b", {a, weights("wb", 32, 32)}, {1, 32, side, side}, same);
  int sum = b.node("Add", "residual", {convB, a}, {1, 32, side, side});
  int relu = b.node("Relu", "relu", {sum}, {1, 32, side, side});
  int y = b.node("GlobalAveragePool", "gap", {relu}, {1, 32, 1, 1});
  if (pooledA) {
    int pool = b.node("MaxPool", "pool", {a}, {1, 32, side, side},
                      {{"kernel_shape", std::vector<int64_t>{1, 1}}});
    int pooledMean = b.node("GlobalAveragePool", "gap_pool", {pool}, {1, 32, 1, 1});
    y = b.node("Add", "sum", {y, pooledMean}, {1, 32, 1, 1});
  }
  b.output(y, "y");
  return b;
}

}  // namespace

TEST_CASE("block-activations blocks what passes between packed convolutions") {
  // 6x6 planes get packed weights, 14x14 ones (16 tiles of 4x4)
  // Winograd F(4x4, 3x3)'s.
  for (auto [pooledA, side] : {std::pair{false, 6}, {true, 6}, {false, 14}, {true, 14}}) {
    INFO((pooledA ? "a also max-pooled" : "a read by convolutions only") << ", side " << side);
    GraphBuilder b = convChain(pooledA, side);
    std::vector<float> input(32 * side * side);
    for (size_t i = 0; i < input.size(); ++i) input[i] = std::cos(0.3f * i);
    const auto before = cgc::testing::interpret(b.graph, input);
    REQUIRE(passes::fuseEpilogues(b.graph));
    passes::eliminateDeadCode(b.graph);
    REQUIRE(passes::packConvolutionWeights(b.graph));
    for (int id : b.graph.liveNodes()) {
      const ir::Node& node = b.graph.node(id);
      if (node.op != "Conv") continue;
      CHECK(node.getInt("cgc_packed_weights", 0) == (side == 14 ? 3 : 1));
      CHECK(b.graph.value(node.inputs[1]).type.numElements() ==
            (side == 14 ? 36 * 32 * 32 : 32 * 32 * 9));
    }
    // Without the pool: a (read as input and as residual) and b's output (read
    // by GlobalAveragePool). With it: a is plain, so b's residual is, so b's
    // output must be too.
    CHECK(passes::blockActivations(b.graph) == !pooledA);
    ir::verifyGraph(b.graph);
    const std::string shape = fmt::format("[1,32,{0},{0}]", side);
    const std::string layout = pooledA ? "" : " blocked";
    // Winograd F(4x4)'s 36 x c_in x c_out or panels of c_out x c_in x 9.
    const int packing = side == 14 ? 3 : 1;
    const char* form = side == 14 ? "winograd" : "packed";
    const char* variant = side == 14 ? "Winograd" : "Packed";
    const char* depthStep = side == 14 ? "" : "cgc_depth_step = 1024, ";
    checkIr(b.graph, {fmt::format("%wa_{} = constant float32[{}]", form, side == 14 ? 36864 : 9216),
                      fmt::format("%wb_{} = constant float32[{}]", form, side == 14 ? 36864 : 9216),
                      fmt::format("a = Conv(%x, %wa_{}) -> %a_out float32{}{} "
                                  "{{cgc_conv_variant = \"{}\", {}cgc_packed_weights = {}, ",
                                  form, shape, layout, variant, depthStep, packing),
                      fmt::format("b = Conv(%a_out, %wb_{}, none, %a_out) -> %relu_out "
                                  "float32{}{} {{cgc_activation = \"Relu\", "
                                  "cgc_conv_variant = \"{}\", {}cgc_packed_weights = {}, ",
                                  form, shape, layout, variant, depthStep, packing),
                      "gap = GlobalAveragePool(%relu_out)"});
    int blocked = 0;
    for (int v = 0; v < b.graph.numValues(); ++v)
      blocked += b.graph.value(v).layout == ir::Layout::kChannelBlocked;
    CHECK(blocked == (pooledA ? 0 : 2));
    const auto after = cgc::testing::interpret(b.graph, input);
    REQUIRE(before.size() == after.size());
    for (size_t i = 0; i < before.size(); ++i)
      CHECK(after[i] == Approx(before[i]).epsilon(1e-5).margin(1e-5));
  }
}

TEST_CASE("block-activations keeps the sums of blocked convolutions blocked") {
  // x -> Conv a, Conv b -> Add -> Conv c -> GlobalAveragePool (PathNet's
  // modules); with `pooledSum`, the sum is also max-pooled (a reader that
  // takes only NCHW), so it, and a and b that write it, stay plain.
  for (bool pooledSum : {false, true}) {
    INFO((pooledSum ? "the sum also max-pooled" : "the sum read by a convolution only"));
    GraphBuilder b("modules");
    const std::map<std::string, ir::Attribute> same{{"kernel_shape", std::vector<int64_t>{3, 3}},
                                                    {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    auto conv = [&](const std::string& name, int in) {
      std::vector<float> w(32 * 32 * 9);
      for (size_t i = 0; i < w.size(); ++i) w[i] = 0.2f * std::sin(0.37f * i + name.size());
      return b.node("Conv", name, {in, b.constant("w" + name, {32, 32, 3, 3}, w)}, {1, 32, 6, 6},
                    same);
    };
    const int x = b.input("x", {1, 32, 6, 6});
    const int sum = b.node("Add", "sum", {conv("a", x), conv("b", x)}, {1, 32, 6, 6});
    int y = b.node("GlobalAveragePool", "gap", {conv("c", sum)}, {1, 32, 1, 1});
    if (pooledSum) {
      const int pool = b.node("MaxPool", "pool", {sum}, {1, 32, 6, 6},
                              {{"kernel_shape", std::vector<int64_t>{1, 1}}});
      y = b.node("Add", "total",
                 {y, b.node("GlobalAveragePool", "gap_pool", {pool}, {1, 32, 1, 1})},
                 {1, 32, 1, 1});
    }
    b.output(y, "y");
    std::vector<float> input(32 * 36);
    for (size_t i = 0; i < input.size(); ++i) input[i] = std::cos(0.3f * i);
    const auto before = cgc::testing::interpret(b.graph, input);
    REQUIRE(passes::packConvolutionWeights(b.graph));
    CHECK(passes::blockActivations(b.graph));
    ir::verifyGraph(b.graph);
    const std::string layout = pooledSum ? "" : " blocked";
    checkIr(b.graph,
            {fmt::format("a = Conv(%x, %wa_packed) -> %a_out float32[1,32,6,6]{}", layout),
             fmt::format("b = Conv(%x, %wb_packed) -> %b_out float32[1,32,6,6]{}", layout),
             fmt::format("sum = Add(%a_out, %b_out) -> %sum_out float32[1,32,6,6]{}", layout),
             "c = Conv(%sum_out, %wc_packed) -> %c_out float32[1,32,6,6] blocked"});
    const auto after = cgc::testing::interpret(b.graph, input);
    REQUIRE(before.size() == after.size());
    for (size_t i = 0; i < before.size(); ++i)
      CHECK(after[i] == Approx(before[i]).epsilon(1e-5).margin(1e-5));
  }
}

TEST_CASE("pack-conv-weights chooses the Winograd tile for the target's vector width") {
  // 16 to 32 channels on 20x20: F(4x4, 3x3) pays with 16 lanes; with 8
  // (AVX2) it needs 64 channels in and out together, and the layer, too
  // shallow for F(2x2), takes the packed kernel.
  const std::pair<int, std::string> expected[] = {
      {16,
       "conv = Conv(%x, %w_winograd) -> %conv_out float32[1,32,20,20] {cgc_conv_variant = "
       "\"Winograd\", cgc_packed_weights = 3"},
      {8,
       "conv = Conv(%x, %w_packed) -> %conv_out float32[1,32,20,20] {cgc_conv_variant = "
       "\"Packed\", cgc_depth_step = 384, cgc_packed_weights = 1"}};
  for (const auto& [lanes, ir] : expected) {
    INFO(lanes << " lanes");
    GraphBuilder b("tile");
    std::vector<float> w(32 * 16 * 9);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * std::sin(0.41f * i);
    const int x = b.input("x", {1, 16, 20, 20});
    b.output(b.node("Conv", "conv", {x, b.constant("w", {32, 16, 3, 3}, w)}, {1, 32, 20, 20},
                    {{"kernel_shape", std::vector<int64_t>{3, 3}},
                     {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
             "y");
    std::vector<float> input(16 * 400);
    for (size_t i = 0; i < input.size(); ++i) input[i] = std::cos(0.3f * i);
    const auto before = cgc::testing::interpret(b.graph, input);
    passes::PassTarget target;
    target.machine.vectorBits = 32 * lanes;
    REQUIRE(passes::packConvolutionWeights(b.graph, target));
    ir::verifyGraph(b.graph);
    checkIr(b.graph, {ir});
    const auto after = cgc::testing::interpret(b.graph, input);
    REQUIRE(before.size() == after.size());
    for (size_t i = 0; i < before.size(); ++i)
      CHECK(after[i] == Approx(before[i]).epsilon(1e-4).margin(1e-4));
  }
}

TEST_CASE("pack-conv-weights gives 5x5, 1x7, 7x1, 1x3 and 3x1 layers Winograd up to 16 MB") {
  // Inception-v3's windows with 'same' padding: F(2, 7)'s 8 transformed
  // matrices of 32 x 32, F(2x2, 5x5)'s 36, F(4, 3)'s 6 (1x3, 3x1); 768 to
  // 768 at 1x7 (4.7M floats transformed), 384 to 384 at 5x5 (5.3M) and 1x3
  // on 8x8 (16 tiles of 4) take the packed kernel.
  struct Case {
    int64_t kh, kw, in, out, side;
    std::string ir;
  };
  auto winograd = [](int64_t packing, int64_t side) {
    return fmt::format(
        "conv = Conv(%x, %w_winograd) -> %conv_out float32[1,32,{0},{0}] "
        "{{cgc_conv_variant = \"Winograd\", cgc_packed_weights = {1}",
        side, packing);
  };
  const Case cases[] = {
      {1, 7, 32, 32, 17, winograd(2, 17)},
      {7, 1, 32, 32, 17, winograd(2, 17)},
      {5, 5, 32, 32, 17, winograd(2, 17)},
      {1, 3, 32, 32, 17, winograd(3, 17)},
      {3, 1, 32, 32, 17, winograd(3, 17)},
      {1, 3, 64, 64, 8,
       "conv = Conv(%x, %w_packed) -> %conv_out float32[1,64,8,8] "
       "{cgc_conv_variant = \"Packed\", cgc_depth_step = 1024, cgc_packed_weights = 1"},
      {1, 7, 768, 768, 3,
       "conv = Conv(%x, %w_packed) -> %conv_out float32[1,768,3,3] "
       "{cgc_conv_variant = \"Packed\", cgc_depth_step = 1024, cgc_packed_weights = 1"},
      {5, 5, 384, 384, 3,
       "conv = Conv(%x, %w_packed) -> %conv_out float32[1,384,3,3] "
       "{cgc_conv_variant = \"Packed\", cgc_depth_step = 1024, cgc_packed_weights = 1"}};
  for (const Case& c : cases) {
    INFO(c.kh << "x" << c.kw << ", " << c.in << " channels in, " << c.out << " out");
    GraphBuilder b("one_dimensional");
    std::vector<float> w(c.in * c.out * c.kh * c.kw);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * std::sin(0.41f * i);
    const int x = b.input("x", {1, c.in, c.side, c.side});
    const int64_t padH = c.kh / 2, padW = c.kw / 2, outSide = c.side + 2 * padH - c.kh + 1;
    b.output(b.node("Conv", "conv", {x, b.constant("w", {c.out, c.in, c.kh, c.kw}, w)},
                    {1, c.out, outSide, outSide},
                    {{"kernel_shape", std::vector<int64_t>{c.kh, c.kw}},
                     {"pads", std::vector<int64_t>{padH, padW, padH, padW}}}),
             "y");
    std::vector<float> input(c.in * c.side * c.side);
    for (size_t i = 0; i < input.size(); ++i) input[i] = std::cos(0.3f * i);
    const auto before = cgc::testing::interpret(b.graph, input);
    REQUIRE(passes::packConvolutionWeights(b.graph));
    ir::verifyGraph(b.graph);
    checkIr(b.graph, {c.ir});
    // Transformed matrices: F(2x2, 5x5) 36, F(2x2, 2x2) 9, F(2, 7) 8, F(4, 3) 6.
    const int64_t taps = c.kh * c.kw;
    const int64_t matrices = taps == 25 ? 36 : taps == 4 ? 9 : taps == 3 ? 6 : 8;
    if (c.in == 32)
      checkIr(b.graph,
              {fmt::format("%w_winograd = constant float32[{}]", matrices * c.in * c.out)});
    const auto after = cgc::testing::interpret(b.graph, input);
    REQUIRE(before.size() == after.size());
    for (size_t i = 0; i < before.size(); ++i)
      CHECK(after[i] == Approx(before[i]).epsilon(1e-4).margin(1e-4));
  }
}

TEST_CASE("pack-conv-weights records each layer's variant for the target's tier") {
  // The variants of cgc/kernels/conv_variants.def, chosen with the target's
  // context: a 3x3 depthwise layer takes the AVX-512 row kernel from tier
  // skx, and without it (avx2) channel vectors at stride 2, the plane
  // phases at stride 1; a 1x1 layer on 56x56 the NCHW GEMM; a 3x3 layer on
  // 56x56 Winograd's weights. Each runs the same numbers as before.
  struct Case {
    const char* tier;
    int lanes;
    int64_t stride;
    std::vector<std::string> ir;
  };
  const Case cases[] = {
      {"skx",
       16,
       1,
       {"dw = Conv(%x, %wdw)", "SAME: cgc_conv_variant = \"DepthwiseRows\"",
        "pw = Conv(%dw_out, %wpw)", "SAME: cgc_conv_variant = \"Pointwise\"",
        "full = Conv(%pw_out, %wfull_winograd)", "SAME: cgc_conv_variant = \"Winograd\""}},
      {"avx2", 8, 2, {"dw = Conv(%x, %wdw)", "SAME: cgc_conv_variant = \"DepthwiseVectors\""}},
      {"avx2", 8, 1, {"dw = Conv(%x, %wdw)", "SAME: cgc_conv_variant = \"DepthwisePlanes\""}},
  };
  for (const Case& c : cases) {
    INFO("tier " << c.tier << ", stride " << c.stride);
    GraphBuilder b("variants");
    auto weights = [&](const std::string& name, std::vector<int64_t> shape) {
      int64_t count = 1;
      for (int64_t d : shape) count *= d;
      std::vector<float> w(static_cast<size_t>(count));
      for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * std::sin(0.41f * i + name.size());
      return b.constant(name, shape, w);
    };
    const int64_t side = 56 / c.stride;
    const int x = b.input("x", {1, 32, 56, 56});
    const int dw = b.node("Conv", "dw", {x, weights("wdw", {32, 1, 3, 3})}, {1, 32, side, side},
                          {{"kernel_shape", std::vector<int64_t>{3, 3}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"strides", std::vector<int64_t>{c.stride, c.stride}},
                           {"group", int64_t{32}}});
    const int pw = b.node("Conv", "pw", {dw, weights("wpw", {64, 32, 1, 1})}, {1, 64, side, side},
                          {{"kernel_shape", std::vector<int64_t>{1, 1}}});
    b.output(b.node("Conv", "full", {pw, weights("wfull", {64, 64, 3, 3})}, {1, 64, side, side},
                    {{"kernel_shape", std::vector<int64_t>{3, 3}},
                     {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
             "y");
    std::vector<float> input(32 * 56 * 56);
    for (size_t i = 0; i < input.size(); ++i) input[i] = std::cos(0.3f * i);
    const auto before = cgc::testing::interpret(b.graph, input);
    passes::PassTarget target;
    target.machine.vectorBits = 32 * c.lanes;
    target.tier = c.tier;
    REQUIRE(passes::packConvolutionWeights(b.graph, target));
    ir::verifyGraph(b.graph);
    checkIr(b.graph, c.ir);
    const auto after = cgc::testing::interpret(b.graph, input);
    REQUIRE(before.size() == after.size());
    for (size_t i = 0; i < before.size(); ++i)
      CHECK(after[i] == Approx(before[i]).epsilon(1e-4).margin(1e-4));
  }
}

TEST_CASE("the verifier catches a channel-blocked value that a node reads as plain") {
  GraphBuilder b = convChain(false);
  REQUIRE(passes::fuseEpilogues(b.graph));
  passes::eliminateDeadCode(b.graph);
  REQUIRE(passes::packConvolutionWeights(b.graph));
  REQUIRE(passes::blockActivations(b.graph));
  ir::verifyGraph(b.graph);
  // A Relu added on a blocked value, and a blocked graph output.
  for (int v = 0; v < b.graph.numValues(); ++v) {
    if (b.graph.value(v).layout != ir::Layout::kChannelBlocked) continue;
    GraphBuilder broken = b;
    broken.node("Relu", "plain_reader", {v}, broken.graph.value(v).type.shape);
    CHECK_THROWS_AS(ir::verifyGraph(broken.graph), cgc::InternalError);
    GraphBuilder exposed = b;
    exposed.output(v, "exposed");
    CHECK_THROWS_AS(ir::verifyGraph(exposed.graph), cgc::InternalError);
  }
}
