// BatchNormalization (inference), InstanceNormalization, LayerNormalization
// and (log-)softmax. Statistics are accumulated in double so that long rows
// keep float32 accuracy (softmax sums in 16 float lanes, then in double, so
// that its loops vectorise). BatchNorm, LayerNorm and softmax split their
// rows over the team.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cgc/kernels.h"
#include "core/fast_math.h"

namespace cgc::rt {

void batch_norm(const BatchNormParams& p, const float* x, const float* scale, const float* bias,
                const float* mean, const float* var, float* y, const Team& team) {
  const Range planes = team.split(p.n * p.c);
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    const int64_t c = plane % p.c, base = plane * p.spatial;
    const float s = scale[c] / std::sqrt(var[c] + p.epsilon);
    const float shift = bias[c] - mean[c] * s;
    for (int64_t i = 0; i < p.spatial; ++i) y[base + i] = x[base + i] * s + shift;
  }
}

namespace {

struct Moments {
  double mean, variance;  // population variance
};

Moments momentsOf(const float* x, int64_t count) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) sum += x[i];
  const double mean = count > 0 ? sum / static_cast<double>(count) : 0.0;
  double squares = 0.0;
  for (int64_t i = 0; i < count; ++i) squares += (x[i] - mean) * (x[i] - mean);
  return {mean, count > 0 ? squares / static_cast<double>(count) : 0.0};
}

}  // namespace

void instance_norm(const InstanceNormParams& p, const float* x, const float* scale,
                   const float* bias, float* y) {
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.c; ++c) {
      const int64_t base = (n * p.c + c) * p.spatial;
      const Moments m = momentsOf(x + base, p.spatial);
      const double s = scale[c] / std::sqrt(m.variance + p.epsilon);
      for (int64_t i = 0; i < p.spatial; ++i)
        y[base + i] = static_cast<float>((x[base + i] - m.mean) * s + bias[c]);
    }
}

void layer_norm(const LayerNormParams& p, const float* x, const float* scale, const float* bias,
                float* y, float* mean, float* inv_std_dev, const Team& team) {
  const Range rows = team.split(p.outer);
  for (int64_t o = rows.begin; o < rows.end; ++o) {
    const float* row = x + o * p.inner;
    const Moments m = momentsOf(row, p.inner);
    const double inv = 1.0 / std::sqrt(m.variance + p.epsilon);
    for (int64_t i = 0; i < p.inner; ++i)
      y[o * p.inner + i] =
          static_cast<float>((row[i] - m.mean) * inv * scale[i] + (bias ? bias[i] : 0.0f));
    if (mean) mean[o] = static_cast<float>(m.mean);
    if (inv_std_dev) inv_std_dev[o] = static_cast<float>(inv);
  }
}

namespace {

constexpr int kLanes = 16;

/// Softmax of one contiguous row.
void softmaxRow(int64_t n, const float* in, float* out, bool log) {
  float lanes[kLanes];
  std::fill_n(lanes, kLanes, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] = std::max(lanes[l], in[i + l]);
  float maximum = -std::numeric_limits<float>::infinity();
  for (; i < n; ++i) maximum = std::max(maximum, in[i]);
  for (int l = 0; l < kLanes; ++l) maximum = std::max(maximum, lanes[l]);
  std::fill_n(lanes, kLanes, 0.f);
  for (i = 0; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      float e = detail::fastExp(in[i + l] - maximum);
      if (!log) out[i + l] = e;
      lanes[l] += e;
    }
  double sum = 0.0;
  for (; i < n; ++i) {
    float e = detail::fastExp(in[i] - maximum);
    if (!log) out[i] = e;
    sum += e;
  }
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  if (log) {
    // (x - max) first: it is exact near the maximum, where x - (max + log)
    // would round away the small results.
    const float logSum = static_cast<float>(std::log(sum));
    for (i = 0; i < n; ++i) out[i] = (in[i] - maximum) - logSum;
  } else {
    const float inv = static_cast<float>(1.0 / sum);
    for (i = 0; i < n; ++i) out[i] *= inv;
  }
}

}  // namespace

void softmax(const SoftmaxParams& p, const float* x, float* y, const Team& team) {
  if (p.inner == 1) {
    const Range rows = team.split(p.outer);
    for (int64_t o = rows.begin; o < rows.end; ++o)
      softmaxRow(p.axis, x + o * p.axis, y + o * p.axis, p.log);
    return;
  }
  // Softmax down columns: work on blocks of up to kBlock columns at a time,
  // so that every loop runs along contiguous memory.
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (p.inner + kBlock - 1) / kBlock;
  const Range items = team.split(p.outer * blocks);
  float maximum[kBlock];
  double sum[kBlock];
  for (int64_t item = items.begin; item < items.end; ++item) {
    const int64_t o = item / blocks, i0 = (item % blocks) * kBlock;
    const int64_t w = std::min(kBlock, p.inner - i0);
    const float* in = x + o * p.axis * p.inner + i0;
    float* out = y + o * p.axis * p.inner + i0;
    std::fill_n(maximum, w, -std::numeric_limits<float>::infinity());
    std::fill_n(sum, w, 0.0);
    for (int64_t a = 0; a < p.axis; ++a)
      for (int64_t i = 0; i < w; ++i) maximum[i] = std::max(maximum[i], in[a * p.inner + i]);
    for (int64_t a = 0; a < p.axis; ++a)
      for (int64_t i = 0; i < w; ++i) {
        float e = detail::fastExp(in[a * p.inner + i] - maximum[i]);
        if (!p.log) out[a * p.inner + i] = e;
        sum[i] += e;
      }
    if (p.log) {
      float logSum[kBlock];
      for (int64_t i = 0; i < w; ++i) logSum[i] = static_cast<float>(std::log(sum[i]));
      for (int64_t a = 0; a < p.axis; ++a)
        for (int64_t i = 0; i < w; ++i)
          out[a * p.inner + i] = (in[a * p.inner + i] - maximum[i]) - logSum[i];
    } else {
      for (int64_t i = 0; i < w; ++i) maximum[i] = static_cast<float>(1.0 / sum[i]);
      for (int64_t a = 0; a < p.axis; ++a)
        for (int64_t i = 0; i < w; ++i) out[a * p.inner + i] *= maximum[i];
    }
  }
}

}  // namespace cgc::rt
