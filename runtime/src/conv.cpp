// Convolution and transposed convolution: im2col (skipped for 1x1, stride 1,
// unpadded layers, which are already a GEMM) + the packed GEMM core, and
// GEMM + col2im for the transposed form.
#include <algorithm>
#include <vector>

#include "cgc/kernels.h"
#include "gemm_core.h"

namespace cgc::rt {
namespace {

bool isPointwise(const ConvParams& p) {
  return p.k_h == 1 && p.k_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
         p.pad_top == 0 && p.pad_left == 0 && p.h_in == p.h_out &&
         p.w_in == p.w_out;
}

/// col[(c * k_h + kh) * k_w + kw][oh * w_out + ow] for `channels` channels.
void im2col(const ConvParams& p, const float* x, int64_t channels, float* col) {
  const int64_t spatial = p.h_out * p.w_out;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < p.k_h; ++kh)
      for (int64_t kw = 0; kw < p.k_w; ++kw) {
        float* row = col + ((c * p.k_h + kh) * p.k_w + kw) * spatial;
        const float* plane = x + c * p.h_in * p.w_in;
        for (int64_t oh = 0; oh < p.h_out; ++oh) {
          const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
          float* out = row + oh * p.w_out;
          if (ih < 0 || ih >= p.h_in) {
            std::fill(out, out + p.w_out, 0.0f);
            continue;
          }
          for (int64_t ow = 0; ow < p.w_out; ++ow) {
            const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
            out[ow] = iw >= 0 && iw < p.w_in ? plane[ih * p.w_in + iw] : 0.0f;
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

void conv2d(const ConvParams& p, const float* x, const float* w,
            const float* bias, float* y) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t kSize = cinG * p.k_h * p.k_w;
  const int64_t spatial = p.h_out * p.w_out;
  const bool pointwise = isPointwise(p);
  thread_local std::vector<float> col;
  if (!pointwise) col.resize(static_cast<size_t>(kSize * spatial));
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* xg = x + (n * p.c_in + g * cinG) * p.h_in * p.w_in;
      const float* b = xg;
      if (!pointwise) {
        im2col(p, xg, cinG, col.data());
        b = col.data();
      }
      float* yg = y + (n * p.c_out + g * coutG) * spatial;
      detail::sgemm(coutG, spatial, kSize, w + g * coutG * kSize, kSize, 1, b,
                    spatial, 1, yg, spatial, false);
      addBias(bias ? bias + g * coutG : nullptr, coutG, spatial, yg);
    }
  }
}

void conv_transpose2d(const ConvParams& p, const float* x, const float* w,
                      const float* bias, float* y) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t rows = coutG * p.k_h * p.k_w;
  const int64_t inSpatial = p.h_in * p.w_in, outSpatial = p.h_out * p.w_out;
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
      for (int64_t c = 0; c < coutG; ++c)
        for (int64_t kh = 0; kh < p.k_h; ++kh)
          for (int64_t kw = 0; kw < p.k_w; ++kw) {
            const float* row = col.data() + ((c * p.k_h + kh) * p.k_w + kw) * inSpatial;
            float* plane = yg + c * outSpatial;
            for (int64_t ih = 0; ih < p.h_in; ++ih) {
              const int64_t oh = ih * p.stride_h - p.pad_top + kh * p.dilation_h;
              if (oh < 0 || oh >= p.h_out) continue;
              for (int64_t iw = 0; iw < p.w_in; ++iw) {
                const int64_t ow = iw * p.stride_w - p.pad_left + kw * p.dilation_w;
                if (ow >= 0 && ow < p.w_out)
                  plane[oh * p.w_out + ow] += row[ih * p.w_in + iw];
              }
            }
          }
      addBias(bias ? bias + g * coutG : nullptr, coutG, outSpatial, yg);
    }
  }
}

}  // namespace cgc::rt
