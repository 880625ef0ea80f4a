// Sampling kernels (cgc/kernels/sampling.h): GridSample with PyTorch's
// grid_sampler_2d arithmetic (unnormalise, then the padding rule: border
// clamps, reflection reflects and clamps, zeros reads 0 outside) and
// RoiAlign with ONNX Runtime's (bilinear samples on a regular grid per bin,
// averaged or maxed). Coordinates come from the model's data: any sample
// not safely inside the image (NaN, huge) reads as outside.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cgc/kernels.h"

namespace cgc::rt {
namespace {

double unnormalize(double coord, int64_t size, bool alignCorners) {
  return alignCorners ? (coord + 1) / 2 * static_cast<double>(size - 1)
                      : ((coord + 1) * static_cast<double>(size) - 1) / 2;
}

double clampCoordinate(double in, int64_t size) {
  return std::min(static_cast<double>(size - 1), std::max(in, 0.0));
}

double reflectCoordinate(double in, double twiceLow, double twiceHigh) {
  if (twiceLow == twiceHigh) return 0;
  const double low = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
  in = std::fabs(in - low);
  const double extra = std::fmod(in, span);
  const double flips = std::floor(in / span);
  return std::fmod(flips, 2.0) == 0 ? extra + low : span - extra + low;
}

/// The padding rule applied to an unnormalised coordinate.
double padCoordinate(double coord, int64_t size, GridSamplePadding padding, bool alignCorners) {
  if (!std::isfinite(coord)) return coord;
  if (padding == GridSamplePadding::kBorder) return clampCoordinate(coord, size);
  if (padding == GridSamplePadding::kReflection) {
    const double s = static_cast<double>(size);
    coord = alignCorners ? reflectCoordinate(coord, 0, 2 * (s - 1))
                         : reflectCoordinate(coord, -1, 2 * s - 1);
    return clampCoordinate(coord, size);
  }
  return coord;
}

/// One plane's pixel, 0 outside (or for a coordinate too far to convert).
struct Plane {
  const float* data;
  int64_t h, w;
  double at(double y, double x) const {
    if (!(y >= 0 && y < static_cast<double>(h) && x >= 0 && x < static_cast<double>(w))) return 0;
    return data[static_cast<int64_t>(y) * w + static_cast<int64_t>(x)];
  }
};

double cubicWeight1(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
double cubicWeight2(double x, double a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

void cubicWeights(double t, double* w) {
  constexpr double kA = -0.75;
  w[0] = cubicWeight2(t + 1, kA);
  w[1] = cubicWeight1(t, kA);
  w[2] = cubicWeight1(1 - t, kA);
  w[3] = cubicWeight2(2 - t, kA);
}

double sample(const GridSampleParams& p, const Plane& plane, double gx, double gy) {
  if (p.mode == GridSampleMode::kBicubic) {
    const double x = unnormalize(gx, p.in_w, p.align_corners);
    const double y = unnormalize(gy, p.in_h, p.align_corners);
    if (!(std::fabs(x) < 1e9 && std::fabs(y) < 1e9)) return 0;
    const double x0 = std::floor(x), y0 = std::floor(y);
    double wx[4], wy[4];
    cubicWeights(x - x0, wx);
    cubicWeights(y - y0, wy);
    double sum = 0;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        const double tapY = padCoordinate(y0 - 1 + i, p.in_h, p.padding, p.align_corners);
        const double tapX = padCoordinate(x0 - 1 + j, p.in_w, p.padding, p.align_corners);
        sum += wy[i] * wx[j] * plane.at(std::trunc(tapY), std::trunc(tapX));
      }
    return sum;
  }
  const double x =
      padCoordinate(unnormalize(gx, p.in_w, p.align_corners), p.in_w, p.padding, p.align_corners);
  const double y =
      padCoordinate(unnormalize(gy, p.in_h, p.align_corners), p.in_h, p.padding, p.align_corners);
  if (!(std::fabs(x) < 1e9 && std::fabs(y) < 1e9)) return 0;
  if (p.mode == GridSampleMode::kNearest) return plane.at(std::nearbyint(y), std::nearbyint(x));
  const double x0 = std::floor(x), y0 = std::floor(y);
  const double fx = x - x0, fy = y - y0;
  return plane.at(y0, x0) * (1 - fx) * (1 - fy) + plane.at(y0, x0 + 1) * fx * (1 - fy) +
         plane.at(y0 + 1, x0) * (1 - fx) * fy + plane.at(y0 + 1, x0 + 1) * fx * fy;
}

/// The bilinear neighbours and weights of one RoiAlign sample point.
struct Bilinear {
  int64_t offsets[4] = {0, 0, 0, 0};
  double weights[4] = {0, 0, 0, 0};
};

Bilinear bilinearAt(double y, double x, int64_t h, int64_t w) {
  Bilinear b;
  if (!(y >= -1.0 && y <= static_cast<double>(h) && x >= -1.0 && x <= static_cast<double>(w)))
    return b;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t yLow = static_cast<int64_t>(y), xLow = static_cast<int64_t>(x), yHigh, xHigh;
  if (yLow >= h - 1) {
    yHigh = yLow = h - 1;
    y = static_cast<double>(yLow);
  } else {
    yHigh = yLow + 1;
  }
  if (xLow >= w - 1) {
    xHigh = xLow = w - 1;
    x = static_cast<double>(xLow);
  } else {
    xHigh = xLow + 1;
  }
  const double ly = y - static_cast<double>(yLow), lx = x - static_cast<double>(xLow);
  const double hy = 1 - ly, hx = 1 - lx;
  b.offsets[0] = yLow * w + xLow;
  b.offsets[1] = yLow * w + xHigh;
  b.offsets[2] = yHigh * w + xLow;
  b.offsets[3] = yHigh * w + xHigh;
  b.weights[0] = hy * hx;
  b.weights[1] = hy * lx;
  b.weights[2] = ly * hx;
  b.weights[3] = ly * lx;
  return b;
}

/// One output bin of one ROI and channel.
double roiBin(const RoiAlignParams& p, const float* plane, const double* box, int64_t ph,
              int64_t pw) {
  const double binH = (box[3] - box[1]) / static_cast<double>(p.out_h);
  const double binW = (box[2] - box[0]) / static_cast<double>(p.out_w);
  const int64_t gridH = p.sampling_ratio > 0
                            ? p.sampling_ratio
                            : static_cast<int64_t>(std::ceil((box[3] - box[1]) / p.out_h));
  const int64_t gridW = p.sampling_ratio > 0
                            ? p.sampling_ratio
                            : static_cast<int64_t>(std::ceil((box[2] - box[0]) / p.out_w));
  const double count = static_cast<double>(std::max<int64_t>(gridH * gridW, 1));
  double sum = 0, best = 0;
  bool first = true;
  for (int64_t iy = 0; iy < gridH; ++iy)
    for (int64_t ix = 0; ix < gridW; ++ix) {
      const double y = box[1] + static_cast<double>(ph) * binH +
                       (static_cast<double>(iy) + 0.5) * binH / static_cast<double>(gridH);
      const double x = box[0] + static_cast<double>(pw) * binW +
                       (static_cast<double>(ix) + 0.5) * binW / static_cast<double>(gridW);
      const Bilinear b = bilinearAt(y, x, p.h, p.w);
      if (p.mode == RoiPoolMode::kAvg) {
        for (int k = 0; k < 4; ++k) sum += b.weights[k] * plane[b.offsets[k]];
        continue;
      }
      // ONNX Runtime's max: the largest weighted neighbour over the samples.
      double value = b.weights[0] * plane[b.offsets[0]];
      for (int k = 1; k < 4; ++k) value = std::max(value, b.weights[k] * plane[b.offsets[k]]);
      best = first ? value : std::max(best, value);
      first = false;
    }
  return p.mode == RoiPoolMode::kAvg ? sum / count : best;
}

}  // namespace

void grid_sample(const GridSampleParams& p, const float* x, const float* grid, float* y) {
  const int64_t plane = p.in_h * p.in_w, outPlane = p.out_h * p.out_w;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.c; ++c) {
      const Plane in{x + (n * p.c + c) * plane, p.in_h, p.in_w};
      for (int64_t i = 0; i < outPlane; ++i) {
        const float* g = grid + (n * outPlane + i) * 2;
        y[(n * p.c + c) * outPlane + i] = static_cast<float>(sample(p, in, g[0], g[1]));
      }
    }
}

Status roi_align(const RoiAlignParams& p, const float* x, const float* rois,
                 const int64_t* batch_indices, float* y) {
  const int64_t plane = p.h * p.w, outPlane = p.out_h * p.out_w;
  const double offset = p.half_pixel ? 0.5 : 0.0;
  Status status = Status::kOk;
  for (int64_t r = 0; r < p.num_rois; ++r) {
    float* out = y + r * p.c * outPlane;
    const int64_t batch = batch_indices[r];
    if (batch < 0 || batch >= p.n || plane == 0) {
      std::fill(out, out + p.c * outPlane, 0.f);
      if (batch < 0 || batch >= p.n) status = Status::kIndexOutOfRange;
      continue;
    }
    double box[4];
    for (int k = 0; k < 4; ++k) box[k] = rois[r * 4 + k] * p.spatial_scale - offset;
    if (!p.half_pixel) {  // legacy: at least one pixel each way
      box[2] = box[0] + std::max(box[2] - box[0], 1.0);
      box[3] = box[1] + std::max(box[3] - box[1], 1.0);
    }
    // An adaptive grid from a huge or NaN box would never end.
    const bool sane = std::fabs(box[2] - box[0]) < 1e6 && std::fabs(box[3] - box[1]) < 1e6;
    for (int64_t c = 0; c < p.c; ++c)
      for (int64_t ph = 0; ph < p.out_h; ++ph)
        for (int64_t pw = 0; pw < p.out_w; ++pw)
          out[c * outPlane + ph * p.out_w + pw] =
              sane ? static_cast<float>(roiBin(p, x + (batch * p.c + c) * plane, box, ph, pw))
                   : 0.f;
  }
  return status;
}

}  // namespace cgc::rt
