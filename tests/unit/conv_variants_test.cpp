// pack-conv-weights with measured variants (PassTarget::convVariants, a
// tuned profile's "variants", and everyConvVariant, cgc tune's trials): a
// recorded variant runs its layer where the target has it and it takes the
// layer, else the default choice does, with a note saying why.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "cgc/isa_tiers.h"
#include "cgc/runtime.h"
#include "graph_builder.h"
#include "interpret.h"
#include "ir/conventions.h"
#include "ir/verifier.h"
#include "ir_check.h"
#include "passes/pass_manager.h"

using cgc::testing::checkIr;
using cgc::testing::GraphBuilder;
namespace ir = cgc::ir;
namespace passes = cgc::passes;

namespace {

/// x -> dw (3x3 depthwise) -> pw (1x1) -> full (3x3), on 28x28 planes.
GraphBuilder threeLayers() {
  GraphBuilder b("variants");
  auto weights = [&](const std::string& name, std::vector<int64_t> shape) {
    return b.smoothConstant(name, std::move(shape), static_cast<float>(name.size()));
  };
  const std::map<std::string, ir::Attribute> same{{"kernel_shape", std::vector<int64_t>{3, 3}},
                                                  {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  auto depthwise = same;
  depthwise["group"] = int64_t{32};
  const int x = b.input("x", {1, 32, 28, 28});
  const int dw =
      b.node("Conv", "dw", {x, weights("wdw", {32, 1, 3, 3})}, {1, 32, 28, 28}, depthwise);
  const int pw = b.node("Conv", "pw", {dw, weights("wpw", {64, 32, 1, 1})}, {1, 64, 28, 28},
                        {{"kernel_shape", std::vector<int64_t>{1, 1}}});
  b.output(b.node("Conv", "full", {pw, weights("wfull", {64, 64, 3, 3})}, {1, 64, 28, 28}, same),
           "y");
  return b;
}

std::vector<float> input() {
  std::vector<float> x(32 * 28 * 28);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.3f * i);
  return x;
}

/// Each layer's variant after pack-conv-weights for `target`.
std::map<std::string, std::string> variantsAfter(GraphBuilder& b,
                                                 const passes::PassTarget& target) {
  REQUIRE(passes::packConvolutionWeights(b.graph, target));
  ir::verifyGraph(b.graph);
  std::map<std::string, std::string> variants;
  for (int id : b.graph.liveNodes())
    variants[b.graph.node(id).name] = b.graph.node(id).getString(ir::conventions::kConvVariant, "");
  return variants;
}

void checkSameResults(const std::vector<std::vector<float>>& before,
                      const std::vector<std::vector<float>>& after) {
  REQUIRE(before.size() == after.size());
  for (size_t o = 0; o < before.size(); ++o) {
    REQUIRE(before[o].size() == after[o].size());
    for (size_t i = 0; i < before[o].size(); ++i)
      CHECK(after[o][i] == Approx(before[o][i]).epsilon(1e-4).margin(1e-4));
  }
}

}  // namespace

TEST_CASE("pack-conv-weights runs a profile's variant on its layer, else the default") {
  passes::PassTarget target;
  target.machine.vectorBits = 512;
  target.tier = "skx";
  GraphBuilder plain = threeLayers();
  const auto defaults = variantsAfter(plain, target);
  REQUIRE(defaults.at("full") != "Im2col");

  // Im2col takes the 3x3 layer: its plain weights stay, unpacked; the
  // depthwise vector kernel does not take a 1x1 layer, and an unknown name
  // is no variant: those two keep the default, each with a note.
  GraphBuilder b = threeLayers();
  const auto before = cgc::testing::interpretAll(b.graph, input());
  std::vector<std::string> notes;
  target.convVariants = {{"full", "Im2col"}, {"pw", "DepthwiseVectors"}, {"dw", "Fastest"}};
  target.note = [&](const std::string& text) { notes.push_back(text); };
  const auto variants = variantsAfter(b, target);
  CHECK(variants.at("full") == "Im2col");
  CHECK(variants.at("pw") == defaults.at("pw"));
  CHECK(variants.at("dw") == defaults.at("dw"));
  checkIr(b.graph, {fmt::format("pw = Conv(%dw_out, %wpw) -> %pw_out float32[1,64,28,28] "
                                "{{cgc_conv_variant = \"{}\"",
                                defaults.at("pw")),
                    "full = Conv(%pw_out, %wfull) -> %full_out float32[1,64,28,28] "
                    "{cgc_conv_variant = \"Im2col\", kernel_shape",
                    "NOT: cgc_packed_weights"});
  checkSameResults(before, cgc::testing::interpretAll(b.graph, input()));
  INFO("the notes:\n" << fmt::format("{}", fmt::join(notes, "\n")));
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].find("node 'dw': the profile's variant Fastest is not taken (no such variant)") !=
        std::string::npos);
  CHECK(notes[1].find("node 'pw': the profile's variant DepthwiseVectors is not taken (it does "
                      "not take this layer)") != std::string::npos);
}

