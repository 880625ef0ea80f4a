// Unit tests of the graph passes on tiny graphs built in C++: each runs one
// pass, then counts ops and checks the graph still verifies.
#include <catch2/catch.hpp>
#include <cmath>

#include "graph_builder.h"
#include "interpret.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir_check.h"
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
