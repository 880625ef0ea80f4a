// Unit tests of the passes that choose layouts for convolutions: the
// weights pack-conv-weights gives each layer for the target (Winograd's
// tile and windows, the variant per tier), the channel-blocked activations
// block-activations passes between packed convolutions, and the verifier's
// check of blocked values.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "graph_builder.h"
#include "interpret.h"
#include "ir/verifier.h"
#include "ir_check.h"
#include "passes/pass_manager.h"

using cgc::testing::checkIr;
using cgc::testing::GraphBuilder;
namespace ir = cgc::ir;
namespace passes = cgc::passes;

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
    const int x = b.input("x", {1, 16, 20, 20});
    b.output(b.node("Conv", "conv", {x, b.smoothConstant("w", {32, 16, 3, 3})}, {1, 32, 20, 20},
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
    const int x = b.input("x", {1, c.in, c.side, c.side});
    const int64_t padH = c.kh / 2, padW = c.kw / 2, outSide = c.side + 2 * padH - c.kh + 1;
    b.output(b.node("Conv", "conv", {x, b.smoothConstant("w", {c.out, c.in, c.kh, c.kw})},
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
      return b.smoothConstant(name, std::move(shape), static_cast<float>(name.size()));
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
