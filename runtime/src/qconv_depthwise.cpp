// qconv's depthwise case (groups == c_in == c_out, quantised MobileNets'
// 3x3 layers): a direct loop per channel plane, vectorised along output
// columns. Each input plane is widened once to int16 with the zero point
// subtracted (zero outside the image, so padding needs no compensation)
// and split into stride phases, so that every tap reads 16 consecutive
// columns; the taps of an output row that fall inside the image go in
// pairs through vpmaddwd ((x0, x1) . (w0, w1) into int32: exact, |x - zx|,
// |w - zw| <= 255), the sums of 16 columns stay in registers over the
// whole window, and the plane ends in the requantising epilogue (finishRow). Weights: OIHW as the
// model has them, or packQWeights' kWide form with one channel per block (int16 w - w_zero, taps
// padded to a multiple of 4). The team splits the planes.
#include <type_traits>

#include "cgc/kernels.h"
#include "quant_avx512.h"
#include "quant_support.h"
#include "scratch.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace cgc::rt {

namespace {

bool depthwiseShape(const QConvParams& p) {
  return p.groups == p.c_in && p.groups == p.c_out && p.k_h <= 16 && p.k_w <= 16;
}

}  // namespace

bool qconvDepthwiseShape(const QConvParams& p) { return depthwiseShape(p); }

bool qconvRunsDepthwise(const QConvParams& p) {
  return depthwiseShape(p) &&
         (p.packing == QPacking::kNone || (p.packing == QPacking::kWide && p.pack_nb == 1));
}

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

/// out[i] = src[2 * i] - zero for the first 16s of `count`: 32 bytes
/// split into even and odd with one shuffle, the even ones widened. At
/// stride 2 the scalar gather took a third of the kernel's time on
/// MobileNetV2's 96 planes of 112x112 (one Zen 3 core: 1039 us, now 716).
/// Returns how many it wrote.
template <typename T>
int64_t everyOther(const T* src, int64_t count, int16_t zero, int16_t* out) {
  int64_t i = 0;
#if defined(__AVX2__)
  // Even bytes of each 128-bit lane first: lane 0's 8 in bytes 0-7, lane 1's in 16-23.
  const __m256i evenFirst = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                             0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m256i z = _mm256_set1_epi16(zero);
  // 2 * i + 31 < 2 * count: the load stays within the row's elements.
  for (; i + 16 <= count - 1; i += 16) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i));
    v = _mm256_shuffle_epi8(v, evenFirst);
    v = _mm256_permute4x64_epi64(v, 0x08);  // qwords 0 and 2: the 16 even bytes
    const __m128i even = _mm256_castsi256_si128(v);
    const __m256i wide =
        std::is_signed_v<T> ? _mm256_cvtepi8_epi16(even) : _mm256_cvtepu8_epi16(even);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_sub_epi16(wide, z));
  }
#else
  (void)src;
  (void)count;
  (void)zero;
  (void)out;
#endif
  return i;
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
      int64_t i = stride == 2 ? everyOther(src, last - first, zero, o + first) : 0;
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

/// The taps of one output row that read inside the image, paired for
/// vpmaddwd: each pair's two sources (columns c + 0..15 of a tap read
/// source + c) and its two weights as one int32 (the second 0 when odd).
struct TapPairs {
  const int16_t* source[2][128];
  int32_t weights[128];
  int64_t count = 0;
};

void pairTaps(const QConvParams& p, const RowSizes& s, const int16_t* plane, int64_t oy,
              const int16_t* w, TapPairs& pairs) {
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
void rowSums(const RowSizes& s, const TapPairs& pairs, int32_t* acc) {
  int64_t c = 0;
#if defined(__AVX2__)
  for (; c + 16 <= s.columns; c += 16) {
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int64_t t = 0; t < pairs.count; ++t) {
      const __m256i wp = _mm256_set1_epi32(pairs.weights[t]);
      const __m256i a =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs.source[0][t] + c));
      const __m256i b =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs.source[1][t] + c));
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), wp));
      hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), wp));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + c),
                        _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + c + 8),
                        _mm256_permute2x128_si256(lo, hi, 0x31));
  }
