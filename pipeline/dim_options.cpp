// See variable_dims.h: the --dim and --shape ranges the command line gives.
#include <algorithm>
#include <optional>

#include "onnx_frontend/onnx_loader.h"
#include "pipeline/dim_samples.h"
#include "pipeline/variable_dims.h"

namespace cgc::driver {
namespace {

[[noreturn]] void badDim(const std::string& text, const std::string& why) {
  throw CompileError(fmt::format("cgc: error: --dim '{}' {}", text, why));
}

/// A non-negative decimal number, or nothing.
std::optional<int64_t> parseNumber(const std::string& text) {
  size_t used = 0;
  int64_t value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
  }
  if (text.empty() || used != text.size() || !std::isdigit(static_cast<unsigned char>(text[0])))
    return std::nullopt;
  return value;
}

int64_t parseCount(const std::string& text, const std::string& flag) {
  const auto value = parseNumber(text);
  if (!value)
    badDim(flag, "is not of the form NAME=MIN..MAX or NAME=MIN..MAX:MULTIPLE (e.g. seq=1..512:8)");
  return *value;
}
}  // namespace

std::string dimText(const Dim& d) {
  return fmt::format("{}={}..{}{}", d.name, d.min, d.max,
                     d.multiple != 1 ? fmt::format(":{}", d.multiple) : std::string());
}

std::vector<Dim> checkedDims(const std::vector<Dim>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    const Dim& d = dims[i];
    const std::string text = dimText(d);
    if (d.name.empty()) badDim(text, "has no NAME");
    if (d.min < 0) badDim(text, "has a negative MIN");
    if (d.max < d.min) badDim(text, fmt::format("has MAX {} below MIN {}", d.max, d.min));
    if (d.max > ir::kMaxTensorBytes) badDim(text, "has MAX beyond 2^40");
    if (d.multiple < 1) badDim(text, "has MULTIPLE 0: it must be at least 1");
    if (latticeOf(d).count == 0)
      badDim(text,
             fmt::format("holds no multiple of {} between {} and {}", d.multiple, d.min, d.max));
    for (size_t j = 0; j < i; ++j)
      if (dims[j].name == d.name) badDim(text, fmt::format("gives '{}' a second range", d.name));
  }
  return dims;
}

std::vector<Dim> parseDims(const std::vector<std::string>& texts) {
  std::vector<Dim> dims;
  for (const std::string& text : texts) {
    const size_t eq = text.rfind('='), dots = text.find("..", eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || eq == 0 || dots == std::string::npos)
      badDim(text,
             "is not of the form NAME=MIN..MAX or NAME=MIN..MAX:MULTIPLE (e.g. seq=1..512:8)");
    const size_t colon = text.find(':', dots);
    Dim d;
    d.name = text.substr(0, eq);
    d.min = parseCount(text.substr(eq + 1, dots - eq - 1), text);
    d.max = parseCount(text.substr(dots + 2, colon == std::string::npos ? colon : colon - dots - 2),
                       text);
    if (colon != std::string::npos) d.multiple = parseCount(text.substr(colon + 1), text);
    dims.push_back(d);
  }
  return checkedDims(dims);
}

void bindShapeRanges(const std::vector<std::string>& texts, CompileOptions& options) {
  if (texts.empty()) return;
  const frontend::ModelSummary summary = frontend::summarizeModel(options.modelPath);
  for (const std::string& text : texts) {
    const size_t eq = text.find('=');
    const std::string name = eq == std::string::npos ? "" : text.substr(0, eq);
    const auto input =
        std::find_if(summary.inputs.begin(), summary.inputs.end(),
                     [&](const frontend::DeclaredTensor& t) { return t.name == name; });
    if (input == summary.inputs.end())
      throw CompileError(fmt::format("cgc: error: --shape '{}' names no input of the model", text));
    std::vector<std::string> axes;
    for (size_t start = eq + 1, end; start <= text.size(); start = end + 1) {
      end = std::min(text.find('x', start), text.size());
      axes.push_back(text.substr(start, end - start));
    }
    if (axes.size() != input->dims.size())
      throw CompileError(fmt::format("cgc: error: --shape '{}' has {} axes; input '{}' is {}", text,
                                     axes.size(), name, input->type));
    for (size_t a = 0; a < axes.size(); ++a) {
      const std::string& symbol = input->symbols[a];
      if (axes[a].find("..") != std::string::npos) {
        if (symbol.empty())
          throw CompileError(fmt::format(
              "cgc: error: --shape '{}': axis {} of input '{}' has no symbolic name to make "
              "variable (the model's {})",
              text, a, name, input->type));
        options.dims.push_back(parseDims({symbol + "=" + axes[a]}).front());
        continue;
      }
      const auto size = parseNumber(axes[a]);
      if (!size)
        throw CompileError(fmt::format(
            "cgc: error: --shape '{}' is not of the form NAME=1x3x48x80..960[:MULTIPLE]", text));
      if (!symbol.empty())
        options.load.dims[symbol] = *size;
      else if (input->dims[a] != *size)
        throw CompileError(fmt::format("cgc: error: --shape '{}': axis {} of input '{}' is {}",
                                       text, a, name, input->dims[a]));
    }
  }
  for (size_t i = 0; i < options.dims.size(); ++i) {
    const std::string& d = options.dims[i].name;
    const bool twice = std::any_of(options.dims.begin(), options.dims.begin() + i,
                                   [&](const Dim& other) { return other.name == d; });
    if (twice || options.load.dims.count(d))
      throw CompileError(
          fmt::format("cgc: error: --shape and --dim give dimension '{}' two sizes or ranges", d));
  }
}

}  // namespace cgc::driver
