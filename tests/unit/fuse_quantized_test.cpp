// fuse-quantized and pack-quantized-weights on tiny QDQ graphs: the IR
// after the pass (checkIr), and the graph interpreted with the runtime
// kernels before (the float emulation: DequantizeLinear, float op,
// QuantizeLinear) and after (int8 kernels), within one quantisation step.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>

#include "graph_builder.h"
#include "interpret.h"
#include "ir/verifier.h"
#include "ir_check.h"
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

using cgc::DType;
using cgc::testing::checkIr;
using cgc::testing::GraphBuilder;
using cgc::testing::interpret;
namespace ir = cgc::ir;
namespace passes = cgc::passes;

namespace {

using Attrs = std::map<std::string, ir::Attribute>;

template <typename T>
int typedConstant(GraphBuilder& b, const std::string& name, ir::Shape shape,
                  const std::vector<T>& values, DType type) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return b.graph.addConstant(name, {type, std::move(shape)}, std::move(bytes));
}

/// Quantisation parameters as constants: a scalar scale and zero point.
struct Q {
  int scale, zero;
};

Q params(GraphBuilder& b, const std::string& name, float scale, uint8_t zero) {
  return {b.constant(name + "_scale", {}, {scale}),
          typedConstant<uint8_t>(b, name + "_zero", {}, {zero}, DType::kU8)};
}

int quantize(GraphBuilder& b, const std::string& name, int x, Q q, const ir::Shape& shape) {
  return b.node("QuantizeLinear", name, {x, q.scale, q.zero}, shape, {}, DType::kU8);
}

int dequantize(GraphBuilder& b, const std::string& name, int x, Q q, const ir::Shape& shape) {
  return b.node("DequantizeLinear", name, {x, q.scale, q.zero}, shape);
}

/// DQ of per-channel int8 weights [c_out, ...] and of their int32 bias.
std::pair<int, int> convWeights(GraphBuilder& b, const std::string& name, ir::Shape shape,
                                float xScale) {
  const int64_t cOut = shape[0], count = ir::numElements(shape);
  std::vector<int8_t> w(count);
  for (int64_t i = 0; i < count; ++i) w[i] = static_cast<int8_t>((i * 37) % 255 - 127);
  std::vector<float> scales(cOut), biasScales(cOut);
  std::vector<int32_t> bias(cOut);
  for (int64_t c = 0; c < cOut; ++c) {
    scales[c] = 0.004f + 0.001f * static_cast<float>(c);
    biasScales[c] = xScale * scales[c];
    bias[c] = static_cast<int32_t>(c * 97 % 400) - 200;
  }
  const int ws = b.constant(name + "_ws", {cOut}, scales);
  const int wq = typedConstant<int8_t>(b, name + "_w", shape, w, DType::kI8);
  const Attrs axis = {{"axis", int64_t{0}}, {"per_axis", int64_t{1}}};
  const int dw = b.node("DequantizeLinear", name + "_wdq", {wq, ws, -1}, shape, axis);
  const int bq = typedConstant<int32_t>(b, name + "_b", {cOut}, bias, DType::kI32);
  const int bs = b.constant(name + "_bs", {cOut}, biasScales);
  const int db = b.node("DequantizeLinear", name + "_bdq", {bq, bs, -1}, {cOut}, axis);
  return {dw, db};
}

std::vector<float> image(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 3.0f * std::sin(0.37f * static_cast<float>(i));
  return v;
}

void requireWithinSteps(const std::vector<float>& a, const std::vector<float>& b, float step) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::abs(a[i] - b[i]) <= step * 1.001f);
  }
}

}  // namespace

