// Convolution and transposed convolution over 1, 2 or 3 spatial dims.
// conv picks a strategy per layer shape:
//  - Winograd weights (the pack-conv-weights pass, where
//    convPrefersWinograd: 3x3 at stride 1 on 13x13 planes or more):
//    Winograd F(2x2, 3x3), winograd.cpp;
//  - packed weights (the pack-conv-weights pass, where
//    convPrefersPackedWeights): gemmPacked, vectorised along output
//    channels, reads the (zero-padded) input in place through index tables,
//    NCHW or channel-blocked, and stores its vectors of channels into a
//    channel-blocked y as they are, or transposes them into an NCHW one;
//  - few input channels (RGB stems): a direct loop, 8 output channels x 32
//    positions per register block, over the input planes' stride phases;
//  - pointwise (1x1, stride 1, no padding): already a GEMM on NCHW,
//    Y[c_out, HW] = W[c_out, c_in] X[c_in, HW], no copies;
//  - depthwise 2-D (groups == c_in == c_out; a GEMM of depth k_h * k_w
//    would waste the micro-kernel): 3x3 windows at stride 2, in rows of 12
//    to 15 outputs, or on planes too large for the next choice, 16 outputs
//    of a row in registers straight from NCHW (AVX-512, the stores masked
//    in rows under 16); on planes up to L2's size, 16 channels
//    per vector (channel_vectors.h); else a direct loop per channel over
//    the plane's stride phases (plane_phases.h);
//  - otherwise im2col of a chunk of output columns into per-thread scratch,
//    then the GEMM on that chunk (the chunk is sized so its column matrix
//    stays in L2 while the GEMM reads it).
// Bias, residual and activation are the GEMM block epilogue (gemm_core.h).
// conv_transpose is GEMM + col2im, the team splitting output channels.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "cgc/kernels.h"
#include "channel_vectors.h"
#include "conv_support.h"
#include "gemm_core.h"
#include "plane_phases.h"
#include "row_blocks.h"
#include "scratch.h"