TEST_CASE("pack-conv-weights takes a profile's variant only within the target's tier") {
  // DepthwiseRows needs AVX-512 (skx): an avx2 target runs its default.
  passes::PassTarget target;
  target.machine.vectorBits = 256;
  target.tier = "avx2";
  GraphBuilder plain = threeLayers();
  const auto defaults = variantsAfter(plain, target);
  REQUIRE(defaults.at("dw") != "DepthwiseRows");
  GraphBuilder b = threeLayers();
  std::vector<std::string> notes;
  target.convVariants = {{"dw", "DepthwiseRows"}};
  target.note = [&](const std::string& text) { notes.push_back(text); };
  CHECK(variantsAfter(b, target).at("dw") == defaults.at("dw"));
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("it needs tier skx, the target's is avx2") != std::string::npos);

  target.tier = "vbmi";  // a tier above skx has it
  target.machine.vectorBits = 512;
  GraphBuilder wide = threeLayers();
  CHECK(variantsAfter(wide, target).at("dw") == "DepthwiseRows");
}

TEST_CASE("pack-conv-weights runs tune's trial variant on every layer that takes it") {
  passes::PassTarget target;
  target.tier = "skx";
  GraphBuilder plain = threeLayers();
  const auto defaults = variantsAfter(plain, target);
  // Im2col everywhere it takes the layer; a profile's entry wins; no notes
  // for the layers the trial variant does not take.
  GraphBuilder b = threeLayers();
  const auto before = cgc::testing::interpretAll(b.graph, input());
  int notes = 0;
  target.everyConvVariant = "Im2col";
  target.convVariants = {{"pw", defaults.at("pw")}};
  target.note = [&](const std::string&) { ++notes; };
  const auto variants = variantsAfter(b, target);
  CHECK(variants.at("full") == "Im2col");
  CHECK(variants.at("pw") == defaults.at("pw"));
  CHECK(notes == 0);
  checkSameResults(before, cgc::testing::interpretAll(b.graph, input()));
}

