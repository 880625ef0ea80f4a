// Convolution and transposed convolution over 1, 2 or 3 spatial dims:
// im2col (skipped for pointwise layers, which are already a GEMM) + the
// packed GEMM core, and GEMM + col2im for the transposed form.
#include <algorithm>
#include <vector>

#include "cgc/kernels.h"
#include "gemm_core.h"

namespace cgc::rt {
namespace {

bool isPointwise(const ConvParams& p) {
  return p.k_d == 1 && p.k_h == 1 && p.k_w == 1 && p.stride_d == 1 &&
         p.stride_h == 1 && p.stride_w == 1 && p.pad_front == 0 &&
         p.pad_top == 0 && p.pad_left == 0 && p.d_in == p.d_out &&
         p.h_in == p.h_out && p.w_in == p.w_out;
}

/// Visits every (kernel tap, output position) pair with the input position
/// it reads: f(tap, outIndex, inIndex), inIndex = -1 in the padding.
/// `in` sizes are the image side, `out` the GEMM side of the lowering.
template <typename F>
void forEachTap(const ConvParams& p, int64_t inD, int64_t inH, int64_t inW,
                int64_t outD, int64_t outH, int64_t outW, F f) {
  int64_t tap = 0;
  for (int64_t kd = 0; kd < p.k_d; ++kd)
    for (int64_t kh = 0; kh < p.k_h; ++kh)
      for (int64_t kw = 0; kw < p.k_w; ++kw, ++tap)
        for (int64_t od = 0; od < outD; ++od) {
          const int64_t id = od * p.stride_d - p.pad_front + kd * p.dilation_d;
          for (int64_t oh = 0; oh < outH; ++oh) {
            const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
            const bool rowInside = id >= 0 && id < inD && ih >= 0 && ih < inH;
            const int64_t outRow = (od * outH + oh) * outW;
            const int64_t inRow = (id * inH + ih) * inW;
            for (int64_t ow = 0; ow < outW; ++ow) {
              const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
              f(tap, outRow + ow, rowInside && iw >= 0 && iw < inW ? inRow + iw : -1);
            }
          }
        }
}

void addBias(const float* bias, int64_t channels, int64_t spatial, float* y) {
  if (!bias) return;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t s = 0; s < spatial; ++s) y[c * spatial + s] += bias[c];
}

}  // namespace

void conv(const ConvParams& p, const float* x, const float* w,
          const float* bias, float* y) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t taps = p.k_d * p.k_h * p.k_w;
  const int64_t kSize = cinG * taps;
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  const int64_t spatial = p.d_out * p.h_out * p.w_out;
  const bool pointwise = isPointwise(p);
  thread_local std::vector<float> col;
  if (!pointwise) col.resize(static_cast<size_t>(kSize * spatial));
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* xg = x + (n * p.c_in + g * cinG) * inSpatial;
      const float* b = xg;
      if (!pointwise) {
        // col[(c * taps + tap) * spatial + out] = x[c][in]
        for (int64_t c = 0; c < cinG; ++c) {
          const float* plane = xg + c * inSpatial;
          float* rows = col.data() + c * taps * spatial;
          forEachTap(p, p.d_in, p.h_in, p.w_in, p.d_out, p.h_out, p.w_out,
                     [&](int64_t tap, int64_t out, int64_t in) {
                       rows[tap * spatial + out] = in >= 0 ? plane[in] : 0.0f;
                     });
        }
        b = col.data();
      }
      float* yg = y + (n * p.c_out + g * coutG) * spatial;
      detail::sgemm(coutG, spatial, kSize, w + g * coutG * kSize, kSize, 1, b,
                    spatial, 1, yg, spatial, false);
      addBias(bias ? bias + g * coutG : nullptr, coutG, spatial, yg);
    }
  }
}

void conv_transpose(const ConvParams& p, const float* x, const float* w,
                    const float* bias, float* y) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t taps = p.k_d * p.k_h * p.k_w;
  const int64_t rows = coutG * taps;
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  const int64_t outSpatial = p.d_out * p.h_out * p.w_out;
  thread_local std::vector<float> col;
  col.resize(static_cast<size_t>(rows * inSpatial));
  std::fill(y, y + p.n * p.c_out * outSpatial, 0.0f);
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t g = 0; g < p.groups; ++g) {
      // col = W_g^T x_g, W_g viewed as [cinG, rows].
      const float* wg = w + g * cinG * rows;
      const float* xg = x + (n * p.c_in + g * cinG) * inSpatial;
      detail::sgemm(rows, inSpatial, cinG, wg, 1, rows, xg, inSpatial, 1,
                    col.data(), inSpatial, false);
      float* yg = y + (n * p.c_out + g * coutG) * outSpatial;
      // Scatter: input position i with tap t lands on output position o,
      // the mirror of the convolution's gather with the roles swapped.
      for (int64_t c = 0; c < coutG; ++c) {
        const float* colRows = col.data() + c * taps * inSpatial;
        float* plane = yg + c * outSpatial;
        forEachTap(p, p.d_out, p.h_out, p.w_out, p.d_in, p.h_in, p.w_in,
                   [&](int64_t tap, int64_t in, int64_t out) {
                     if (out >= 0) plane[out] += colRows[tap * inSpatial + in];
                   });
      }
      addBias(bias ? bias + g * coutG : nullptr, coutG, outSpatial, yg);
    }
  }
}

}  // namespace cgc::rt
