// qconv's depthwise case (groups == c_in == c_out, quantised MobileNets'
// 3x3 layers): a direct loop per channel plane, vectorised along output
// columns. For each output row the k_h input rows it reads are widened to
// int16 with the zero point subtracted (zero outside the image, so padding
// needs no compensation) and split into stride phases, so that every tap
// reads 16 consecutive columns; taps go in pairs through vpmaddwd
// ((x0, x1) . (w0, w1) into int32: exact, |x - zx|, |w - zw| <= 255), the
// sums of 16 columns stay in registers over the whole window, and the row
// ends in the requantising epilogue (finishRow). Weights: OIHW as the model
// has them, or packQWeights' kWide form with one channel per block (int16
// w - w_zero, taps padded to a multiple of 4). The team splits the planes.
#include <vector>

#include "cgc/kernels.h"
#include "quant_support.h"
#include "scratch.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace cgc::rt {

namespace {

bool depthwiseShape(const QConvParams& p) {
  return p.groups == p.c_in && p.groups == p.c_out && p.k_h <= 16 && p.stride_w <= 4;
}

}  // namespace

bool qconvRunsDepthwise(const QConvParams& p) {
  return depthwiseShape(p) &&
         (p.packing == QPacking::kNone || (p.packing == QPacking::kWide && p.pack_nb == 1));
}

QPacking preferredQConvPacking(const QConvParams& p) {
  return depthwiseShape(p) ? QPacking::kWide : preferredQPacking();
}

namespace {

/// The k_h input rows of one output row, widened and split into phases.
struct WindowRows {
  const int16_t* phase[16][4];  // [kh][phase]: nullptr where the row is outside
  int64_t stride, phaseLength;
};

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
  const int32_t zero = p.x_zero;
  for (int64_t ph = 0; ph < stride; ++ph) {
    int16_t* o = out + ph * s.phaseLength;
    const int64_t count = std::min(s.phaseLength, (s.span - ph + stride - 1) / stride);
    // ix = i * stride + ph - pad_left lies in [0, w_in) for i in [first, last).
    const int64_t first = std::clamp<int64_t>((p.pad_left - ph + stride - 1) / stride, 0, count);
    const int64_t last =
        std::clamp<int64_t>((p.w_in + p.pad_left - ph + stride - 1) / stride, first, count);
    std::fill(o, o + first, int16_t{0});
    const T* src = row + ph - p.pad_left;
    for (int64_t i = first; i < last; ++i) o[i] = static_cast<int16_t>(src[i * stride] - zero);
    std::fill(o + last, o + s.phaseLength, int16_t{0});
  }
}

/// Column c + 0..15 of tap (kh, kw) reads phase[kh][o % s] at c + o / s,
/// o = kw * dilation.
const int16_t* tapSource(const QConvParams& p, const WindowRows& rows, int64_t kh, int64_t kw) {
  const int64_t o = kw * p.dilation_w;
  const int16_t* phase = rows.phase[kh][o % p.stride_w];
  return phase ? phase + o / p.stride_w : nullptr;
}

/// acc[0 .. columns) = the window sums of one output row.
void rowSums(const QConvParams& p, const RowSizes& s, const WindowRows& rows, const int16_t* w,
             int32_t* acc) {
  int64_t c = 0;
#if defined(__AVX2__)
  for (; c + 16 <= s.columns; c += 16) {
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int64_t kh = 0; kh < p.k_h; ++kh)
      for (int64_t kw = 0; kw < p.k_w; kw += 2) {
        const int16_t* s0 = tapSource(p, rows, kh, kw);
        if (!s0) break;
        const bool pair = kw + 1 < p.k_w;
        const int16_t* s1 = pair ? tapSource(p, rows, kh, kw + 1) : s0;
        const int32_t w0 = static_cast<uint16_t>(w[kh * p.k_w + kw]);
        const int32_t w1 = pair ? static_cast<uint16_t>(w[kh * p.k_w + kw + 1]) : 0;
        const __m256i wp = _mm256_set1_epi32(static_cast<int32_t>(w0 | (w1 << 16)));
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s0 + c));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s1 + c));
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), wp));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), wp));
      }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + c), _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + c + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
  }