namespace cgc::rt {
namespace {

using detail::activationBounds;
using detail::Bounds;
using detail::epilogueOf;
using detail::padInput;
using detail::scratch;

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

namespace {

/// Output positions [lo, hi) whose input column ow * stride + offset lies in
/// [0, width).
Range validColumns(int64_t outWidth, int64_t width, int64_t stride,
                   int64_t offset) {
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t last = width - offset - 1;
  int64_t hi = last < 0 ? 0 : last / stride + 1;
  hi = std::min(hi, outWidth);
  return {std::min(lo, hi), hi};
}

/// col[(c * taps + tap) * cols + s - s0] = x[c] at the input position that
/// output position s (flattened (od, oh, ow), s0 <= s < s1) reads with that
/// tap, 0 in the padding.
void im2col(const ConvParams& p, const float* xg, int64_t channels, int64_t s0,
            int64_t s1, float* col) {
  const int64_t cols = s1 - s0;
  const int64_t taps = p.k_d * p.k_h * p.k_w;
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  const int64_t outPlane = p.h_out * p.w_out;
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = xg + c * inSpatial;
    int64_t tap = 0;
    for (int64_t kd = 0; kd < p.k_d; ++kd)
      for (int64_t kh = 0; kh < p.k_h; ++kh)
        for (int64_t kw = 0; kw < p.k_w; ++kw, ++tap) {
          float* dst = col + (c * taps + tap) * cols;
          const int64_t offset = kw * p.dilation_w - p.pad_left;
          const Range valid = validColumns(p.w_out, p.w_in, p.stride_w, offset);
          for (int64_t s = s0; s < s1;) {
            const int64_t od = s / outPlane, oh = s % outPlane / p.w_out;
            const int64_t ow0 = s % p.w_out;
            const int64_t ow1 = std::min(p.w_out, ow0 + (s1 - s));
            const int64_t id = od * p.stride_d - p.pad_front + kd * p.dilation_d;
            const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
            float* out = dst - ow0;  // out[ow] for ow in [ow0, ow1)
            if (id < 0 || id >= p.d_in || ih < 0 || ih >= p.h_in) {
              std::fill(out + ow0, out + ow1, 0.0f);
            } else {
              const float* row = plane + (id * p.h_in + ih) * p.w_in + offset;
              const int64_t lo = std::clamp(valid.begin, ow0, ow1);
              const int64_t hi = std::clamp(valid.end, lo, ow1);
              std::fill(out + ow0, out + lo, 0.0f);
              if (p.stride_w == 1)
                std::copy(row + lo, row + hi, out + lo);
              else if (p.stride_w == 2)  // a constant stride GCC vectorises
                for (int64_t ow = lo; ow < hi; ++ow) out[ow] = row[ow * 2];
              else
                for (int64_t ow = lo; ow < hi; ++ow) out[ow] = row[ow * p.stride_w];
              std::fill(out + hi, out + ow1, 0.0f);
            }
            dst += ow1 - ow0;
            s += ow1 - ow0;
          }
        }
  }
}

bool isDepthwise2d(const ConvParams& p) {
  return p.groups == p.c_in && p.groups == p.c_out && p.k_d == 1 &&
         p.d_in == 1 && p.d_out == 1;
}

detail::Window2d windowOf(const ConvParams& p) {
  return {p.h_in, p.w_in, p.h_out, p.w_out, p.k_h, p.k_w, p.stride_h, p.stride_w,
          p.dilation_h, p.dilation_w, p.pad_top, p.pad_left};
}

/// ChannelVectors' op for depthwise convolution: sum = bias, sum += w[tap]
/// * in, then the activation (a residual is added after, on the planes).
struct MultiplyAdd {
  using Lanes = detail::ChannelVectors::Lanes;
  const float* weights;  // [tap][16 channels]
  Lanes bias, low, high;
  void start(Lanes& sum) const { sum = bias; }
  void tap(int64_t t, Lanes& w) const {
    std::memcpy(&w, weights + t * detail::ChannelVectors::kLanes, sizeof w);
  }
  void operator()(Lanes& sum, const Lanes& in, const Lanes& w) const { sum += w * in; }
  void finish(Lanes& sum) const {  // std::clamp, lane by lane
    sum = sum < low ? low : sum;
    sum = high < sum ? high : sum;
  }
};

/// Depthwise convolution on blocks of 16 channels in the vector lanes
/// (channel_vectors.h), the epilogue fused unless there is a residual.
void depthwiseVectors(const detail::ChannelVectors& vectors, const ConvParams& p,
                      const float* x, const float* w, const float* bias,
                      const float* residual, float* y, const Team& team) {
  constexpr int64_t kLanes = detail::ChannelVectors::kLanes;
  using Lanes = MultiplyAdd::Lanes;
  const int64_t taps = p.k_h * p.k_w;
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  float* buffer = scratch(vectors.scratchSize() + taps * kLanes);
  float* weights = buffer + vectors.scratchSize();
  vectors.prepare(0.0f, buffer);
  const float inf = std::numeric_limits<float>::infinity();
  const bool fused = residual == nullptr;
  const Bounds bounds = fused ? activationBounds(p) : Bounds{-inf, inf};
  MultiplyAdd op{weights, Lanes{}, bounds.low - Lanes{}, bounds.high - Lanes{}};
  const int64_t blocks = p.c_out / kLanes;
  const Range work = team.split(p.n * blocks);
  for (int64_t item = work.begin; item < work.end; ++item) {
    const int64_t n = item / blocks, c0 = item % blocks * kLanes;
    detail::transpose(w + c0 * taps, taps, kLanes, taps, weights, kLanes);
    if (fused && bias) std::memcpy(&op.bias, bias + c0, sizeof op.bias);
    float* yb = y + (n * p.c_out + c0) * spatial;
    vectors.run(x + (n * p.c_out + c0) * inSpatial, inSpatial, op, yb, spatial, buffer);
    if (!fused)
      detail::applyEpilogue(epilogueOf(p, bias, residual, n, 0).at(c0, 0), kLanes, spatial, yb,
                            spatial);
  }
}

/// Stores PlanePhases' output rows `rows` into the plane `out` with the
/// epilogue: act(v + bias + residual) (a copy and then applyEpilogue per
/// plane cost more than the taps).
void storeWithEpilogue(const ConvParams& p, const detail::PlanePhases& phases,
                       const float* rows, float bias, const float* residual, float* out,
                       int64_t begin = 0, int64_t end = -1) {
  const Bounds bounds = activationBounds(p);
  const float lo = bounds.low, hi = bounds.high;
  if (residual)
    phases.store(rows, out, [&](float v, int64_t i) { return std::clamp(v + bias + residual[i], lo, hi); },
                 begin, end);
  else
    phases.store(rows, out, [&](float v, int64_t) { return std::clamp(v + bias, lo, hi); }, begin, end);
}

/// One channel plane per work item, split over the team; each plane goes
/// through PlanePhases, and each block of outputs through every tap while
/// its sums stay in registers.
void depthwise(const ConvParams& p, const float* x, const float* w,
               const float* bias, const float* residual, float* y,
               const Team& team) {
  using detail::PlanePhases;
  const PlanePhases phases(p.h_in, p.w_in, p.h_out, p.w_out, p.k_h, p.k_w, p.stride_h,
                           p.stride_w, p.dilation_h, p.dilation_w, p.pad_top, p.pad_left);
  typedef float Lanes __attribute__((vector_size(PlanePhases::kLanes * sizeof(float))));
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  float* buffer = scratch(phases.scratchSize());
  float* acc = phases.outputs(buffer);
  const std::vector<int64_t>& taps = phases.tapOffsets();
  const Range planes = team.split(p.n * p.c_out);
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    const int64_t c = plane % p.c_out;
    phases.fill(x + plane * inSpatial, 0.0f, buffer);
    const float* wc = w + c * p.k_h * p.k_w;
    const float b = bias ? bias[c] : 0.0f;
    // Each sum is a chain of dependent FMAs, one per tap: two blocks at a
    // time keep 8 chains in flight, enough to cover the FMA latency.
    auto block = [&]<int kVectors>(int64_t j) {
      Lanes sum[kVectors];
      for (Lanes& v : sum) v = b - Lanes{};
      for (size_t t = 0; t < taps.size(); ++t) {
        const float* src = buffer + taps[t] + j;
        const float wv = wc[t];
        for (int v = 0; v < kVectors; ++v) {
          Lanes in;
          std::memcpy(&in, src + v * PlanePhases::kLanes, sizeof in);
          sum[v] += wv * in;
        }
      }
      std::memcpy(acc + j, sum, sizeof sum);
    };
    int64_t j = 0;
    for (; j + 2 * PlanePhases::kSlack <= phases.length(); j += 2 * PlanePhases::kSlack)
      block.template operator()<2 * PlanePhases::kBlock>(j);
    for (; j < phases.length(); j += PlanePhases::kSlack)
      block.template operator()<PlanePhases::kBlock>(j);
    storeWithEpilogue(p, phases, acc, 0.0f, residual ? residual + plane * spatial : nullptr,
                      y + plane * spatial);
  }
}

#ifdef __AVX512F__
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at -O3 (a false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// Whether depthwiseRows takes p: 3x3 windows, stride 1 or 2 in both axes,
/// no dilation.
bool takesDepthwiseRows(const ConvParams& p) {
  return isDepthwise2d(p) && p.k_h == 3 && p.k_w == 3 && p.stride_h == p.stride_w &&
         (p.stride_w == 1 || p.stride_w == 2) && p.dilation_h == 1 && p.dilation_w == 1;
}

/// Whether depthwiseRows beats channel vectors (which fit or not): rows of
/// 12 to 15 outputs, one block each with at most 4 lanes idle (MobileNetV2's
/// 14x14 layers: 1.4-1.5x faster at stride 1, 1.6x at stride 2); wider
/// rows at stride 2 (1.2-1.3x on its 112x112 and 56x56 layers), where
/// channel vectors transpose four inputs in for every output; and wherever
/// channel vectors do not fit (1.3x faster than PlanePhases at 112x112).
/// Rows of 7 (half the lanes idle) ran 1.1-1.6x slower, wide rows at stride
/// 1 within 5% either way.
bool prefersDepthwiseRows(const ConvParams& p, bool vectorsFit) {
  constexpr int64_t kMinRow = 12;
  if (!takesDepthwiseRows(p)) return false;
  if (!vectorsFit) return true;
  return p.w_out >= kMinRow && (p.w_out < 16 || p.stride_w == 2);
}

/// Depthwise 3x3 convolution straight from the NCHW planes, 16 outputs of a
/// row at a time in registers (row_blocks.h): per input row, the 18 (stride 1) or 33
/// (stride 2) columns under them are two or three loads, the three taps'
/// columns come out of them by align and permute instructions, and the
/// epilogue runs before the one store. No copy of the input: channel
/// vectors transpose four inputs in for every output at stride 2, and
/// PlanePhases copies every plane into its phases first.
template <int kStride>
void depthwiseRows(const ConvParams& p, const float* x, const float* w, const float* bias,
                   const float* residual, float* y, const Team& team) {
  const __m512 zero = _mm512_setzero_ps();
  const Bounds bounds = activationBounds(p);
  const __m512 lo = _mm512_set1_ps(bounds.low), hi = _mm512_set1_ps(bounds.high);
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  const std::vector<detail::RowBlock> blocks = detail::rowBlocks(p.w_out, p.w_in, kStride, p.pad_left);
  const Range planes = team.split(p.n * p.c_out);
  for (int64_t plane = planes.begin; plane < planes.end; ++plane) {
    const int64_t c = plane % p.c_out;
    const float* in = x + plane * inSpatial;
    __m512 taps[9];
    for (int t = 0; t < 9; ++t) taps[t] = _mm512_set1_ps(w[c * 9 + t]);
    const __m512 b = _mm512_set1_ps(bias ? bias[c] : 0.0f);
    for (int64_t oh = 0; oh < p.h_out; ++oh) {
      float* out = y + plane * spatial + oh * p.w_out;
      const float* res = residual ? residual + plane * spatial + oh * p.w_out : nullptr;
      for (const detail::RowBlock& block : blocks) {
        const int64_t ow = block.ow, first = block.first;
        __m512 sum[3] = {b, zero, zero};  // one chain per kernel row
        for (int kh = 0; kh < 3; ++kh) {
          const int64_t ih = oh * kStride - p.pad_top + kh;
          if (ih < 0 || ih >= p.h_in) continue;
          const float* row = in + ih * p.w_in;
          const __m512 v0 = _mm512_maskz_loadu_ps(block.lanes[0], row + first);
          const __m512 v1 = _mm512_maskz_loadu_ps(block.lanes[1], row + first + 16);
          __m512 t0, t1, t2;
          if constexpr (kStride == 1) {
            t0 = v0;
            t1 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(v1), _mm512_castps_si512(v0), 1));
            t2 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(v1), _mm512_castps_si512(v0), 2));
          } else {
            const __m512 v2 = _mm512_maskz_loadu_ps(block.lanes[2], row + first + 32);
            detail::strideTwoTaps(v0, v1, v2, t0, t1, t2);
          }
          sum[kh] = _mm512_fmadd_ps(taps[kh * 3], t0, sum[kh]);
          sum[kh] = _mm512_fmadd_ps(taps[kh * 3 + 1], t1, sum[kh]);
          sum[kh] = _mm512_fmadd_ps(taps[kh * 3 + 2], t2, sum[kh]);
        }
        __m512 v = _mm512_add_ps(_mm512_add_ps(sum[0], sum[1]), sum[2]);
        if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(block.outputs, res + ow));
        _mm512_mask_storeu_ps(out + ow, block.outputs, _mm512_min_ps(hi, _mm512_max_ps(lo, v)));
      }
    }
  }
}
#pragma GCC diagnostic pop
#endif