#endif
  for (; c < s.columns; ++c) {
    int32_t sum = 0;
    for (int64_t t = 0; t < pairs.count; ++t)
      sum += pairs.source[0][t][c] * static_cast<int16_t>(pairs.weights[t] & 0xffff) +
             pairs.source[1][t][c] * static_cast<int16_t>(pairs.weights[t] >> 16);
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

#if defined(__AVX512VNNI__) && defined(__AVX512VBMI__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__)
#define CGC_DEPTHWISE_VNNI 1
// GCC 12's vpermb passes _mm512_undefined_* (bug 105593, as quant_avx512.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// AVX-512 VNNI with VBMI: each input row is built once per plane into
// quads of column taps, element j of quad group g being the 4 bytes the
// window's columns 4g .. 4g + 3 read for output column j (one vpermb per 16
// outputs from a zero-point-padded copy of the row; the zero point past
// the window), so that one vpdpbusd adds 4 taps for 16 outputs. An output
// row is k_h x ceil(k_w / 4) of them per 16 columns (3 for a 3x3 window;
// the AVX2 path above takes 10 instructions per tap pair), and the
// epilogue runs on the sums in registers. Taps that do not fit int8 (w -
// w_zero beyond it) take the AVX2 path.
constexpr int64_t kLanes = 16;

struct VnniRows {
  detail::Requant16 epilogue;
  int64_t groups;        // quads of column taps
  int64_t chunks;        // 16 outputs each, per output row
  int64_t rowBytes;      // one built row: [groups][chunks][16][4]
  int64_t paddedLength;  // the zero-point-padded input row
  __m512i index;         // byte 4i + l of a chunk: column stride * i + dilation * l of its window
  __mmask64 past[4];     // per group, the bytes whose tap lies past the window (at most 16 taps)
};

bool takesVnni(const QConvParams& p) { return p.stride_w * (kLanes - 1) + p.dilation_w * 3 < 64; }

VnniRows vnniRows(const QConvParams& p) {
  VnniRows r{detail::Requant16(p.out), 0, 0, 0, 0, _mm512_setzero_si512(), {}};
  r.groups = (p.k_w + 3) / 4;
  r.chunks = (p.w_out + kLanes - 1) / kLanes;
  r.rowBytes = r.groups * r.chunks * 64;
  r.paddedLength = r.chunks * kLanes * p.stride_w + (p.k_w - 1) * p.dilation_w + 64;
  // Computed once: built on the stack for every row, the vector was a
  // failed store forwarding per row (a quarter of the kernel's time).
  alignas(64) uint8_t index[64];
  for (int64_t i = 0; i < kLanes; ++i)
    for (int64_t l = 0; l < 4; ++l)
      index[4 * i + l] = static_cast<uint8_t>(p.stride_w * i + p.dilation_w * l);
  r.index = _mm512_load_si512(index);
  for (int64_t g = 0; g < r.groups; ++g) {
    r.past[g] = 0;
    for (int64_t l = 0; l < 4; ++l)
      if (4 * g + l >= p.k_w) r.past[g] |= __mmask64{0x1111111111111111} << l;
  }
  return r;
}

/// Input row `row` (uint8 after the flip) with the zero point around it.
void padRow(const QConvParams& p, const VnniRows& r, const uint8_t* row, uint8_t zero, uint8_t flip,
            uint8_t* padded) {
  std::memset(padded, zero, static_cast<size_t>(r.paddedLength));
  const int64_t copy = std::min(p.w_in, r.paddedLength - p.pad_left);
  const __m512i f = _mm512_set1_epi8(static_cast<char>(flip));
  for (int64_t i = 0; i < copy; i += 64) {
    const __mmask64 m = i + 64 <= copy ? ~__mmask64{0} : (__mmask64{1} << (copy - i)) - 1;
    _mm512_mask_storeu_epi8(padded + p.pad_left + i, m,
                            _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, row + i), f));
  }
}

