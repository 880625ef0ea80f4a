// Max, average and global average pooling over NCHW planes; the team
// splits the planes. 2-D max pooling: 3x3 windows at stride 1 or 2 in
// registers (maxPool3x3, AVX-512), else on blocks of 16 planes in the vector
// lanes (channel_vectors.h) where they are small, else row by row
// (maxPoolRows); average pooling on channel vectors too where every window
// has one divisor, else row by row (the divisor depends on how much of each
// window is padding).
#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "cgc/kernels.h"
#include "conv/channel_vectors.h"
#include "core/diagnostics.h"
#include "core/isa.h"
#include "core/scratch.h"
#include "core/simd.h"
#include "gemm/row_blocks.h"

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

// Rows of positions in registers of the native width (simd.h).
constexpr int64_t kLanes = simd::kLanes;
using Lanes = simd::Floats;

// Lanes pass by reference: by value they change the ABI where AVX-512 is
// off (GCC's -Wpsabi, an error in the sanitizer builds).
void maximum(Lanes& m, const Lanes& v) { m = m < v ? v : m; }  // std::max, lane by lane

/// The even lanes of two registers: {0, 2, 4, ..., 2 kLanes - 2}.
template <int... I>
Lanes evenLanes(const Lanes& low, const Lanes& high, std::integer_sequence<int, I...>) {
  return __builtin_shufflevector(low, high, (2 * I)...);
}

/// v[i] = src[i * kStride] for the kLanes lanes i; kStride 2 reads
/// src[0, 2 kLanes).
template <int64_t kStride>
void stridedLoad(const float* src, int64_t stride, Lanes& v) {
  if constexpr (kStride == 1) {
    v = simd::load(src);
  } else if constexpr (kStride == 2) {
    v = evenLanes(simd::load(src), simd::load(src + kLanes),
                  std::make_integer_sequence<int, kLanes>{});
  } else {
    float lanes[kLanes];
    for (int64_t i = 0; i < kLanes; ++i) lanes[i] = src[i * stride];
    v = simd::load(lanes);
  }
}

/// Max pooling of the 2-D planes in `planes`, one output row at a time:
/// the max is separable, so the rows under a window first reduce to one
/// padded row, whose columns then reduce with the window's stride. Both
/// run on whole vectors; a row's last vector overlaps the one before it
/// (a max computed twice is the same max), so no element takes a scalar
/// tail; rows narrower than a vector take scalar loops.
template <int64_t kStride>  // 0: p.stride_w at run time
void maxPoolRows(const PoolParams& p, const float* x, float* y, Range planes) {
  const int64_t stride = kStride ? kStride : p.stride_w;
  const int64_t padCols = stride * (p.w_out - 1) + (p.k_w - 1) * p.dilation_w + 1;
  const int64_t colBegin = std::min(p.pad_left, padCols);
  const int64_t colEnd = std::max(colBegin, std::min(padCols, p.pad_left + p.w_in));
  const int64_t width = colEnd - colBegin;
  const float lowest = -std::numeric_limits<float>::infinity();
  // Two row buffers: the columns of output row oh reduce while the rows of
  // oh + 1 do. Reading a row right after writing it, at other offsets than
  // it was written, stalled every load on the stores (no forwarding).
  const int64_t rowSize = padCols + kLanes;  // stride 2 reads one vector past
  float* buffers = detail::scratch(2 * rowSize);
  std::fill_n(buffers, 2 * rowSize, lowest);  // the padding columns stay -inf
  std::vector<const float*> sources(static_cast<size_t>(p.k_h));
  // Max over the input rows under output row oh into buffer; false if none.
  auto reduceRows = [&](const float* in, int64_t oh, float* buffer) {
    size_t rows = 0;
    for (int64_t kh = 0; kh < p.k_h; ++kh) {
      const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
      if (ih >= 0 && ih < p.h_in) sources[rows++] = in + ih * p.w_in;
    }
    // The row count fixed at compile time for the usual windows: a loop
    // over a run-time count cost more than the maxima it took.
    auto reduce = [&]<int64_t kRows>() {
      const size_t count = kRows ? kRows : rows;
      for (int64_t c0 = 0; width >= kLanes && c0 < width; c0 += kLanes) {
        const int64_t c = std::min(c0, width - kLanes);
        Lanes m, v;
        stridedLoad<1>(sources[0] + c, 1, m);
        for (size_t r = 1; r < count; ++r) {
          stridedLoad<1>(sources[r] + c, 1, v);
          maximum(m, v);
        }
        simd::store(buffer + colBegin + c, m);
      }
      for (int64_t c = width < kLanes ? 0 : width; c < width; ++c) {
        float m = sources[0][c];
        for (size_t r = 1; r < count; ++r) m = std::max(m, sources[r][c]);
        buffer[colBegin + c] = m;
      }
    };
    switch (rows) {
      case 0:
        return false;
      case 1:
        reduce.template operator()<1>();
        break;
      case 2:
        reduce.template operator()<2>();
        break;
      case 3:
        reduce.template operator()<3>();
        break;
      default:
        reduce.template operator()<0>();
        break;
    }
    return true;
  };
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    const float* in = x + plane * p.h_in * p.w_in + (colBegin - p.pad_left);
    bool reduced = reduceRows(in, 0, buffers);
    for (int64_t oh = 0; oh < p.h_out; ++oh) {
      const float* row = buffers + (oh & 1) * rowSize;
      const bool nextReduced =
          oh + 1 < p.h_out && reduceRows(in, oh + 1, buffers + ((oh + 1) & 1) * rowSize);
      float* out = y + (plane * p.h_out + oh) * p.w_out;
      if (!reduced) std::fill_n(out, p.w_out, lowest);  // a window wholly in the padding
      for (int64_t ow0 = 0; reduced && p.w_out >= kLanes && ow0 < p.w_out; ow0 += kLanes) {
        const int64_t ow = std::min(ow0, p.w_out - kLanes);
        const float* first = row + ow * stride;
        Lanes m, v;
        stridedLoad<kStride>(first, stride, m);
        for (int64_t kw = 1; kw < p.k_w; ++kw) {
          stridedLoad<kStride>(first + kw * p.dilation_w, stride, v);
          maximum(m, v);
        }
        simd::store(out + ow, m);
      }
      for (int64_t ow = p.w_out < kLanes && reduced ? 0 : p.w_out; ow < p.w_out; ++ow) {
        float m = row[ow * stride];
        for (int64_t kw = 1; kw < p.k_w; ++kw)
          m = std::max(m, row[ow * stride + kw * p.dilation_w]);
        out[ow] = m;
      }
      reduced = nextReduced;
    }
  }
}

