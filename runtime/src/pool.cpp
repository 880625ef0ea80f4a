// Max, average and global average pooling over NCHW planes; the team
// splits the planes. 2-D max pooling runs on blocks of 16 planes in the
// vector lanes where they are small (channel_vectors.h), else through
// PlanePhases (one loop per tap over the whole plane); average pooling,
// whose divisor depends on how much of each window is padding, row by row.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "cgc/kernels.h"
#include "channel_vectors.h"
#include "plane_phases.h"
#include "scratch.h"

namespace cgc::rt {
namespace {

/// One output element, any rank, bounds checked per tap.
template <bool kMax>
float poolElement(const PoolParams& p, const float* in, int64_t od, int64_t oh, int64_t ow) {
  float acc = kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
  int64_t inside = 0;
  for (int64_t kd = 0; kd < p.k_d; ++kd) {
    const int64_t id = od * p.stride_d - p.pad_front + kd * p.dilation_d;
    if (id < 0 || id >= p.d_in) continue;
    for (int64_t kh = 0; kh < p.k_h; ++kh) {
      const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
      if (ih < 0 || ih >= p.h_in) continue;
      for (int64_t kw = 0; kw < p.k_w; ++kw) {
        const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
        if (iw < 0 || iw >= p.w_in) continue;
        const float v = in[(id * p.h_in + ih) * p.w_in + iw];
        acc = kMax ? std::max(acc, v) : acc + v;
        ++inside;
      }
    }
  }
  if (!kMax) {
    const int64_t count = p.count_include_pad ? p.k_d * p.k_h * p.k_w : inside;
    acc = count > 0 ? acc / static_cast<float>(count) : 0.0f;
  }
  return acc;
}

/// Average pooling of a 2-D plane row by row: the output columns whose taps
/// all lie inside the input ([lo, hi)) accumulate one tap at a time over the
/// whole row (a loop without bounds checks that the compiler vectorises);
/// the few border columns go through poolElement. Same order of operations
/// as poolElement, so both give identical results.
void avgPool2d(const PoolParams& p, const float* in, float* out) {
  const int64_t s = p.stride_w, dil = p.dilation_w;
  const int64_t lastTap = (p.k_w - 1) * dil;
  int64_t lo = std::min(p.w_out, (p.pad_left + s - 1) / s);
  const int64_t span = p.w_in - 1 - lastTap + p.pad_left;
  int64_t hi = span < 0 ? 0 : std::min(p.w_out, span / s + 1);
  if (hi < lo) hi = lo;
  for (int64_t oh = 0; oh < p.h_out; ++oh) {
    float* row = out + oh * p.w_out;
    for (int64_t ow = 0; ow < lo; ++ow) row[ow] = poolElement<false>(p, in, 0, oh, ow);
    for (int64_t ow = hi; ow < p.w_out; ++ow) row[ow] = poolElement<false>(p, in, 0, oh, ow);
    if (lo == hi) continue;
    std::fill(row + lo, row + hi, 0.0f);
    int64_t rows = 0;
    for (int64_t kh = 0; kh < p.k_h; ++kh) {
      const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
      if (ih < 0 || ih >= p.h_in) continue;
      ++rows;
      for (int64_t kw = 0; kw < p.k_w; ++kw) {
        const float* src = in + ih * p.w_in + (lo * s - p.pad_left + kw * dil);
        float* dst = row + lo;
        const int64_t n = hi - lo;
        if (s == 1)
          for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
        else
          for (int64_t i = 0; i < n; ++i) dst[i] += src[i * s];
      }
    }
    const int64_t count = p.count_include_pad ? p.k_h * p.k_w : rows * p.k_w;
    for (int64_t ow = lo; ow < hi; ++ow)
      row[ow] = count > 0 ? row[ow] / static_cast<float>(count) : 0.0f;
  }
}

/// Max pooling of the 2-D planes in `planes` through PlanePhases, padded with
/// -inf: each block of outputs takes the max over every tap in registers.
void maxPool2d(const PoolParams& p, const float* x, float* y, Range planes) {
  using detail::PlanePhases;
  const PlanePhases phases(p.h_in, p.w_in, p.h_out, p.w_out, p.k_h, p.k_w, p.stride_h,
                           p.stride_w, p.dilation_h, p.dilation_w, p.pad_top, p.pad_left);
  typedef float Lanes __attribute__((vector_size(PlanePhases::kLanes * sizeof(float))));
  float* buffer = detail::scratch(phases.scratchSize());
  float* acc = phases.outputs(buffer);
  const std::vector<int64_t>& taps = phases.tapOffsets();
  const float lowest = -std::numeric_limits<float>::infinity();
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    phases.fill(x + plane * p.h_in * p.w_in, lowest, buffer);
    for (int64_t j = 0; j < phases.length(); j += PlanePhases::kSlack) {
      Lanes m[PlanePhases::kBlock];
      for (Lanes& v : m) v = lowest - Lanes{};
      for (int64_t t : taps)
        for (int64_t v = 0; v < PlanePhases::kBlock; ++v) {
          Lanes in;
          std::memcpy(&in, buffer + t + j + v * PlanePhases::kLanes, sizeof in);
          m[v] = m[v] < in ? in : m[v];  // std::max, lane by lane
        }
      std::memcpy(acc + j, m, sizeof m);
    }
    phases.store(acc, y + plane * p.h_out * p.w_out, [](float v, int64_t) { return v; });
  }
}

/// ChannelVectors' op for max pooling (padding is -inf).
struct Maximum {
  using Lanes = detail::ChannelVectors::Lanes;
  void tap(int64_t, Lanes&) const {}
  void operator()(Lanes& m, const Lanes& in, const Lanes&) const { m = m < in ? in : m; }
};

/// 2-D max pooling on blocks of 16 planes in the vector lanes.
void maxPoolVectors(const detail::ChannelVectors& vectors, const PoolParams& p,
                    const float* x, float* y, const Team& team) {
  constexpr int64_t kLanes = detail::ChannelVectors::kLanes;
  const float lowest = -std::numeric_limits<float>::infinity();
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  float* buffer = detail::scratch(vectors.scratchSize());
  vectors.prepare(lowest, buffer);
  const Range blocks = team.split(p.n_c / kLanes);
  for (int64_t b = blocks.begin; b < blocks.end; ++b)
    vectors.run(x + b * kLanes * inSpatial, inSpatial, lowest, Maximum{},
                y + b * kLanes * spatial, spatial, buffer);
}

template <bool kMax>
void pool(const PoolParams& p, const float* x, float* y, const Team& team) {
  const int64_t inPlane = p.d_in * p.h_in * p.w_in;
  const int64_t outPlane = p.d_out * p.h_out * p.w_out;
  const bool planar = p.d_in == 1 && p.d_out == 1 && p.k_d == 1 && p.pad_front == 0;
  if constexpr (kMax) {
    if (planar) {
      const detail::ChannelVectors vectors({p.h_in, p.w_in, p.h_out, p.w_out, p.k_h, p.k_w,
                                            p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,
                                            p.pad_top, p.pad_left});
      if (vectors.fits(p.n_c)) return maxPoolVectors(vectors, p, x, y, team);
      return maxPool2d(p, x, y, team.split(p.n_c));
    }
  }
  const Range planes = team.split(p.n_c);
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    const float* in = x + plane * inPlane;
    float* out = y + plane * outPlane;
    if (!kMax && planar) {
      avgPool2d(p, in, out);
      continue;
    }
    for (int64_t od = 0; od < p.d_out; ++od)
      for (int64_t oh = 0; oh < p.h_out; ++oh)
        for (int64_t ow = 0; ow < p.w_out; ++ow)
          out[(od * p.h_out + oh) * p.w_out + ow] = poolElement<kMax>(p, in, od, oh, ow);
  }
}

}  // namespace