TEST_CASE("pack-conv-weights applies a profile's setting: Winograd's form, Packed's depth step") {
  passes::PassTarget target;
  target.machine.vectorBits = 512;
  target.tier = "skx";
  std::vector<std::string> notes;
  target.note = [&](const std::string& text) { notes.push_back(text); };
  const auto before = [] {
    GraphBuilder b = threeLayers();
    return cgc::testing::interpretAll(b.graph, input());
  }();
  // Both Winograd forms of the 3x3 layer, and a depth step of 16 (the
  // 64-deep products then take four passes), compute what the model does.
  for (const char* choice : {"Winograd:2", "Winograd:4", "Packed:16"}) {
    INFO(choice);
    GraphBuilder b = threeLayers();
    target.convVariants = {{"full", choice}};
    variantsAfter(b, target);
    for (int id : b.graph.liveNodes())
      if (b.graph.node(id).name == "full")
        CHECK(ir::conventions::convChoice(b.graph.node(id)) == choice);
    checkSameResults(before, cgc::testing::interpretAll(b.graph, input()));
  }
  GraphBuilder packed = threeLayers();
  target.convVariants = {{"full", "Packed:16"}};
  variantsAfter(packed, target);
  checkIr(packed.graph, {"full = Conv(%pw_out, %wfull_packed) -> %full_out float32[1,64,28,28] "
                         "{cgc_conv_variant = \"Packed\", cgc_depth_step = 16"});
  CHECK(notes.empty());

  // A setting the layer or the variant does not have: the default runs,
  // with a note.
  GraphBuilder b = threeLayers();
  const auto defaults = [&] {
    GraphBuilder plain = threeLayers();
    target.convVariants = {};
    return variantsAfter(plain, target);
  }();
  target.convVariants = {{"full", "Winograd:3"}, {"pw", "Im2col:8"}};
  const auto variants = variantsAfter(b, target);
  CHECK(variants.at("full") == defaults.at("full"));
  CHECK(variants.at("pw") == defaults.at("pw"));
  INFO("the notes:\n" << fmt::format("{}", fmt::join(notes, "\n")));
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].find("node 'pw': the profile's variant Im2col:8 is not taken (the variant has "
                      "no setting)") != std::string::npos);
  CHECK(notes[1].find("node 'full': the profile's variant Winograd:3 is not taken (this layer has "
                      "no Winograd form with tile 3)") != std::string::npos);
}

TEST_CASE("a convolution choice's text parses into its variant and setting") {
  using ir::conventions::parseConvChoice;
  CHECK(parseConvChoice("Winograd:4").variant == "Winograd");
  CHECK(parseConvChoice("Winograd:4").setting == 4);
  CHECK(parseConvChoice("Packed:1024").setting == 1024);
  CHECK(parseConvChoice("Im2col").variant == "Im2col");
  CHECK(parseConvChoice("Im2col").setting == 0);
  // Not a positive number: the whole text is the (unknown) name.
  for (const char* text : {"Packed:", "Packed:0", "Packed:-4", "Packed:x", "Packed:99999999999"}) {
    CHECK(parseConvChoice(text).variant == text);
    CHECK(parseConvChoice(text).setting == 0);
  }
}

TEST_CASE("pack-conv-weights: --precision bf16 gives deep group-1 layers bf16 panels") {
  passes::PassTarget target;
  target.machine.vectorBits = 512;
  target.tier = "bf16";
  GraphBuilder plain = threeLayers();
  const auto floats = variantsAfter(plain, target);  // without --precision bf16: float
  for (const auto& [node, variant] : floats) CHECK(variant != "PackedBf16");

  target.narrowWeights = cgc::rt::WeightFormat::kBf16;
  GraphBuilder b = threeLayers();
  const auto variants = variantsAfter(b, target);
  // The 1x1 layer's depth, 32, is too shallow to pay for rounding its input.
  CHECK(variants.at("dw") == floats.at("dw"));
  CHECK(variants.at("pw") == floats.at("pw"));
  CHECK(variants.at("full") == "PackedBf16");
  checkIr(b.graph, {"full = Conv(%pw_out, %wfull_bf16) -> %full_out float32[1,64,28,28] "
                    "{cgc_conv_variant = \"PackedBf16\"",
                    "SAME: cgc_packed_weights = 4"});

  // --keep-float, a target without the tier, and a profile asking for it
  // without --precision bf16: float.
  GraphBuilder kept = threeLayers();
  target.keepFloatWeights = {"full"};
  CHECK(variantsAfter(kept, target).at("full") == floats.at("full"));
  target.keepFloatWeights = {};
  target.tier = "vbmi";
  GraphBuilder lower = threeLayers();
  CHECK(variantsAfter(lower, target).at("full") == floats.at("full"));
  target.tier = "bf16";
  target.narrowWeights.reset();
  std::vector<std::string> notes;
  target.note = [&](const std::string& text) { notes.push_back(text); };
  target.convVariants = {{"full", "PackedBf16"}};
  GraphBuilder asked = threeLayers();
  CHECK(variantsAfter(asked, target).at("full") == floats.at("full"));
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("it reads bfloat16 weights, which only --precision bf16 stores") !=
        std::string::npos);
}

