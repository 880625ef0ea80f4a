// See variable_dims.h.
#include "pipeline/variable_dims.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include "codegen/params_printer.h"
#include "ir/conventions.h"
#include "onnx_frontend/onnx_loader.h"
#include "pipeline/dim_samples.h"
#include "pipeline/size_forms.h"
#include "pipeline/specializations.h"

namespace cgc::driver {
namespace {

/// What a node compiled to: its kernel, operands and every parameter but
/// the integers (`signature`), and the integers.
struct Lowered {
  std::string signature;
  std::vector<std::string> places;
  std::vector<int64_t> ints;
};

Lowered loweredOf(const ir::Graph& g, const lowering::KernelCall& call) {
  Lowered out;
  std::vector<std::string> parts = {lowering::kernelFunction(call), dtypeName(call.dtype)};
  for (const auto* values : {&call.inputs, &call.outputs})
    for (int v : *values) parts.push_back(v >= 0 ? g.value(v).name : "-");
  for (const codegen::ParamLeaf& leaf : codegen::paramLeaves(call)) {
    if (leaf.integer) {
      out.places.push_back(leaf.place);
      out.ints.push_back(*leaf.integer);
      parts.push_back(leaf.place);
    } else {
      parts.push_back(leaf.place + "=" + leaf.text);
    }
  }
  out.signature = fmt::format("{}", fmt::join(parts, " "));
  return out;
}

/// "params.variant is kDirect, not kWinograd": the first part where two
/// signatures differ.
std::string firstDifference(const std::string& at, const std::string& bounds) {
  auto split = [](const std::string& text) {
    std::vector<std::string> parts;
    for (size_t start = 0, end; start <= text.size(); start = end + 1) {
      end = std::min(text.find(' ', start), text.size());
      parts.push_back(text.substr(start, end - start));
    }
    return parts;
  };
  const auto a = split(at), b = split(bounds);
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i]) return fmt::format("it has {} where it has {} at the bounds", a[i], b[i]);
  return "its parameters are other ones";
}

/// One compile of the model (or of a control-flow body in it) at fixed
/// sizes.
struct Sample {
  Sizes sizes;
  CompiledModel model;
  std::map<std::string, int> nodes, values;  // by name

  /// Its nodes and values by name, of `graph` (the reference's, where it
  /// stands for the reference).
  void index(const ir::Graph& graph) {
    for (int id : graph.liveNodes()) nodes[graph.node(id).name] = id;
    for (int v = 0; v < graph.numValues(); ++v) values[graph.value(v).name] = v;
  }
};

/// Each large constant of `s` that holds the bytes of the bounds' constant
/// of its name (a weight, packed or not) shares them: the samples kept for
/// the fit then hold little besides the bounds' weights.
void shareWeights(Sample& s, const Sample& bounds) {
  ir::Graph& g = s.model.graph;
  for (int v = 0; v < g.numValues(); ++v) {
    ir::Value& value = g.value(v);
    if (!value.isConstant() || !value.data || value.data->size() < 4096) continue;
    const auto it = bounds.values.find(value.name);
    if (it == bounds.values.end()) continue;
    const auto& other = bounds.model.graph.value(it->second).data;
    if (other && other != value.data && *other == *value.data) value.data = other;
  }
}