/// Few input channels on a large image (stem layers: RGB in, depth 27 to
/// 147), where im2col copies as many floats as the GEMM then multiplies per
/// output and the packed kernel's tiles would run a handful of steps each.
/// Not for strides past 2 (Silero's STFT: stride 64, 8 outputs), whose
/// phases the direct loop would mostly compute and drop.
bool isFewChannels(const ConvParams& p) {
  constexpr int64_t kMaxChannels = 4, kMinPositions = 256;
  return p.groups == 1 && p.c_in <= kMaxChannels && p.k_d == 1 && p.d_in == 1 &&
         p.d_out == 1 && p.stride_h <= 2 && p.stride_w <= 2 &&
         p.h_out * p.w_out >= kMinPositions;
}

/// sums[o * ldSums + i] = sum over input planes c and taps t of
/// weights[(c * taps + t) * C + o] * planes[c * planeSize + tapOffsets[t] + i],
/// for C channels and i < 16 V.
template <int C, int V>
void fewChannelsBlock(const float* planes, int64_t planeSize, int64_t inChannels,
                      const int64_t* tapOffsets, int64_t taps, const float* weights,
                      float* sums, int64_t ldSums) {
  typedef float Lanes __attribute__((vector_size(16 * sizeof(float))));
  Lanes sum[C][V];
  for (int o = 0; o < C; ++o)
    for (int v = 0; v < V; ++v) sum[o][v] = Lanes{};
  for (int64_t c = 0; c < inChannels; ++c)
    for (int64_t t = 0; t < taps; ++t) {
      const float* src = planes + c * planeSize + tapOffsets[t];
      Lanes in[V];
      for (int v = 0; v < V; ++v) std::memcpy(&in[v], src + v * 16, sizeof(Lanes));
      const float* wk = weights + (c * taps + t) * C;
      for (int o = 0; o < C; ++o)
        for (int v = 0; v < V; ++v) sum[o][v] += wk[o] * in[v];
    }
  for (int o = 0; o < C; ++o)
    for (int v = 0; v < V; ++v) std::memcpy(sums + o * ldSums + v * 16, &sum[o][v], sizeof(Lanes));
}

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at -O3 (a false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// The rows of a 3x3, stride-2 max pooling that a stem convolution stores
/// instead of its output (ConvParams::pool_h_out > 0).
struct StemPool {
  const ConvParams& p;

  bool on() const { return p.pool_h_out > 0; }
  /// Rows of y: pooled rows when pooling.
  int64_t rows() const { return on() ? p.pool_h_out : p.h_out; }
  int64_t spatial() const { return on() ? p.pool_h_out * p.pool_w_out : p.h_out * p.w_out; }
  /// The most convolution rows that `band` rows of y read.
  int64_t convolutionRows(int64_t band) const { return on() ? std::min(p.h_out, 2 * band + 1) : band; }
  /// The convolution rows that rows [r0, r1) of y read.
  Range convolutionRows(int64_t r0, int64_t r1) const {
    if (!on()) return {r0, r1};
    return {std::max<int64_t>(0, 2 * r0 - p.pool_pad_top),
            std::min(p.h_out, 2 * (r1 - 1) - p.pool_pad_top + 3)};
  }

  /// Pools rows [r0, r1) of y (the plane at `out`) from the convolution
  /// rows in `sums` (from row `first`, `stride` apart), then adds `bias`
  /// and applies the activation: both commute with the maximum, as the
  /// activations are non-decreasing.
  void store(const float* sums, int64_t first, int64_t stride, int64_t r0, int64_t r1,
             float bias, float* out) const {
    const Bounds bounds = activationBounds(p);
    const float lo = bounds.low, hi = bounds.high;
#ifdef __AVX512F__
    const std::vector<detail::RowBlock> blocks =
        detail::rowBlocks(p.pool_w_out, p.w_out, 2, p.pool_pad_left);
    const __m512 b = _mm512_set1_ps(bias), low = _mm512_set1_ps(lo), high = _mm512_set1_ps(hi);
    for (int64_t r = r0; r < r1; ++r) {
      const float* rows[3];
      int count = 0;
      for (int64_t k = 0; k < 3; ++k) {
        const int64_t row = 2 * r - p.pool_pad_top + k;
        if (row >= 0 && row < p.h_out) rows[count++] = sums + (row - first) * stride;
      }
      detail::maxPoolRow3x3Stride2(rows, count, blocks, out + r * p.pool_w_out, [&](__m512 v) {
        return _mm512_min_ps(high, _mm512_max_ps(low, _mm512_add_ps(v, b)));
      });
    }
#else
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < p.pool_w_out; ++c) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t row = std::max<int64_t>(0, 2 * r - p.pool_pad_top);
             row < std::min(p.h_out, 2 * r - p.pool_pad_top + 3); ++row)
          for (int64_t col = std::max<int64_t>(0, 2 * c - p.pool_pad_left);
               col < std::min(p.w_out, 2 * c - p.pool_pad_left + 3); ++col)
            m = std::max(m, sums[(row - first) * stride + col]);
        out[r * p.pool_w_out + c] = std::clamp(m + bias, lo, hi);
      }
