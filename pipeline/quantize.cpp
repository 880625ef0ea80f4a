// See quantize.h. The entropy method, as tests/quantize/reference.py
// computes it too: the histogram is folded onto |x| (bins over [0, max|x|],
// the first left out: the zero point holds zeros exactly, and a Relu's
// spike there would decide the threshold);
// each candidate threshold i (in bins, from `levels` up) keeps bins [0, i)
// with the clipped mass added to bin i - 1 (p), merges them into `levels`
// chunks (the last takes the remainder) and spreads each chunk's mass over
// its nonzero bins (q); both get ONNX Runtime's smoothing (1e-4 to empty
// bins, taken evenly from the others) and the i of the least KL(p || q) is
// the threshold. `levels` is 256 for a tensor without negative values (all
// of u8's steps) and 128 for one with (a side's share).
#include "pipeline/quantize.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "ir/diagnostics.h"

namespace cgc::quant {
namespace {

/// ONNX Runtime's smooth_distribution: eps to the zero bins, taken evenly
/// from the nonzero ones. False where every bin is zero.
bool smooth(std::vector<double>& p) {
  constexpr double kEps = 1e-4;
  const auto zeros = static_cast<double>(std::count(p.begin(), p.end(), 0.0));
  const double nonzeros = static_cast<double>(p.size()) - zeros;
  if (nonzeros == 0) return false;
  const double take = kEps * zeros / nonzeros;
  for (double& v : p) v = v == 0 ? kEps : v - take;
  return true;
}

/// KL(p || q) of two unnormalised distributions.
double divergence(const std::vector<double>& p, const std::vector<double>& q) {
  double sp = 0, sq = 0;
  for (size_t j = 0; j < p.size(); ++j) sp += p[j], sq += q[j];
  double kl = 0;
  for (size_t j = 0; j < p.size(); ++j)
    if (p[j] > 0) kl += p[j] / sp * std::log((p[j] / sp) / (q[j] / sq));
  return kl;
}

/// The histogram over [lo, hi] folded onto [0, max(|lo|, |hi|)], as many bins.
std::vector<double> foldedHistogram(const TensorStats& s, double amax) {
  const size_t bins = s.histogram.size();
  std::vector<double> folded(bins, 0);
  const double width = (s.last - s.first) / static_cast<double>(bins);
  for (size_t k = 0; k < bins; ++k) {
    const double center = std::abs(s.first + (static_cast<double>(k) + 0.5) * width);
    const auto j = static_cast<size_t>(center / amax * static_cast<double>(bins));
    folded[std::min(j, bins - 1)] += static_cast<double>(s.histogram[k]);
  }
  return folded;
}

/// KL(p || q) for the threshold of `i` bins (see the file's comment).
double thresholdDivergence(const std::vector<double>& h, size_t i, size_t levels) {
  std::vector<double> p(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(i));
  for (size_t j = i; j < h.size(); ++j) p[i - 1] += h[j];
  std::vector<double> q(i, 0);
  const size_t merged = i / levels;
  for (size_t c = 0; c < levels; ++c) {
    const size_t start = c * merged, end = c + 1 == levels ? i : start + merged;
    double total = 0, nonzero = 0;
    for (size_t j = start; j < end; ++j) total += h[j], nonzero += p[j] != 0;
    if (nonzero == 0) continue;
    for (size_t j = start; j < end; ++j)
      if (p[j] != 0) q[j] = total / nonzero;
  }
  if (!smooth(p) || !smooth(q)) return std::numeric_limits<double>::infinity();
  return divergence(p, q);
}

std::pair<float, float> entropyRange(const TensorStats& s) {
  const double amax = std::max(std::abs(s.lo), std::abs(s.hi));
  std::vector<double> h = foldedHistogram(s, amax);
  h[0] = 0;  // values at zero: the zero point holds them exactly
  const size_t levels = s.lo >= 0 ? 256 : 128, bins = h.size();
  size_t best = bins;
  double bestKl = std::numeric_limits<double>::infinity();
  for (size_t i = levels; i <= bins; ++i) {
    const double kl = thresholdDivergence(h, i, levels);
    if (kl < bestKl) bestKl = kl, best = i;
  }
  const double t = static_cast<double>(best) * amax / static_cast<double>(bins);
  return {static_cast<float>(std::max(s.lo, -t)), static_cast<float>(std::min(s.hi, t))};
}

/// The central `percentile` percent: the first bin whose cumulative count
/// passes the lower tail gives its lower edge, the first that reaches the
/// upper tail's start gives its upper edge.
std::pair<float, float> percentileRange(const TensorStats& s, double percentile) {
  const double tail = (100.0 - percentile) / 200.0 * static_cast<double>(s.count);
  const size_t bins = s.histogram.size();
  const double width = (s.last - s.first) / static_cast<double>(bins);
  double below = 0;
  size_t first = 0;
  while (first + 1 < bins && below + static_cast<double>(s.histogram[first]) <= tail)
    below += static_cast<double>(s.histogram[first++]);
  double cumulative = 0;
  size_t last = 0;
  for (; last < bins; ++last) {
    cumulative += static_cast<double>(s.histogram[last]);
    if (cumulative >= static_cast<double>(s.count) - tail) break;
  }
  last = std::min(last, bins - 1);
  return {static_cast<float>(std::max(s.lo, s.first + static_cast<double>(first) * width)),
          static_cast<float>(std::min(s.hi, s.first + static_cast<double>(last + 1) * width))};
}

DType activationType(const std::string& name) {
  if (name == "u8") return DType::kU8;
  if (name == "s8") return DType::kI8;
  throw CompileError(fmt::format("cgc: error: --activations: '{}' is not a type (u8 or s8)", name));
}

}  // namespace

const std::vector<std::string>& methodNames() {
  static const std::vector<std::string> names = {"minmax", "percentile", "entropy"};
  return names;
}

std::map<std::string, TensorStats> readCalibration(const std::string& path) {
  const DiagLocation file{path, "", ""};
  std::ifstream in(path);
  if (!in) userError(file, "--calibration: cannot read the file");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
    std::map<std::string, TensorStats> stats;
    for (const auto& [name, entry] : json.at("tensors").items()) {
      TensorStats s;
      s.count = entry.at("count").get<int64_t>();
      s.histogram = entry.at("histogram").get<std::vector<int64_t>>();
      if (s.count > 0) {
        s.lo = entry.at("min").get<double>();
        s.hi = entry.at("max").get<double>();
      } else {
        s.lo = 1, s.hi = 0;
      }
      s.first = entry.value("histogram_min", s.lo);
      s.last = entry.value("histogram_max", s.hi);
      if (s.histogram.empty() || !(s.lo <= s.hi || s.count == 0) ||
          (s.count > 0 && !(s.first <= s.lo && s.hi <= s.last)))
        userError(file, "tensor '{}': its histogram or range is malformed", name);
      stats.emplace(name, std::move(s));
    }
    return stats;
  } catch (const nlohmann::json::exception& e) {
    userError(file, "not a cgc calibrate file: {}", e.what());
  }
}