/// `bounds`: the compile at the bounds, whose convolution variants the
/// others take (pack-conv-weights chooses by size).
Sample compileAt(const CompileOptions& options, const std::vector<Dim>& dims, const Sizes& sizes,
                 const Sample* bounds) {
  CompileOptions at = options;
  at.dims.clear();
  at.specialize.clear();
  at.quiet = options.quiet || bounds;
  if (bounds) {
    // The bounds' executors and variants; a profile measured the bounds' graph.
    at.executors = bounds->model.schedule.executors;
    at.threadsPerExecutor = bounds->model.schedule.fixedThreads();
    at.profilePath.clear();
    for (const passes::CachePair& pair : bounds->model.caches.pairs)
      at.overrides.cacheCapacities[bounds->model.graph.value(pair.input).name] = pair.capacity;
    for (int id : bounds->model.graph.liveNodes())
      if (const ir::Node& node = bounds->model.graph.node(id); ir::conventions::hasConvChoice(node))
        at.overrides.convVariants[node.name] = ir::conventions::convChoice(node);
  }
  // fuse-matmuls groups products by the size of their fused output, which
  // would group differently at each size.
  at.disabledPasses.push_back("fuse-matmuls");
  for (size_t j = 0; j < dims.size(); ++j) at.load.dims[dims[j].name] = sizes[j];
  Sample s{sizes, {}, {}, {}};
  try {
    s.model = compileGraph(at);
  } catch (const CompileError& e) {
    if (!bounds) throw;
    throw notEverySize(e, dims, sizes);
  }
  s.index(s.model.graph);
  if (bounds) shareWeights(s, *bounds);
  return s;
}

/// What the probes before the bounds found (variantsAt).
struct Probes {
  /// The float convolutions' variants (ir::conventions::convChoice), by
  /// node, for the bounds' compile to pack too.
  std::map<std::string, std::vector<std::string>> variants;
  size_t compiles = 0;
  /// The last probe's compile, for the caller to free after the bounds':
  /// its memory, below the bounds' in the heap, then serves the grid's
  /// compiles, where freed before it the allocator would return it to the
  /// system and the grid's compiles would fault in fresh pages.
  Sample last;
};

/// The variants the model's float convolutions take at `sizes`, for the
/// bounds' compile to pack too (pack-conv-weights leaves out a layer's
/// own): the general code picks one per call on its extents. Compiled
/// before the bounds, so that those are compiled once; a size the model
/// does not compile at adds nothing (the fit names it), and a compile
/// without float convolutions (an int8 model) ends the probing.
Probes variantsAt(const CompileOptions& options, const std::vector<Sizes>& sizes) {
  Probes out;
  CompileOptions quiet = options;
  quiet.quiet = true;
  for (const Sizes& at : sizes) {
    Sample s;
    try {
      ++out.compiles;
      s = compileAt(quiet, options.dims, at, nullptr);
    } catch (const CompileError&) {
      continue;
    }
    const ir::Graph& g = s.model.graph;
    bool any = false;
    for (int id : g.liveNodes()) {
      const ir::Node& node = g.node(id);
      if (!node.has(ir::conventions::kConvVariant)) continue;
      any = true;
      const std::string choice = ir::conventions::convChoice(node);
      std::vector<std::string>& list = out.variants[node.name];
      if (!std::count(list.begin(), list.end(), choice)) list.push_back(choice);
    }
    out.last = std::move(s);
    if (!any) break;
  }
  return out;
}

/// Whether the model has convolutions, which may run other variants at
/// other sizes (variantsAt).
bool hasConvolutions(const frontend::ModelSummary& summary) {
  return std::any_of(summary.opCounts.begin(), summary.opCounts.end(),
                     [](const auto& op) { return op.first.find("Conv") != std::string::npos; });
}