#if CGC_ISA_SKX
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at -O3 (a false positive).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED
/// 3x3 windows at stride 1 in both axes: each block of 16 outputs walks
/// down the plane, loading each input row once (two loads) and keeping the
/// last three in registers, -inf outside the plane. Row by row, each output
/// row loaded its three input rows again: 6 loads instead of 2, and
/// GoogLeNet's 28x28 inception pools were slower than ONNX Runtime's.
void maxPool3x3Down(const PoolParams& p, const float* x, float* y, Range planes,
                    const std::vector<detail::RowBlock>& blocks) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    const float* in = x + plane * p.h_in * p.w_in;
    float* out = y + plane * p.h_out * p.w_out;
    for (const detail::RowBlock& b : blocks) {
      auto load = [&](int64_t ih, __m512& low, __m512& high) {
        const bool inside = ih >= 0 && ih < p.h_in;
        const float* row = in + (inside ? ih : 0) * p.w_in + b.first;
        low = _mm512_mask_loadu_ps(lowest, inside ? b.lanes[0] : 0, row);
        high = _mm512_mask_loadu_ps(lowest, inside ? b.lanes[1] : 0, row + 16);
      };
      __m512 above0, above1, middle0, middle1, below0, below1;
      load(-p.pad_top, above0, above1);
      load(1 - p.pad_top, middle0, middle1);
      for (int64_t oh = 0; oh < p.h_out; ++oh) {
        load(oh + 2 - p.pad_top, below0, below1);
        const __m512 v0 = _mm512_max_ps(_mm512_max_ps(above0, middle0), below0);
        const __m512 v1 = _mm512_max_ps(_mm512_max_ps(above1, middle1), below1);
        const __m512i low = _mm512_castps_si512(v0), high = _mm512_castps_si512(v1);
        const __m512 next = _mm512_castsi512_ps(_mm512_alignr_epi32(high, low, 1));
        const __m512 afterNext = _mm512_castsi512_ps(_mm512_alignr_epi32(high, low, 2));
        _mm512_mask_storeu_ps(out + oh * p.w_out + b.ow, b.outputs,
                              _mm512_max_ps(_mm512_max_ps(v0, next), afterNext));
        above0 = middle0, above1 = middle1;
        middle0 = below0, middle1 = below1;
      }
    }
  }
}

