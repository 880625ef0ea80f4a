// The generated run() and the tests that pick a --specialize path.
//
// A path runs where the dimensions have its sizes or lie in its buckets.
// A bucket that is static code at its bound (padding is neutral along the
// dimension: passes/padding_neutral.h) keeps inputs and outputs of its own:
// before the executors start, run() copies each input into the path's
// input, zero-filled to the bound along the bucket's dimensions, and after
// they finish copies each output's leading part to where the general code
// keeps it, so the accessors and output_shape() serve every path alike.
#include <fmt/ranges.h>

#include <algorithm>

#include "codegen/emit_parts.h"

namespace cgc::codegen {
namespace {

/// `dims`' variables (the dimensions, then the derived sizes) as
/// `names` in scope: each dimension `values[j]` (none: in scope already),
/// each derived size from the variables before it.
void emitVariables(CodeWriter& w, const VariableDims& dims, const std::vector<std::string>& names,
                   const std::vector<std::string>& values) {
  for (size_t j = 0; j < names.size(); ++j)
    if (j >= dims.dims.size() || !values.empty())
      w.line("[[maybe_unused]] const int64_t {} = {};", names[j],
             j < dims.dims.size() ? values[j] : dims.derived[j - dims.dims.size()].cpp(names));
}

/// "{dim_batch, 3, 224, 224}": a shape from the variables `names`.
std::string shapeOf(const std::vector<ir::DimPoly>& shape, const std::vector<std::string>& names) {
  std::vector<std::string> axes;
  for (const ir::DimPoly& axis : shape) axes.push_back(axis.cpp(names));
  return fmt::format("{{{}}}", fmt::join(axes, ", "));
}

/// One copy between the general code's tensor and a padded path's:
/// `from` to `to`, each at its shape, the rest of `to` zeroed.
void emitCopy(CodeWriter& w, const std::string& from, const std::string& fromShape,
              const std::string& to, const std::string& toShape, size_t rank,
              int64_t elementBytes) {
  if (rank == 0) {
    w.line("std::memcpy({}, {}, {});", to, from, elementBytes);
    return;
  }
  w.open("{{");
  w.line("const int64_t from_shape[] = {};", fromShape);
  w.line("const int64_t to_shape[] = {};", toShape);
  w.line("cgc::copy_padded({}, from_shape, {}, to_shape, {}, {});", from, to, rank, elementBytes);
  w.close();
}

/// run() of a padded path `g`: its inputs padded, the executors, its
/// outputs' leading part.
void emitPaddedRun(CodeWriter& w, const ModelLayout& layout, const GraphLayout& g) {
  const VariableDims& dims = *layout.model.dims;
  const ir::Graph& general = layout.model.graph;
  const ir::Graph& path = g.graph();
  const std::vector<std::string> names = dims.variableNames(dims.cppNames());
  std::vector<std::string> padded, paddedValues;
  for (const std::string& name : names) padded.push_back(name + "_padded");
  for (size_t j = 0; j < dims.dims.size(); ++j) {
    paddedValues.push_back(g.model->padded[j] ? std::to_string(g.model->specializedMax[j])
                                              : names[j]);
  }
  emitVariables(w, dims, names, {});
  emitVariables(w, dims, padded, paddedValues);
  w.line("unsigned char* const arena = runtime_.arena();");
  auto stored = [](const GraphLayout& graph, int v) {
    return !graph.valueNames[v].empty() && !graph.graph().value(v).isConstant();
  };
  for (size_t i = 0; i < path.inputs.size(); ++i) {
    const int from = general.inputs[i], to = path.inputs[i];
    if (!stored(layout.top(), from) || !stored(g, to)) continue;
    const ir::Value& value = general.value(from);
    emitCopy(w, layout.pointer(layout.top(), from), shapeOf(dims.inputShapes[i], names),
             layout.pointer(g, to), shapeOf(dims.inputShapes[i], padded), value.type.shape.size(),
             dtypeSize(value.type.dtype));
  }
  w.line("const cgc::Status status = runtime_.run(&{}::run_executor, this);", layout.className);
  w.line("if (!status.ok()) return status;");
  for (size_t i = 0; i < path.outputs.size(); ++i) {
    const int from = path.outputs[i], to = general.outputs[i];
    if (!stored(g, from) || !stored(layout.top(), to)) continue;
    const ir::Value& value = general.value(to);
    emitCopy(w, layout.pointer(g, from), shapeOf(dims.outputShapes[i], padded),
             layout.pointer(layout.top(), to), shapeOf(dims.outputShapes[i], names),
             value.type.shape.size(), dtypeSize(value.type.dtype));
  }
  w.line("return status;");
}

}  // namespace

std::string specializationTest(const GraphLayout& g, const std::vector<std::string>& names) {
  std::vector<std::string> tests;
  for (size_t j = 0; j < g.model->specializedAt.size(); ++j) {
    const int64_t least = g.model->specializedAt[j], largest = g.model->specializedMax[j];
    if (least < 0) continue;
    if (least == largest)
      tests.push_back(fmt::format("{} == {}", names[j], least));
    else
      tests.push_back(fmt::format("{} >= {} && {} <= {}", names[j], least, names[j], largest));
  }
  return fmt::format("{}", fmt::join(tests, " && "));
}

void emitRun(CodeWriter& w, const ModelLayout& layout) {
  const std::string& cls = layout.className;
  if (std::none_of(layout.graphs.begin(), layout.graphs.end(), [](const GraphLayout& g) {
        return g.isSpecialization() && isPadded(*g.model);
      })) {
    w.line("cgc::Status {}::run() {{ return runtime_.run(&{}::run_executor, this); }}", cls, cls);
    return;
  }
  w.open("cgc::Status {}::run() {{", cls);
  bool any = false;
  for (const GraphLayout& g : layout.graphs) {
    if (!g.isSpecialization() || !isPadded(*g.model)) continue;
    const VariableDims& dims = *layout.model.dims;
    const std::vector<std::string> names = dims.cppNames();
    if (!any) {
      // The copies read the dimensions before run() checks them: only
      // values within their bounds are taken.
      std::vector<std::string> within;
      for (size_t j = 0; j < dims.dims.size(); ++j) {
        w.line("const int64_t {} = runtime_.dim({});", names[j], j);
        within.push_back(fmt::format("{} >= {} && {} <= {}", names[j], dims.dims[j].min, names[j],
                                     dims.dims[j].max));
      }
      w.line("const bool within = {};", fmt::join(within, " && "));
      any = true;
    }
    w.open("if (within && {}) {{", specializationTest(g, names));
    emitPaddedRun(w, layout, g);
    w.close();
  }
  w.line("return runtime_.run(&{}::run_executor, this);", cls);
  w.close();
}

}  // namespace cgc::codegen
