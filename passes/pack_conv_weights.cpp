// pack-conv-weights: chooses the variant every float Conv runs
// (rt::chooseConvVariant over cgc/kernels/conv_variants.def, with the
// target's instruction-set tier and machine: vector width, caches, cores)
// and records it
// (cgc_conv_variant, which lowering puts into ConvParams::variant). Where
// the variant reads rearranged weights and the weights are constants, they
// are rearranged once here, and the attribute cgc_packed_weights that
// lowering reads says how:
//  - 2 and 3: Winograd (rt::convPrefersWinograd: 3x3 layers at stride 1 on
//    13x13 or larger planes, F(2x2, 3x3), or F(4x4, 3x3) where
//    rt::convWinogradTile says so; 5x5 and 2x2 layers at stride 1, F(2x2,
//    5x5) and F(2x2, 2x2) (the phases of decompose-conv-transpose); 1x7
//    and 7x1 ones, F(2, 7), and 1x3 and 3x1 ones, F(4, 3), along the
//    window), weights transformed by rt::winogradWeights
//    (ConvParams::winograd, winograd_tile);
//  - 1: Packed (rt::convPrefersPackedWeights: windows larger than 1x1, 7x7
//    pointwise layers, 14x14 ones with 256+ output channels; groups 1),
//    weights in rt::packConvWeights' panels (ConvParams::packed_weights),
//    with the packed GEMM's depth step for the target's caches
//    (cgc_depth_step, rt::convPackedDepthStep: ConvParams::depth_step);
//  - 4: PackedBf16, under --precision bf16 only (PassTarget::narrowWeights
//    kBf16, a layer not named by --keep-float; or one --keep-bf16 names:
//    PassTarget::weightFormatFor), on a target with the bf16
//    tier: the same panels of bfloat16 pairs (ConvParams::bf16_weights),
//    chosen before the float variants where it prefers the layer (enough
//    products per value moved: rt::detail's prefersPackedBf16).
// For --dim's general code (PassTarget::convAlternatives), a layer whose
// choice changes with the sizes gets the other choices' weights too, after
// its own in one constant (cgc_conv_alternatives and
// cgc_conv_alternative_weights: ConvParams::alternatives; a choice on plain
// weights shares the model's where the layer's own reads them too, at 0),
// and conv picks one per call on the extents it is given.
// Rearranging at run time would copy every weight on every inference;
// doing it in the model constructor would hold two copies. Runs after
// fold-conv-batchnorm, which rewrites the weights it packs, and after the
// fusions that change what a layer computes (residual, pooling).
// A measured choice (PassTarget::convVariants, from a profile that cgc tune
// wrote, or everyConvVariant, tune's trials) replaces the default where the
// target has the variant and the variant takes the layer, with its setting
// where it names one (ir::conventions::ConvChoice: Winograd's form,
// Packed's depth step).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "cgc/isa_tiers.h"
#include "cgc/kernels.h"
#include "ir/conventions.h"
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

/// Why `variant` with `setting` (ir::conventions::ConvChoice) cannot run
/// `conv` for `target` ("" where it can).
std::string whyNot(rt::ConvVariant variant, int64_t setting, const rt::ConvParams& params,
                   const PassTarget& target, bool mayPack, bool mayNarrow) {
  if (variant == rt::ConvVariant::kNone) return "no such variant";
  const rt::ConvVariantInfo& info = rt::variantInfo(variant);
  if (!isaTierIncludes(target.tier, info.tier))
    return fmt::format("it needs tier {}, the target's is {}", info.tier, target.tier);
  if (!rt::convVariantTakes(variant, params)) return "it does not take this layer";
  if (info.weights != rt::ConvWeights::kPlain && !mayPack)
    return "it reads rearranged weights and these are not constant";
  if (rt::convWeightsNarrow(info.weights) && !mayNarrow)
    return "it reads bfloat16 weights, which only --precision bf16 stores";
  if (setting == 0) return "";
  switch (info.weights) {
    case rt::ConvWeights::kWinograd:
      return rt::convWinogradTakesTile(params, setting)
                 ? ""
                 : fmt::format("this layer has no Winograd form with tile {}", setting);
    case rt::ConvWeights::kPanels:
    case rt::ConvWeights::kBf16Panels:
      return "";  // any depth step
    default:
      return "the variant has no setting";
  }
}

