// See specializations.h.
#include "pipeline/specializations.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <set>

#include "onnx_frontend/onnx_loader.h"
#include "passes/padding_neutral.h"
#include "pipeline/tuned_profile.h"
#include "pipeline/variable_dims.h"

namespace cgc::driver {

using Dim = codegen::VariableDims::Dim;
using Sizes = std::vector<int64_t>;  // one value per variable dimension, -1: variable

namespace {

using RangeLists = std::vector<std::pair<std::string, std::vector<SizeRange>>>;

std::string rangeText(const SizeRange& r) {
  return r.min != r.max ? fmt::format("{}..{}", r.min, r.max) : std::to_string(r.min);
}

/// Every combination of `lists`' sizes and buckets, checked against `dims`.
std::vector<SpecializedPath> rangeCombinations(const RangeLists& lists,
                                               const std::vector<Dim>& dims,
                                               const std::string& flag) {
  std::vector<SpecializedPath> paths = {{}};
  for (const auto& entry : lists) {
    const std::string& name = entry.first;  // not a structured binding: lambdas below capture it
    const std::vector<SizeRange>& values = entry.second;
    std::vector<std::string> texts;
    for (const SizeRange& r : values) texts.push_back(rangeText(r));
    const std::string text = fmt::format("{}={}", name, fmt::join(texts, ","));
    auto bad = [&](const std::string& why) {
      throw CompileError(fmt::format("cgc: error: {} '{}' {}", flag, text, why));
    };
    const auto dim =
        std::find_if(dims.begin(), dims.end(), [&](const Dim& d) { return d.name == name; });
    if (dim == dims.end())
      bad(dims.empty() ? "needs variable dimensions: give their ranges with --dim"
                       : fmt::format("names '{}', which no --dim makes variable", name));
    if (values.empty()) bad("lists no size");
    const std::string range = "--dim " + dimText(*dim);
    for (size_t i = 0; i < values.size(); ++i) {
      const SizeRange& value = values[i];
      const std::string what = fmt::format("{}={}", name, rangeText(value));
      if (value.min > value.max)
        bad(fmt::format("asks for {}, an empty range (its least size is above its largest)", what));
      if (value.min < dim->min || value.max > dim->max)
        bad(fmt::format("asks for {}, outside {}", what, range));
      const int64_t m = dim->multiple;
      if (!value.isBucket() && value.min % m != 0)
        bad(fmt::format("asks for {}, not a multiple of {} ({})", what, m, range));
      if (value.isBucket() && (value.min + m - 1) / m * m > value.max)
        bad(fmt::format("asks for {}, which holds no multiple of {} ({})", what, m, range));
      for (size_t k = 0; k < i; ++k)
        if (values[k] == value)
          bad("lists a size twice");
        else if (values[k].min <= value.max && value.min <= values[k].max)
          bad(fmt::format("asks for {} and {}={}, which overlap", what, name,
                          rangeText(values[k])));
    }
    if (paths.front().count(name)) bad(fmt::format("gives '{}' a second list", name));
    if (paths.size() * values.size() > kMaxSpecializations)
      bad(fmt::format("makes more than {} combinations (the sizes of every {} are combined)",
                      kMaxSpecializations, flag));
    std::vector<SpecializedPath> next;
    for (const auto& path : paths)
      for (const SizeRange& v : values) {
        next.push_back(path);
        next.back()[name] = v;
      }
    paths = std::move(next);
  }
  return lists.empty() ? std::vector<SpecializedPath>{} : paths;
}

}  // namespace

std::vector<SpecializedPath> parseSpecializations(const std::vector<std::string>& texts,
                                                  const std::vector<Dim>& dims,
                                                  const std::string& flag) {
  RangeLists lists;
  for (const std::string& text : texts) {
    auto bad = [&] {
      throw CompileError(fmt::format(
          "cgc: error: {} '{}' is not of the form NAME=SIZE|MIN..MAX[,...] (e.g. seq=128,384 or "
          "seq=1..64,65..256)",
          flag, text));
    };
    auto number = [&](size_t start, size_t end) {
      int64_t value = -1;
      const auto [last, error] = std::from_chars(text.data() + start, text.data() + end, value);
      if (start == end || error != std::errc() || last != text.data() + end || value < 0) bad();
      return value;
    };
    const size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) bad();
    std::vector<SizeRange> values;
    for (size_t start = eq + 1, end; start <= text.size(); start = end + 1) {
      end = std::min(text.find(',', start), text.size());
      const size_t dots = text.find("..", start);
      if (dots != std::string::npos && dots < end)
        values.push_back({number(start, dots), number(dots + 2, end)});
      else
        values.push_back({number(start, end), number(start, end)});
    }
    lists.emplace_back(text.substr(0, eq), std::move(values));
  }
  return rangeCombinations(lists, dims, flag);
}