TEST_CASE("fuse-quantized: DQ, Conv, Relu, Q and the residual Add become one QLinearConv") {
  GraphBuilder b("qconv");
  const ir::Shape shape = {1, 4, 6, 6}, out = {1, 6, 6, 6};
  const int x = b.input("x", shape);
  const Q in = params(b, "in", 0.05f, 128), mid = params(b, "mid", 0.1f, 10),
          sum = params(b, "sum", 0.12f, 20), side = params(b, "side", 0.08f, 100);
  const int qx = quantize(b, "qx", x, in, shape);
  const int dx = dequantize(b, "dx", qx, in, shape);
  auto [w, bias] = convWeights(b, "conv", {6, 4, 3, 3}, 0.05f);
  const Attrs window = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                        {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                        {"strides", std::vector<int64_t>{1, 1}},
                        {"dilations", std::vector<int64_t>{1, 1}},
                        {"group", int64_t{1}}};
  const int conv = b.node("Conv", "conv", {dx, w, bias}, out, window);
  const int relu = b.node("Relu", "relu", {conv}, out);
  const int q1 = quantize(b, "q1", relu, mid, out);
  const int d1 = dequantize(b, "d1", q1, mid, out);
  // A residual from a second, 1x1 convolution of the same input.
  auto [w2, bias2] = convWeights(b, "side_conv", {6, 4, 1, 1}, 0.05f);
  Attrs pointwise = window;
  pointwise["kernel_shape"] = std::vector<int64_t>{1, 1};
  pointwise["pads"] = std::vector<int64_t>{0, 0, 0, 0};
  const int conv2 = b.node("Conv", "side_conv", {dx, w2, bias2}, out, pointwise);
  const int q2 = quantize(b, "q2", conv2, side, out);
  const int d2 = dequantize(b, "d2", q2, side, out);
  const int add = b.node("Add", "add", {d1, d2}, out);
  const int act = b.node("Relu", "add_relu", {add}, out);
  const int q3 = quantize(b, "q3", act, sum, out);
  b.output(dequantize(b, "y", q3, sum, out), "y");
  ir::verifyGraph(b.graph);

  const auto x0 = image(ir::numElements(shape));
  const auto before = interpret(b.graph, x0);
  REQUIRE(passes::fuseQuantized(b.graph));
  passes::eliminateDeadCode(b.graph);
  ir::verifyGraph(b.graph);
  checkIr(b.graph,
          {"side_conv = QLinearConv(%qx_out, %in_scale, %in_zero, %side_conv_w, %side_conv_ws, "
           "none, %side_scale, %side_zero, %side_conv_b_int32) -> %q2_out uint8[1,6,6,6]",
           "conv = QLinearConv(%qx_out, %in_scale, %in_zero, %conv_w, %conv_ws, none, "
           "%sum_scale, %sum_zero, %conv_b_int32, %q2_out) -> %q3_out uint8[1,6,6,6] {",
           "SAME: cgc_q_mid_min = 10", "SAME: cgc_q_mid_scale = 0.1", "SAME: cgc_q_mid_zero = 10",
           "SAME: cgc_q_min = 20", "SAME: cgc_q_residual_scale = 0.0799999",
           "SAME: cgc_q_residual_zero = 100",
           "y = DequantizeLinear(%q3_out, %sum_scale, %sum_zero)", "NOT: Conv(", "NOT: Add("});
  requireWithinSteps(interpret(b.graph, x0), before, 0.12f);

  // Packed for each target's int8 kernels (PassTarget's tier):
  // what that runtime reads fastest, and the same results from this
  // build's kernels.
  struct Packing {
    const char* tier;
    std::string packing, block, variant;
  };
  const Packing packings[] = {{"sse4", "SAME: cgc_packed_weights = 1", "SAME: cgc_q_pack_nb = 4",
                               "SAME: cgc_qconv_variant = \"Gemm\""},
                              {"avx2", "SAME: cgc_packed_weights = 2", "SAME: cgc_q_pack_nb = 3",
                               "SAME: cgc_qconv_variant = \"GemmSplit\""},
                              {"vnni", "SAME: cgc_packed_weights = 4", "SAME: cgc_q_pack_nb = 8",
                               "SAME: cgc_qconv_variant = \"Direct\""}};
  for (const Packing& p : packings) {
    INFO("tier " << p.tier);
    ir::Graph g = b.graph;
    REQUIRE(passes::packQuantizedWeights(g, {.tier = p.tier}));
    passes::eliminateDeadCode(g);
    ir::verifyGraph(g);
    checkIr(g, {"side_conv = QLinearConv(%qx_out, %in_scale, %in_zero, %side_conv_w_packed,",
                p.packing, p.block, "SAME: cgc_q_w_signed = 1", p.variant,
                "conv = QLinearConv(%qx_out, %in_scale, %in_zero, %conv_w_packed,", p.packing,
                p.block, p.variant});
    requireWithinSteps(interpret(g, x0), before, 0.12f);
  }
}