#endif
  for (; c < s.columns; ++c) {
    int32_t sum = 0;
    for (int64_t kh = 0; kh < p.k_h; ++kh)
      for (int64_t kw = 0; kw < p.k_w; ++kw)
        if (const int16_t* src = tapSource(p, rows, kh, kw)) sum += src[c] * w[kh * p.k_w + kw];
    acc[c] = sum;
  }
}

/// The taps of channel c as int16 w - w_zero.
void channelTaps(const QConvParams& p, const void* w, const void* w_zero, int64_t c,
                 int16_t* taps) {
  const int64_t count = p.k_h * p.k_w;
  if (p.packing == QPacking::kWide) {
    const int64_t padded = (count + 3) / 4 * 4;
    std::memcpy(taps, static_cast<const int16_t*>(w) + c * padded, count * sizeof(int16_t));
    return;
  }
  const int32_t zero =
      detail::zeroPoint(w_zero, p.w_signed ? DType::kI8 : DType::kU8, p.per_channel ? c : 0);
  for (int64_t t = 0; t < count; ++t)
    taps[t] = static_cast<int16_t>(detail::loadQ(w, c * count + t, p.w_signed) - zero);
}

}  // namespace

void qconvDepthwise(const QConvParams& p, const void* x, const void* w, const float* w_scale,
                    const void* w_zero, const int32_t* bias, const void* residual, void* y,
                    const Team& team) {
  const RowSizes s = rowSizes(p);
  const int64_t plane = p.h_in * p.w_in, outPlane = p.h_out * p.w_out;
  const int64_t ySize = p.out.y_type == DType::kI32 ? 4 : 1;
  int16_t* buffers = detail::scratch<int16_t>(p.k_h * p.stride_w * s.phaseLength);
  int32_t* acc = detail::scratch<int32_t>(s.columns);
  std::vector<int16_t> taps(static_cast<size_t>(p.k_h * p.k_w));
  const float divisor = p.out.kind == QOutput::kRequantAdd ? p.out.mid_scale : p.out.y_scale;
  const Range planes = team.split(p.n * p.c_out);
  for (int64_t nc = planes.begin; nc < planes.end; ++nc) {
    const int64_t c = nc % p.c_out;
    channelTaps(p, w, w_zero, c, taps.data());
    const int32_t b = bias ? bias[c] : 0;
    const float multiplier =
        p.out.kind == QOutput::kInt32 ? 1.0f : p.out.x_scale * w_scale[p.per_channel ? c : 0] / divisor;
    const void* xPlane = static_cast<const uint8_t*>(x) + nc * plane;
    for (int64_t oy = 0; oy < p.h_out; ++oy) {
      WindowRows rows{};
      for (int64_t kh = 0; kh < p.k_h; ++kh) {
        const int64_t iy = oy * p.stride_h - p.pad_top + kh * p.dilation_h;
        if (iy < 0 || iy >= p.h_in) continue;
        int16_t* out = buffers + kh * p.stride_w * s.phaseLength;
        if (p.x_signed)
          widenRow(p, s, static_cast<const int8_t*>(xPlane) + iy * p.w_in, out);
        else
          widenRow(p, s, static_cast<const uint8_t*>(xPlane) + iy * p.w_in, out);
        for (int64_t ph = 0; ph < p.stride_w; ++ph) rows.phase[kh][ph] = out + ph * s.phaseLength;
      }
      rowSums(p, s, rows, taps.data(), acc);
      const int64_t at = nc * outPlane + oy * p.w_out;
      detail::finishRow(p.out, b, multiplier, acc, p.w_out,
                        residual ? static_cast<const uint8_t*>(residual) + at : nullptr,
                        static_cast<uint8_t*>(y) + at * ySize);
    }
  }
}

}  // namespace cgc::rt