/// A padded row built into quads of column taps.
void buildRow(const QConvParams& p, const VnniRows& r, const uint8_t* padded, uint8_t zero,
              uint8_t* out) {
  const __m512i zeros = _mm512_set1_epi8(static_cast<char>(zero));
  for (int64_t g = 0; g < r.groups; ++g)
    for (int64_t c = 0; c < r.chunks; ++c) {
      const uint8_t* from = padded + c * kLanes * p.stride_w + 4 * g * p.dilation_w;
      const __m512i quads = _mm512_permutexvar_epi8(r.index, _mm512_loadu_si512(from));
      _mm512_storeu_si512(out + (g * r.chunks + c) * 64,
                          _mm512_mask_blend_epi8(r.past[g], quads, zeros));
    }
}

/// What rowChunks needs of one output row.
struct RowJob {
  const QConvParams& p;
  const detail::Requant16& e;
  const VnniRows& r;
  const uint8_t* const* rows;  // the built input row each kh reads
  const int32_t* quads;
  int32_t bias;
  float multiplier;
  const uint8_t* residual;
  uint8_t* y;
  int64_t oy;
};

/// N chunks of 16 outputs from chunk c on: N independent vpdpbusd chains
/// and epilogues, which overlap (one chunk at a time waited on each
/// instruction's latency: 151 to 141 us on MobileNetV2's 144 planes of 56x56).
template <int N>
void rowChunks(const RowJob& j, int64_t c) {
  const QConvParams& p = j.p;
  const VnniRows& r = j.r;
  __m512i acc[N];
  for (int i = 0; i < N; ++i) acc[i] = _mm512_setzero_si512();
  for (int64_t kh = 0; kh < p.k_h; ++kh)
    for (int64_t g = 0; g < r.groups; ++g) {
      const __m512i b = _mm512_set1_epi32(j.quads[kh * r.groups + g]);
      const uint8_t* from = j.rows[kh] + (g * r.chunks + c) * 64;
      for (int i = 0; i < N; ++i)
        acc[i] = _mm512_dpbusd_epi32(acc[i], _mm512_loadu_si512(from + 64 * i), b);
    }
  const detail::Requant16& e = j.e;
  const int64_t size = e.type == DType::kI32 ? 4 : 1;
  for (int i = 0; i < N; ++i) {
    const int64_t first = (c + i) * kLanes, at = j.oy * p.w_out + first;
    const __mmask16 mask = detail::lanes16(0, std::min(kLanes, p.w_out - first));
    __m512i res = _mm512_setzero_si512();
    if (e.kind == QOutput::kRequantAdd)
      res = detail::widen16(detail::loadBytes16(_mm_setzero_si128(), mask, j.residual + at),
                            e.rSigned);
    detail::storeQ16(j.y + at * size, mask, e.type,
                     detail::finish16(e, acc[i], j.bias, j.multiplier, res));
  }
}

/// One channel plane: x's plane in, y's (and the residual's) plane out.
void planeVnni(const QConvParams& p, const VnniRows& r, const uint8_t* x, const int32_t* quads,
               int32_t bias, float multiplier, const uint8_t* residual, uint8_t* y, uint8_t* built,
               uint8_t* padded) {
  const uint8_t flip = p.x_signed ? 0x80 : 0;
  const auto zero = static_cast<uint8_t>(static_cast<uint8_t>(p.x_zero) ^ flip);
  // Every row padded first, then built: a vpermb right after the masked
  // stores that padded its row waited for them (no store forwarding from
  // a masked store: a third of the kernel's time).
  for (int64_t iy = 0; iy < p.h_in; ++iy)
    padRow(p, r, x + iy * p.w_in, zero, flip, padded + iy * r.paddedLength);
  for (int64_t iy = 0; iy < p.h_in; ++iy)
    buildRow(p, r, padded + iy * r.paddedLength, zero, built + iy * r.rowBytes);
  // Rows outside the image read the zero point.
  uint8_t* outside = built + p.h_in * r.rowBytes;
  std::memset(outside, zero, static_cast<size_t>(r.rowBytes));
  for (int64_t oy = 0; oy < p.h_out; ++oy) {
    const uint8_t* rows[16];
    for (int64_t kh = 0; kh < p.k_h; ++kh) {
      const int64_t iy = oy * p.stride_h - p.pad_top + kh * p.dilation_h;
      rows[kh] = iy >= 0 && iy < p.h_in ? built + iy * r.rowBytes : outside;
    }
    const RowJob job{p, r.epilogue, r, rows, quads, bias, multiplier, residual, y, oy};
    int64_t c = 0;
    for (; c + 4 <= r.chunks; c += 4) rowChunks<4>(job, c);
    if (r.chunks - c == 3) rowChunks<3>(job, c);
    if (r.chunks - c == 2) rowChunks<2>(job, c);
    if (r.chunks - c == 1) rowChunks<1>(job, c);
  }
}