#endif
  }
};
#pragma GCC diagnostic pop

/// Direct convolution for few input channels, in bands of output rows:
/// the input rows under a band go through PlanePhases, then blocks of 32
/// output positions of 8 output channels sum every tap of every input plane
/// in registers (16 sums, each input vector loaded once for 8 channels), and
/// leave through the epilogue, or through a max pooling (StemPool). A band's
/// phases and sums stay in L2 while its 8-channel blocks pass. The team
/// splits the rows of y, so each thread copies only the input rows it
/// reads; a plane of fewer rows (1-D) splits the blocks of 8 channels
/// instead. When every thread copied the whole image and then split the
/// channels, ResNet-50's stem on 2 threads ran 15% slower, on an image fresh
/// from memory.
void convFewChannels(const ConvParams& p, const float* x, const float* w,
                     const float* bias, const float* residual, float* y,
                     const Team& team) {
  using detail::PlanePhases;
  constexpr int64_t kLanes = PlanePhases::kLanes, kVectors = 2, kChannels = 8;
  // Rows of y per band: about 16 rows of convolution either way; pooled
  // bands recompute the row they share, so they are as large as L2 allows.
  const StemPool pool{p};
  const int64_t bandRows = pool.on() ? 32 : 16;
  auto phasesOf = [&](Range convolutionRows) {
    return PlanePhases(p.h_in, p.w_in, convolutionRows.size(), p.w_out, p.k_h, p.k_w,
                       p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,
                       p.pad_top - convolutionRows.begin * p.stride_h, p.pad_left);
  };
  const int64_t inSpatial = p.h_in * p.w_in, spatial = pool.spatial();
  const int64_t depth = p.c_in * p.k_h * p.k_w;
  const int64_t blocks = (p.c_out + kChannels - 1) / kChannels;
  const bool splitRows = pool.rows() >= 4 * team.size();
  const Range rows = splitRows ? team.split(pool.rows()) : Range{0, pool.rows()};
  const Range channelBlocks = splitRows ? Range{0, blocks} : team.split(blocks);
  if (rows.size() <= 0 || channelBlocks.size() <= 0) return;
  const PlanePhases largest =
      phasesOf({0, pool.convolutionRows(std::min(bandRows, rows.size()))});
  float* weights = scratch(channelBlocks.size() * depth * kChannels +
                           p.c_in * largest.fillSize() + kChannels * largest.length());
  float* planes = weights + channelBlocks.size() * depth * kChannels;
  float* sums = planes + p.c_in * largest.fillSize();  // [8 channels][length]
  // weights[(block * depth + c * taps + t) * 8 + o]
  for (int64_t block = channelBlocks.begin; block < channelBlocks.end; ++block) {
    float* packed = weights + (block - channelBlocks.begin) * depth * kChannels;
    for (int64_t k = 0; k < depth; ++k)
      for (int64_t o = 0; o < kChannels; ++o) {
        const int64_t channel = block * kChannels + o;
        packed[k * kChannels + o] = channel < p.c_out ? w[channel * depth + k] : 0.0f;
      }
  }
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t r0 = rows.begin; r0 < rows.end; r0 += bandRows) {
      const int64_t r1 = std::min(r0 + bandRows, rows.end);
      const Range convolutionRows = pool.convolutionRows(r0, r1);
      const PlanePhases phases = phasesOf(convolutionRows);
      const std::vector<int64_t>& taps = phases.tapOffsets();
      const int64_t planeSize = phases.fillSize();
      for (int64_t c = 0; c < p.c_in; ++c)
        phases.fill(x + (n * p.c_in + c) * inSpatial, 0.0f, planes + c * planeSize);
      for (int64_t block = channelBlocks.begin; block < channelBlocks.end; ++block) {
        const int64_t o0 = block * kChannels, count = std::min(kChannels, p.c_out - o0);
        const float* packed = weights + (block - channelBlocks.begin) * depth * kChannels;
        auto sumBlocks = [&](int64_t j) {
          fewChannelsBlock<kChannels, kVectors>(planes + j, planeSize, p.c_in, taps.data(),
                                                static_cast<int64_t>(taps.size()), packed,
                                                sums + j, phases.length());
        };
        if (pool.on()) {
          for (int64_t j = 0; j < phases.length(); j += kVectors * kLanes) sumBlocks(j);
          for (int64_t o = 0; o < count; ++o)
            pool.store(sums + o * phases.length(), convolutionRows.begin, phases.rowStride(), r0,
                       r1, bias ? bias[o0 + o] : 0.0f, y + (n * p.c_out + o0 + o) * spatial);
          continue;
        }
        // The output is fresh from memory in a model. Its lines are
        // prefetched for writing a few blocks ahead of the sums, and each
        // row leaves as soon as its sums are complete, so the stores overlap
        // the sums (stores that missed cost ResNet-50's stem 12% on 2
        // threads; one store pass per block, a further 2-7%).
        const int64_t band = r1 - r0;
        auto storeRows = [&](int64_t begin, int64_t end) {
          for (int64_t o = 0; o < count; ++o) {
            const int64_t first = (n * p.c_out + o0 + o) * spatial + r0 * p.w_out;
            storeWithEpilogue(p, phases, sums + o * phases.length(), bias ? bias[o0 + o] : 0.0f,
                              residual ? residual + first : nullptr, y + first, begin, end);
          }
        };
        int64_t stored = 0;
        for (int64_t j = 0; j < phases.length(); j += kVectors * kLanes) {
          const int64_t ahead = j + 4 * kVectors * kLanes, row = ahead / phases.rowStride();
          if (row < band)
            for (int64_t o = 0; o < count; ++o) {
              const float* at = y + (n * p.c_out + o0 + o) * spatial + (r0 + row) * p.w_out +
                                std::min(ahead % phases.rowStride(), p.w_out - 1);
              __builtin_prefetch(at, 1, 3);
              __builtin_prefetch(at + kLanes, 1, 3);
            }
          sumBlocks(j);
          const int64_t complete = std::min(band, (j + kVectors * kLanes) / phases.rowStride());
          if (complete > stored) storeRows(stored, complete);
          stored = std::max(stored, complete);
        }
        if (stored < band) storeRows(stored, band);
      }
    }
}