/// The symbolic dimensions --dim names must be those of the model's
/// inputs, every other one bound by --shape; --observe (the general
/// code's tensors) does not combine with --specialize. The model's summary.
const frontend::ModelSummary& checkAgainstModel(const CompileOptions& options) {
  CGC_ASSERT(options.overrides.model, "a --dim compile imports the model compileModel read");
  const frontend::ModelSummary& summary = options.overrides.model->summary();
  const DiagLocation file{options.modelPath, "", ""};
  std::set<std::string> symbols, shaped;
  for (const auto& [name, shape] : options.load.shapes) shaped.insert(name);
  for (const frontend::DeclaredTensor& t : summary.inputs)
    for (const std::string& s : t.symbols)
      if (!s.empty()) symbols.insert(s);
  for (const Dim& d : options.dims) {
    if (!symbols.count(d.name))
      userError(file, "--dim names '{}', which is no symbolic dimension of the model's inputs ({})",
                d.name,
                symbols.empty() ? "it has none" : fmt::format("{}", fmt::join(symbols, ", ")));
  }
  for (const frontend::DeclaredTensor& t : summary.inputs) {
    if (shaped.count(t.name)) {
      for (const Dim& d : options.dims)
        if (std::count(t.symbols.begin(), t.symbols.end(), d.name))
          userError(file, "--shape {} binds dimension '{}', which --dim makes variable", t.name,
                    d.name);
      continue;
    }
    for (size_t a = 0; a < t.dims.size(); ++a) {
      if (t.dims[a] >= 0) continue;
      const std::string& s = t.symbols[a];
      const bool ranged = std::any_of(options.dims.begin(), options.dims.end(),
                                      [&](const Dim& d) { return d.name == s; });
      if (ranged || options.load.dims.count(s)) continue;
      if (s.empty())
        userError(file, "input '{}' axis {} has no size: give its shape with --shape {}=...",
                  t.name, a, t.name);
      userError(file,
                "symbolic dimension '{}' (input '{}') is not bound: give its range with --dim "
                "{}=MIN..MAX, or its size with --shape",
                s, t.name, s);
    }
  }
  if (options.cacheInPlace && !options.specialize.empty())
    userError(file,
              "--cache-in-place keeps the caches in the general code's layout; it does not "
              "combine with --specialize");
  if (options.observe && !options.specialize.empty())
    userError(file,
              "--observe shows the profiler the general code's tensors; it does not combine "
              "with --specialize");
  return summary;
}

/// Fits each integer of `values` (one vector per grid point) that changes
/// over the grid; nullopt where no polynomial fits.
std::vector<std::optional<ir::DimPoly>> fit(const std::vector<Sizes>& grid,
                                            const std::vector<std::vector<int64_t>>& values) {
  std::vector<std::optional<ir::DimPoly>> out;
  for (size_t i = 0; i < values.front().size(); ++i) {
    std::vector<int64_t> series;
    for (const auto& v : values) series.push_back(v[i]);
    if (std::all_of(series.begin(), series.end(), [&](int64_t x) { return x == series[0]; }))
      out.push_back(ir::DimPoly::constant(series[0]));
    else
      out.push_back(ir::DimPoly::interpolate(grid, series));
  }
  return out;
}

/// The sizes a fit may compile at besides the grid and the checks, where
/// forms that fit alike differ (derive).
constexpr size_t kMaxAddedSizes = 4;

class Fitter {
 public:
  /// `grid`: the samples at the grid's points, the bounds last; the bounds'
  /// model is the reference, which run() takes (the grid's last then
  /// stands for it).
  Fitter(const CompileOptions& options, std::vector<Sample> grid, std::vector<Sample> checks,
         std::vector<Sizes> gridSizes)
      : options_(options),
        grid_(std::move(grid)),
        checks_(std::move(checks)),
        gridSizes_(std::move(gridSizes)),
        givenChecks_(checks_.size()) {}

  /// The reference (the bounds: the grid's last point) with what follows
  /// the dimensions.
  CompiledModel run() {
    CompiledModel model = std::move(grid_.back().model);
    grid_.back().model = CompiledModel{};
    firstSlot_ = model.graph.newSizeSlots(static_cast<int>(options_.dims.size()));
    for (;;) {
      try {
        fitLevel(model, /*top=*/true);
        return model;
      } catch (const MoreSizes& more) {  // compiled as the checks, the grid's last the bounds
        grid_.back().model = std::move(model);
        checks_.push_back(compileAt(options_, options_.dims, more.sizes, &grid_.back()));
        model = std::move(grid_.back().model);
        grid_.back().model = CompiledModel{};
      }
    }
  }