/// Channel c's taps as int8 quads ([k_h][groups], zero past k_w) and their
/// sum; false where some w - w_zero does not fit int8.
bool vnniTaps(const QConvParams& p, const VnniRows& r, const int16_t* taps, int32_t* quads,
              int32_t& sum) {
  sum = 0;
  for (int64_t kh = 0; kh < p.k_h; ++kh)
    for (int64_t g = 0; g < r.groups; ++g) {
      uint32_t word = 0;
      for (int64_t l = 0; l < 4; ++l) {
        const int64_t kw = 4 * g + l;
        const int32_t v = kw < p.k_w ? taps[kh * p.k_w + kw] : 0;
        if (v < -128 || v > 127) return false;
        sum += v;
        word |= static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(v))) << (8 * l);
      }
      quads[kh * r.groups + g] = static_cast<int32_t>(word);
    }
  return true;
}
#pragma GCC diagnostic pop
#endif

}  // namespace

void qconvDepthwise(const QConvParams& p, const void* x, const void* w, const float* w_scale,
                    const void* w_zero, const int32_t* bias, const void* residual, void* y,
                    const Team& team) {
  const RowSizes s = rowSizes(p);
  const int64_t plane = p.h_in * p.w_in, outPlane = p.h_out * p.w_out;
  const int64_t ySize = p.out.y_type == DType::kI32 ? 4 : 1;
  int16_t* widened = detail::scratch<int16_t>(p.h_in * p.stride_w * s.phaseLength);
  // A plane's sums, each row's columns rounded up to 16 (the excess is
  // overwritten by the next row), so that the epilogue runs once per plane
  // in whole vectors: on 7x7 and 14x14 planes it ran mostly in its scalar
  // tail (one Zen 3 core: MobileNetV2's 576 planes of 14x14 at stride 2
  // 656 to 468 us, its 960 of 7x7 650 to 415).
  int32_t* acc = detail::scratch<int32_t>(outPlane + s.columns);
  int16_t taps[16 * 16];
  TapPairs pairs;
  const float divisor = p.out.kind == QOutput::kRequantAdd ? p.out.mid_scale : p.out.y_scale;
  const Range planes = team.split(p.n * p.c_out);
#ifdef CGC_DEPTHWISE_VNNI
  const VnniRows rows = vnniRows(p);
  uint8_t* built =
      takesVnni(p)
          ? detail::scratch<uint8_t>((p.h_in + 1) * rows.rowBytes + p.h_in * rows.paddedLength)
          : nullptr;
  int32_t quads[16 * 4];
#endif
  for (int64_t nc = planes.begin; nc < planes.end; ++nc) {
    const int64_t c = nc % p.c_out;
    channelTaps(p, w, w_zero, c, taps);
    const int32_t b = bias ? bias[c] : 0;
    const float multiplier = p.out.kind == QOutput::kInt32
                                 ? 1.0f
                                 : p.out.x_scale * w_scale[p.per_channel ? c : 0] / divisor;
#ifdef CGC_DEPTHWISE_VNNI
    int32_t sum;
    if (built && vnniTaps(p, rows, taps, quads, sum)) {
      const int32_t zero = p.x_zero + (p.x_signed ? 128 : 0);
      const int64_t at = nc * outPlane;
      planeVnni(p, rows, static_cast<const uint8_t*>(x) + nc * plane, quads, b - zero * sum,
                multiplier, residual ? static_cast<const uint8_t*>(residual) + at : nullptr,
                static_cast<uint8_t*>(y) + at * ySize, built, built + (p.h_in + 1) * rows.rowBytes);
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

}  // namespace cgc::rt