/// Columns of the im2col matrix per chunk: about 512 KiB of it, whole
/// micro-kernel blocks.
int64_t columnChunk(int64_t depth) {
  const int64_t cols = (128 * 1024 / std::max<int64_t>(depth, 1)) / 16 * 16;
  return std::max<int64_t>(cols, 128);
}

/// Output channels the packed kernel computes: c_out rounded up to 16 (the
/// packed weights of the extra ones are zero and their results dropped).
int64_t packedChannels(const ConvParams& p) { return (p.c_out + 15) / 16 * 16; }

/// Group 1 on packed weights. gemmPacked reads the input in place through
/// two index tables, B(c * taps + tap, s) = in[offsets[c, tap] +
/// positions[s]], from a zero-padded copy where the windows reach past the
/// image: no im2col matrix, and either input layout. The team splits output
/// channels (in 16s) and positions as for a GEMM; each thread takes chunks
/// of its positions and, one panel of its channels at a time, runs
/// gemmPacked. A channel-blocked y takes its vectors of channels as they
/// are, the epilogue applied in registers; an NCHW one gets them in scratch
/// laid out [position][channel], transposed into y with the epilogue while
/// the block is still in L1.
void convPacked(const ConvParams& p, const float* x, const float* w,
                const float* bias, const float* residual, float* y,
                const Team& team) {
  const int64_t taps = p.k_d * p.k_h * p.k_w, kSize = p.c_in * taps;
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  const int64_t outPlane = p.h_out * p.w_out, spatial = p.d_out * outPlane;
  const int64_t channels = packedChannels(p), channelBlocks = channels / 16;
  detail::OutputSplit split{1, 1};
  detail::Block blk{{0, channelBlocks}, {0, spatial}};
  if (team.size() > 1) {
    split = detail::splitOutput(channels, spatial, kSize, team.size());
    blk = detail::blockOf(split, channelBlocks, spatial, team.thread());
  }

  const int64_t d = (p.d_out - 1) * p.stride_d + (p.k_d - 1) * p.dilation_d + 1;
  const int64_t h = (p.h_out - 1) * p.stride_h + (p.k_h - 1) * p.dilation_h + 1;
  const int64_t wd = (p.w_out - 1) * p.stride_w + (p.k_w - 1) * p.dilation_w + 1;
  const bool inPlace = p.pad_front == 0 && p.pad_top == 0 && p.pad_left == 0 &&
                       d <= p.d_in && h <= p.h_in && wd <= p.w_in;
  // Where the team splits only channels, every thread reads the whole
  // padded image: they pad it once, together, into thread 0's scratch
  // (each its share of the channels), instead of each all of it (4-6% of a
  // 3x3 layer on two threads).
  const bool sharedPadding = !inPlace && split.tj == 1 && team.size() > 1;
  const bool idle = blk.rows.size() <= 0 || blk.cols.size() <= 0;
  if (idle && !sharedPadding) return;
  const int64_t o0 = blk.rows.begin * 16, o1 = blk.rows.end * 16;
  const int64_t rows = inPlace ? p.h_in : h, cols = inPlace ? p.w_in : wd;
  const int64_t volume = (inPlace ? p.d_in : d) * rows * cols;
  // Input channel c lies in plane c / lanes, at lane c % lanes of each
  // element.
  const int64_t lanes = p.blocked_input ? kChannelBlock : 1, planes = p.c_in / lanes;
  int64_t* offsets = scratch<int64_t>(kSize + blk.cols.size());
  int64_t* positions = offsets + kSize - blk.cols.begin;  // positions[s]
  for (int64_t c = 0, i = 0; c < p.c_in; ++c)
    for (int64_t kd = 0; kd < p.k_d; ++kd)
      for (int64_t kh = 0; kh < p.k_h; ++kh)
        for (int64_t kw = 0; kw < p.k_w; ++kw)
          offsets[i++] = c / lanes * volume * lanes + c % lanes +
                         ((kd * p.dilation_d * rows + kh * p.dilation_h) * cols +
                          kw * p.dilation_w) * lanes;
  for (int64_t s = blk.cols.begin; s < blk.cols.end; ++s)
    positions[s] = ((s / outPlane * p.stride_d * rows + s % outPlane / p.w_out * p.stride_h) *
                        cols + s % p.w_out * p.stride_w) * lanes;

  // What this thread pads: its planes of the whole image when shared,
  // else all planes of the rows its positions read.
  Range padPlanes{0, planes}, padRows{0, d * h};
  if (sharedPadding) {
    padPlanes = team.split(planes);
  } else if (d == 1) {
    padRows = {blk.cols.begin / p.w_out * p.stride_h,
               std::min(h, (blk.cols.end - 1) / p.w_out * p.stride_h +
                               (p.k_h - 1) * p.dilation_h + 1)};
  }
  constexpr int64_t kChunk = 96;  // positions: 64 x 96 floats of result fit L1
  float* transposed = scratch<float>(kChunk * detail::kPackedPanel +
                                     (inPlace ? 0 : p.c_in * volume));
  float* padded = transposed + kChunk * detail::kPackedPanel;
  if (sharedPadding) padded = team.shareFromFirst(padded);
  for (int64_t n = 0; n < p.n; ++n) {
    const float* in = x + n * p.c_in * inSpatial;
    if (!inPlace) {
      if (sharedPadding && n > 0) team.barrier();  // all done with image n - 1
      padInput(p, in, d, h, wd, padPlanes, padRows, lanes, padded);
      if (sharedPadding) team.barrier();
      in = padded;
    }
    if (idle) continue;
    float* yn = y + n * p.c_out * spatial;
    const detail::Epilogue e = epilogueOf(p, bias, residual, n, 0);
    const Bounds bounds = activationBounds(p);
    for (int64_t s0 = blk.cols.begin; s0 < blk.cols.end; s0 += kChunk) {
      const int64_t count = std::min(blk.cols.end, s0 + kChunk) - s0;
      for (int64_t o = o0; o < o1;) {
        const int64_t end =
            std::min(o1, (o / detail::kPackedPanel + 1) * detail::kPackedPanel);
        const int64_t width = end - o, real = std::min(end, p.c_out) - o;
        // Channel block o / 16 at position s0: o * spatial + 16 s0 in
        // either layout.
        const int64_t first = o * spatial + s0 * (p.blocked_output ? kChannelBlock : 1);
        if (p.blocked_output) {
          const detail::PackedOutput out{yn + first, kChannelBlock, spatial * kChannelBlock,
                                         bias ? bias + o : nullptr,
                                         e.residual ? e.residual + first : nullptr,
                                         bounds.low, bounds.high};
          detail::gemmPacked(channels, kSize, w, o, end, count, in, offsets, positions + s0, out);
        } else {
          detail::gemmPacked(channels, kSize, w, o, end, count, in, offsets, positions + s0,
                             detail::PackedOutput{transposed, width});
          detail::transpose(transposed, width, count, real, yn + first, spatial, e.at(o, s0));
        }
        o = end;
      }
    }
  }
  // Thread 0's scratch must outlive the others' reads, even where the
  // caller's threads end right after the call (found by AddressSanitizer on
  // the kernel tests, whose teams are threads started per call).
  if (sharedPadding) team.barrier();
}

}  // namespace