/// What a layer runs: a variant and its setting (0: the target's default).
struct Choice {
  rt::ConvVariant variant;
  int64_t setting = 0;
};

/// The layer's measured variant where it can run it, else the default.
Choice choiceFor(const ir::Node& conv, const rt::ConvParams& params, const PassTarget& target,
                 const rt::ConvContext& context, bool mayPack, bool mayNarrow) {
  const rt::ConvVariant chosen = rt::chooseConvVariant(params, context, mayPack, mayNarrow);
  const auto [text, measured] = target.variantFor(conv.name);
  if (text.empty() || chosen == rt::ConvVariant::kNone) return {chosen};
  const ir::conventions::ConvChoice wanted = ir::conventions::parseConvChoice(text);
  const rt::ConvVariant variant = rt::convVariantNamed(wanted.variant.c_str());
  const std::string why = whyNot(variant, wanted.setting, params, target, mayPack, mayNarrow);
  if (why.empty()) return {variant, wanted.setting};
  if (measured && target.note)
    target.note(fmt::format("node '{}': the profile's variant {} is not taken ({}); {} runs it",
                            conv.name, text, why, rt::variantInfo(chosen).name));
  return {chosen};
}

/// w in the layout `info` reads (bfloat16 pairs: their bits), for
/// Winograd in the form of `tile`.
std::vector<float> weightsFor(rt::ConvParams params, const rt::ConvVariantInfo& info, int64_t tile,
                              const float* w) {
  params.bf16_weights = info.weights == rt::ConvWeights::kBf16Panels;
  const bool winograd = info.weights == rt::ConvWeights::kWinograd;
  if (winograd) params.winograd_tile = tile;
  const int64_t plain =
      params.c_out * (params.c_in / params.groups) * params.k_d * params.k_h * params.k_w;
  const int64_t count = info.weights == rt::ConvWeights::kPlain ? plain
                        : winograd                              ? rt::winogradWeightCount(params)
                                                                : rt::packedConvWeightCount(params);
  std::vector<float> out(static_cast<size_t>(count));
  if (info.weights == rt::ConvWeights::kPlain)
    std::copy(w, w + count, out.begin());
  else if (winograd)
    rt::winogradWeights(params, w, out.data());
  else
    rt::packConvWeights(params, w, out.data());
  return out;
}

/// Choice `c` with the setting it runs with on `context` (Winograd's tile,
/// Packed's depth step; none for the others).
Choice settled(Choice c, const rt::ConvParams& params, const rt::ConvContext& context) {
  if (c.setting || c.variant == rt::ConvVariant::kNone) return c;
  switch (rt::variantInfo(c.variant).weights) {
    case rt::ConvWeights::kWinograd:
      c.setting = rt::convWinogradTile(params, context);
      break;
    case rt::ConvWeights::kPanels:
    case rt::ConvWeights::kBf16Panels:
      c.setting = rt::convPackedDepthStep(context);
      break;
    default:
      break;
  }
  return c;
}

std::string textOf(const Choice& c) {
  const char* name = rt::variantInfo(c.variant).name;
  return c.setting ? fmt::format("{}:{}", name, c.setting) : std::string(name);
}

bool readsPlain(const Choice& c) {
  return rt::variantInfo(c.variant).weights == rt::ConvWeights::kPlain;
}