void max_pool(const PoolParams& p, const float* x, float* y, const Team& team) {
  pool<true>(p, x, y, team);
}

void avg_pool(const PoolParams& p, const float* x, float* y, const Team& team) {
  pool<false>(p, x, y, team);
}

void global_avg_pool(int64_t n_c, int64_t spatial, const float* x, float* y,
                     const Team& team) {
  // A float sum over a large plane drifts by 1e-4, a double one is a
  // latency-bound scalar chain (1.3 ms of PaddleOCR's 34): float vectors sum
  // blocks of 1024 (64 elements per lane), the blocks add up in double.
  constexpr int64_t kLanes = 16, kBlock = 1024;
  typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
  const Range planes = team.split(n_c, 16);
  for (int64_t i = planes.begin; i < planes.end; ++i) {
    const float* plane = x + i * spatial;
    double sum = 0.0;
    int64_t s = 0;
    for (; s + kBlock <= spatial; s += kBlock) {
      Lanes lanes[4] = {};
      for (int64_t j = 0; j < kBlock; j += 4 * kLanes)
        for (int v = 0; v < 4; ++v) {
          Lanes in;
          std::memcpy(&in, plane + s + j + v * kLanes, sizeof in);
          lanes[v] += in;
        }
      const Lanes total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
      for (int64_t l = 0; l < kLanes; ++l) sum += total[l];
    }
    for (; s < spatial; ++s) sum += plane[s];
    y[i] = spatial > 0 ? static_cast<float>(sum / static_cast<double>(spatial))
                       : 0.0f;
  }
}

}  // namespace cgc::rt
