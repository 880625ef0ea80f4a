// Importers for the recurrent ops RNN, GRU and LSTM. Everything ONNX leaves
// to attributes with defaults is resolved here into one canonical node: the
// direction into num_directions / reverse, the activation names (with their
// per-direction defaults and the alpha / beta values they consume) into
// rt::RnnActivation codes, and layout into the batch_major flag.
#include <algorithm>
#include <cctype>

#include "cgc/kernels.h"
#include "onnx_frontend/op_import.h"

namespace cgc::frontend {
namespace {

using ir::Shape;

struct CellInfo {
  int64_t gates;
  std::vector<std::string> defaultActivations;  // one direction's
  size_t maxInputs;
};

CellInfo cellInfo(const std::string& op) {
  if (op == "LSTM") return {4, {"Sigmoid", "Tanh", "Tanh"}, 8};
  if (op == "GRU") return {3, {"Sigmoid", "Tanh"}, 6};
  return {1, {"Tanh"}, 6};
}

struct ActivationInfo {
  const char* name;
  rt::RnnActivation fn;
  bool usesAlpha, usesBeta;
  float alpha, beta;  // defaults, as ONNX Runtime's
};

constexpr ActivationInfo kActivations[] = {
    {"sigmoid", rt::RnnActivation::kSigmoid, false, false, 0.f, 0.f},
    {"tanh", rt::RnnActivation::kTanh, false, false, 0.f, 0.f},
    {"relu", rt::RnnActivation::kRelu, false, false, 0.f, 0.f},
    {"hardsigmoid", rt::RnnActivation::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"leakyrelu", rt::RnnActivation::kLeakyRelu, true, false, 0.01f, 0.f},
    {"affine", rt::RnnActivation::kAffine, true, true, 1.f, 0.f},
    {"scaledtanh", rt::RnnActivation::kScaledTanh, true, true, 1.f, 1.f},
    {"thresholdedrelu", rt::RnnActivation::kThresholdedRelu, true, false, 1.f, 0.f},
    {"elu", rt::RnnActivation::kElu, true, false, 1.f, 0.f},
    {"softsign", rt::RnnActivation::kSoftsign, false, false, 0.f, 0.f},
    {"softplus", rt::RnnActivation::kSoftplus, false, false, 0.f, 0.f},
};

std::vector<std::string> attrStrings(const OpContext& ctx, const char* name) {
  for (const auto& a : ctx.proto.attribute())
    if (a.name() == name) {
      std::vector<std::string> strings;
      for (const auto& text : a.strings()) strings.push_back(printableAttr(text));
      return strings;
    }
  return {};
}

/// Resolves `activations` into three codes per direction (unused slots stay
/// Tanh), with the alpha / beta lists consumed in order by the functions that
/// take them, as ONNX Runtime does.
void resolveActivations(const OpContext& ctx, const CellInfo& cell, int64_t dirs,
                        std::map<std::string, ir::Attribute>& attrs) {
  size_t perDir = cell.defaultActivations.size();
  std::vector<std::string> names = attrStrings(ctx, "activations");
  if (names.empty()) names = cell.defaultActivations;
  // A single direction's list serves both directions.
  if (dirs == 2 && names.size() == perDir) {
    std::vector<std::string> forward = names;
    names.insert(names.end(), forward.begin(), forward.end());
  }
  if (names.size() != perDir * dirs)
    ctx.fail(
        fmt::format("activations lists {} functions; {} expects {} per "
                    "direction",
                    names.size(), ctx.proto.op_type(), perDir));
  std::vector<double> alphas = ctx.attrFloats("activation_alpha");
  std::vector<double> betas = ctx.attrFloats("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  std::vector<int64_t> codes(3 * dirs, static_cast<int64_t>(rt::RnnActivation::kTanh));
  std::vector<double> slotAlpha(3 * dirs, 0.0), slotBeta(3 * dirs, 0.0);
  for (size_t i = 0; i < names.size(); ++i) {
    std::string lower = names[i];
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    const ActivationInfo* info = nullptr;
    for (const auto& a : kActivations)
      if (lower == a.name) info = &a;
    if (!info) ctx.fail(fmt::format("activation function '{}' is not supported", names[i]));
    size_t slot = 3 * (i / perDir) + i % perDir;
    codes[slot] = static_cast<int64_t>(info->fn);
    slotAlpha[slot] = info->alpha;
    slotBeta[slot] = info->beta;
    if (info->usesAlpha && nextAlpha < alphas.size()) slotAlpha[slot] = alphas[nextAlpha++];
    if (info->usesBeta && nextBeta < betas.size()) slotBeta[slot] = betas[nextBeta++];
  }
  attrs["activations"] = codes;
  attrs["activation_alpha"] = slotAlpha;
  attrs["activation_beta"] = slotBeta;
}

void requireShape(const OpContext& ctx, size_t input, const char* role, const Shape& expected) {
  if (ctx.hasInput(input) && ctx.inputShape(input) != expected)
    ctx.fail(fmt::format("{} has shape {}, expected {}", role,
                         ir::shapeString(ctx.inputShape(input)), ir::shapeString(expected)));
}

void importRecurrent(OpContext& ctx) {
  const std::string& op = ctx.proto.op_type();
  CellInfo cell = cellInfo(op);
  ctx.requireInputs(3, cell.maxInputs);
  for (size_t i = 0; i < cell.maxInputs; ++i)
    if (i != 4 && ctx.hasInput(i) && ctx.inputType(i) != DType::kF32)
      ctx.fail(fmt::format("input {} has element type {} (float32 only)", i,
                           dtypeName(ctx.inputType(i))));
  if (ctx.hasInput(4) && ctx.inputType(4) != DType::kI32) ctx.fail("sequence_lens must be int32");

  std::string direction = ctx.attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    ctx.fail(fmt::format("unknown direction '{}'", direction));
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t layout = ctx.opset >= 14 ? ctx.attrInt("layout", 0) : 0;
  if (layout != 0 && layout != 1) ctx.fail(fmt::format("layout must be 0 or 1, is {}", layout));

  const Shape& x = ctx.inputShape(0);
  if (x.size() != 3) ctx.fail("X must have rank 3");
  int64_t seq = layout ? x[1] : x[0], batch = layout ? x[0] : x[1];
  int64_t inputSize = x[2];
  const Shape& r = ctx.inputShape(2);
  int64_t hidden = ctx.attrInt("hidden_size", r.size() == 3 ? r[2] : 0);
  if (hidden <= 0) ctx.fail("hidden_size must be positive");
  int64_t gh = ctx.mulSizes(cell.gates, hidden);
  Shape state = layout ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  requireShape(ctx, 1, "W", {dirs, gh, inputSize});
  requireShape(ctx, 2, "R", {dirs, gh, hidden});
  requireShape(ctx, 3, "B", {dirs, ctx.mulSizes(2, gh)});
  requireShape(ctx, 4, "sequence_lens", {batch});
  requireShape(ctx, 5, "initial_h", state);
  requireShape(ctx, 6, "initial_c", state);
  requireShape(ctx, 7, "P", {dirs, ctx.mulSizes(3, hidden)});

  std::map<std::string, ir::Attribute> attrs = {
      {"hidden_size", hidden},
      {"num_directions", dirs},
      {"reverse", int64_t{direction == "reverse"}},
      {"batch_major", layout},
      {"linear_before_reset", ctx.attrInt("linear_before_reset", 0)},
      {"input_forget", ctx.attrInt("input_forget", 0)}};
  if (ctx.hasAttr("clip")) {
    float clip = ctx.attrFloat("clip", 0.f);
    if (!(clip > 0.f)) ctx.fail("clip must be positive");
    attrs["clip"] = double{clip};
  }
  resolveActivations(ctx, cell, dirs, attrs);

  Shape y = layout ? Shape{batch, seq, dirs, hidden} : Shape{seq, dirs, batch, hidden};
  std::vector<ir::TensorType> outputs = {{DType::kF32, y}, {DType::kF32, state}};
  if (op == "LSTM") outputs.push_back({DType::kF32, state});
  std::vector<int> inputs = ctx.inputs;
  inputs.resize(cell.maxInputs, -1);
  ctx.emit(op, inputs, outputs, attrs);
}

}  // namespace

void registerRecurrentOps(std::map<std::string, OpImporter>& table) {
  table["RNN"] = importRecurrent;
  table["GRU"] = importRecurrent;
  table["LSTM"] = importRecurrent;
}

}  // namespace cgc::frontend