/// 3x3 windows at stride 1 or 2 (inception branches' pools, the stems'
/// pools): 16 outputs of a row at a time in registers (row_blocks.h),
/// straight from NCHW, masked loads giving -inf outside the rows (at stride
/// 2, 33 columns under 16 outputs are three loads per input row, the even,
/// odd and next-even columns two permutes and an align). Channel vectors
/// transpose every input in and every output out, which made GoogLeNet's
/// 28x28 and 14x14 pools slower than ONNX Runtime's; the rows path goes
/// through a buffer.
template <int kStride>
void maxPool3x3(const PoolParams& p, const float* x, float* y, Range planes) {
  const std::vector<detail::RowBlock> blocks =
      detail::rowBlocks(p.w_out, p.w_in, kStride, p.pad_left);
  if (kStride == 1 && p.stride_h == 1 && p.dilation_h == 1)
    return maxPool3x3Down(p, x, y, planes, blocks);
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    const float* in = x + plane * p.h_in * p.w_in;
    for (int64_t oh = 0; oh < p.h_out; ++oh) {
      const float* rows[3];
      int count = 0;
      for (int64_t kh = 0; kh < 3; ++kh) {
        const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
        if (ih >= 0 && ih < p.h_in) rows[count++] = in + ih * p.w_in;
      }
      float* out = y + (plane * p.h_out + oh) * p.w_out;
      if constexpr (kStride == 1)
        detail::maxPoolRow3x3Stride1(rows, count, blocks, out);
      else
        detail::maxPoolRow3x3Stride2(rows, count, blocks, out, [](__m512 v) { return v; });
    }
  }
}
#pragma GCC diagnostic pop
#endif

/// ChannelVectors' op for max pooling (padding is -inf).
struct Maximum {
  using Lanes = detail::ChannelVectors::Lanes;
  void start(int, Lanes& m) const { m = -std::numeric_limits<float>::infinity() - Lanes{}; }
  void tap(int64_t, int, Lanes&) const {}
  void operator()(Lanes& m, const Lanes& in, const Lanes&) const { m = m < in ? in : m; }
  void finish(int, Lanes&) const {}
};

/// ChannelVectors' op for average pooling where every window is divided by
/// its whole size (no padding, or count_include_pad; padding is 0): the
/// taps summed in poolElement's order, then divided, as poolElement does.
struct Average {
  using Lanes = detail::ChannelVectors::Lanes;
  float count;
  void start(int, Lanes& m) const { m = Lanes{}; }
  void tap(int64_t, int, Lanes&) const {}
  void operator()(Lanes& m, const Lanes& in, const Lanes&) const { m += in; }
  void finish(int, Lanes& m) const { m = m / count; }
};

/// 2-D pooling on blocks of 16 planes in the vector lanes, the padding
/// `padding`.
template <typename Op>
void poolVectors(const detail::ChannelVectors& vectors, const PoolParams& p, const float* x,
                 float* y, const Team& team, float padding, const Op& op) {
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  float* buffer = detail::scratch(vectors.scratchSize());
  vectors.prepare(padding, buffer);
  constexpr int64_t kBlock = detail::ChannelVectors::kLanes;
  const Range blocks = team.split(p.n_c / kBlock);
  for (int64_t b = blocks.begin; b < blocks.end; ++b)
    vectors.run(x + b * kBlock * inSpatial, inSpatial, op, y + b * kBlock * spatial, spatial,
                buffer);
}