// Measured on one Zen 5 core (packed vs NCHW GFLOP/s): every 3x3 layer of
// ResNet-50 and SqueezeNet gains 20-50% (no im2col copy, full vectors),
// strided 1x1 layers -2 to +8%; pointwise layers gain 10-15% at 7x7 and
// mostly lose beyond (-18 to +12%), where the NCHW GEMM reads the input in
// place and the transpose back is not free. The exception, measured on 2
// threads with weights, input and output fresh from memory as in a model:
// 14x14 planes (196 positions: the NCHW GEMM's vectors of 16 positions
// waste 6% of their lanes) with 256 or more output channels gain 5-15%
// (ResNet-50's 1024-to-256, 256-to-1024 and 1024-to-512 layers, GoogLeNet's
// 528-to-256), helped by the packed kernel's weight prefetch that LIBXSMM's
// lacks. With 64 to 160 channels they lose 3-6%; SqueezeNet's 13x13
// classifier (4% of lanes wasted, 1000 channels) loses 2-3%, a 20x20 plane
// (none wasted) 5-10%.
bool convPrefersPackedWeights(const ConvParams& p) {
  constexpr int64_t kMaxPointwisePositions = 64, kMaxWidePointwisePositions = 196;
  constexpr int64_t kMinWidePointwiseChannels = 256;
  constexpr int64_t kMinDepth = 128;  // below, tile set-up and the transpose
                                      // outweigh the product (3-channel stems)
  // Channels are computed in 16s: at most a third more than c_out.
  if (p.groups != 1 || 3 * packedChannels(p) > 4 * p.c_out || isDepthwise2d(p) ||
      isFewChannels(p) || p.c_in * p.k_d * p.k_h * p.k_w < kMinDepth)
    return false;
  const int64_t positions = p.d_out * p.h_out * p.w_out;
  const int64_t wastedLanes = (positions + 15) / 16 * 16 - positions;
  return !isPointwise(p) || positions <= kMaxPointwisePositions ||
         (positions <= kMaxWidePointwisePositions && p.c_out >= kMinWidePointwiseChannels &&
          20 * wastedLanes >= positions);
}