TEST_CASE("pack-quantized-weights records each layer's int8 variant for the target's tier") {
  // QLinearConv layers whose variants (cgc/kernels/qconv_variants.def)
  // differ by tier: a depthwise 3x3 at stride 1 (vpdpbusd's planes with
  // VNNI, else the int16 loops) and at stride 5 (past one vpermb: the
  // loops everywhere); a 1x1 on 14x14 with 32 output channels (the direct
  // kernel's tiles of channels with VNNI); a 3x3 with 24 (its tiles of
  // positions); and uint8 weights beyond int8 (the int16 packing's GEMM).
  // Without VNNI the others run the implicit GEMM: vpmaddubsw's split
  // packing with AVX2, the portable quads without. The packed graph gives
  // this build's kernels the same bytes as the unpacked one.
  GraphBuilder b("qvariants");
  const int x = b.input("x", {1, 16, 14, 14});
  const Q q = params(b, "q", 0.05f, 128);
  int prev = quantize(b, "qx", x, q, {1, 16, 14, 14});
  struct Layer {
    const char* name;
    int64_t cIn, cOut, k, stride, group;
    bool wide;
  };
  const Layer layers[] = {{"dw", 16, 16, 3, 1, 16, false},
                          {"pw", 16, 32, 1, 1, 1, false},
                          {"full", 32, 24, 3, 1, 1, false},
                          {"wide", 24, 8, 1, 1, 1, true},
                          {"dw5", 8, 8, 3, 5, 8, false}};
  for (const Layer& l : layers) {
    const ir::Shape shape = {l.cOut, l.cIn / l.group, l.k, l.k};
    const int64_t count = ir::numElements(shape);
    std::vector<uint8_t> w(count);
    for (int64_t i = 0; i < count; ++i)
      w[i] = static_cast<uint8_t>(l.wide ? (i * 53) % 256 : (i * 37) % 255 - 127);
    const DType wType = l.wide ? DType::kU8 : DType::kI8;
    const int wq = typedConstant<uint8_t>(b, std::string(l.name) + "_w", shape, w, wType);
    const std::vector<uint8_t> zero = {l.wide ? uint8_t{3} : uint8_t{0}};
    const int wz = typedConstant<uint8_t>(b, std::string(l.name) + "_wz", {}, zero, wType);
    const int ws = b.constant(std::string(l.name) + "_ws", {}, {0.01f});
    std::vector<int32_t> bias(l.cOut);
    for (int64_t c = 0; c < l.cOut; ++c) bias[c] = static_cast<int32_t>(c * 97 % 400) - 200;
    const int bq =
        typedConstant<int32_t>(b, std::string(l.name) + "_b", {l.cOut}, bias, DType::kI32);
    const int64_t pad = l.k / 2, side = (14 + 2 * pad - l.k) / l.stride + 1;
    const Attrs attrs = {{"kernel_shape", std::vector<int64_t>{l.k, l.k}},
                         {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                         {"strides", std::vector<int64_t>{l.stride, l.stride}},
                         {"dilations", std::vector<int64_t>{1, 1}},
                         {"group", l.group}};
    prev = b.node("QLinearConv", l.name, {prev, q.scale, q.zero, wq, ws, wz, q.scale, q.zero, bq},
                  {1, l.cOut, side, side}, attrs, DType::kU8);
  }
  b.output(dequantize(b, "y", prev, q, {1, 8, 3, 3}), "y");
  ir::verifyGraph(b.graph);
  const auto x0 = image(16 * 14 * 14);
  const auto before = interpret(b.graph, x0);

  struct Case {
    const char* tier;
    std::vector<std::string> variants;  // of dw, pw, full, wide, dw5
  };
  const Case cases[] = {
      {"vbmi", {"DepthwiseVnni", "DirectChannels", "Direct", "GemmWide", "Depthwise"}},
      {"vnni", {"DepthwiseVnni", "DirectChannels", "Direct", "GemmWide", "Depthwise"}},
      {"avx2", {"Depthwise", "GemmSplit", "GemmSplit", "GemmWide", "Depthwise"}},
      {"sse4", {"Depthwise", "Gemm", "Gemm", "GemmWide", "Depthwise"}},
  };
  for (const Case& c : cases) {
    INFO("tier " << c.tier);
    ir::Graph g = b.graph;
    passes::PassTarget target;
    target.tier = c.tier;
    REQUIRE(passes::packQuantizedWeights(g, target));
    passes::eliminateDeadCode(g);
    ir::verifyGraph(g);
    std::vector<std::string> expected;
    for (size_t i = 0; i < std::size(layers); ++i) {
      expected.push_back(std::string(layers[i].name) + " = QLinearConv(");
      expected.push_back("SAME: cgc_qconv_variant = \"" + c.variants[i] + "\"");
    }
    checkIr(g, expected);
    REQUIRE(interpret(g, x0) == before);
  }

  // A measured choice (a tuned profile's variants) replaces the default
  // where the tier runs it on the layer, and is said to be refused where not.
  ir::Graph g = b.graph;
  passes::PassTarget target;
  target.tier = "vnni";
  target.convVariants = {{"pw", "Gemm"}, {"dw5", "DepthwiseVnni"}};
  std::vector<std::string> notes;
  target.note = [&](const std::string& text) { notes.push_back(text); };
  REQUIRE(passes::packQuantizedWeights(g, target));
  passes::eliminateDeadCode(g);
  checkIr(g, {"pw = QLinearConv(", "SAME: cgc_qconv_variant = \"Gemm\"", "dw5 = QLinearConv(",
              "SAME: cgc_qconv_variant = \"Depthwise\""});
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("'dw5'") != std::string::npos);
  REQUIRE(interpret(g, x0) == before);
}