  /// The sizes compiled at besides those the Fitter was given.
  size_t added() const { return checks_.size() - givenChecks_; }

 private:
  /// Fits one level (the top, or a control-flow body) of `model`, the
  /// reference at that level: its nodes, then its bodies, each against the
  /// samples' compiles of it.
  void fitLevel(CompiledModel& model, bool top) {
    reference_ = &model;
    auto dims = std::make_shared<codegen::VariableDims>();
    dims->dims = options_.dims;
    dims->firstSlot = firstSlot_;
    dims_ = dims.get();
    axes_.clear();
    const ir::Graph& g = model.graph;
    std::set<int> copying;
    for (int id : g.liveNodes()) {
      fitNode(g, id, *dims);
      if (model.plan.copiesNothing(id) && varies(g.node(id).outputs[0])) copying.insert(id);
    }
    if (top) {
      for (int v : g.inputs) dims->inputShapes.push_back(fitShape(v));
      for (int v : g.outputs) dims->outputShapes.push_back(fitShape(v));
      checkDenseOutputs(g);
    }
    // What codegen reads besides the kernels' parameters: data-dependent
    // bounds and the operands a control-flow node copies.
    for (int v = 0; v < g.numValues(); ++v)
      if (readByCodegen(g, v) && varies(v)) dims->valueShapes[v] = fitShape(v);
    fitTripCounts(g, *dims);
    checkValues(g, *dims);
    const bool scratchGrew = fitBodies(model);
    if (!copying.empty() || scratchGrew) {
      model.plan = passes::planMemory(g, model.calls, model.schedule, copying);
      passes::verifyMemoryPlan(g, model.calls, model.schedule, model.plan);
    }
    model.dims = dims;
  }

  /// Each body of each control-flow node, fitted by a Fitter of its own
  /// over the samples' compiles of it; whether a body's arena grew (a
  /// Concat that now copies), which the node's scratch then takes.
  bool fitBodies(CompiledModel& model) {
    bool anyGrew = false;
    for (auto& entry : model.subgraphs) {
      std::vector<CompiledModel>& bodies = entry.second;
      const std::string& name = model.graph.node(entry.first).name;
      int64_t scratch = 0;
      bool grew = false;
      for (size_t k = 0; k < bodies.size(); ++k) {
        if (bodies[k].graph.liveNodes().empty()) continue;  // a branch that failed to import
        Fitter body(options_, bodySamples(grid_, name, k, bodies[k]),
                    bodySamples(checks_, name, k, bodies[k]), gridSizes_);
        body.firstSlot_ = firstSlot_;
        body.isBody_ = true;
        const int64_t before = bodies[k].plan.arenaBytes;
        body.fitLevel(bodies[k], /*top=*/false);
        grew |= bodies[k].plan.arenaBytes > before;
        scratch = std::max(scratch, bodies[k].plan.arenaBytes);
      }
      if (grew) model.calls.setScratch(entry.first, scratch);
      anyGrew |= grew;
    }
    return anyGrew;
  }

  /// Body k of node `name` in each of `samples` (grid_ or checks_), taken
  /// from them; the bounds' stands for `reference`. A check where the node
  /// is not there is no check (fitNode: no grid point lacks it).
  std::vector<Sample> bodySamples(std::vector<Sample>& samples, const std::string& name, size_t k,
                                  const CompiledModel& reference) const {
    std::vector<Sample> out;
    for (Sample& s : samples) {
      const auto it = s.nodes.find(name);
      if (&s == &grid_.back()) {
        out.push_back(Sample{s.sizes, {}, {}, {}});
        out.back().index(reference.graph);
      } else if (it != s.nodes.end()) {
        out.push_back(Sample{s.sizes, std::move(s.model.subgraphs.at(it->second).at(k)), {}, {}});
        out.back().index(out.back().model.graph);
      }
    }
    return out;
  }

