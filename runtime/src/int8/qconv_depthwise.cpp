// qconv's depthwise variants (groups == c_in == c_out, quantised
// MobileNets' 3x3 layers; qconv_variants.def): a direct loop per channel
// plane, vectorised along output columns; the team splits the planes.
// DepthwiseVnni (AVX-512 VNNI builds) runs the planes on vpdpbusd
// (qconv_depthwise_vnni.cpp) where a window's outputs fit its byte
// permutes, and the loops here the channels whose taps it cannot take (w -
// w_zero beyond int8); Depthwise runs every plane on the loops, AVX2's or
// portable ones.
// Each input plane is widened once to int16 with the zero point
// subtracted (zero outside the image, so padding needs no compensation)
// and split into stride phases, so that every tap reads 16 consecutive
// columns; the taps of an output row that fall inside the image go in
// pairs through vpmaddwd ((x0, x1) . (w0, w1) into int32: exact, |x - zx|,
// |w - zw| <= 255), the sums of 16 columns stay in registers over the
// whole window, and the plane ends in the requantising epilogue
// (finishRow). Weights: packQWeights' kWide form with one channel per
// block (int16 w - w_zero, taps padded to a multiple of 4).
#include "int8/qconv_depthwise.h"

#include <optional>
#include <type_traits>

#include "cgc/kernels.h"
#include "core/build_tier.h"
#include "core/scratch.h"
#include "int8/qconv_depthwise_vnni.h"
#include "int8/qconv_strategies.h"
#include "int8/quant_support.h"