TEST_CASE("fuse-quantized: pools, moves, adds and the head on int8 data") {
  GraphBuilder b("qmoves");
  const ir::Shape shape = {1, 3, 5, 5}, pooled = {1, 3, 3, 3};
  const int x = b.input("x", shape);
  const Q a = params(b, "a", 0.05f, 128), other = params(b, "other", 0.06f, 120),
          s = params(b, "s", 0.07f, 0), g = params(b, "g", 0.03f, 128);
  const int qa = quantize(b, "qa", x, a, shape);
  const int qo = quantize(b, "qo", x, other, shape);
  const int add =
      b.node("Add", "add",
             {dequantize(b, "da", qa, a, shape), dequantize(b, "do", qo, other, shape)}, shape);
  const int qs = quantize(b, "qs", b.node("Relu", "relu", {add}, shape), s, shape);
  const Attrs window = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                        {"strides", std::vector<int64_t>{2, 2}},
                        {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                        {"dilations", std::vector<int64_t>{1, 1}}};
  const int pool = b.node("MaxPool", "pool", {dequantize(b, "ds", qs, s, shape)}, pooled, window);
  const int qp = quantize(b, "qp", pool, s, pooled);
  const int gap =
      b.node("GlobalAveragePool", "gap", {dequantize(b, "dp", qp, s, pooled)}, {1, 3, 1, 1});
  const int qg = quantize(b, "qg", gap, g, {1, 3, 1, 1});
  const int flat = b.node("Reshape", "flat", {dequantize(b, "dg", qg, g, {1, 3, 1, 1})}, {1, 3});
  // Requantised with other params: a Flatten (a Reshape in the IR) that must stay float.
  const int qf = quantize(b, "qf", flat, a, {1, 3});
  b.output(dequantize(b, "y", qf, a, {1, 3}), "y");

  const auto x0 = image(ir::numElements(shape));
  const auto before = interpret(b.graph, x0);
  REQUIRE(passes::fuseQuantized(b.graph));
  passes::eliminateDeadCode(b.graph);
  ir::verifyGraph(b.graph);
  checkIr(b.graph,
          {"add = QLinearAdd(%qa_out, %a_scale, %a_zero, %qo_out, %other_scale, "
           "%other_zero, %s_scale, %s_zero) -> %qs_out uint8[1,3,5,5]",
           "pool = MaxPoolInt8(%qs_out) -> %qp_out uint8[1,3,3,3]",
           "gap = QLinearGlobalAveragePool(%qp_out, %s_scale, %s_zero, %g_scale, "
           "%g_zero) -> %qg_out uint8[1,3,1,1]",
           "flat = Reshape(%dg_out) -> %flat_out float32[1,3]", "qf = QuantizeLinear(%flat_out"});
  requireWithinSteps(interpret(b.graph, x0), before, 0.05f);
}