/// The choices of convAlternatives that differ from `own` and can run the
/// layer on float weights, at most ConvParams::alternatives' size: those
/// on plain weights only where `own` reads them too (they share them).
std::vector<Choice> alternativesFor(const ir::Node& conv, const rt::ConvParams& params,
                                    const PassTarget& target, const rt::ConvContext& context,
                                    const Choice& own) {
  std::vector<Choice> out;
  const auto it = target.convAlternatives.find(conv.name);
  if (it == target.convAlternatives.end()) return out;
  std::vector<std::string> seen = {textOf(own)};
  for (const std::string& text : it->second) {
    const ir::conventions::ConvChoice wanted = ir::conventions::parseConvChoice(text);
    const rt::ConvVariant variant = rt::convVariantNamed(wanted.variant.c_str());
    if (variant == rt::ConvVariant::kNone) continue;
    // A plain-weight alternative shares the layer's own weights (so only
    // where `own` reads them too). Whether it takes the layer depends on
    // the sizes, which convChoiceAt checks per call, so it is not asked
    // here: every size of --dim's compiles gets the same alternatives.
    const bool fits = readsPlain({variant})
                          ? readsPlain(own) && wanted.setting == 0 &&
                                isaTierIncludes(target.tier, rt::variantInfo(variant).tier)
                          : whyNot(variant, wanted.setting, params, target, true, false).empty();
    if (!fits) continue;
    const Choice c = settled({variant, wanted.setting}, params, context);
    if (std::count(seen.begin(), seen.end(), textOf(c))) continue;
    seen.push_back(textOf(c));
    out.push_back(c);
    if (out.size() == std::tuple_size_v<decltype(params.alternatives)>) break;
  }
  return out;
}

/// `w` rearranged for `own`, then for each of `others` that does not read
/// it plain; where each other's weights start (0: the plain weights).
std::vector<float> rearranged(const rt::ConvParams& params, const Choice& own,
                              const std::vector<Choice>& others, const float* w,
                              std::vector<int64_t>& starts) {
  std::vector<float> packed = weightsFor(params, rt::variantInfo(own.variant), own.setting, w);
  for (const Choice& other : others) {
    starts.push_back(readsPlain(other) ? 0 : static_cast<int64_t>(packed.size()));
    if (readsPlain(other)) continue;
    const std::vector<float> more =
        weightsFor(params, rt::variantInfo(other.variant), other.setting, w);
    packed.insert(packed.end(), more.begin(), more.end());
  }
  return packed;
}

/// The constant of the layer's rearranged weights (a flat array: the
/// attributes say how its elements are ordered; with bf16 weights each holds
/// the bits of a pair of bfloat16). Computed once while its source and the
/// result live: --dim compiles the model at many sizes, each rearranging
/// the same weights (one interned buffer, ir::Graph::addConstant) the same
/// way.
int rearrangedConstant(ir::Graph& graph, const rt::ConvParams& p, const Choice& own,
                       const std::vector<Choice>& others, const ir::Value& w,
                       std::vector<int64_t>& starts) {
  const rt::ConvVariantInfo& info = rt::variantInfo(own.variant);
  const auto source = w.data;  // w may move when a value is added
  const std::string name = w.name + (!others.empty()                                ? "_variants"
                                     : info.weights == rt::ConvWeights::kWinograd   ? "_winograd"
                                     : info.weights == rt::ConvWeights::kBf16Panels ? "_bf16"
                                                                                    : "_packed");
  // What the layout depends on: not the extents, pads, epilogue or pooling.
  std::string choices = textOf(own);
  for (const Choice& other : others) choices.append(",").append(textOf(other));
  using Key = std::tuple<const void*, std::string, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, bool, bool>;
  const Key key{source.get(), choices, p.c_in,       p.c_out,         p.groups,        p.k_d,
                p.k_h,        p.k_w,   p.depth_step, p.blocked_input, p.blocked_output};
  struct Entry {
    std::weak_ptr<const std::vector<uint8_t>> source, packed;
    std::vector<int64_t> starts;
  };
  static auto* mutex = new std::mutex;  // never destroyed, like the map
  static auto* known = new std::map<Key, Entry>;
  {
    std::lock_guard<std::mutex> lock(*mutex);
    std::erase_if(*known, [](const auto& entry) {
      return entry.second.source.expired() || entry.second.packed.expired();
    });
    if (auto it = known->find(key); it != known->end()) {
      starts = it->second.starts;
      auto data = it->second.packed.lock();
      const auto count = static_cast<int64_t>(data->size() / sizeof(float));
      return graph.addConstant(name, ir::TensorType{DType::kF32, {count}}, std::move(data));
    }
  }
  const auto* weights = reinterpret_cast<const float*>(source->data());
  const std::vector<float> packed = rearranged(p, own, others, weights, starts);
  const int id = addFloatConstant(graph, name, {static_cast<int64_t>(packed.size())}, packed);
  std::lock_guard<std::mutex> lock(*mutex);
  known->insert_or_assign(key, Entry{source, graph.value(id).data, starts});
  return id;
}

}  // namespace