  /// Whether codegen reads the size of value v itself: a data-dependent
  /// value (its tail), or an operand a control-flow node copies (of the
  /// node, or at a body's level the body's inputs and outputs).
  bool readByCodegen(const ir::Graph& g, int v) const {
    if (!g.value(v).dynamic.empty()) return true;
    if (options_.observe && !isBody_ && g.value(v).type.dtype == DType::kF32) return true;
    if (isBody_ && (g.isGraphOutput(v) || std::count(g.inputs.begin(), g.inputs.end(), v)))
      return true;
    const int producer = g.value(v).producer;
    if (producer >= 0 && !g.node(producer).subgraphs.empty()) return true;
    const std::vector<int> readers = g.consumers(v);
    return std::any_of(readers.begin(), readers.end(),
                       [&](int id) { return !g.node(id).subgraphs.empty(); });
  }

  /// A Loop's trip count that cgc computed from the sizes (a Shape and a
  /// Gather of seq, folded): a polynomial in them, which the generated
  /// loop computes (VariableDims::scalars).
  void fitTripCounts(const ir::Graph& g, codegen::VariableDims& dims) const {
    for (int id : g.liveNodes()) {
      const ir::Node& node = g.node(id);
      if (node.op != "Loop" || node.inputs.empty() || node.inputs[0] < 0) continue;
      const ir::Value& count = g.value(node.inputs[0]);
      if (!count.isConstant() || !count.data || count.type.numElements() != 1) continue;
      // The count at a sample, where it is a constant there too.
      const auto at = [&](const Sample& s) -> std::optional<int64_t> {
        if (&s == &grid_.back()) return count.intValues().front();
        const auto it = s.values.find(count.name);
        if (it == s.values.end()) return std::nullopt;
        const ir::Value& value = s.model.graph.value(it->second);
        if (!value.isConstant() || !value.data) return std::nullopt;
        return value.intValues().front();
      };
      std::vector<std::vector<int64_t>> series;
      for (const Sample& s : grid_)
        if (const auto value = at(s)) series.push_back({*value});
      if (series.size() != grid_.size()) continue;  // checkValues names it
      const auto poly = fit(gridSizes_, series).front();
      const bool holds = poly && std::all_of(checks_.begin(), checks_.end(), [&](const Sample& s) {
                           const auto value = at(s);
                           return !value || *value == poly->at(s.sizes);
                         });
      if (holds && !poly->isConstant()) dims.scalars[node.inputs[0]] = *poly;
    }
  }

  /// A --dim model's outputs are read densely at their actual shape:
  /// one of data-dependent size along an inner axis is moved so after the
  /// node that completes it, which no other node may read then.
  void checkDenseOutputs(const ir::Graph& g) const {
    for (int v : g.outputs)
      if (!g.value(v).dynamic.empty() && g.value(v).dynamic.dims.back() > 0 &&
          !g.consumers(v).empty())
        userError(g.where(g.node(g.consumers(v)[0])),
                  "reads '{}', an output of data-dependent size along axis {}, which a --dim "
                  "model returns densely at its actual shape: cgc cannot run this yet; bind "
                  "the dimensions with --shape",
                  g.value(v).name, g.value(v).dynamic.dims.back());
  }

  const ir::Graph& graphOf(const Sample& s) const {
    return &s == &grid_.back() ? reference_->graph : s.model.graph;
  }
  const lowering::KernelCalls& callsOf(const Sample& s) const {
    return &s == &grid_.back() ? reference_->calls : s.model.calls;
  }

  /// The node at sample `s`, compiled as at the bounds; nullopt (with a
  /// reason) where it differs.
  std::optional<Lowered> at(const Sample& s, const std::string& name, const Lowered& reference,
                            std::string* why) const {
    const auto it = s.nodes.find(name);
    if (it == s.nodes.end()) {
      *why = "it is not there (the graph is simplified otherwise)";
      return std::nullopt;
    }
    Lowered l = loweredOf(graphOf(s), callsOf(s).of(it->second));
    if (l.signature != reference.signature) {
      *why = firstDifference(l.signature, reference.signature);
      return std::nullopt;
    }
    return l;
  }