namespace cgc::rt {
namespace {

/// Output columns (rounded up to 16) and the widened row length they read.
struct RowSizes {
  int64_t columns, span, phaseLength;
};

RowSizes rowSizes(const QConvParams& p) {
  RowSizes s{};
  s.columns = (p.w_out + 15) / 16 * 16;
  s.span = (s.columns - 1) * p.stride_w + (p.k_w - 1) * p.dilation_w + 1;
  s.phaseLength = (s.span + p.stride_w - 1) / p.stride_w + 16;
  return s;
}

/// Widens one input row (minus the zero point, zero outside the image)
/// into its stride phases: out[ph][i] = row[i * stride + ph - pad_left].
template <typename T>
void widenRow(const QConvParams& p, const RowSizes& s, const T* row, int16_t* out) {
  const int64_t stride = p.stride_w;
  const int16_t zero = static_cast<int16_t>(p.x_zero);
  for (int64_t ph = 0; ph < stride; ++ph) {
    int16_t* o = out + ph * s.phaseLength;
    // ix = i * stride + ph - pad_left lies in [0, w_in) for i in [first, last).
    const int64_t first =
        std::clamp<int64_t>((p.pad_left - ph + stride - 1) / stride, 0, s.phaseLength);
    const int64_t last =
        std::clamp<int64_t>((p.w_in + p.pad_left - ph + stride - 1) / stride, first, s.phaseLength);
    std::fill(o, o + first, int16_t{0});
    const T* src = row + (first * stride + ph - p.pad_left);
    if (stride == 1) {
      for (int64_t i = 0; i < last - first; ++i) o[first + i] = static_cast<int16_t>(src[i] - zero);
    } else {
      int64_t i = 0;
      if constexpr (detail::buildHasTier("avx2"))
        if (stride == 2) i = detail::everyOtherAvx2(src, last - first, zero, o + first);
      for (; i < last - first; ++i) o[first + i] = static_cast<int16_t>(src[i * stride] - zero);
    }
    std::fill(o + last, o + s.phaseLength, int16_t{0});
  }
}

/// Every input row of one plane, widened: [h_in][stride][phaseLength].
template <typename T>
void widenPlane(const QConvParams& p, const RowSizes& s, const T* plane, int16_t* out) {
  for (int64_t iy = 0; iy < p.h_in; ++iy)
    widenRow(p, s, plane + iy * p.w_in, out + iy * p.stride_w * s.phaseLength);
}

void pairTaps(const QConvParams& p, const RowSizes& s, const int16_t* plane, int64_t oy,
              const int16_t* w, detail::TapPairs& pairs) {
  pairs.count = 0;
  int64_t pending = -1;
  for (int64_t kh = 0; kh < p.k_h; ++kh) {
    const int64_t iy = oy * p.stride_h - p.pad_top + kh * p.dilation_h;
    if (iy < 0 || iy >= p.h_in) continue;
    for (int64_t kw = 0; kw < p.k_w; ++kw) {
      const int64_t o = kw * p.dilation_w;
      const int16_t* source =
          plane + (iy * p.stride_w + o % p.stride_w) * s.phaseLength + o / p.stride_w;
      const auto weight = static_cast<uint16_t>(w[kh * p.k_w + kw]);
      if (pending < 0) {
        pending = pairs.count++;
        pairs.source[0][pending] = pairs.source[1][pending] = source;
        pairs.weights[pending] = weight;
      } else {
        pairs.source[1][pending] = source;
        pairs.weights[pending] = static_cast<int32_t>(pairs.weights[pending] | (weight << 16));
        pending = -1;
      }
    }
  }
}

/// acc[0 .. columns) = the window sums of one output row.
void rowSums(const RowSizes& s, const detail::TapPairs& pairs, int32_t* acc) {
  int64_t c = 0;
  if constexpr (detail::buildHasTier("avx2")) c = detail::rowSumsAvx2(s.columns, pairs, acc);
  for (; c < s.columns; ++c) {
    int32_t sum = 0;
    for (int64_t t = 0; t < pairs.count; ++t)
      sum += pairs.source[0][t][c] * static_cast<int16_t>(pairs.weights[t] & 0xffff) +
             pairs.source[1][t][c] * static_cast<int16_t>(pairs.weights[t] >> 16);
    acc[c] = sum;
  }
}

/// The taps of channel c: kWide's int16 w - w_zero, one channel a block.
const int16_t* channelTaps(const QConvParams& p, const void* w, int64_t c) {
  return static_cast<const int16_t*>(w) + c * ((p.k_h * p.k_w + 3) / 4 * 4);
}

/// The planes of every image and channel, split over the team: on
/// vpdpbusd (DepthwiseVnni) where `vnni` and the channel's taps fit int8,
/// else on the loops above.
void depthwise(const QConvParams& p, const void* x, const void* w, const float* w_scale,
               const int32_t* bias, const void* residual, void* y, const Team& team,
               [[maybe_unused]] bool vnni) {
#ifdef CGC_DEPTHWISE_VNNI
  std::optional<detail::DepthwiseVnni> planes;
  if (vnni) planes.emplace(p);
  int32_t quads[16 * 4];
#endif
  const RowSizes s = rowSizes(p);
  const int64_t plane = p.h_in * p.w_in, outPlane = p.h_out * p.w_out;
  const int64_t ySize = p.out.y_type == DType::kI32 ? 4 : 1;
  int16_t* widened = detail::scratch<int16_t>(p.h_in * p.stride_w * s.phaseLength);
  // A plane's sums, each row's columns rounded up to 16 (the excess is
  // overwritten by the next row), so that the epilogue runs once per plane
  // in whole vectors: on 7x7 and 14x14 planes it ran mostly in its scalar
  // tail (MobileNetV2's 14x14 planes at stride 2 and its 7x7 ones).
  int32_t* acc = detail::scratch<int32_t>(outPlane + s.columns);
  detail::TapPairs pairs;
  const float divisor = p.out.kind == QOutput::kRequantAdd ? p.out.mid_scale : p.out.y_scale;
  const Range work = team.split(p.n * p.c_out);
  for (int64_t nc = work.begin; nc < work.end; ++nc) {
    const int64_t c = nc % p.c_out;
    const int16_t* taps = channelTaps(p, w, c);
    const int32_t b = bias ? bias[c] : 0;
    const float multiplier = p.out.kind == QOutput::kInt32
                                 ? 1.0f
                                 : p.out.x_scale * w_scale[p.per_channel ? c : 0] / divisor;
#ifdef CGC_DEPTHWISE_VNNI
    int32_t sum;
    if (planes && planes->usable() && planes->quadTaps(taps, quads, sum)) {
      const int32_t zero = p.x_zero + (p.x_signed ? 128 : 0);
      const int64_t at = nc * outPlane;
      planes->plane(static_cast<const uint8_t*>(x) + nc * plane, quads, b - zero * sum, multiplier,
                    residual ? static_cast<const uint8_t*>(residual) + at : nullptr,
                    static_cast<uint8_t*>(y) + at * ySize);
      continue;
    }
#endif
    if (p.x_signed)
      widenPlane(p, s, static_cast<const int8_t*>(x) + nc * plane, widened);
    else
      widenPlane(p, s, static_cast<const uint8_t*>(x) + nc * plane, widened);
    for (int64_t oy = 0; oy < p.h_out; ++oy) {
      pairTaps(p, s, widened, oy, taps, pairs);
      rowSums(s, pairs, acc + oy * p.w_out);
    }
    const int64_t at = nc * outPlane;
    detail::finishRow(p.out, b, multiplier, acc, outPlane,
                      residual ? static_cast<const uint8_t*>(residual) + at : nullptr,
                      static_cast<uint8_t*>(y) + at * ySize);
  }
}

}  // namespace

namespace detail {

// The two depthwise variants (qconv_variants.def). Their choice is the
// same in every build (the compiler's is its target's), so the VNNI one's
// predicates are here, outside its tier.

bool takesDepthwise(const QConvParams& p) {
  return p.groups == p.c_in && p.groups == p.c_out && p.k_h <= 16 && p.k_w <= 16 &&
         (p.packing != QPacking::kWide || p.pack_nb == 1);
}
bool prefersDepthwise(const QConvParams&, const char*) { return true; }

void qconvDepthwise(const QConvParams& p, const void* x, const void* w, const float* w_scale,
                    const int32_t* bias, const void* residual, void* y, const Team& team) {
  depthwise(p, x, w, w_scale, bias, residual, y, team, false);
}

/// Where a window's 16 outputs fit one vpermb (stride and dilation).
bool takesDepthwiseVnni(const QConvParams& p) { return takesDepthwise(p) && depthwiseVnniFits(p); }
bool prefersDepthwiseVnni(const QConvParams&, const char*) { return true; }

void qconvDepthwiseVnni(const QConvParams& p, const void* x, const void* w, const float* w_scale,
                        const int32_t* bias, const void* residual, void* y, const Team& team) {
  depthwise(p, x, w, w_scale, bias, residual, y, team, true);
}

}  // namespace detail
}  // namespace cgc::rt