bool convTakesBlockedInput(const ConvParams& p) {
  return p.groups == 1 && p.c_in % kChannelBlock == 0 && !isFewChannels(p);
}

bool convTakesBlockedOutput(const ConvParams& p) {
  return p.groups == 1 && p.c_out % kChannelBlock == 0 && !isFewChannels(p) &&
         p.pool_h_out == 0;
}

bool convFusesMaxPool(const ConvParams& conv, const PoolParams& pool) {
  return isFewChannels(conv) && conv.d_out == 1 && pool.d_out == 1 &&
         pool.k_d == 1 && pool.k_h == 3 && pool.k_w == 3 && pool.stride_h == 2 &&
         pool.stride_w == 2 && pool.dilation_h == 1 && pool.dilation_w == 1 &&
         pool.n_c == conv.n * conv.c_out && pool.h_in == conv.h_out && pool.w_in == conv.w_out;
}

int64_t packedConvWeightCount(const ConvParams& p) {
  return packedChannels(p) * (p.c_in / p.groups) * p.k_d * p.k_h * p.k_w;
}

void packConvWeights(const ConvParams& p, const float* w, float* packed) {
  const int64_t kSize = p.c_in / p.groups * p.k_d * p.k_h * p.k_w;
  const int64_t channels = packedChannels(p);
  std::fill_n(packed, channels * kSize, 0.0f);
  for (int64_t o = 0; o < p.c_out; ++o) {
    const int64_t panel = o / detail::kPackedPanel * detail::kPackedPanel;
    const int64_t width = std::min(detail::kPackedPanel, channels - panel);
    for (int64_t k = 0; k < kSize; ++k)
      packed[panel * kSize + k * width + (o - panel)] = w[o * kSize + k];
  }
}