// Hidden: ctest's unit_bf16 runs it (--needs tier=bf16), skipped where the
// runtime or the CPU lacks the tier.
TEST_CASE("pack-conv-weights: the bf16 panels compute the float graph within bf16's rounding",
          "[.bf16]") {
  passes::PassTarget target;
  target.machine.vectorBits = 512;
  target.tier = "bf16";
  target.narrowWeights = cgc::rt::WeightFormat::kBf16;
  GraphBuilder b = threeLayers();
  const auto before = cgc::testing::interpretAll(b.graph, input());
  REQUIRE(variantsAfter(b, target).at("full") == "PackedBf16");
  // Inputs and weights rounded to 8 significant bits: each layer within
  // 2^-8 of its sums of |products|, which these sines and cosines cancel
  // to a few percent of themselves (PyTorch's bf16 rounding of this graph
  // is off by 7% of the largest output): within 10% of it. The kernel
  // tests hold PackedBf16 to float's rounding on bf16 values.
  const auto after = cgc::testing::interpretAll(b.graph, input());
  float largest = 0;
  for (float v : before[0]) largest = std::max(largest, std::abs(v));
  for (size_t i = 0; i < before[0].size(); ++i)
    REQUIRE(std::abs(after[0][i] - before[0][i]) <= 1e-1f * largest);
}

TEST_CASE("pack-conv-weights packs the variants other sizes choose after the layer's own") {
  // --dim's general code: PassTarget::convAlternatives names, per layer, the
  // choices other sizes made; the layer keeps its own and gets the others
  // that read rearranged float weights (at most two, none twice, none its
  // own), each on weights of its own after its own in one constant.
  passes::PassTarget target;
  target.machine.vectorBits = 512;
  target.tier = "skx";
  GraphBuilder plain = threeLayers();
  const auto defaults = variantsAfter(plain, target);
  REQUIRE(defaults.at("full") == "Winograd");
  const std::string own = ir::conventions::convChoice(plain.graph.node(plain.graph.liveNodes()[2]));
  GraphBuilder b = threeLayers();
  const auto before = cgc::testing::interpretAll(b.graph, input());
  target.convAlternatives = {
      {"full", {own, "Im2col", "Packed", "Winograd:4", "Winograd:2", "Packed:512"}}};
  const auto variants = variantsAfter(b, target);
  CHECK(variants == defaults);
  const ir::Node& full = b.graph.node(b.graph.liveNodes()[2]);
  REQUIRE(full.name == "full");
  const std::string others = full.getString(ir::conventions::kConvAlternatives, "");
  const std::vector<int64_t> starts = full.getInts(ir::conventions::kConvAlternativeWeights);
  // Im2col reads the plain weights: not packed again; Packed takes the
  // target's depth step; the form the layer runs is not repeated.
  const std::string packed =
      fmt::format("Packed:{}", cgc::rt::convPackedDepthStep({target.tier.c_str(), target.machine}));
  const std::string winograd = own == "Winograd:4" ? "Winograd:2" : "Winograd:4";
  CHECK(others == packed + "," + winograd);
  REQUIRE(starts.size() == 2);
  const int64_t ownCount = 64 * 64 * (own == "Winograd:4" ? 36 : 16);
  CHECK(starts[0] == ownCount);
  CHECK(starts[1] == ownCount + 64 * 64 * 9);
  CHECK(b.graph.value(full.inputs[1]).type.numElements() ==
        starts[1] + 64 * 64 * (own == "Winograd:4" ? 16 : 36));
  CHECK(!b.graph.node(b.graph.liveNodes()[1]).has(ir::conventions::kConvAlternatives));
  checkSameResults(before, cgc::testing::interpretAll(b.graph, input()));
}

