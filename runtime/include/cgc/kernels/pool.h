// Pooling: windowed max and average pooling, global average pooling.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

/// Pooling over (depth,) height and width; 1-D and 2-D pools have unit
/// depth (and height) with unit window, stride and dilation there (the
/// defaults).
struct PoolParams {
  int64_t n_c;  // batch * channels
  int64_t d_in = 1, h_in = 1, w_in, d_out = 1, h_out = 1, w_out;
  int64_t k_d = 1, k_h = 1, k_w = 1;
  int64_t stride_d = 1, stride_h = 1, stride_w = 1;
  int64_t pad_front = 0, pad_top = 0, pad_left = 0;
  int64_t dilation_d = 1, dilation_h = 1, dilation_w = 1;
  bool count_include_pad = false;  // average pool only
  CGC_REFLECT(PoolParams, n_c, d_in, h_in, w_in, d_out, h_out, w_out, k_d, k_h, k_w, stride_d,
              stride_h, stride_w, pad_front, pad_top, pad_left, dilation_d, dilation_h, dilation_w,
              count_include_pad)
};

/// Team-parallel over the N * C planes.
void max_pool(const PoolParams& p, const float* x, float* y, const Team& team = Team::serial());
void avg_pool(const PoolParams& p, const float* x, float* y, const Team& team = Team::serial());

/// y[i] = mean(x[i * spatial .. (i + 1) * spatial)), i < n_c; with blocked,
/// x is in the channel-blocked layout (n_c a multiple of kChannelBlock) and
/// y is the same in either layout.
struct GlobalPoolParams {
  int64_t n_c, spatial;
  bool blocked = false;
  CGC_REFLECT(GlobalPoolParams, n_c, spatial, blocked)
};

void global_avg_pool(const GlobalPoolParams& p, const float* x, float* y,
                     const Team& team = Team::serial());

}  // namespace cgc::rt
