// `cgc inspect`: the first stop with a new model. What it takes and gives
// (inputs and outputs with types and symbolic shapes, even when it cannot
// be compiled), its ops, what cgc cannot compile yet (per op, with the
// first nodes; ONNX Runtime's internal ops said to be so), and either the
// compiled plan (kernels, convolution variants, the layers whose variant a
// tuned --profile chose, memory) or why it does not compile and what to try
// next. Ops, kernels and weights count the bodies of If, Loop and Scan at
// any depth. A model with external data lists its data files and their
// sizes. `cgc inspect --ops` prints the supported ops (docs/OPS.md).
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "cgc/kernels.h"
#include "compiler/commands.h"
#include "ir/conventions.h"
#include "pipeline/precision.h"
#include "pipeline/tuned_profile.h"
#include "toolchain/target_library.h"

namespace cgc::commands {
namespace {

/// The inputs' named symbolic dimensions as variable ones: "--dim
/// batch=1..64 --dim seq=1..64" ("" when none has a name).
std::string dimExample(const frontend::ModelSummary& summary, frontend::ShapeSpelling spelling) {
  std::vector<std::string> ranges;
  for (const frontend::DeclaredTensor& t : summary.inputs)
    for (size_t d = 0; d < t.dims.size() && d < t.symbols.size(); ++d) {
      const std::string range = t.symbols[d] + "=1..64";
      if (t.dims[d] < 0 && !t.symbols[d].empty() &&
          std::find(ranges.begin(), ranges.end(), range) == ranges.end())
        ranges.push_back(range);
    }
  if (ranges.empty()) return "";
  if (spelling == frontend::ShapeSpelling::kCMake)
    return fmt::format("cgc_add_graph(... DIMS {})", fmt::join(ranges, " "));
  return fmt::format("--dim {}", fmt::join(ranges, " --dim "));
}

/// What to try for the error a compile gave.
std::string hintFor(const std::string& error, const frontend::ModelSummary& summary,
                    frontend::ShapeSpelling spelling) {
  if (error.find("symbolic dimension") != std::string::npos ||
      error.find("has no shape") != std::string::npos) {
    const std::string example = frontend::shapeExample(summary.inputs, spelling);
    const std::string dims = dimExample(summary, spelling);
    return fmt::format(
        "bind the inputs' symbolic dimensions{}{} (one binding also binds the same dimension "
        "name in the other inputs){}{}",
        example.empty() ? "" : ", e.g. ", example,
        dims.empty() ? "" : ", or keep them variable at run time within a range, e.g. ", dims);
  }
  if (error.find("compile-time constant") != std::string::npos)
    return "bind that input to a value with --constant NAME=FILE.pb (a TensorProto file): it "
           "decides a shape";
  if (error.find("unsupported op") != std::string::npos)
    return frontend::unsupportedAdvice(summary.unsupported);
  if (error.find("no kernel") != std::string::npos)
    return "cgc has no kernel for this form of the op (its element type or attributes) yet; " +
           frontend::unsupportedAdvice({});
  return "see the README's \"Using cgc\" on what cgc compiles";
}

bool isQuantType(DType t) { return t == DType::kU8 || t == DType::kI8; }

/// The same network in float32, for a quantised model: the memory plan
/// redone with every uint8/int8 tensor at four bytes, and the weights at
/// four bytes an element (packed int8 weights counted by the logical
/// elements of their product, not by their packed bytes). Returns false
/// when the model has no quantised tensor.
bool floatEquivalent(const driver::CompiledModel& model, int64_t& arena, int64_t& weights) {
  ir::Graph g = model.graph;
  bool quantized = false;
  for (int id : g.liveNodes())
    for (int out : g.node(id).outputs)
      if (out >= 0 && isQuantType(g.value(out).type.dtype)) {
        g.value(out).type.dtype = DType::kF32;
        quantized = true;
      }
  for (int in : g.inputs)
    if (isQuantType(g.value(in).type.dtype)) {
      g.value(in).type.dtype = DType::kF32;
      quantized = true;
    }
  if (!quantized) return false;
  arena = passes::planMemory(g, model.calls, model.schedule).arenaBytes;
  // Packed weights: their logical element count, from the consumer's params.
  std::map<int, int64_t> packedElements;
  const ir::Graph& m = model.graph;
  for (int id : m.liveNodes()) {
    const ir::Node& n = m.node(id);
    if (!n.has(ir::conventions::kPackedWeights)) continue;
    const bool qlinear = n.op == "QLinearConv" || n.op == "QLinearMatMul";
    if (!qlinear && n.op != "ConvInteger" && n.op != "MatMulInteger") continue;
    const lowering::KernelCall call = lowering::lowerNode(m, n);
    int64_t elements = 0;
    if (const auto* p = std::get_if<rt::QConvParams>(&call.params))
      elements = p->c_out * (p->c_in / p->groups) * p->k_h * p->k_w;
    else if (const auto* p = std::get_if<rt::QGemmParams>(&call.params))
      elements = p->n * p->k;
    else
      continue;
    packedElements[n.inputs[qlinear ? 3 : 1]] = elements;
  }
  weights = 0;
  std::set<const std::vector<uint8_t>*> seen;
  for (int id : m.liveNodes())
    for (int in : m.node(id).inputs) {
      if (in < 0 || !m.value(in).isConstant() || !seen.insert(m.value(in).data.get()).second)
        continue;
      const ir::TensorType& t = m.value(in).type;
      const auto packed = packedElements.find(in);
      if (packed != packedElements.end())
        weights += packed->second * 4;
      else if (isQuantType(t.dtype))
        weights += t.numElements() * 4;
      else
        weights += t.bytes();
    }
  return true;
}

/// The convolutions' variants, float ones with their settings
/// (ir::conventions::ConvChoice) and int8 ones: a count of each and, with a
/// tuned profile, the layers that run the profile's choice.
void reportVariants(const driver::CompiledModel& model, const std::string& profilePath,
                    nlohmann::json& report) {
  std::map<std::string, int> counts;
  std::map<std::string, std::string> fromProfile;
  const driver::TunedConfig tuned =
      profilePath.empty() ? driver::TunedConfig{} : driver::readTunedConfig(profilePath);
  const auto& measured = tuned.convVariants;
  for (int id : model.graph.liveNodes()) {
    const ir::Node& node = model.graph.node(id);
    if (!ir::conventions::hasConvChoice(node)) continue;
    const std::string choice = ir::conventions::convChoice(node);
    // --dim's general code: the variants it picks among per call.
    std::string label = choice;
    const std::string others = node.getString(ir::conventions::kConvAlternatives, "");
    if (!others.empty()) label += " or " + others;
    for (size_t at; (at = label.find(',')) != std::string::npos;) label.replace(at, 1, " or ");
    ++counts[label];
    // A profile's choice without a setting takes the target's default one.
    auto it = measured.find(node.name);
    if (it != measured.end() &&
        (it->second == choice || it->second == node.getString(ir::conventions::kConvVariant, "")))
      fromProfile[node.name] = choice;
  }
  if (!counts.empty()) report["conv_variants"] = counts;
  if (!profilePath.empty()) report["profile_variants"] = fromProfile;
  if (!tuned.floatLayers.empty()) report["profile_float_layers"] = tuned.floatLayers;
}

/// --quantize: each layer's precision (the int8 products, those left out of
/// int8 with bf16 weights by --keep-bf16, and the float Conv, MatMul and Gemm
/// nodes left), by node name.
void reportPrecision(const driver::CompiledModel& model, nlohmann::json& report) {
  if (!model.quantization) return;
  nlohmann::json int8 = nlohmann::json::array(), bf16 = nlohmann::json::array(),
                 float32 = nlohmann::json::array();
  for (int id : model.graph.liveNodes()) {
    const ir::Node& node = model.graph.node(id);
    const std::string precision = driver::layerPrecision(node);
    if (precision == "int8") int8.push_back(node.name);
    if (precision == "bf16") bf16.push_back(node.name);
    if (precision == "float") float32.push_back(node.name);
  }
  report["int8_layers"] = int8;
  report["bf16_layers"] = bf16;
  report["float_layers"] = float32;
}

/// The names cgc compile gives the generated code by default, and each
/// input's and output's accessor (codegen's own table of them: the
/// compiled graph's inputs, which lack those bound by --constant, else the
/// file's).
void reportNames(const driver::CompileOptions& options, const driver::CompiledModel* model,
                 nlohmann::json& report) {
  try {
    const codegen::ModelNames names = driver::checkedNames(options);
    report["class"] = names.nameSpace + "::" + names.className;
    report["c_prefix"] = names.prefix;
  } catch (const CompileError& e) {
    report["names_error"] = e.what();
  }
  std::vector<std::string> inputs, outputs;
  if (model) {
    for (int in : model->graph.inputs) inputs.push_back(model->graph.value(in).name);
    outputs = model->graph.outputNames;
  } else {
    for (const auto& t : report["inputs"]) inputs.push_back(t["name"].get<std::string>());
    for (const auto& t : report["outputs"]) outputs.push_back(t["name"].get<std::string>());
  }
  const codegen::AccessorNames accessors = codegen::accessorNames(inputs, outputs);
  for (const auto& [side, names, accessed] : {std::tuple{"inputs", &inputs, &accessors.inputs},
                                              std::tuple{"outputs", &outputs, &accessors.outputs}})
    for (auto& t : report[side]) {
      const auto it = std::find(names->begin(), names->end(), t["name"].get<std::string>());
      if (it != names->end()) t["accessor"] = (*accessed)[it - names->begin()] + "()";
    }
}

/// The model as ONNX has it: its files, names, inputs, outputs and ops.
void printSource(const nlohmann::json& report) {
  const int inBodies = report["subgraph_nodes"].get<int>();
  std::cout << fmt::format(
      "{}: opset {}, {} nodes{}\n", report["model"].get<std::string>(), report["opset"].get<int>(),
      report["nodes"].get<int>(),
      inBodies == 0 ? "" : fmt::format(" ({} in If/Loop/Scan bodies)", inBodies));
  if (report.contains("external_data")) {
    std::cout << "external data (file, tensors, bytes):\n";
    for (const auto& f : report["external_data"]) {
      const int64_t bytes = f["bytes"].get<int64_t>();
      std::cout << fmt::format("  {:<24} {:>6} {:>12}\n", f["file"].get<std::string>(),
                               f["tensors"].get<int>(),
                               bytes < 0 ? std::string("missing") : std::to_string(bytes));
    }
  }
  if (report.contains("class"))
    std::cout << fmt::format("generated code: class {}, C prefix and files {}\n",
                             report["class"].get<std::string>(),
                             report["c_prefix"].get<std::string>());
  else
    std::cout << "generated code: " << report["names_error"].get<std::string>() << "\n";
  for (const char* side : {"inputs", "outputs"}) {
    std::cout << side << " (ONNX name, type, accessor):\n";
    for (const auto& t : report[side])
      std::cout << fmt::format("  {:<24} {:<24} {}\n", t["name"].get<std::string>(),
                               t["type"].get<std::string>(), t.value("accessor", "-"));
  }
  // Ops of other domains have long names: one column width for the lists.
  size_t width = 24;
  for (const auto& [op, count] : report["ops"].items()) width = std::max(width, op.size());
  std::cout << "ONNX ops:\n";
  for (const auto& [op, count] : report["ops"].items())
    std::cout << fmt::format("  {:<{}} {:>6}\n", op, width, count.get<int>());
  if (report.contains("unsupported_ops")) {
    std::cout << "not supported yet (nodes per op, the first few named):\n";
    for (const auto& [op, entry] : report["unsupported_ops"].items())
      std::cout << fmt::format(
          "  {:<{}} {:>6}  {}{}\n", op, width, entry["count"].get<int>(),
          fmt::join(entry["first_nodes"], ", "),
          entry["onnxruntime_internal"].get<bool>() ? "  (ONNX Runtime's internal op)" : "");
  }
}

/// The key/value caches (planning/cache_pairs.h): those kept in place, or
/// without --cache-in-place those it would keep, and those it cannot.
void reportCaches(const driver::CompiledModel& model, bool inPlace, nlohmann::json& report) {
  passes::CachePairing caches = model.caches;
  if (!inPlace) {
    lowering::KernelCalls calls = model.calls;
    caches = passes::pairCaches(model.graph, calls, {});
  }
  for (const passes::CachePair& p : caches.pairs)
    report["cache_pairs"].push_back({{"input", model.graph.value(p.input).name},
                                     {"output", model.graph.value(p.output).name},
                                     {"axis", p.axis},
                                     {"capacity", p.capacity},
                                     {"in_place", inPlace}});
  for (const std::string& why : caches.refused) report["caches_not_paired"].push_back(why);
}

void printCaches(const nlohmann::json& report) {
  if (report.contains("cache_pairs")) {
    const bool inPlace = report["cache_pairs"][0]["in_place"].get<bool>();
    std::cout << (inPlace ? "key/value caches kept in place (--cache-in-place):\n"
                          : "key/value caches --cache-in-place would keep in place:\n");
    for (const auto& p : report["cache_pairs"])
      std::cout << fmt::format("  {} -> {} (axis {}, room for {})\n", p["input"].get<std::string>(),
                               p["output"].get<std::string>(), p["axis"].get<int>(),
                               p["capacity"].get<int64_t>());
  }
  if (report.contains("caches_not_paired")) {
    std::cout << "key/value caches that stay copied:\n";
    for (const auto& why : report["caches_not_paired"])
      std::cout << fmt::format("  {}\n", why.get<std::string>());
  }
}

/// What compiling it chose: kernels, variants, precisions, dimensions,
/// memory.
void printCompiled(const nlohmann::json& report) {
  const int bodies = report["subgraphs"].get<int>();
  std::cout << (bodies == 0
                    ? std::string("kernels after passes:\n")
                    : fmt::format("kernels after passes (with the {} If/Loop/Scan bod{}):\n",
                                  bodies, bodies == 1 ? "y" : "ies"));
  for (const auto& [op, count] : report["kernels"].items())
    std::cout << fmt::format("  {:<24} {:>6}\n", op, count.get<int>());
  int convLayers = 0;
  if (report.contains("conv_variants")) {
    for (const auto& [variant, count] : report["conv_variants"].items())
      convLayers += count.get<int>();
    std::cout << fmt::format("convolution variants ({} layers):\n", convLayers);
    for (const auto& [variant, count] : report["conv_variants"].items())
      std::cout << fmt::format("  {:<24} {:>6}\n", variant, count.get<int>());
  }
  if (report.contains("int8_layers")) {
    const auto& bf16 = report["bf16_layers"];
    std::cout << fmt::format(
        "--quantize: {} layers int8, {}{} float{}\n", report["int8_layers"].size(),
        bf16.empty() ? "" : fmt::format("{} bf16, ", bf16.size()), report["float_layers"].size(),
        report["float_layers"].empty() && bf16.empty() ? "" : ":");
    for (const char* precision : {"bf16", "float"})
      for (const auto& name : report[fmt::format("{}_layers", precision)])
        std::cout << fmt::format("  {} ({})\n", name.get<std::string>(), precision);
  }
  if (report.contains("narrow_weights")) {
    const auto& narrow = report["narrow_weights"];
    std::cout << fmt::format(
        "{} weights (MatMulNarrow): {} products, {} bytes as float -> {} bytes\n",
        narrow["format"].get<std::string>(), narrow["products"].get<int>(),
        narrow["float_bytes"].get<int64_t>(), narrow["bytes"].get<int64_t>());
    if (narrow.value("convolutions", 0) > 0)
      std::cout << fmt::format(
          "{} weights (Conv, PackedBf16): {} convolutions, {} bytes as float -> {} bytes\n",
          narrow["format"].get<std::string>(), narrow["convolutions"].get<int>(),
          narrow["conv_float_bytes"].get<int64_t>(), narrow["conv_bytes"].get<int64_t>());
  }
  if (report.contains("dims")) {
    std::cout << fmt::format("variable dimensions (--dim; {} kernels follow them):\n",
                             report["kernels_following_dims"].get<int>());
    for (const auto& d : report["dims"])
      std::cout << fmt::format("  {:<24} {}..{}{}\n", d["name"].get<std::string>(),
                               d["min"].get<int64_t>(), d["max"].get<int64_t>(),
                               d["multiple"].get<int64_t>() > 1
                                   ? fmt::format(" (multiples of {})", d["multiple"].get<int64_t>())
                                   : "");
  }
  printCaches(report);
  if (report.contains("specializations")) {
    std::cout << "specialised paths (--specialize; code run() takes at these sizes; a bucket "
                 "padded: static code at its bound on padded inputs):\n";
    for (const auto& spec : report["specializations"]) {
      std::vector<std::string> sizes;
      for (const auto& [name, size] : spec["sizes"].items())
        sizes.push_back(size.is_object()
                            ? fmt::format("{}={}..{}{}", name, size["min"].get<int64_t>(),
                                          size["max"].get<int64_t>(),
                                          size["padded"].get<bool>() ? " padded" : "")
                            : fmt::format("{}={}", name, size.get<int64_t>()));
      std::cout << fmt::format("  {:<24} {} kernels, arena {} bytes\n",
                               fmt::format("{}", fmt::join(sizes, " ")), spec["kernels"].get<int>(),
                               spec["arena_bytes"].get<int64_t>());
    }
  }
  if (report.contains("profile_variants")) {
    // The profile names only the layers whose measured variant is not the
    // default; the counts above hold every layer.
    std::cout << fmt::format(
        "variants from the profile ({} of {} layers; the others run the "
        "default):\n",
        report["profile_variants"].size(), convLayers);
    for (const auto& [node, variant] : report["profile_variants"].items())
      std::cout << fmt::format("  {:<24} {}\n", node, variant.get<std::string>());
  }
  if (report.contains("profile_float_layers"))
    std::cout << fmt::format(
        "float from the profile (cgc tune measured them faster than "
        "narrow): {}\n",
        fmt::join(report["profile_float_layers"], ", "));
  std::cout << fmt::format(
      "arena: {} bytes with reuse, {} bytes without ({} ops in place)\nweights: {} bytes\n",
      report["arena_bytes"].get<int64_t>(), report["arena_bytes_no_reuse"].get<int64_t>(),
      report["in_place_ops"].get<int>(), report["weight_bytes"].get<int64_t>());
  if (report.contains("float_arena_bytes")) {
    const double arena = report["arena_bytes"].get<double>(),
                 floatArena = report["float_arena_bytes"].get<double>(),
                 weights = report["weight_bytes"].get<double>(),
                 floatWeights = report["float_weight_bytes"].get<double>();
    std::cout << fmt::format(
        "as float32 (int8 tensors at 4 bytes): arena {} bytes ({:.2f}x int8), weights {} bytes "
        "({:.2f}x int8)\n",
        report["float_arena_bytes"].get<int64_t>(), floatArena / std::max(arena, 1.0),
        report["float_weight_bytes"].get<int64_t>(), floatWeights / std::max(weights, 1.0));
  }
}

void printText(const nlohmann::json& report) {
  printSource(report);
  if (report.contains("error")) {
    std::cout << "does not compile: " << report["error"].get<std::string>() << "\n";
    std::cout << "try: " << report["hint"].get<std::string>() << "\n";
    return;
  }
  printCompiled(report);
}

/// Ops as Markdown lines, one per initial: "- **A**: `Abs`, `Acos`"; a
/// note after an op's name in `notes`.
std::string byInitial(const std::vector<std::string>& names,
                      const std::map<std::string, std::string>& notes = {}) {
  std::map<char, std::vector<std::string>> groups;
  for (const auto& name : names) {
    const auto note = notes.find(name);
    groups[name[0]].push_back("`" + name + "`" + (note == notes.end() ? "" : " " + note->second));
  }
  std::string text;
  for (const auto& [initial, group] : groups)
    text += fmt::format("- **{}**: {}\n", initial, fmt::join(group, ", "));
  return text;
}

}  // namespace

int printSupportedOps() {
  const frontend::SupportedOps ops = frontend::supportedOps();
  std::vector<std::string> functions;
  std::map<std::string, std::string> since;
  for (const auto& [op, version] : ops.functions) {
    functions.push_back(op);
    if (version > 1) since[op] = fmt::format("(opset {}+)", version);
  }
  std::cout << fmt::format(
      R"(# Supported ONNX ops

<!-- Generated from the frontend's tables by `cgc inspect --ops`; do not edit.
     Regenerate with `build/cgc inspect --ops > docs/OPS.md` (the ops_doc test
     checks that this file is the output). -->

The ops of ONNX's default domain (`ai.onnx`) that cgc compiles. An op listed
here can still be refused in a form that has no kernel (an element type, an
attribute value): the error names the node. Ops of other domains
(`ai.onnx.ml`, custom domains) are not supported; the `com.microsoft` ops of
a model that ONNX Runtime saved after optimising it (`com.microsoft.nchwc.Conv`,
`FusedMatMul`, ...) are ONNX Runtime's internal ops: compile the original
model. `cgc inspect MODEL` lists a model's ops and those cgc lacks.

## Imported op by op ({})

{}
## Control flow ({})

{}
An `If` whose condition is known at compile time becomes the branch it
takes; otherwise only the taken branch runs. `Loop` and `Scan` run their
bodies, compiled once.

## Sequences and optionals, computed at compile time ({})

{}
Their lengths and presence must be known when compiling (README, "Using cgc").

## Through the function body ONNX defines ({})

Compiled as the ops of their body (supported where those ops are), from the
first opset whose schema has one.

{})",
      ops.imported.size(), byInitial(ops.imported), ops.controlFlow.size(),
      byInitial(ops.controlFlow), ops.compileTime.size(), byInitial(ops.compileTime),
      functions.size(), byInitial(functions, since));
  return 0;
}