template <bool kMax>
void pool(const PoolParams& p, const float* x, float* y, const Team& team) {
  const int64_t inPlane = p.d_in * p.h_in * p.w_in;
  const int64_t outPlane = p.d_out * p.h_out * p.w_out;
  const bool planar = p.d_in == 1 && p.d_out == 1 && p.k_d == 1 && p.pad_front == 0;
  if (planar) {
    const detail::ChannelVectors vectors({p.h_in, p.w_in, p.h_out, p.w_out, p.k_h, p.k_w,
                                          p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,
                                          p.pad_top, p.pad_left});
    if constexpr (kMax) {
      // Channel vectors where a block fits in L2 (faster than rows at 55x55
      // and 56x56, strides 1 and 2, once their loads were aligned), rows
      // beyond (bench/micro/run.sh; bench/history/2026-11-code-comment-measurements.md).
      const Range planes = team.split(p.n_c);
#if CGC_ISA_SKX
      // Faster than channel vectors on the stems' 55x55 to 112x112 planes at
      // stride 2 and on GoogLeNet's 28x28 and 14x14 ones.
      if (p.k_h == 3 && p.k_w == 3 && p.dilation_w == 1 && (p.stride_w == 1 || p.stride_w == 2))
        return p.stride_w == 1 ? maxPool3x3<1>(p, x, y, planes) : maxPool3x3<2>(p, x, y, planes);
#endif
      if (vectors.fits(p.n_c))
        return poolVectors(vectors, p, x, y, team, -std::numeric_limits<float>::infinity(),
                           Maximum{});
      switch (p.stride_w) {
        case 1:
          return maxPoolRows<1>(p, x, y, planes);
        case 2:
          return maxPoolRows<2>(p, x, y, planes);
        default:
          return maxPoolRows<0>(p, x, y, planes);
      }
    } else {
      // Channel vectors where every window has the same divisor: several
      // times faster than rows on Inception-v3's 17x17 and 35x35 pools.
      const bool wholeWindows = p.count_include_pad ||
                                (p.pad_top == 0 && p.pad_left == 0 &&
                                 (p.h_out - 1) * p.stride_h + (p.k_h - 1) * p.dilation_h < p.h_in &&
                                 (p.w_out - 1) * p.stride_w + (p.k_w - 1) * p.dilation_w < p.w_in);
      if (wholeWindows && vectors.fits(p.n_c))
        return poolVectors(vectors, p, x, y, team, 0.0f,
                           Average{static_cast<float>(p.k_h * p.k_w)});
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

namespace {

void globalAvgPoolPlain(int64_t n_c, int64_t spatial, const float* x, float* y, const Team& team) {
  // A float sum over a large plane drifts by 1e-4, a double one is a
  // latency-bound scalar chain (a visible share of PaddleOCR's and
  // SqueezeNet's time): float vectors sum blocks of up to 1024
  // (64 elements per lane), four chains at a time, the blocks and the last
  // few elements add up in double.
  constexpr int64_t kBlock = 1024;
  const Range planes = team.split(n_c, 16);
  for (int64_t i = planes.begin; i < planes.end; ++i) {
    const float* plane = x + i * spatial;
    double sum = 0.0;
    int64_t s = 0;
    while (spatial - s >= kLanes) {
      const int64_t end = s + std::min(kBlock, (spatial - s) / kLanes * kLanes);
      Lanes lanes[4] = {};
      for (; s + 4 * kLanes <= end; s += 4 * kLanes)
        for (int v = 0; v < 4; ++v) lanes[v] += simd::load(plane + s + v * kLanes);
      for (; s < end; s += kLanes) lanes[0] += simd::load(plane + s);
      const Lanes total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
      for (int64_t l = 0; l < kLanes; ++l) sum += total[l];
    }
    for (; s < spatial; ++s) sum += plane[s];
    y[i] = spatial > 0 ? static_cast<float>(sum / static_cast<double>(spatial)) : 0.0f;
  }
}

void globalAvgPoolBlocked(int64_t n_c, int64_t spatial, const float* x, float* y,
                          const Team& team) {
  // A position is a vector of 16 channels (simd::kPerBlock registers):
  // runs of up to 64 positions sum in float vectors, two chains at a time,
  // and the runs in double (the drift bound of globalAvgPoolPlain).
  constexpr int64_t kRun = 64;
  const Range blocks = team.split(n_c / kChannelBlock);
  for (int64_t b = blocks.begin; b < blocks.end; ++b) {
    double sum[kChannelBlock] = {};
    for (int part = 0; part < simd::kPerBlock; ++part) {
      const float* block = x + b * spatial * kChannelBlock + part * kLanes;
      for (int64_t s0 = 0; s0 < spatial; s0 += kRun) {
        const int64_t s1 = std::min(spatial, s0 + kRun);
        Lanes lanes[2] = {};
        int64_t s = s0;
        for (; s + 2 <= s1; s += 2)
          for (int v = 0; v < 2; ++v) lanes[v] += simd::load(block + (s + v) * kChannelBlock);
        if (s < s1) lanes[0] += simd::load(block + s * kChannelBlock);
        const Lanes total = lanes[0] + lanes[1];
        for (int64_t l = 0; l < kLanes; ++l) sum[part * kLanes + l] += total[l];
      }
    }
    for (int64_t l = 0; l < kChannelBlock; ++l)
      y[b * kChannelBlock + l] =
          spatial > 0 ? static_cast<float>(sum[l] / static_cast<double>(spatial)) : 0.0f;
  }
}

}  // namespace

void global_avg_pool(const GlobalPoolParams& p, const float* x, float* y, const Team& team) {
  if (p.blocked)
    globalAvgPoolBlocked(p.n_c, p.spatial, x, y, team);
  else
    globalAvgPoolPlain(p.n_c, p.spatial, x, y, team);
}

}  // namespace cgc::rt