std::vector<std::map<std::string, int64_t>> parseSizeLists(const std::vector<std::string>& texts,
                                                           const std::vector<Dim>& dims,
                                                           const std::string& flag) {
  std::vector<std::map<std::string, int64_t>> paths;
  for (const SpecializedPath& path : parseSpecializations(texts, dims, flag)) {
    paths.emplace_back();
    for (const auto& [name, range] : path) {
      if (range.isBucket())
        throw CompileError(fmt::format("cgc: error: {} {}={}..{}: {} takes sizes, not ranges", flag,
                                       name, range.min, range.max, flag));
      paths.back()[name] = range.min;
    }
  }
  return paths;
}

std::map<std::string, int64_t> specializedSizes(const std::vector<Dim>& dims,
                                                const SpecializedPath& path) {
  std::map<std::string, int64_t> fixed;
  for (const Dim& d : dims) {
    if (path.count(d.name) && !path.at(d.name).isBucket())
      fixed[d.name] = path.at(d.name).min;
    else if (d.smallest() == d.largest())  // a dimension of one size is fixed in every path
      fixed[d.name] = d.largest();
  }
  return fixed;
}

CompileOptions pathOptions(const CompileOptions& options,
                           const std::map<std::string, int64_t>& fixed) {
  CompileOptions at = options;
  at.specialize.clear();
  at.dims.clear();
  for (const Dim& d : options.dims)
    if (fixed.count(d.name))
      at.load.dims[d.name] = fixed.at(d.name);
    else
      at.dims.push_back(d);
  return at;
}