  void fitNode(const ir::Graph& g, int id, codegen::VariableDims& dims) {
    const ir::Node& node = g.node(id);
    const Lowered reference = loweredOf(g, reference_->calls.of(id));
    std::vector<std::vector<int64_t>> values;
    for (const Sample& s : grid_) {
      std::string why;
      const auto l = at(s, node.name, reference, &why);
      if (!l)
        userError(g.where(node),
                  "compiles differently at {} than at the bounds of --dim ({}): {}; cgc cannot run "
                  "it at every size yet: bind the dimension with --shape",
                  describeSizes(options_.dims, s.sizes),
                  describeSizes(options_.dims, grid_.back().sizes), why);
      values.push_back(l->ints);
    }
    const auto polys = fit(gridSizes_, values);
    for (size_t i = 0; i < polys.size(); ++i) {
      std::optional<ir::DimPoly> poly = polys[i];
      if (!poly || !checked(node, reference, i, *poly)) poly = deriveLeaf(node, reference, i);
      if (!poly)
        userError(g.where(node),
                  "its parameter {} does not follow the sizes of --dim as a polynomial or a "
                  "division of them cgc can tell from its samples (sizes of a multiple, --dim "
                  "NAME=MIN..MAX:MULTIPLE, may), so cgc cannot run it at every size: bind the "
                  "dimension with --shape",
                  reference.places[i]);
      if (!poly->isConstant()) dims.params[id].emplace_back(reference.places[i], *poly);
    }
  }

  /// Every sample: the grid's points, then the checks.
  std::vector<const Sample*> samples() const {
    std::vector<const Sample*> out;
    for (const auto* list : {&grid_, &checks_})
      for (const Sample& s : *list) out.push_back(&s);
    return out;
  }

  /// `poly`'s value at each sample.
  Series seriesOf(const ir::DimPoly& poly) const {
    Series out;
    for (const Sample* s : samples()) out.push_back(poly.at(dims_->variableValues(s->sizes)));
    return out;
  }

  /// The variable dimensions and the non-constant extents of `values`, as
  /// the sizes a quantity of their node may be made of.
  std::vector<SizeCandidate> candidatesOf(const std::vector<int>& values) {
    std::vector<SizeCandidate> out;
    for (size_t j = 0; j < options_.dims.size(); ++j) {
      const auto d = ir::DimPoly::variable(static_cast<int>(j));
      out.push_back({d, seriesOf(d)});
    }
    for (int v : values)
      for (size_t a = 0; v >= 0 && a < reference_->graph.value(v).type.shape.size(); ++a)
        if (const auto e = axisOf(v, a); e && !e->isConstant()) out.push_back({*e, seriesOf(*e)});
    return out;
  }

  /// Thrown where forms fit alike that sizes not compiled at tell apart:
  /// run() compiles the model there and fits the top level again.
  struct MoreSizes {
    Sizes sizes;
  };

  /// What gives `series` from `candidates` (size_forms.h): a polynomial,
  /// or a new derived size; nothing in a body (its code reads the
  /// dimensions alone).
  std::optional<ir::DimPoly> derive(const Series& series,
                                    const std::vector<SizeCandidate>& candidates) {
    if (isBody_) return std::nullopt;
    std::vector<SizeForm> forms = explainSize(series, candidates);
    if (forms.size() > 1) {
      std::vector<Sizes> taken;
      for (const Sample* s : samples()) taken.push_back(s->sizes);
      FormsTold told = tellForms(forms, *dims_, taken);
      if (told.agree)
        forms.resize(1);
      else if (told.sizes && added() < kMaxAddedSizes)
        throw MoreSizes{*std::move(told.sizes)};
    }
    if (forms.size() != 1) return std::nullopt;
    const SizeForm& form = forms.front();
    if (form.poly) return form.poly;
    auto& derived = dims_->derived;
    auto it = std::find(derived.begin(), derived.end(), *form.derived);
    if (it == derived.end()) it = derived.insert(derived.end(), *form.derived);
    return ir::DimPoly::variable(static_cast<int>(options_.dims.size() + (it - derived.begin())));
  }