void conv(const ConvParams& p, const float* x, const float* w,
          const float* bias, const float* residual, float* y,
          const Team& team) {
  if (p.winograd) {
    detail::convWinograd(p, x, w, bias, residual, y, team);
    return;
  }
  if (p.packed_weights) {
    convPacked(p, x, w, bias, residual, y, team);
    return;
  }
  if (isDepthwise2d(p)) {
    const detail::ChannelVectors vectors(windowOf(p));
#ifdef __AVX512F__
    if (prefersDepthwiseRows(p, vectors.fits(p.c_out))) {
      if (p.stride_w == 1) depthwiseRows<1>(p, x, w, bias, residual, y, team);
      else depthwiseRows<2>(p, x, w, bias, residual, y, team);
      return;
    }
#endif
    if (vectors.fits(p.c_out))
      depthwiseVectors(vectors, p, x, w, bias, residual, y, team);
    else
      depthwise(p, x, w, bias, residual, y, team);
    return;
  }
  if (isFewChannels(p)) {
    convFewChannels(p, x, w, bias, residual, y, team);
    return;
  }
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t taps = p.k_d * p.k_h * p.k_w;
  const int64_t kSize = cinG * taps;
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  const int64_t spatial = p.d_out * p.h_out * p.w_out;
  if (isPointwise(p)) {
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t g = 0; g < p.groups; ++g)
        detail::gemmRowsTeam(coutG, spatial, cinG, w + g * coutG * cinG, cinG,
                             x + (n * p.c_in + g * cinG) * inSpatial, spatial,
                             y + (n * p.c_out + g * coutG) * spatial, spatial,
                             epilogueOf(p, bias, residual, n, g), team);
    return;
  }
  // Each thread im2cols the columns of its block of the GEMM output; threads
  // that share columns repeat that copy, which the split's cost (ti |B|)
  // already counts.
  detail::Block blk{{0, coutG}, {0, spatial}};
  if (team.size() > 1)
    blk = detail::blockOf(detail::splitOutput(coutG, spatial, kSize, team.size()),
                          coutG, spatial, team.thread());
  if (blk.rows.size() <= 0 || blk.cols.size() <= 0) return;
  const int64_t chunk = std::min(columnChunk(kSize), blk.cols.size());
  float* col = scratch(kSize * chunk);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* xg = x + (n * p.c_in + g * cinG) * inSpatial;
      const float* wg = w + (g * coutG + blk.rows.begin) * kSize;
      float* yg = y + (n * p.c_out + g * coutG) * spatial;
      const detail::Epilogue e = epilogueOf(p, bias, residual, n, g);
      for (int64_t s0 = blk.cols.begin; s0 < blk.cols.end; s0 += chunk) {
        const int64_t s1 = std::min(blk.cols.end, s0 + chunk);
        im2col(p, xg, cinG, s0, s1, col);
        detail::gemmRows(blk.rows.size(), s1 - s0, kSize, wg, kSize, col,
                         s1 - s0, yg + blk.rows.begin * spatial + s0, spatial,
                         e.at(blk.rows.begin, s0));
      }
    }
}

void conv_transpose(const ConvParams& p, const float* x, const float* w,
                    const float* bias, float* y, const Team& team) {
  const int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  const int64_t taps = p.k_d * p.k_h * p.k_w;
  const int64_t rows = coutG * taps;
  const int64_t inSpatial = p.d_in * p.h_in * p.w_in;
  const int64_t outSpatial = p.d_out * p.h_out * p.w_out;
  // Each thread owns a range of output channels: its rows of col and its
  // planes of y, so the scatter needs no synchronisation.
  const Range channels = team.split(coutG);
  if (channels.size() <= 0) return;
  float* col = scratch(channels.size() * taps * inSpatial);
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t g = 0; g < p.groups; ++g) {
      // col = W_g^T x_g for this thread's channels, W_g viewed as [cinG, rows].
      const float* wg = w + g * cinG * rows + channels.begin * taps;
      const float* xg = x + (n * p.c_in + g * cinG) * inSpatial;
      detail::gemmRowsTransposedA(channels.size() * taps, inSpatial, cinG, wg, rows, xg,
                                  inSpatial, col, inSpatial);
      float* yg = y + (n * p.c_out + g * coutG) * outSpatial;
      std::fill(yg + channels.begin * outSpatial, yg + channels.end * outSpatial, 0.0f);
      // Scatter: input position i with tap t lands on output position o,
      // the mirror of the convolution's gather with the roles swapped.
      for (int64_t c = channels.begin; c < channels.end; ++c) {
        const float* colRows = col + (c - channels.begin) * taps * inSpatial;
        float* plane = yg + c * outSpatial;
        forEachTap(p, p.d_out, p.h_out, p.w_out, p.d_in, p.h_in, p.w_in,
                   [&](int64_t tap, int64_t in, int64_t out) {
                     if (out >= 0) plane[out] += colRows[tap * inSpatial + in];
                   });
      }
      addBias(bias ? bias + g * coutG + channels.begin : nullptr, channels.size(),
              outSpatial, yg + channels.begin * outSpatial);
    }
  }
}

}  // namespace cgc::rt