nlohmann::json inspectReport(const driver::CompileOptions& options) {
  const frontend::ModelSummary summary = frontend::summarizeModel(options.modelPath);
  nlohmann::json report = {{"model", options.modelPath},
                           {"opset", summary.opset},
                           {"nodes", summary.nodes},
                           {"subgraph_nodes", summary.subgraphNodes},
                           {"ops", summary.opCounts}};
  for (const auto& [side, tensors] :
       {std::pair{"inputs", &summary.inputs}, std::pair{"outputs", &summary.outputs}}) {
    report[side] = nlohmann::json::array();
    for (const auto& t : *tensors) report[side].push_back({{"name", t.name}, {"type", t.type}});
  }
  for (const auto& file : summary.externalData)
    report["external_data"].push_back(
        {{"file", file.location}, {"tensors", file.tensors}, {"bytes", file.bytes}});
  if (!summary.unsupported.empty()) {
    nlohmann::json ops = nlohmann::json::object();
    for (const auto& u : summary.unsupported) {
      auto& entry = ops[u.domain.empty() ? u.op : u.domain + "." + u.op];
      if (entry.is_null())
        entry = {{"count", 0},
                 {"first_nodes", nlohmann::json::array()},
                 {"onnxruntime_internal", frontend::isOnnxRuntimeDomain(u.domain)}};
      entry["count"] = entry["count"].get<int>() + 1;
      if (entry["first_nodes"].size() < 3) entry["first_nodes"].push_back(u.node);
    }
    report["unsupported_ops"] = ops;
  }
  try {
    // A library for several targets: its best build's plan.
    const driver::CompileOptions compiled =
        driver::namesSeveralTargets(options) ? driver::firstTargetOptions(options) : options;
    const auto model = driver::compileModel(compiled);
    reportNames(options, &model, report);
    report["kernels"] = model.kernelCounts();
    report["subgraphs"] = model.numSubgraphs();
    report["arena_bytes"] = model.plan.arenaBytes;
    report["arena_bytes_no_reuse"] = model.plan.bytesWithoutReuse;
    report["weight_bytes"] = model.weightBytes();
    report["in_place_ops"] = model.plan.inPlaceNodes;
    reportVariants(model, options.profilePath, report);
    reportPrecision(model, report);
    if (const auto format = driver::narrowedFormat(compiled)) {
      const driver::NarrowReport narrow = driver::narrowReport(model.graph);
      report["narrow_weights"] = {{"format", format == rt::WeightFormat::kBf16 ? "bf16" : "int8"},
                                  {"products", narrow.products},
                                  {"float_bytes", narrow.floatBytes},
                                  {"bytes", narrow.narrowBytes},
                                  {"convolutions", narrow.convolutions},
                                  {"conv_float_bytes", narrow.convFloatBytes},
                                  {"conv_bytes", narrow.convNarrowBytes}};
    }
    if (model.dims) {
      for (const auto& d : model.dims->dims)
        report["dims"].push_back(
            {{"name", d.name}, {"min", d.min}, {"max", d.max}, {"multiple", d.multiple}});
      report["kernels_following_dims"] = model.kernelsFollowingDims();
      reportCaches(model, compiled.cacheInPlace, report);
      for (const driver::CompiledModel& spec : model.specializations) {
        nlohmann::json sizes = nlohmann::json::object();
        for (size_t j = 0; j < spec.specializedAt.size(); ++j)
          if (spec.specializedAt[j] < 0)
            continue;
          else if (spec.specializedAt[j] == spec.specializedMax[j])
            sizes[model.dims->dims[j].name] = spec.specializedAt[j];
          else
            sizes[model.dims->dims[j].name] = {{"min", spec.specializedAt[j]},
                                               {"max", spec.specializedMax[j]},
                                               {"padded", static_cast<bool>(spec.padded[j])}};
        int kernels = 0;
        for (const auto& [op, count] : spec.kernelCounts()) kernels += count;
        report["specializations"].push_back(
            {{"sizes", sizes}, {"kernels", kernels}, {"arena_bytes", spec.plan.arenaBytes}});
      }
    }
    int64_t floatArena = 0, floatWeights = 0;
    if (floatEquivalent(model, floatArena, floatWeights)) {
      report["float_arena_bytes"] = floatArena;
      report["float_weight_bytes"] = floatWeights;
    }
  } catch (const CompileError& e) {
    report["error"] = e.what();
    report["hint"] = hintFor(e.what(), summary, options.load.spelling);
    reportNames(options, nullptr, report);
  }
  return report;
}

int inspect(const driver::CompileOptions& options, bool json) {
  const nlohmann::json report = inspectReport(options);
  if (json)
    std::cout << report.dump(2) << std::endl;
  else
    printText(report);
  return report.contains("error") ? 1 : 0;
}

}  // namespace cgc::commands