  /// Integer i of the node's parameters as a size derived from its
  /// operands' extents.
  std::optional<ir::DimPoly> deriveLeaf(const ir::Node& node, const Lowered& reference, size_t i) {
    Series series;
    for (const Sample* s : samples()) {
      std::string why;
      const auto l = at(*s, node.name, reference, &why);
      series.push_back(l ? std::optional<int64_t>(l->ints[i]) : std::nullopt);
    }
    std::vector<int> operands = node.inputs;
    operands.insert(operands.end(), node.outputs.begin(), node.outputs.end());
    return derive(series, candidatesOf(operands));
  }

  /// Axis a of value v (the reference's) at every size: a polynomial in
  /// the dimensions, else a size derived from its producer's operands'
  /// extents; nothing when neither.
  std::optional<ir::DimPoly> axisOf(int v, size_t a) {
    const auto key = std::make_pair(v, a);
    if (const auto it = axes_.find(key); it != axes_.end()) return it->second;
    const ir::Value& value = reference_->graph.value(v);
    Series series;
    for (const Sample* s : samples()) {
      const auto it = s->values.find(value.name);
      series.push_back(it == s->values.end()
                           ? std::nullopt
                           : std::optional<int64_t>(graphOf(*s).value(it->second).type.shape[a]));
    }
    std::optional<ir::DimPoly> poly;
    if (std::all_of(series.begin(), series.begin() + static_cast<std::ptrdiff_t>(grid_.size()),
                    [](const auto& x) { return x.has_value(); })) {
      std::vector<std::vector<int64_t>> values;
      for (size_t k = 0; k < grid_.size(); ++k) values.push_back({*series[k]});
      poly = fit(gridSizes_, values).front();
      const Series at = poly ? seriesOf(*poly) : Series{};
      for (size_t k = 0; poly && k < series.size(); ++k)  // and at the checks
        if (series[k] && at[k] != series[k]) poly.reset();
    }
    axes_[key] = std::nullopt;  // while its producer's operands are fitted
    if (!poly && value.producer >= 0)
      poly = derive(series, candidatesOf(reference_->graph.node(value.producer).inputs));
    return axes_[key] = poly;
  }

  /// Whether `poly` gives integer i of the node at every check where the
  /// node compiles as at the bounds.
  bool checked(const ir::Node& node, const Lowered& reference, size_t i,
               const ir::DimPoly& poly) const {
    for (const Sample& s : checks_) {
      std::string why;
      const auto l = at(s, node.name, reference, &why);
      if (l && poly.at(s.sizes) != l->ints[i]) return false;
    }
    return true;
  }

  bool varies(int v) const {
    const std::string& name = reference_->graph.value(v).name;
    return std::any_of(grid_.begin(), grid_.end() - 1, [&](const Sample& s) {
      auto it = s.values.find(name);
      return it == s.values.end() ||
             s.model.graph.value(it->second).type.shape != reference_->graph.value(v).type.shape;
    });
  }

  std::vector<ir::DimPoly> fitShape(int v) {
    const ir::Value& value = reference_->graph.value(v);
    std::vector<ir::DimPoly> out;
    for (size_t a = 0; a < value.type.shape.size(); ++a) {
      const auto poly = axisOf(v, a);
      if (!poly)
        userError(reference_->graph.where(), "the shape of '{}' does not follow --dim", value.name);
      out.push_back(*poly);
    }
    return out;
  }