TEST_CASE("fuse-quantized leaves chains it cannot run exactly") {
  GraphBuilder b("qkeep");
  const ir::Shape shape = {1, 2, 4, 4};
  const int x = b.input("x", shape);
  const Q a = params(b, "a", 0.05f, 128), c = params(b, "c", 0.1f, 128);
  const int qa = quantize(b, "qa", x, a, shape);
  const int da = dequantize(b, "da", qa, a, shape);
  // A max pool requantised to other params, and an Add whose sum is also
  // read in float.
  const Attrs window = {{"kernel_shape", std::vector<int64_t>{2, 2}},
                        {"strides", std::vector<int64_t>{2, 2}},
                        {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                        {"dilations", std::vector<int64_t>{1, 1}}};
  const int pool = b.node("MaxPool", "pool", {da}, {1, 2, 2, 2}, window);
  b.output(dequantize(b, "y", quantize(b, "qp", pool, c, {1, 2, 2, 2}), c, {1, 2, 2, 2}), "y");
  const int add = b.node("Add", "add", {da, da}, shape);
  b.output(dequantize(b, "z", quantize(b, "qz", add, c, shape), c, shape), "z");
  b.output(add, "sum");
  CHECK_FALSE(passes::fuseQuantized(b.graph));
  CHECK(b.graph.countOps("MaxPool") == 1);
  CHECK(b.graph.countOps("Add") == 1);
}

TEST_CASE(
    "fuse-quantized: DQ, Gemm (transB, per-channel weights, int32 bias), Q become one "
    "QLinearMatMul") {
  GraphBuilder b("qgemm");
  const ir::Shape shape = {2, 16}, out = {2, 10};
  const int x = b.input("x", shape);
  const Q in = params(b, "in", 0.05f, 128), o = params(b, "o", 0.2f, 100);
  const int qx = quantize(b, "qx", x, in, shape);
  const int dx = dequantize(b, "dx", qx, in, shape);
  auto [w, bias] = convWeights(b, "fc", {10, 16}, 0.05f);
  const int gemm = b.node("Gemm", "fc", {dx, w, bias}, out, {{"transB", int64_t{1}}});
  const int qy = quantize(b, "qy", gemm, o, out);
  b.output(dequantize(b, "y", qy, o, out), "y");
  ir::verifyGraph(b.graph);

  const auto x0 = image(ir::numElements(shape));
  const auto before = interpret(b.graph, x0);
  REQUIRE(passes::fuseQuantized(b.graph));
  passes::eliminateDeadCode(b.graph);
  ir::verifyGraph(b.graph);
  checkIr(b.graph, {"fc = QLinearMatMul(%qx_out, %in_scale, %in_zero, %fc_w, %fc_ws,",
                    "SAME: %o_scale, %o_zero, %fc_b_int32) -> %qy_out uint8[2,10]",
                    "SAME: cgc_trans_b = 1", "y = DequantizeLinear(%qy_out", "NOT: Gemm("});
  requireWithinSteps(interpret(b.graph, x0), before, 0.2f);

  REQUIRE(passes::packQuantizedWeights(b.graph));
  passes::eliminateDeadCode(b.graph);
  ir::verifyGraph(b.graph);
  checkIr(b.graph, {"fc = QLinearMatMul(%qx_out, %in_scale, %in_zero, %fc_w_packed,",
                    "SAME: cgc_packed_weights = "});
  requireWithinSteps(interpret(b.graph, x0), before, 0.2f);
}

TEST_CASE("fuse-quantized: a product whose float output no Q takes sums in int32, then DQ") {
  GraphBuilder b("qhead");
  const ir::Shape shape = {1, 4, 5, 5}, convOut = {1, 6, 5, 5}, flat = {1, 150}, out = {1, 10};
  const int x = b.input("x", shape);
  const Q in = params(b, "in", 0.05f, 128), mid = params(b, "mid", 0.06f, 120);
  const int dx = dequantize(b, "dx", quantize(b, "qx", x, in, shape), in, shape);
  // A 1x1 convolution whose float output a Relu reads (no Q after it),
  // then a Gemm head (transB, int32 bias) writing the graph output.
  auto [w, bias] = convWeights(b, "conv", {6, 4, 1, 1}, 0.05f);
  const Attrs pointwise = {{"kernel_shape", std::vector<int64_t>{1, 1}},
                           {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                           {"strides", std::vector<int64_t>{1, 1}},
                           {"dilations", std::vector<int64_t>{1, 1}},
                           {"group", int64_t{1}}};
  const int conv = b.node("Conv", "conv", {dx, w, bias}, convOut, pointwise);
  b.output(b.node("Relu", "relu", {conv}, convOut), "features");
  const int reshaped = b.node("Reshape", "flat", {conv}, flat);
  const int dr = dequantize(b, "dr", quantize(b, "qr", reshaped, mid, flat), mid, flat);
  auto [fw, fb] = convWeights(b, "fc", {10, 150}, 0.06f);
  b.output(b.node("Gemm", "fc", {dr, fw, fb}, out, {{"transB", int64_t{1}}}), "y");
  ir::verifyGraph(b.graph);

  const auto x0 = image(ir::numElements(shape));
  const auto before = cgc::testing::interpretAll(b.graph, x0);
  REQUIRE(passes::fuseQuantized(b.graph));
  passes::eliminateDeadCode(b.graph);
  ir::verifyGraph(b.graph);
  checkIr(b.graph, {"conv = QLinearConv(%qx_out, %in_scale, %in_zero, %conv_w, %conv_ws, none, "
                    "none, none, %conv_b_int32) -> %conv_sums int32[1,6,5,5]",
                    "conv_sums_DequantizeLinear = DequantizeLinear(%conv_sums, "
                    "%conv_sums_scale, none) -> %conv_out float32[1,6,5,5]",
                    "SAME: axis = 1", "fc = QLinearMatMul(%qr_out, %mid_scale, %mid_zero, %fc_w,",
                    "SAME: none, none, %fc_b_int32) -> %fc_sums int32[1,10]",
                    "fc_sums_DequantizeLinear = DequantizeLinear(%fc_sums, %fc_sums_scale, none) "
                    "-> %fc_out float32[1,10]",
                    "SAME: axis = 1", "NOT: Gemm(", "NOT: Conv("});
  // The float emulation rounds each product's sum in float; the int8
  // kernels sum exactly: within float rounding of the sums.
  auto requireClose = [&](const ir::Graph& g) {
    const auto after = cgc::testing::interpretAll(g, x0);
    REQUIRE(after.size() == before.size());
    for (size_t o = 0; o < after.size(); ++o)
      for (size_t i = 0; i < after[o].size(); ++i) {
        INFO("output " << o << ", element " << i);
        REQUIRE(after[o][i] == Approx(before[o][i]).margin(1e-4).epsilon(1e-4));
      }
  };
  requireClose(b.graph);
  for (const char* tier : {"sse4", "avx2", "vnni"}) {
    INFO("packed for " << tier);
    ir::Graph g = b.graph;
    REQUIRE(passes::packQuantizedWeights(g, {.tier = tier}));
    passes::eliminateDeadCode(g);
    requireClose(g);
  }
}