std::string describeSizes(const std::vector<Dim>& dims, const std::vector<int64_t>& sizes) {
  std::vector<std::string> parts;
  for (size_t j = 0; j < dims.size(); ++j)
    if (sizes[j] >= 0) parts.push_back(fmt::format("{}={}", dims[j].name, sizes[j]));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string describeSizes(const std::map<std::string, int64_t>& sizes) {
  std::vector<std::string> parts;
  for (const auto& [name, size] : sizes) parts.push_back(fmt::format("{}={}", name, size));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string describePath(const SpecializedPath& path) {
  std::vector<std::string> parts;
  for (const auto& [name, range] : path) parts.push_back(name + "=" + rangeText(range));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<SpecializedPath> proposedBuckets(
    const std::vector<std::pair<std::map<std::string, int64_t>, int64_t>>& runs,
    const std::vector<Dim>& dims, size_t most) {
  std::map<SpecializedPath, int64_t> byPath;
  for (const auto& [sizes, count] : runs) {
    SpecializedPath path;
    for (const Dim& d : dims) {
      const auto it = sizes.find(d.name);
      if (it == sizes.end() || it->second < d.min || it->second > d.max) break;
      int64_t hi = it->second <= 1 ? it->second : 1;
      while (hi < it->second) hi *= 2;  // the power of two at or above the size
      const int64_t lo = hi <= 2 ? hi : hi / 2 + 1;
      path[d.name] = {std::max(lo, d.min), std::min(hi, d.max)};
    }
    if (path.size() == dims.size()) byPath[path] += count;
  }
  std::vector<std::pair<int64_t, SpecializedPath>> ranked;
  for (const auto& [path, count] : byPath) ranked.emplace_back(-count, path);
  std::sort(ranked.begin(), ranked.end());
  std::vector<SpecializedPath> paths;
  for (size_t i = 0; i < ranked.size() && i < most; ++i) paths.push_back(ranked[i].second);
  return paths;
}

namespace {

/// The model imported statically at `sizes` (every dimension given).
ir::Graph importedAt(const CompileOptions& options, const std::map<std::string, int64_t>& sizes) {
  frontend::LoadOptions load = options.load;
  for (const auto& [name, size] : sizes) load.dims[name] = size;
  return options.overrides.model->import(load);
}

/// Whether padding `dim` to `bound` is neutral on the path of `fixed`
/// (the other dimensions at their largest sizes).
passes::PaddingVerdict paddingVerdict(const CompileOptions& options,
                                      const std::map<std::string, int64_t>& fixed, const Dim& dim,
                                      int64_t bound) {
  std::map<std::string, int64_t> sizes = fixed;
  for (const Dim& d : options.dims)
    if (!sizes.count(d.name)) sizes[d.name] = d.largest();
  sizes[dim.name] = bound;
  const ir::Graph atBound = importedAt(options, sizes);
  sizes[dim.name] = bound - dim.multiple;
  return passes::paddingNeutral(atBound, importedAt(options, sizes));
}

/// How `path` is compiled: its sizes fixed (a neutral bucket's at its
/// bound), the ranges of its other buckets (general code over them), and
/// for the generated guards each dimension's least and largest size and
/// whether it is padded.
struct PathPlan {
  std::map<std::string, int64_t> fixed;
  std::map<std::string, SizeRange> ranges;
  std::set<std::string> padded;  // the neutral buckets' dimensions
  Sizes least, largest;
};

PathPlan planPath(const CompileOptions& options, const SpecializedPath& path) {
  PathPlan plan;
  plan.fixed = specializedSizes(options.dims, path);
  for (const Dim& d : options.dims) {
    const auto it = path.find(d.name);
    if (it == path.end() || !it->second.isBucket()) continue;
    // The bucket's sizes that --dim takes.
    const int64_t lo = (it->second.min + d.multiple - 1) / d.multiple * d.multiple;
    const int64_t hi = it->second.max - it->second.max % d.multiple;
    const std::string bucket = fmt::format("{}..{}", it->second.min, it->second.max);
    if (lo == hi) {
      plan.fixed[d.name] = lo;
      continue;
    }
    const passes::PaddingVerdict verdict = paddingVerdict(options, plan.fixed, d, hi);
    if (verdict.neutral) {
      plan.fixed[d.name] = hi;
      plan.padded.insert(d.name);
      progress(options, fmt::format("{}: bucket {} is static code at {}, its inputs padded", d.name,
                                    bucket, hi));
    } else {
      plan.ranges[d.name] = {lo, hi};
      progress(options,
               fmt::format("{}: {}; bucket {} is general code", d.name, verdict.str(), bucket));
    }
  }
  for (const Dim& d : options.dims) {
    const auto it = path.find(d.name);
    const bool bucket = it != path.end() && it->second.isBucket();
    const bool fixed = plan.fixed.count(d.name) > 0;
    plan.least.push_back(bucket ? it->second.min : fixed ? plan.fixed.at(d.name) : -1);
    plan.largest.push_back(bucket ? it->second.max : fixed ? plan.fixed.at(d.name) : -1);
  }
  return plan;
}

/// "seq=1..64" or "seq=128" of each dimension a path takes.
std::string describePlan(const std::vector<Dim>& dims, const PathPlan& plan) {
  std::vector<std::string> parts;
  for (size_t j = 0; j < dims.size(); ++j)
    if (plan.least[j] >= 0)
      parts.push_back(plan.least[j] == plan.largest[j]
                          ? fmt::format("{}={}", dims[j].name, plan.least[j])
                          : fmt::format("{}={}..{}", dims[j].name, plan.least[j], plan.largest[j]));
  return fmt::format("{}", fmt::join(parts, ", "));
}

/// The model compiled for each of options.specialize's paths (the
/// dimensions a path leaves out variable as in `model`), on `model`'s
/// executors and threads (the generated code runs either on one pool). A
/// path cgc tune tuned reads its own section of the profile.
void compilePaths(const CompileOptions& options, const TunedConfig& tuned, CompiledModel& model) {
  // A profile measured the general code; its tuned variants hold where a
  // path has no tuning of its own.
  std::map<std::string, std::string> variants = tuned.convVariants;
  for (const auto& [node, variant] : options.overrides.convVariants) variants[node] = variant;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> names;
  for (const auto& path : options.specialize) {
    const PathPlan plan = planPath(options, path);
    const std::map<std::string, int64_t>& fixed = plan.fixed;
    const bool ownTuning =
        plan.ranges.empty() &&
        std::count(tuned.specializations.begin(), tuned.specializations.end(), fixed) > 0;
    CompileOptions at = pathOptions(options, fixed);
    for (Dim& d : at.dims)
      if (plan.ranges.count(d.name))
        d.min = plan.ranges.at(d.name).min, d.max = plan.ranges.at(d.name).max;
    at.quiet = true;
    at.overrides.specializeProfiledSizes = false;
    if (ownTuning) {
      at.overrides.profileSection = fixed;
    } else {
      at.profilePath.clear();
      at.overrides.convVariants = variants;
    }
    at.executors = model.schedule.executors;
    at.threadsPerExecutor = model.schedule.fixedThreads();
    const std::string described = describePlan(options.dims, plan);
    CompiledModel s;
    try {
      s = compileModel(at);  // a path may leave some dimensions variable
    } catch (const CompileError& e) {
      throw CompileError(fmt::format("{} (in --specialize {})", e.what(), described));
    }
    CGC_ASSERT(s.schedule.executors == model.schedule.executors &&
                   s.schedule.fixedThreads() == model.schedule.fixedThreads(),
               "a specialisation is scheduled on other executors");
    s.specializedAt = plan.least;
    s.specializedMax = plan.largest;
    for (const Dim& d : options.dims) s.padded.push_back(plan.padded.count(d.name) > 0);
    model.specializations.push_back(std::move(s));
    names.push_back(described + (ownTuning ? " (tuned)" : ""));
  }
  progress(options, fmt::format("--specialize: paths for {} ({:.2f} s)", fmt::join(names, "; "),
                                secondsSince(start)));
}

SpecializedPath exactPath(const std::map<std::string, int64_t>& sizes) {
  SpecializedPath path;
  for (const auto& [name, size] : sizes) path[name] = {size, size};
  return path;
}

/// Whether --dim takes every size of `sizes`.
bool allowed(const std::vector<Dim>& dims, const std::map<std::string, int64_t>& sizes) {
  return std::all_of(sizes.begin(), sizes.end(), [&](const auto& entry) {
    const auto d = std::find_if(dims.begin(), dims.end(),
                                [&](const Dim& dim) { return dim.name == entry.first; });
    return d != dims.end() && entry.second >= d->min && entry.second <= d->max &&
           entry.second % d->multiple == 0;
  });
}

/// With --profile and no --specialize: the sizes the profile ran most
/// (each at least kProfiledShare of its runs, at most
/// kProfiledSpecializations), where --dim takes them.
std::vector<SpecializedPath> profiledSizes(const CompileOptions& options,
                                           const TunedConfig& tuned) {
  constexpr double kProfiledShare = 0.25;
  int64_t total = 0;
  for (const auto& entry : tuned.sizes) total += entry.second;
  std::vector<SpecializedPath> paths;
  for (const auto& entry : tuned.sizes) {
    const std::map<std::string, int64_t>& sizes = entry.first;  // lambdas capture it
    const int64_t runs = entry.second;
    if (sizes.size() != options.dims.size() || !allowed(options.dims, sizes) ||
        runs < kProfiledShare * static_cast<double>(total) ||
        paths.size() == kProfiledSpecializations)
      continue;
    paths.push_back(exactPath(sizes));
    progress(options, fmt::format("--profile: specialising {} ({:.0f}% of its {} runs)",
                                  describeSizes(sizes), 100.0 * runs / total, total));
  }
  return paths;
}

}  // namespace

void compileSpecializations(const CompileOptions& options, CompiledModel& model) {
  const TunedConfig tuned =
      options.profilePath.empty() ? TunedConfig{} : readTunedConfig(options.profilePath);
  if (!options.specialize.empty()) return compilePaths(options, tuned, model);
  if (options.profilePath.empty() || !options.overrides.specializeProfiledSizes ||
      options.observe || options.cacheInPlace)
    return;
  CompileOptions profiled = options;
  // The paths cgc tune tuned (where --dim takes them), else the sizes run most.
  for (const auto& sizes : tuned.specializations)
    if (allowed(options.dims, sizes)) profiled.specialize.push_back(exactPath(sizes));
  if (!profiled.specialize.empty())
    progress(options, fmt::format("--profile: specialising the {} path(s) cgc tune tuned",
                                  profiled.specialize.size()));
  else  // exact sizes only: a padded bucket runs its bound's work at every size in it
    profiled.specialize = profiledSizes(options, tuned);
  if (!profiled.specialize.empty()) compilePaths(profiled, tuned, model);
}

}  // namespace cgc::driver