bool packConvolutionWeights(ir::Graph& graph, const PassTarget& target) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    const ir::Node& conv = graph.node(id);
    if (conv.op != "Conv" || conv.has(ir::conventions::kConvVariant) ||
        ir::conventions::convPacking(conv) != ir::conventions::ConvPacking::kNone)
      continue;
    const ir::Value& w = graph.value(conv.inputs[1]);
    if (w.type.dtype != DType::kF32) continue;
    const lowering::KernelCall call = lowering::lowerNode(graph, conv);
    rt::ConvParams params = std::get<rt::ConvParams>(call.params);
    const rt::ConvContext context{target.tier.c_str(), target.machine};
    const bool mayNarrow = target.weightFormatFor(conv.name) == rt::WeightFormat::kBf16;
    const Choice choice = settled(
        choiceFor(conv, params, target, context, w.isConstant(), mayNarrow), params, context);
    if (choice.variant == rt::ConvVariant::kNone) continue;  // the runtime chooses
    const rt::ConvVariantInfo& info = rt::variantInfo(choice.variant);
    graph.node(id).attrs[ir::conventions::kConvVariant] = std::string(info.name);
    changed = true;
    const std::vector<Choice> others = w.isConstant()
                                           ? alternativesFor(conv, params, target, context, choice)
                                           : std::vector<Choice>{};
    // Its own weights, then each other variant's; those on plain weights
    // read the model's, where own reads them too (alternativesFor).
    std::vector<int64_t> starts;
    if (!readsPlain(choice) || !std::all_of(others.begin(), others.end(), readsPlain)) {
      const int packedId = rearrangedConstant(graph, params, choice, others, w, starts);
      graph.node(id).inputs[1] = packedId;  // addConstant may move values, not nodes
    } else {
      starts.assign(others.size(), 0);
    }
    std::vector<std::string> texts;
    for (const Choice& other : others) texts.push_back(textOf(other));
    const bool winograd = info.weights == rt::ConvWeights::kWinograd;
    const bool bf16 = info.weights == rt::ConvWeights::kBf16Panels;
    ir::Node& node = graph.node(id);
    if (!others.empty()) {
      node.attrs[ir::conventions::kConvAlternatives] = fmt::format("{}", fmt::join(texts, ","));
      node.attrs[ir::conventions::kConvAlternativeWeights] = starts;
    }
    if (info.weights == rt::ConvWeights::kPlain) continue;
    if (!winograd) node.attrs[ir::conventions::kConvDepthStep] = choice.setting;
    node.attrs[ir::conventions::kPackedWeights] =
        static_cast<int64_t>(bf16                  ? ir::conventions::ConvPacking::kBf16Panels
                             : !winograd           ? ir::conventions::ConvPacking::kPanels
                             : choice.setting == 4 ? ir::conventions::ConvPacking::kWinograd4
                                                   : ir::conventions::ConvPacking::kWinograd);
  }
  return changed;
}

}  // namespace cgc::passes
