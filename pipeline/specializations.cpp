// See specializations.h.
#include "pipeline/specializations.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <chrono>

#include "pipeline/tuned_profile.h"
#include "pipeline/variable_dims.h"

namespace cgc::driver {

using Dim = codegen::VariableDims::Dim;
using Sizes = std::vector<int64_t>;  // one value per variable dimension, -1: variable

std::vector<std::map<std::string, int64_t>> sizeCombinations(const SizeLists& lists,
                                                             const std::vector<Dim>& dims,
                                                             const std::string& flag) {
  std::vector<std::map<std::string, int64_t>> paths = {{}};
  for (const auto& entry : lists) {
    const std::string& name = entry.first;  // not a structured binding: lambdas below capture it
    const std::vector<int64_t>& values = entry.second;
    const std::string text = fmt::format("{}={}", name, fmt::join(values, ","));
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
      const int64_t value = values[i];
      if (value < dim->min || value > dim->max)
        bad(fmt::format("asks for {}={}, outside {}", name, value, range));
      if (value % dim->multiple != 0)
        bad(fmt::format("asks for {}={}, not a multiple of {} ({})", name, value, dim->multiple,
                        range));
      if (std::count(values.begin(), values.begin() + i, value)) bad("lists a size twice");
    }
    if (paths.front().count(name)) bad(fmt::format("gives '{}' a second list", name));
    if (paths.size() * values.size() > kMaxSpecializations)
      bad(fmt::format("makes more than {} combinations (the sizes of every {} are combined)",
                      kMaxSpecializations, flag));
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto& path : paths)
      for (int64_t v : values) {
        next.push_back(path);
        next.back()[name] = v;
      }
    paths = std::move(next);
  }
  return lists.empty() ? std::vector<std::map<std::string, int64_t>>{} : paths;
}

std::vector<std::map<std::string, int64_t>> parseSizeLists(const std::vector<std::string>& texts,
                                                           const std::vector<Dim>& dims,
                                                           const std::string& flag) {
  SizeLists lists;
  for (const std::string& text : texts) {
    auto bad = [&] {
      throw CompileError(fmt::format(
          "cgc: error: {} '{}' is not of the form NAME=SIZE[,SIZE...] (e.g. seq=128,384)", flag,
          text));
    };
    const size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) bad();
    std::vector<int64_t> values;
    for (size_t start = eq + 1, end; start <= text.size(); start = end + 1) {
      end = std::min(text.find(',', start), text.size());
      int64_t value = -1;
      const auto [last, error] = std::from_chars(text.data() + start, text.data() + end, value);
      if (error != std::errc() || last != text.data() + end || value < 0) bad();
      values.push_back(value);
    }
    lists.emplace_back(text.substr(0, eq), std::move(values));
  }
  return sizeCombinations(lists, dims, flag);
}

std::map<std::string, int64_t> specializedSizes(const std::vector<Dim>& dims,
                                                const std::map<std::string, int64_t>& path) {
  std::map<std::string, int64_t> fixed;
  for (const Dim& d : dims) {
    if (path.count(d.name))
      fixed[d.name] = path.at(d.name);
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

namespace {

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
    const std::map<std::string, int64_t> fixed = specializedSizes(options.dims, path);
    const bool ownTuning =
        std::count(tuned.specializations.begin(), tuned.specializations.end(), fixed) > 0;
    CompileOptions at = pathOptions(options, fixed);
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
    Sizes point;
    for (const Dim& d : options.dims) point.push_back(fixed.count(d.name) ? fixed.at(d.name) : -1);
    CompiledModel s;
    try {
      s = compileModel(at);  // a path may leave some dimensions variable
    } catch (const CompileError& e) {
      throw CompileError(
          fmt::format("{} (in --specialize {})", e.what(), describeSizes(options.dims, point)));
    }
    CGC_ASSERT(s.schedule.executors == model.schedule.executors &&
                   s.schedule.fixedThreads() == model.schedule.fixedThreads(),
               "a specialisation is scheduled on other executors");
    s.specializedAt = point;
    model.specializations.push_back(std::move(s));
    names.push_back(describeSizes(options.dims, point) + (ownTuning ? " (tuned)" : ""));
  }
  progress(options, fmt::format("--specialize: static code for {} ({:.2f} s)",
                                fmt::join(names, "; "), secondsSince(start)));
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
std::vector<std::map<std::string, int64_t>> profiledSizes(const CompileOptions& options,
                                                          const TunedConfig& tuned) {
  constexpr double kProfiledShare = 0.25;
  constexpr size_t kProfiledSpecializations = 4;
  int64_t total = 0;
  for (const auto& entry : tuned.sizes) total += entry.second;
  std::vector<std::map<std::string, int64_t>> paths;
  for (const auto& entry : tuned.sizes) {
    const std::map<std::string, int64_t>& sizes = entry.first;  // lambdas capture it
    const int64_t runs = entry.second;
    if (sizes.size() != options.dims.size() || !allowed(options.dims, sizes) ||
        runs < kProfiledShare * static_cast<double>(total) ||
        paths.size() == kProfiledSpecializations)
      continue;
    paths.push_back(sizes);
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
    if (allowed(options.dims, sizes)) profiled.specialize.push_back(sizes);
  if (!profiled.specialize.empty())
    progress(options, fmt::format("--profile: specialising the {} path(s) cgc tune tuned",
                                  profiled.specialize.size()));
  else
    profiled.specialize = profiledSizes(options, tuned);
  if (!profiled.specialize.empty()) compilePaths(profiled, tuned, model);
}

}  // namespace cgc::driver
