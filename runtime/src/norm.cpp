// BatchNormalization (inference), InstanceNormalization, LayerNormalization
// and (log-)softmax. Statistics are accumulated in double so that long rows
// keep float32 accuracy.
#include <algorithm>
#include <cmath>
#include <limits>

#include "cgc/kernels.h"

namespace cgc::rt {

void batch_norm(const BatchNormParams& p, const float* x, const float* scale,
                const float* bias, const float* mean, const float* var,
                float* y) {
  for (int64_t c = 0; c < p.c; ++c) {
    const float s = scale[c] / std::sqrt(var[c] + p.epsilon);
    const float shift = bias[c] - mean[c] * s;
    for (int64_t n = 0; n < p.n; ++n) {
      const int64_t base = (n * p.c + c) * p.spatial;
      for (int64_t i = 0; i < p.spatial; ++i) y[base + i] = x[base + i] * s + shift;
    }
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

void instance_norm(const InstanceNormParams& p, const float* x,
                   const float* scale, const float* bias, float* y) {
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.c; ++c) {
      const int64_t base = (n * p.c + c) * p.spatial;
      const Moments m = momentsOf(x + base, p.spatial);
      const double s = scale[c] / std::sqrt(m.variance + p.epsilon);
      for (int64_t i = 0; i < p.spatial; ++i)
        y[base + i] = static_cast<float>((x[base + i] - m.mean) * s + bias[c]);
    }
}

void layer_norm(const LayerNormParams& p, const float* x, const float* scale,
                const float* bias, float* y, float* mean, float* inv_std_dev) {
  for (int64_t o = 0; o < p.outer; ++o) {
    const float* row = x + o * p.inner;
    const Moments m = momentsOf(row, p.inner);
    const double inv = 1.0 / std::sqrt(m.variance + p.epsilon);
    for (int64_t i = 0; i < p.inner; ++i)
      y[o * p.inner + i] = static_cast<float>(
          (row[i] - m.mean) * inv * scale[i] + (bias ? bias[i] : 0.0f));
    if (mean) mean[o] = static_cast<float>(m.mean);
    if (inv_std_dev) inv_std_dev[o] = static_cast<float>(inv);
  }
}

void softmax(const SoftmaxParams& p, const float* x, float* y) {
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t i = 0; i < p.inner; ++i) {
      const float* in = x + o * p.axis * p.inner + i;
      float* out = y + o * p.axis * p.inner + i;
      float maximum = -std::numeric_limits<float>::infinity();
      for (int64_t a = 0; a < p.axis; ++a) maximum = std::max(maximum, in[a * p.inner]);
      double sum = 0.0;
      for (int64_t a = 0; a < p.axis; ++a) sum += std::exp(in[a * p.inner] - maximum);
      if (p.log) {
        const float logSum = static_cast<float>(std::log(sum));
        for (int64_t a = 0; a < p.axis; ++a)
          out[a * p.inner] = in[a * p.inner] - maximum - logSum;
      } else {
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t a = 0; a < p.axis; ++a)
          out[a * p.inner] = std::exp(in[a * p.inner] - maximum) * inv;
      }
    }
}

}  // namespace cgc::rt