std::pair<float, float> chooseRange(const TensorStats& s, const std::string& method,
                                    double percentile) {
  if (method == "minmax" || s.hi <= s.lo)
    return {static_cast<float>(s.lo), static_cast<float>(s.hi)};
  if (method == "percentile") return percentileRange(s, percentile);
  return entropyRange(s);
}

std::shared_ptr<const passes::QuantizeSpec> makeSpec(const QuantizeOptions& options,
                                                     std::map<std::string, TensorStats>* stats) {
  if (!options.enabled()) return nullptr;
  if (options.precision != "int8")
    throw CompileError(
        fmt::format("cgc: error: --quantize: '{}' is not a precision (int8)", options.precision));
  const auto& methods = methodNames();
  if (std::find(methods.begin(), methods.end(), options.method) == methods.end())
    throw CompileError(fmt::format("cgc: error: --method: '{}' is not a method ({})",
                                   options.method, fmt::join(methods, ", ")));
  if (!(options.percentile > 0 && options.percentile <= 100))
    throw CompileError("cgc: error: --percentile must be in (0, 100]");
  if (options.calibration.empty())
    throw CompileError("cgc: error: --quantize int8 needs --calibration FILE (cgc calibrate)");
  auto spec = std::make_shared<passes::QuantizeSpec>();
  spec->activations = activationType(options.activations);
  auto read = readCalibration(options.calibration);
  for (const auto& [name, tensor] : read)
    if (tensor.count > 0)
      spec->ranges.emplace(name, chooseRange(tensor, options.method, options.percentile));
  if (stats) *stats = std::move(read);
  return spec;
}

}  // namespace cgc::quant
