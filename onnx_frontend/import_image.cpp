// Importers for image-style ops: Resize and Upsample (one canonical Resize
// node with per-axis scales and every mode resolved), InstanceNormalization,
// LayerNormalization, and Einsum in its batched-matrix-product forms, which
// become Transpose/Reshape + MatMul nodes.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "onnx_frontend/op_import.h"

namespace cgc::frontend {
namespace {

using ir::Shape;

/// An optional input that is absent or an empty tensor (Resize-11 requires
/// roi and scales to be present even when unused).
bool hasValues(const OpContext& ctx, size_t i) {
  return ctx.hasInput(i) && ctx.input(i).type.numElements() > 0;
}

void requireOneOf(const OpContext& ctx, const char* what, const std::string& value,
                  std::initializer_list<const char*> allowed) {
  for (const char* a : allowed)
    if (value == a) return;
  ctx.fail(fmt::format("{} '{}' is not supported", what, value));
}

struct ResizeSpec {
  std::string mode = "nearest";
  std::string nearestMode = "round_prefer_floor";
  std::string coordinates = "half_pixel";
  std::vector<double> scales;
  std::vector<double> roi;  // starts then ends; empty unless tf_crop_and_resize
};

/// Output size floor(input * scale) per axis, as ONNX defines it.
Shape scaledShape(const OpContext& ctx, const Shape& x, const std::vector<double>& scales) {
  if (scales.size() != x.size())
    ctx.fail(fmt::format("scales has {} values for an input of rank {}", scales.size(), x.size()));
  Shape out(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    if (!(scales[d] > 0)) ctx.fail(fmt::format("scale {} is not positive", scales[d]));
    double size = std::floor(scales[d] * static_cast<double>(x[d]));
    // Infinity and sizes beyond the limit fail before the cast to int64.
    if (!(size <= static_cast<double>(ir::kMaxTensorBytes)))
      ctx.fail(fmt::format("scale {} makes axis {} of size {} too large", scales[d], d, x[d]));
    out[d] = static_cast<int64_t>(size);
  }
  return out;
}

void emitResize(OpContext& ctx, const ResizeSpec& spec, const Shape& out) {
  ctx.requireFloat(0);
  const Shape& x = ctx.inputShape(0);
  for (size_t d = 0; d < x.size(); ++d)
    if (x[d] == 0 && out[d] > 0)
      ctx.fail(fmt::format("cannot resize empty axis {} to {}", d, out[d]));
  std::map<std::string, ir::Attribute> attrs = {
      {"mode", spec.mode},
      {"nearest_mode", spec.nearestMode},
      {"coordinate_transformation_mode", spec.coordinates},
      {"scales", spec.scales},
      {"roi", spec.roi},
      {"cubic_coeff_a", double{ctx.attrFloat("cubic_coeff_a", -0.75f)}},
      {"exclude_outside", ctx.attrInt("exclude_outside", 0)},
      {"extrapolation_value", double{ctx.attrFloat("extrapolation_value", 0.f)}}};
  ctx.emit("Resize", {ctx.inputs[0]}, {{DType::kF32, out}}, attrs);
}

/// Resize-10 behaves like Upsample: asymmetric coordinates, and nearest
/// takes the input pixel at or before the mapped coordinate.
ResizeSpec upsampleSpec(const OpContext& ctx, std::vector<double> scales) {
  ResizeSpec spec;
  spec.mode = ctx.attrString("mode", "nearest");
  if (spec.mode == "bilinear" && ctx.opset < 7) spec.mode = "linear";  // Upsample-1
  requireOneOf(ctx, "mode", spec.mode, {"nearest", "linear"});
  spec.nearestMode = "floor";
  spec.coordinates = "asymmetric";
  spec.scales = std::move(scales);
  return spec;
}

void importResize(OpContext& ctx) {
  const Shape x = ctx.inputShape(0);
  if (ctx.opset < 11) {
    ctx.requireInputs(2, 2);
    ResizeSpec spec = upsampleSpec(ctx, ctx.constantDoubles(1, "scales"));
    emitResize(ctx, spec, scaledShape(ctx, x, spec.scales));
    return;
  }
  ctx.requireInputs(1, 4);
  ResizeSpec spec;
  spec.mode = ctx.attrString("mode", "nearest");
  spec.nearestMode = ctx.attrString("nearest_mode", "round_prefer_floor");
  spec.coordinates = ctx.attrString("coordinate_transformation_mode", "half_pixel");
  requireOneOf(ctx, "mode", spec.mode, {"nearest", "linear", "cubic"});
  requireOneOf(ctx, "nearest_mode", spec.nearestMode,
               {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  requireOneOf(ctx, "coordinate_transformation_mode", spec.coordinates,
               {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_half_pixel_for_nn", "tf_crop_and_resize"});
  bool haveScales = hasValues(ctx, 2), haveSizes = hasValues(ctx, 3);
  if (haveScales == haveSizes) ctx.fail("exactly one of scales and sizes must be given");
  Shape out;
  if (haveScales) {
    spec.scales = ctx.constantDoubles(2, "scales");
    out = scaledShape(ctx, x, spec.scales);
  } else {
    out = ctx.constantInts(3, "sizes");
    if (out.size() != x.size())
      ctx.fail(fmt::format("sizes has {} values for an input of rank {}", out.size(), x.size()));
    for (size_t d = 0; d < x.size(); ++d) {
      if (out[d] < 0) ctx.fail("sizes must not be negative");
      spec.scales.push_back(x[d] == 0 ? 1.0
                                      : static_cast<double>(out[d]) / static_cast<double>(x[d]));
    }
  }
  if (spec.coordinates == "tf_crop_and_resize") {
    if (!hasValues(ctx, 1)) ctx.fail("tf_crop_and_resize needs the roi input");
    spec.roi = ctx.constantDoubles(1, "roi");
    if (spec.roi.size() != 2 * x.size())
      ctx.fail(fmt::format("roi has {} values; an input of rank {} needs {}", spec.roi.size(),
                           x.size(), 2 * x.size()));
  }
  emitResize(ctx, spec, out);
}

/// Upsample-1 scales the height and width of NCHW data, Upsample-7 has a
/// scales attribute, Upsample-9 (deprecated at 10) a scales input.
void importUpsample(OpContext& ctx) {
  std::vector<double> scales;
  if (ctx.opset < 7) {
    ctx.requireInputs(1, 1);
    if (ctx.inputShape(0).size() != 4) ctx.fail("Upsample-1 needs an NCHW input");
    if (!ctx.hasAttr("height_scale") || !ctx.hasAttr("width_scale"))
      ctx.fail("height_scale and width_scale are required");
    scales = {1.0, 1.0, ctx.attrFloat("height_scale", 1.f), ctx.attrFloat("width_scale", 1.f)};
  } else if (ctx.opset < 9) {
    ctx.requireInputs(1, 1);
    scales = ctx.attrFloats("scales");
  } else {
    ctx.requireInputs(2, 2);
    scales = ctx.constantDoubles(1, "scales");
  }
  for (double s : scales)
    if (s < 1) ctx.fail(fmt::format("scale {} is below 1 (Upsample only enlarges)", s));
  ResizeSpec spec = upsampleSpec(ctx, scales);
  emitResize(ctx, spec, scaledShape(ctx, ctx.inputShape(0), spec.scales));
}

void importInstanceNorm(OpContext& ctx) {
  ctx.requireInputs(3, 3);
  ctx.requireFloat(0);
  const Shape& x = ctx.inputShape(0);
  if (x.size() < 2) ctx.fail("InstanceNormalization needs an N x C (x spatial) input");
  for (size_t i = 1; i < 3; ++i)
    if (ctx.input(i).type.numElements() != x[1])
      ctx.fail(fmt::format("input {} must hold {} values (one per channel)", i, x[1]));
  ctx.emit("InstanceNormalization", ctx.inputs, {ctx.input(0).type},
           {{"epsilon", double{ctx.attrFloat("epsilon", 1e-5f)}}});
}

/// Always defines Mean and InvStdDev (the kernel computes them anyway); they
/// have the input's shape with the normalised axes set to 1.
void importLayerNorm(OpContext& ctx) {
  ctx.requireInputs(2, 3);
  ctx.requireFloat(0);
  if (ctx.attrInt("stash_type", 1) != 1)
    ctx.fail("only stash_type 1 (float32 statistics) is supported");
  const Shape& x = ctx.inputShape(0);
  int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = ctx.normalizeAxis(ctx.attrInt("axis", -1), rank);
  Shape statistics = x;
  int64_t inner = 1;
  for (int64_t d = axis; d < rank; ++d) {
    inner *= x[d];
    statistics[d] = 1;
  }
  for (size_t i = 1; i < 3; ++i)
    if (ctx.hasInput(i) && ctx.input(i).type.numElements() != inner)
      ctx.fail(
          fmt::format("input {} has shape {}; it must hold the {} values of "
                      "the normalised axes",
                      i, ir::shapeString(ctx.inputShape(i)), inner));
  ctx.emit("LayerNormalization", ctx.inputs,
           {ctx.input(0).type, {DType::kF32, statistics}, {DType::kF32, statistics}},
           {{"axis", axis}, {"epsilon", double{ctx.attrFloat("epsilon", 1e-5f)}}});
}

// ------------------------------------------------------------------- Einsum

/// A two-operand equation with ellipses expanded into digits (never ONNX
/// subscripts), right-aligned as broadcasting demands.
struct Equation {
  std::string a, b, out;
};

std::string expandEllipsis(const OpContext& ctx, const std::string& term, int64_t ellipsisRank,
                           bool isOutput, int64_t maxEllipsis) {
  size_t at = term.find("...");
  std::string letters = at == std::string::npos ? term : term.substr(0, at) + term.substr(at + 3);
  for (char c : letters)
    if (!std::isalpha(static_cast<unsigned char>(c)))
      ctx.fail(fmt::format("term '{}' is not letters with at most one ellipsis", term));
  if (at == std::string::npos) return term;
  int64_t count = isOutput ? maxEllipsis : ellipsisRank;
  std::string digits;
  for (int64_t i = maxEllipsis - count; i < maxEllipsis; ++i) digits += static_cast<char>('0' + i);
  return term.substr(0, at) + digits + term.substr(at + 3);
}

Equation parseEquation(const OpContext& ctx, std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  size_t arrow = text.find("->");
  std::string lhs = text.substr(0, arrow);
  size_t comma = lhs.find(',');
  if (comma == std::string::npos || lhs.find(',', comma + 1) != std::string::npos)
    ctx.fail(
        fmt::format("equation '{}' is not a product of two operands; only "
                    "batched matrix products are supported",
                    text));
  std::string terms[2] = {lhs.substr(0, comma), lhs.substr(comma + 1)};
  int64_t ellipsis[2], maxEllipsis = 0;
  for (size_t i = 0; i < 2; ++i) {
    int64_t letters = 0;
    for (char c : terms[i]) letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
    ellipsis[i] = static_cast<int64_t>(ctx.inputShape(i).size()) - letters;
    bool hasEllipsis = terms[i].find("...") != std::string::npos;
    if (ellipsis[i] < 0 || (!hasEllipsis && ellipsis[i] != 0))
      ctx.fail(fmt::format("term '{}' does not match input {} of shape {}", terms[i], i,
                           ir::shapeString(ctx.inputShape(i))));
    if (ellipsis[i] > 9) ctx.fail("an ellipsis may stand for at most 9 axes");
    maxEllipsis = std::max(maxEllipsis, ellipsis[i]);
  }
  Equation eq{expandEllipsis(ctx, terms[0], ellipsis[0], false, maxEllipsis),
              expandEllipsis(ctx, terms[1], ellipsis[1], false, maxEllipsis), ""};
  if (arrow != std::string::npos) {
    eq.out = expandEllipsis(ctx, text.substr(arrow + 2), 0, true, maxEllipsis);
  } else {
    // Implicit output: the ellipsis, then the subscripts used once, sorted.
    for (int64_t i = 0; i < maxEllipsis; ++i) eq.out += static_cast<char>('0' + i);
    std::string all = eq.a + eq.b;
    std::string once;
    for (char c : all)
      if (std::isalpha(static_cast<unsigned char>(c)) && std::count(all.begin(), all.end(), c) == 1)
        once += c;
    std::sort(once.begin(), once.end());
    eq.out += once;
  }
  for (const std::string* term : {&eq.a, &eq.b, &eq.out})
    if (std::set<char>(term->begin(), term->end()).size() != term->size())
      ctx.fail(
          fmt::format("equation '{}' repeats a subscript within a term "
                      "(diagonals are not supported)",
                      text));
  return eq;
}

/// Adds an intermediate node of the decomposition and returns its output.
int addStep(OpContext& ctx, const std::string& op, std::vector<int> inputs, ir::TensorType type,
            const std::string& suffix, std::map<std::string, ir::Attribute> attrs = {}) {
  std::string name = fmt::format("{}/{}", ctx.nodeName, suffix);
  int value = ctx.graph.addValue(name, std::move(type));
  ctx.graph.addNode(op, name, std::move(inputs), {value}, std::move(attrs));
  return value;
}

/// Transposes operand `value` (subscripts `term`) into the subscript order
/// `order`, then views it as batch dims + [rows, cols].
int arrangeOperand(OpContext& ctx, int value, const std::string& term, const std::string& order,
                   size_t batch, size_t rowLetters, const std::string& suffix) {
  const Shape shape = ctx.graph.value(value).type.shape;
  std::vector<int64_t> perm;
  Shape permuted;
  for (char c : order) {
    perm.push_back(static_cast<int64_t>(term.find(c)));
    permuted.push_back(shape[perm.back()]);
  }
  DType type = ctx.graph.value(value).type.dtype;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  if (!identity)
    value = addStep(ctx, "Transpose", {value}, {type, permuted}, suffix + "_transpose",
                    {{"perm", perm}});
  Shape matrix(permuted.begin(), permuted.begin() + static_cast<int64_t>(batch));
  matrix.push_back(
      ir::numElements(Shape(permuted.begin() + static_cast<int64_t>(batch),
                            permuted.begin() + static_cast<int64_t>(batch + rowLetters))));
  matrix.push_back(ir::numElements(
      Shape(permuted.begin() + static_cast<int64_t>(batch + rowLetters), permuted.end())));
  if (matrix == permuted) return value;
  return addStep(ctx, "Reshape", {value}, {type, matrix}, suffix + "_matrix");
}

void importEinsum(OpContext& ctx) {
  std::string text = ctx.attrString("equation", "");
  if (ctx.inputs.size() != 2 || !ctx.hasInput(0) || !ctx.hasInput(1))
    ctx.fail(
        fmt::format("equation '{}' is not a product of two operands; only "
                    "batched matrix products are supported",
                    text));
  DType type = ctx.inputType(0);
  if ((type != DType::kF32 && type != DType::kF64) || ctx.inputType(1) != type)
    ctx.fail(
        fmt::format("operand types {} and {} are not supported (float32 or "
                    "float64, both the same)",
                    dtypeName(type), dtypeName(ctx.inputType(1))));
  Equation eq = parseEquation(ctx, text);
  const Shape a = ctx.inputShape(0), b = ctx.inputShape(1);
  std::string batch, rows, cols, inner;
  for (char c : eq.out) {
    bool inA = eq.a.find(c) != std::string::npos, inB = eq.b.find(c) != std::string::npos;
    if (!inA && !inB)
      ctx.fail(fmt::format("output subscript '{}' of equation '{}' is in no input", c, text));
    (inA && inB ? batch : inA ? rows : cols) += c;
  }
  for (char c : eq.a + eq.b)
    if (eq.out.find(c) == std::string::npos) {
      if (eq.a.find(c) == std::string::npos || eq.b.find(c) == std::string::npos)
        ctx.fail(
            fmt::format("equation '{}' sums over subscript '{}' of one operand; "
                        "only batched matrix products are supported",
                        text, c));
      if (inner.find(c) == std::string::npos) inner += c;
    }
  // Batch subscripts may broadcast (size 1 against n), as MatMul does.
  for (char c : batch + inner) {
    int64_t da = a[eq.a.find(c)], db = b[eq.b.find(c)];
    bool broadcasts = batch.find(c) != std::string::npos && std::min(da, db) == 1;
    if (da != db && !broadcasts)
      ctx.fail(fmt::format("subscript '{}' has sizes {} and {}", c, da, db));
  }
  int lhs = arrangeOperand(ctx, ctx.inputs[0], eq.a, batch + rows + inner, batch.size(),
                           rows.size(), "a");
  int rhs = arrangeOperand(ctx, ctx.inputs[1], eq.b, batch + inner + cols, batch.size(),
                           inner.size(), "b");
  Shape product;
  for (char c : batch) product.push_back(std::max(a[eq.a.find(c)], b[eq.b.find(c)]));
  Shape unflattened = product;
  int64_t m = 1, n = 1;
  for (char c : rows) unflattened.push_back(a[eq.a.find(c)]), m *= a[eq.a.find(c)];
  for (char c : cols) unflattened.push_back(b[eq.b.find(c)]), n *= b[eq.b.find(c)];
  product.insert(product.end(), {m, n});
  int result = addStep(ctx, "MatMul", {lhs, rhs}, {type, product}, "matmul");
  std::string order = batch + rows + cols;
  if (unflattened != product)
    result = addStep(ctx, "Reshape", {result}, {type, unflattened}, "unflatten");
  std::vector<int64_t> perm;
  Shape out;
  bool identity = true;
  for (char c : eq.out) {
    perm.push_back(static_cast<int64_t>(order.find(c)));
    out.push_back(unflattened[perm.back()]);
    identity = identity && perm.back() == static_cast<int64_t>(perm.size() - 1);
  }
  if (!identity)
    ctx.emit("Transpose", {result}, {{type, out}}, {{"perm", perm}});
  else
    ctx.emit("Reshape", {result}, {{type, out}});
}

}  // namespace

void registerImageOps(std::map<std::string, OpImporter>& table) {
  table["Resize"] = importResize;
  table["Upsample"] = importUpsample;
  table["InstanceNormalization"] = importInstanceNorm;
  table["LayerNormalization"] = importLayerNorm;
  table["Einsum"] = importEinsum;
}

}  // namespace cgc::frontend
