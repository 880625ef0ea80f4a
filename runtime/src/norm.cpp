// BatchNormalization (inference) and (log-)softmax.
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