  /// Every tensor must fit its buffer, planned at the bounds, at every
  /// size; a constant computed from the sizes (a Slice of positions folded
  /// at import) must hold at each size the first bytes of its value at the
  /// bounds, which the generated code holds.
  void checkValues(const ir::Graph& g, const codegen::VariableDims& dims) const {
    for (int v = 0; v < g.numValues(); ++v) {
      const ir::Value& value = g.value(v);
      if ((g.consumers(v).empty() && !g.isGraphOutput(v)) || dims.scalars.count(v)) continue;
      for (const Sample& s : grid_) {
        if (&s == &grid_.back()) continue;
        const auto it = s.values.find(value.name);
        const ir::Value* other = it == s.values.end() ? nullptr : &s.model.graph.value(it->second);
        if (other && other->type.bytes() > value.type.bytes())
          userError(g.where(), "'{}' is larger at {} ({}) than at the bounds of --dim ({})",
                    value.name, describeSizes(options_.dims, s.sizes), other->type.str(),
                    value.type.str());
        if (!value.isConstant() || !value.data) continue;
        const bool prefix =
            other && other->data && other->data->size() <= value.data->size() &&
            std::equal(other->data->begin(), other->data->end(), value.data->begin());
        if (!prefix)
          userError(g.consumers(v).empty() ? g.where() : g.where(g.node(g.consumers(v)[0])),
                    "reads the constant '{}', which cgc computed from the sizes of --dim and "
                    "which differs at {}: bind the dimension with --shape",
                    value.name, describeSizes(options_.dims, s.sizes));
      }
    }
  }

  const CompileOptions& options_;
  std::vector<Sample> grid_, checks_;
  std::vector<Sizes> gridSizes_;
  size_t givenChecks_ = 0;  // checks_ the Fitter was given; derive adds up to kMaxAddedSizes
  const CompiledModel* reference_ = nullptr;
  codegen::VariableDims* dims_ = nullptr;                              // of the level being fitted
  std::map<std::pair<int, size_t>, std::optional<ir::DimPoly>> axes_;  // axisOf's
  int firstSlot_ = 0;                                                  // the dimensions' size slots
  bool isBody_ = false;  // fitting a control-flow body
};

}  // namespace

CompiledModel compileWithVariableDims(const CompileOptions& options) {
  const frontend::ModelSummary& summary = checkAgainstModel(options);
  const auto start = std::chrono::steady_clock::now();
  const auto [gridSizes, checkSizes] = samplesOf(options.dims);
  const std::vector<Sizes> points = pointsOf(gridSizes);
  CompileOptions sized = options;
  sized.load.sizedValues = sizedValues(options, gridSizes);
  // Convolutions that other sizes run otherwise get those variants too.
  Probes probed;
  if (hasConvolutions(summary)) {
    std::vector<Sizes> sizes = variantProbes(options.dims, gridSizes, checkSizes);
    std::erase(sizes, points.back());
    probed = variantsAt(sized, sizes);
    sized.overrides.convAlternatives = std::move(probed.variants);
  }
  std::vector<Sample> grid, checks;
  // The bounds as the user asked (progress), the others quietly.
  grid.push_back(compileAt(sized, options.dims, points.back(), nullptr));
  probed.last = Sample{};
  for (size_t p = 0; p + 1 < points.size(); ++p)
    grid.insert(grid.end() - 1, compileAt(sized, options.dims, points[p], &grid.back()));
  for (const Sizes& sizes : checkSizes)
    checks.push_back(compileAt(sized, options.dims, sizes, &grid.back()));
  const size_t checked = checks.size();
  Fitter fitter(sized, std::move(grid), std::move(checks), gridSizes);
  CompiledModel model = fitter.run();
  progress(options, fmt::format("--dim: compiled at {} more sizes; {} kernels follow the "
                                "dimensions ({:.2f} s)",
                                probed.compiles + points.size() - 1 + checked + fitter.added(),
                                model.kernelsFollowingDims(), secondsSince(start)));
  compileSpecializations(options, model);
  return model;
}

}  // namespace cgc::driver