TEST_CASE("pack-conv-weights gives a layer on plain weights alternatives that share them") {
  // A layer whose own variant reads the model's weights (a stem's
  // FewChannels, a 1x1 layer's Pointwise) takes the other plain-weight
  // variants on those weights, at 0; a rearranged one goes after a copy.
  passes::PassTarget target;
  target.machine.vectorBits = 512;
  target.tier = "skx";
  GraphBuilder plain = threeLayers();
  const auto defaults = variantsAfter(plain, target);
  REQUIRE(defaults.at("pw") == "Pointwise");
  REQUIRE(defaults.at("dw").rfind("Depthwise", 0) == 0);
  const std::string dwOther =
      defaults.at("dw") == "DepthwisePlanes" ? "DepthwiseVectors" : "DepthwisePlanes";
  GraphBuilder b = threeLayers();
  const auto before = cgc::testing::interpretAll(b.graph, input());
  const int dwWeights = b.graph.node(b.graph.liveNodes()[0]).inputs[1];
  target.convAlternatives = {{"dw", {dwOther}}, {"pw", {"Im2col", "Packed"}}};
  CHECK(variantsAfter(b, target) == defaults);
  const ir::Node& dw = b.graph.node(b.graph.liveNodes()[0]);
  const ir::Node& pw = b.graph.node(b.graph.liveNodes()[1]);
  REQUIRE((dw.name == "dw" && pw.name == "pw"));
  CHECK(dw.getString(ir::conventions::kConvAlternatives, "") == dwOther);
  CHECK(dw.getInts(ir::conventions::kConvAlternativeWeights) == std::vector<int64_t>{0});
  CHECK(dw.inputs[1] == dwWeights);
  const std::string packed =
      fmt::format("Packed:{}", cgc::rt::convPackedDepthStep({target.tier.c_str(), target.machine}));
  CHECK(pw.getString(ir::conventions::kConvAlternatives, "") == "Im2col," + packed);
  CHECK(pw.getInts(ir::conventions::kConvAlternativeWeights) == std::vector<int64_t>{0, 64 * 32});
  CHECK(b.graph.value(pw.inputs[1]).type.numElements() == 64 * 32 + 64 * 32);
  checkSameResults(before, cgc::testing::interpretAll(b.graph, input()));
}

TEST_CASE("pack-conv-weights gives graphs of the same weights one copy per variant") {
  // --dim compiles the model at many sizes: the graphs share the weights'
  // bytes (interned), and each layer's rearranged copy is made once
  // (rearrangedConstant) and shared; another variant of the same weights
  // must get a copy of its own, not the first one's.
  passes::PassTarget target;
  target.machine.vectorBits = 512;
  target.tier = "skx";
  GraphBuilder first = threeLayers(), second = threeLayers();
  const auto before = cgc::testing::interpretAll(second.graph, input());
  const auto variants = variantsAfter(first, target);
  CHECK(variantsAfter(second, target) == variants);
  const auto weightsOf = [](const GraphBuilder& b, const std::string& name) {
    for (int id : b.graph.liveNodes())
      if (b.graph.node(id).name == name) return b.graph.value(b.graph.node(id).inputs[1]).data;
    FAIL("no node " << name);
    return std::shared_ptr<const std::vector<uint8_t>>{};
  };
  REQUIRE(variants.at("full").rfind("Winograd", 0) == 0);
  CHECK(weightsOf(first, "full") == weightsOf(second, "full"));
  checkSameResults(before, cgc::testing::interpretAll(second.graph, input()));
  GraphBuilder packed = threeLayers();
  passes::PassTarget other = target;
  other.convVariants = {{"full", "Packed"}};
  CHECK(variantsAfter(packed, other).at("full") == "Packed");
  CHECK(weightsOf(packed, "full") != weightsOf(first, "full"));
  CHECK(weightsOf(packed, "full")->size() != weightsOf(first, "full")->size());
}
