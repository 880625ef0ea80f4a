// pack-quantized-weights: the constant weights of the int8 products
// (QLinearConv and ConvInteger, QLinearMatMul and MatMulInteger, whether
// imported or made by fuse-quantized) are stored once, at compile time, in
// the layout the runtime's micro-kernels read (rt::packQWeights): w -
// w_zero per output channel in blocks of channels and quads of depth, the
// per-channel weight sums that compensate the activations' zero point, and
// on AVX2 the split that keeps vpmaddubsw from saturating; depthwise layers
// get the int16 taps their direct kernel reads. A convolution's packing is
// its variant's: rt::planQConv chooses the variant
// (cgc/kernels/qconv_variants.def) for the target's tier (PassTarget::tier),
// as qconv would on that CPU, and the pass records it (cgc_qconv_variant,
// which lowering puts into QConvParams::variant). A matrix product's is the
// one the target's int8 kernels read fastest (PassTarget::int8). Packed
// for the machine cgc runs on, a VNNI machine's layout would send
// x86-64-v3 code to its portable loops. A measured variant (a tuned
// profile's, by node name, or cgc tune's trial) replaces the choice where
// the target's tier runs it on the layer. The node keeps its zero point and
// scale inputs (the scales are the epilogue's) and records the packing in
// attributes (ir/conventions.h). Without this pass, the kernels pack on
// every run.
#include <fmt/format.h>

#include "cgc/kernels.h"
#include "ir/conventions.h"
#include "lowering/kernel_call.h"
#include "passes/pass_manager.h"

namespace cgc::passes {
namespace {

namespace conv = ir::conventions;

/// The weights' shape as packQWeights reads it, how to pack them, and for
/// a convolution the variant that reads them.
struct Plan {
  rt::QWeightShape shape;
  rt::QPackInfo info;
  rt::QConvVariant variant = rt::QConvVariant::kNone;
};

/// The measured variant (PassTarget::convVariants, or everyConvVariant in
/// cgc tune's trials) of an int8 convolution where the target's tier runs
/// it on this layer, else kNone (planQConv's own choice); a measured one
/// not taken is said through target.note.
rt::QConvVariant measuredVariant(const ir::Node& n, const rt::QConvParams& params,
                                 const PassTarget& target) {
  const auto [name, measured] = target.variantFor(n.name);
  const rt::QConvVariant variant = rt::qconvVariantNamed(name.c_str());
  if (name.empty() || rt::qconvVariantRuns(variant, params, target.tier.c_str())) return variant;
  if (measured && target.note)
    target.note(
        fmt::format("node '{}': the profile's int8 variant {} does not run this layer on "
                    "tier {}; the default runs it",
                    n.name, name, target.tier));
  return rt::QConvVariant::kNone;
}

std::optional<Plan> planFor(const ir::Graph& g, const ir::Node& n, const ir::Value& w,
                            const void* zeros, const PassTarget& target) {
  const lowering::KernelCall call = lowering::lowerNode(g, n);
  const bool wSigned = w.type.dtype == DType::kI8;
  if (const auto* p = std::get_if<rt::QConvParams>(&call.params)) {
    rt::QConvParams params = *p;
    params.w_signed = wSigned;
    params.variant = measuredVariant(n, params, target);
    const rt::QConvPlan plan = rt::planQConv(params, w.data->data(), zeros, target.tier.c_str());
    if (plan.variant == rt::QConvVariant::kNone) return std::nullopt;  // the runtime chooses
    return Plan{rt::qconvWeightShape(params), plan.info, plan.variant};
  }
  const auto& p = std::get<rt::QGemmParams>(call.params);
  if (w.type.rank() != 2) return std::nullopt;
  const rt::QWeightShape shape{1, p.n, p.k, p.trans_b, wSigned, p.per_column};
  return Plan{shape,
              rt::planQWeights(shape, w.data->data(), zeros,
                               rt::preferredQPacking(target.tier.c_str()), target.tier.c_str())};
}

}  // namespace

bool packQuantizedWeights(ir::Graph& graph, const PassTarget& target) {
  bool changed = false;
  for (int id : graph.topologicalOrder()) {
    const ir::Node& node = graph.node(id);
    const bool qlinear = node.op == "QLinearConv" || node.op == "QLinearMatMul";
    if (!qlinear && node.op != "ConvInteger" && node.op != "MatMulInteger") continue;
    if (node.has(conv::kPackedWeights)) continue;
    const size_t wIn = qlinear ? 3 : 1, zeroIn = qlinear ? 5 : 3;
    const ir::Value& w = graph.value(node.inputs[wIn]);
    const int zero = zeroIn < node.inputs.size() ? node.inputs[zeroIn] : -1;
    if (!w.isConstant() || (zero >= 0 && !graph.value(zero).isConstant())) continue;
    if (!std::holds_alternative<lowering::KernelCall>(lowering::tryLower(graph, node))) continue;
    const void* zeros = zero >= 0 ? graph.value(zero).data->data() : nullptr;
    const auto plan = planFor(graph, node, w, zeros, target);
    if (!plan) continue;
    std::vector<uint8_t> packed(static_cast<size_t>(plan->info.bytes));
    rt::packQWeights(plan->shape, plan->info, w.data->data(), zeros, packed.data());
    const int packedId = graph.addConstant(graph.uniqueValueName(w.name + "_packed"),
                                           {DType::kU8, {plan->info.bytes}}, std::move(packed));
    ir::Node& n = graph.node(id);
    n.inputs[wIn] = packedId;
    n.attrs[conv::kPackedWeights] = static_cast<int64_t>(plan->info.packing);
    n.attrs[conv::kQPackBlock] = plan->info.nb;
    n.attrs[conv::kQSplitEntries] = plan->info.split_entries;
    n.attrs[conv::kQWeightsSigned] = int64_t{plan->shape.w_signed};
    if (plan->variant != rt::QConvVariant::kNone)
      n.attrs[conv::kQConvVariant] = std::string(rt::variantInfo(plan->variant).name);
    changed = true;
  }
  return changed;
}

}  // namespace cgc::passes
