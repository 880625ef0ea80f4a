// See dim_samples.h.
#include "pipeline/dim_samples.h"

#include <algorithm>
#include <map>

#include "onnx_frontend/onnx_loader.h"
#include "pipeline/specializations.h"

namespace cgc::driver {
namespace {

/// Moves each lattice index of `at` up to seven steps so that the sizes,
/// with the largest, take as many remainders modulo 2 to 8 as they can
/// (the smaller moduli first): a floor division of a size is told from
/// its samples only at every remainder (size_forms.h).
void spreadRemainders(const Lattice& l, std::vector<int64_t>& at) {
  std::set<std::pair<int64_t, int64_t>> taken;  // (modulus, remainder)
  std::set<int64_t> used = {l.count - 1};
  const auto take = [&](int64_t size) {
    for (int64_t m = 2; m <= 8; ++m) taken.insert({m, size % m});
  };
  take(l.at(l.count - 1));
  for (size_t k = 0; k < at.size(); ++k) {
    int64_t& i = at[k];
    // The first two are the grid's: distinct, below the largest.
    const int64_t last = std::min(k == 0 ? at[1] - 1 : i + 7, l.count - 2);
    int64_t best = i, bestScore = -1;
    for (int64_t c = i; c <= std::min(i + 7, last); ++c) {
      if (used.count(c)) continue;
      int64_t score = 0;
      for (int64_t m = 2; m <= 8; ++m) score += taken.count({m, l.at(c) % m}) ? 0 : 840 / m;
      if (score > bestScore) best = c, bestScore = score;
    }
    i = best;
    used.insert(i);
    take(l.at(i));
  }
}

/// The constants of `graph` and of its bodies by the name of the value
/// they stand for (a folded one's without "_folded").
void constantsOf(const ir::Graph& graph, std::map<std::string, const ir::Value*>& out) {
  const std::string suffix = "_folded";
  for (int v = 0; v < graph.numValues(); ++v) {
    const ir::Value& value = graph.value(v);
    if (!value.isConstant() || !value.data) continue;
    std::string name = value.name;
    while (name.size() > suffix.size() && name.ends_with(suffix))
      name.resize(name.size() - suffix.size());
    out.emplace(name, &value);
  }
  for (int id : graph.liveNodes())
    for (const auto& body : graph.node(id).subgraphs)
      if (body) constantsOf(*body, out);  // null: a branch that failed to import
}

}  // namespace

Lattice latticeOf(const Dim& d) {
  const int64_t first = d.smallest();
  return {first, d.multiple, first > d.max ? 0 : (d.largest() - first) / d.multiple + 1};
}

/// Three sizes of each dimension to interpolate at (fewer where it takes
/// fewer), ascending, the largest last; and three others to check at. The
/// smallest size is neither where there are more: at extent 1 lowering
/// simplifies (a broadcast stride of 0, a copy for a broadcast) where the
/// general parameters are as right.
std::pair<std::vector<Sizes>, std::vector<Sizes>> samplesOf(const std::vector<Dim>& dims) {
  std::vector<Sizes> grid, check(3);
  for (const Dim& d : dims) {
    Lattice l = latticeOf(d);
    if (l.first == 0 && l.count > 1) {  // empty tensors say nothing of the sizes
      l.first += l.step;
      --l.count;
    }
    Sizes mine, other;
    if (l.count <= 3) {
      for (int64_t i = 0; i < l.count; ++i) mine.push_back(l.at(i));
      other = mine;
    } else {
      std::vector<int64_t> at = {1, l.count / 2, l.count / 4, 3 * l.count / 4, l.count / 3};
      spreadRemainders(l, at);
      mine = {l.at(at[0]), l.at(at[1]), l.at(l.count - 1)};
      other = {l.at(at[2]), l.at(at[3]), l.at(at[4])};
    }
    grid.push_back(mine);
    for (size_t k = 0; k < 3; ++k) check[k].push_back(other[k % other.size()]);
  }
  return {grid, check};
}

std::vector<Sizes> variantProbes(const std::vector<Dim>& dims, const std::vector<Sizes>& grid,
                                 const std::vector<Sizes>& checks) {
  Sizes smallest, middle;
  for (size_t j = 0; j < dims.size(); ++j) {
    const Lattice l = latticeOf(dims[j]);
    smallest.push_back(l.first == 0 && l.count > 1 ? l.at(1) : l.first);
    middle.push_back(grid[j][grid[j].size() / 2]);
  }
  std::vector<Sizes> out = {smallest};
  for (const Sizes& s : checks)
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  if (std::find(out.begin(), out.end(), middle) == out.end()) out.push_back(middle);
  return out;
}

/// The grid's points, row-major (the last dimension fastest).
std::vector<Sizes> pointsOf(const std::vector<Sizes>& grid) {
  std::vector<Sizes> points = {{}};
  for (const Sizes& values : grid) {
    std::vector<Sizes> next;
    for (const Sizes& p : points)
      for (int64_t v : values) {
        next.push_back(p);
        next.back().push_back(v);
      }
    points = std::move(next);
  }
  return points;
}

FormsTold tellForms(const std::vector<SizeForm>& forms, const codegen::VariableDims& dims,
                    const std::vector<Sizes>& taken) {
  constexpr int64_t kMaxTried = int64_t{1} << 16;
  std::vector<Lattice> lattices;
  int64_t points = 1;
  for (const Dim& d : dims.dims) {
    lattices.push_back(latticeOf(d));
    points = std::min(points * lattices.back().count, kMaxTried + 1);
  }
  FormsTold told;
  bool differ = false;
  size_t bestCount = 1;
  const auto tryAt = [&](const Sizes& sizes) {
    if (std::count(sizes.begin(), sizes.end(), 0)) return;  // empty tensors: nothing runs
    const std::vector<int64_t> values = dims.variableValues(sizes);
    std::set<int64_t> distinct;
    bool known = true;
    for (const SizeForm& f : forms) {
      const auto v = f.at(values);
      known = known && v.has_value();
      if (v) distinct.insert(*v);
    }
    differ = differ || !known || distinct.size() > 1;
    // At extent 1 lowering simplifies: the node may compile otherwise there.
    const bool compilable = std::count(sizes.begin(), sizes.end(), 1) == 0 &&
                            std::find(taken.begin(), taken.end(), sizes) == taken.end();
    if (compilable && known && distinct.size() > bestCount)
      told.sizes = sizes, bestCount = distinct.size();
  };
  Sizes sizes;
  for (const Lattice& l : lattices) sizes.push_back(l.at(l.count - 1));
  if (points <= kMaxTried) {  // every point, the first dimension slowest
    std::vector<int64_t> at(lattices.size(), 0);
    for (int64_t p = 0; p < points; ++p) {
      for (size_t j = 0; j < lattices.size(); ++j) sizes[j] = lattices[j].at(at[j]);
      tryAt(sizes);
      for (size_t j = lattices.size(); j-- > 0 && ++at[j] == lattices[j].count;) at[j] = 0;
    }
    told.agree = !differ;
    return told;
  }
  for (size_t j = 0; j < lattices.size(); ++j) {  // along each dimension from the bounds
    const Sizes bounds = sizes;
    for (int64_t i = std::max<int64_t>(0, lattices[j].count - kMaxTried); i < lattices[j].count;
         ++i) {
      Sizes at = bounds;
      at[j] = lattices[j].at(i);
      tryAt(at);
    }
  }
  return told;
}

/// The values the model computes from the sizes of the dimensions
/// (LoadOptions::sizedValues): the constants that differ between imports
/// at the grid's first, middle and last points (each dimension differs
/// between them), which the compiles then compute at run time.
std::set<std::string> sizedValues(const CompileOptions& options,
                                  const std::vector<Sizes>& gridSizes) {
  std::vector<ir::Graph> graphs;
  std::vector<std::map<std::string, const ir::Value*>> constants;
  // The largest sizes first: an error there is the model's at the bounds
  // the user gave; at a smaller size, the graph fixes a size --dim lets vary.
  for (const auto pick : {2, 0, 1}) {
    frontend::LoadOptions load = options.load;
    Sizes at;
    for (size_t j = 0; j < options.dims.size(); ++j) {
      const Sizes& values = gridSizes[j];
      at.push_back(values[pick == 2 ? values.size() - 1 : pick == 1 ? values.size() / 2 : 0]);
      load.dims[options.dims[j].name] = at.back();
    }
    try {
      graphs.push_back(options.overrides.model->import(load));
    } catch (const CompileError& e) {
      if (pick != 2) throw notEverySize(e, options.dims, at);
      throw CompileError(fmt::format("{} (at the bounds of --dim, {})", e.what(),
                                     describeSizes(options.dims, at)));
    }
  }
  for (const ir::Graph& g : graphs) constantsOf(g, constants.emplace_back());
  std::set<std::string> sized;
  for (const auto& [name, value] : constants[0])
    for (size_t k = 1; k < constants.size(); ++k) {
      const auto other = constants[k].find(name);
      if (other != constants[k].end() &&
          (other->second->type != value->type || *other->second->data != *value->data))
        sized.insert(name);
    }
  return sized;
}

CompileError notEverySize(const CompileError& e, const std::vector<Dim>& dims, const Sizes& sizes) {
  return CompileError(
      fmt::format("{} (at {}, which --dim allows: the model does not take every "
                  "size within its bounds)",
                  e.what(), describeSizes(dims, sizes)));
}

}  // namespace cgc::driver
