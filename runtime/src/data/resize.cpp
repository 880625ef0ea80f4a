// Resize: nearest, (multi-)linear and cubic interpolation. The arithmetic
// mirrors ONNX's reference implementation (onnx/backend/test/case/node/
// resize.py) step by step, in double precision, because nearest-neighbour
// choices hinge on exact ties (ratio == 0.5, integral coordinates) that any
// reformulation would break. Interpolation is separable, so each axis gets a
// table of taps (input offset, weight) per output index, and every output
// element is the sum over the product of its axes' taps.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "cgc/kernels.h"

namespace cgc::rt {
namespace {

struct Tap {
  int64_t offset;  // input index times the axis stride
  double weight;
};

/// Taps of every output index along one axis; `outside` marks the indices
/// that tf_crop_and_resize maps outside the input (extrapolated).
struct AxisTaps {
  std::vector<int64_t> first;  // out + 1 entries into taps
  std::vector<Tap> taps;
  std::vector<bool> outside;
};

/// Input coordinate of output index x along an axis, or NaN when it falls
/// outside a tf_crop_and_resize region. output_width is scale * input_width
/// (not the integer output size), as in the reference.
double sourceCoordinate(const ResizeParams& p, int d, int64_t x) {
  const double scale = p.scales[d];
  const int64_t in = p.in_shape[d];
  const double outWidth = scale * static_cast<double>(in);
  const double xd = static_cast<double>(x);
  switch (p.coordinates) {
    case ResizeCoordinates::kAlignCorners:
      return outWidth == 1 ? 0.0 : static_cast<double>(x * (in - 1)) / (outWidth - 1);
    case ResizeCoordinates::kAsymmetric:
      return xd / scale;
    case ResizeCoordinates::kTfCropAndResize: {
      // The ROI difference is float32 in the reference; the rest is double.
      const double extent = static_cast<double>(p.roi_end[d] - p.roi_start[d]);
      double xo = outWidth == 1 ? extent * static_cast<double>(in - 1) / 2
                                : xd * extent * static_cast<double>(in - 1) / (outWidth - 1);
      xo += static_cast<double>(p.roi_start[d]) * static_cast<double>(in - 1);
      if (xo < 0 || xo > static_cast<double>(in - 1)) return std::nan("");
      return xo;
    }
    case ResizeCoordinates::kPytorchHalfPixel:
      return outWidth == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
    case ResizeCoordinates::kHalfPixel:
      return (xd + 0.5) / scale - 0.5;
    case ResizeCoordinates::kTfHalfPixelForNn:
      return (xd + 0.5) / scale;
  }
  return 0.0;
}

/// Weights of the neighbours at floor-ish positions; `ratio` is in (0, 1],
/// 1 for an integral coordinate (the reference prefers the left pixel).
std::vector<double> coefficients(const ResizeParams& p, double ratio, bool integral) {
  switch (p.mode) {
    case ResizeMode::kNearest: {
      if (integral) return {0.0, 1.0};
      bool right = false;
      switch (p.nearest_mode) {
        case NearestMode::kRoundPreferFloor:
          right = ratio > 0.5;
          break;
        case NearestMode::kRoundPreferCeil:
          right = ratio >= 0.5;
          break;
        case NearestMode::kFloor:
          right = false;
          break;
        case NearestMode::kCeil:
          right = true;
          break;
      }
      return {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
    }
    case ResizeMode::kLinear:
      return {1 - ratio, ratio};
    case ResizeMode::kCubic: {
      const double a = p.cubic_coeff_a, r = ratio, s = 1 - ratio;
      return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
              ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * s - (a + 3)) * s * s + 1,
              ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
    }
  }
  return {};
}

AxisTaps axisTaps(const ResizeParams& p, int d, int64_t stride) {
  const int64_t in = p.in_shape[d], out = p.out_shape[d];
  AxisTaps axis;
  axis.first.push_back(0);
  for (int64_t x = 0; x < out; ++x) {
    const double xo = sourceCoordinate(p, d, x);
    axis.outside.push_back(std::isnan(xo));
    if (std::isnan(xo)) {
      axis.first.push_back(static_cast<int64_t>(axis.taps.size()));
      continue;
    }
    const double fl = std::floor(xo);
    const bool integral = xo == fl;
    std::vector<double> c = coefficients(p, integral ? 1.0 : xo - fl, integral);
    const int64_t n = static_cast<int64_t>(c.size());
    // The reference takes the n nearest indices of the input edge-padded by
    // n / 2 on each side; near or beyond the border that window is clamped.
    const int64_t pad = n / 2;
    const int64_t base = static_cast<int64_t>(fl) - (integral ? 1 : 0);
    const int64_t start = std::clamp(base - (pad - 1), -pad, in + pad - n);
    if (p.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (start + k < 0 || start + k >= in) c[k] = 0;
        sum += c[k];
      }
      for (double& w : c) w /= sum;
    }
    for (int64_t k = 0; k < n; ++k)
      if (c[k] != 0)
        axis.taps.push_back({std::clamp<int64_t>(start + k, 0, in - 1) * stride, c[k]});
    axis.first.push_back(static_cast<int64_t>(axis.taps.size()));
  }
  return axis;
}

double interpolate(const std::vector<AxisTaps>& axes, const int64_t* index, size_t d,
                   int64_t offset, const float* x) {
  if (d == axes.size()) return x[offset];
  double sum = 0;
  const AxisTaps& axis = axes[d];
  for (int64_t t = axis.first[index[d]]; t < axis.first[index[d] + 1]; ++t)
    sum += axis.taps[t].weight * interpolate(axes, index, d + 1, offset + axis.taps[t].offset, x);
  return sum;
}

/// The common case where every output element is one input element (nearest
/// mode, or linear at integral coordinates, nothing outside): a gather
/// through the last axis's offsets per output row, and a copy of the row
/// before where consecutive rows read the same input row (upsampling).
/// Evaluating each element through interpolate() in double took most of
/// PaddleOCR's time. Returns false, doing nothing, otherwise.
bool copyRows(const std::vector<AxisTaps>& axes, const ResizeParams& p, const float* x, float* y) {
  if (p.rank == 0) return false;
  for (const AxisTaps& axis : axes) {
    if (axis.taps.size() + 1 != axis.first.size()) return false;
    for (size_t t = 0; t < axis.taps.size(); ++t)
      if (axis.first[t] != static_cast<int64_t>(t) || axis.taps[t].weight != 1.0 || axis.outside[t])
        return false;
  }
  const int last = p.rank - 1;
  const int64_t width = p.out_shape[last];
  std::vector<int64_t> columns(static_cast<size_t>(width));
  for (int64_t i = 0; i < width; ++i) columns[i] = axes[last].taps[i].offset;
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= p.out_shape[d];
  std::array<int64_t, kMaxRank> index{};
  int64_t previous = -1;  // input offset of the previous output row
  for (int64_t row = 0; row < rows; ++row) {
    int64_t base = 0;
    for (int d = 0; d < last; ++d) base += axes[d].taps[index[d]].offset;
    float* out = y + row * width;
    if (base == previous) {
      std::copy_n(out - width, width, out);
    } else {
      const float* in = x + base;
      for (int64_t i = 0; i < width; ++i) out[i] = in[columns[i]];
    }
    previous = base;
    for (int d = last - 1; d >= 0 && ++index[d] == p.out_shape[d]; --d) index[d] = 0;
  }
  return true;
}

}  // namespace

void resize(const ResizeParams& p, const float* x, float* y) {
  std::vector<AxisTaps> axes;
  int64_t count = 1;
  for (int d = 0; d < p.rank; ++d) count *= p.out_shape[d];
  if (count == 0) return;
  std::array<int64_t, kMaxRank> strides{};
  int64_t stride = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= p.in_shape[d];
  }
  for (int d = 0; d < p.rank; ++d) axes.push_back(axisTaps(p, d, strides[d]));
  if (copyRows(axes, p, x, y)) return;
  std::array<int64_t, kMaxRank> index{};
  for (int64_t i = 0; i < count; ++i) {
    bool outside = false;
    for (int d = 0; d < p.rank; ++d) outside = outside || axes[d].outside[index[d]];
    y[i] = outside ? p.extrapolation_value
                   : static_cast<float>(interpolate(axes, index.data(), 0, 0, x));
    for (int d = p.rank - 1; d >= 0 && ++index[d] == p.out_shape[d]; --d) index[d] = 0;
  }
}

}  // namespace cgc::rt
