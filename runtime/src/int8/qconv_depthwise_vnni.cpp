// The depthwise int8 convolution on AVX-512 VNNI: input bytes are gathered
// with vpermb (VBMI, or its emulation: byte_permute_skx.h) into quads of
// column taps, element j of quad group g holding the 4 bytes that the
// window's columns 4g .. 4g + 3 read for output j, so that one vpdpbusd
// adds 4 taps for 16 outputs (3 for a 3x3 window; the AVX2 loops take 10
// instructions per tap pair), and the epilogue runs on the sums in
// registers. Two layouts:
//  - flat mode (uint8 and int8 outputs): the output rows of a band of at
//    most 1024 positions laid end to end, `wrow` positions a row, where
//    wrow * stride_w is the padded input row; the padded input split into
//    row phases (rows stride_h apart together). Output f's taps then read
//    quads f + one constant per window row, so 64 positions are one block
//    of 4 vpdpbusd chains whatever the width, and one vpermb packs a
//    block's outputs densely into y. The quads come straight from the
//    input plane, 16 at a time, through a table made once per geometry
//    and thread (FlatChunk: which input byte, or the zero point, each lane
//    takes). At stride and dilation 1 (k_w <= 4) nothing is built but the
//    padded rows, one byte a position, through the same table: the four
//    sum vectors of a block read the dwords at offsets 0 to 3 from each
//    window row, each holding the quads of every fourth position.
//  - row mode (int32 outputs, rows of more than 1024 positions): each
//    input row padded into scratch and built once per plane, 16 output
//    columns a chunk.
// Row mode spent most of a small plane on per-row overheads and lanes past
// the row (MobileNetV2's 7x7 and 56x56 planes run faster in flat mode).
// Int8 activations run as uint8 (x ^ 0x80). Taps past the window have the
// weight 0, so what their bytes hold does not matter; neither do the
// positions of a block that are not outputs.
#include "int8/qconv_depthwise_vnni.h"

#include "core/diagnostics.h"

#ifdef CGC_DEPTHWISE_VNNI
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/scratch.h"

// GCC 12's permutes pass _mm512_undefined_* (bug 105593, as requant_skx.h).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED

namespace cgc::rt::detail {

namespace {

constexpr int64_t kLanes = 16;

VnniRows vnniRows(const QConvParams& p) {
  VnniRows r{0, 0, 0, 0, {}, {}};
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
  for (int64_t g = 0; g < r.groups; ++g) {
    r.past[g] = 0;
    for (int64_t l = 0; l < 4; ++l)
      if (4 * g + l >= p.k_w) r.past[g] |= __mmask64{0x1111111111111111} << l;
  }
  r.index = BytePermutation(index, ~r.past[0]);  // past for group 0: past for all
  return r;
}

/// `count` bytes from `from` to `to`, flipped.
void copyFlipped(const uint8_t* from, int64_t count, __m512i flip, uint8_t* to) {
  for (int64_t i = 0; i < count; i += 64) {
    const __mmask64 m = firstBytes(count - i);
    _mm512_mask_storeu_epi8(to + i, m,
                            _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, from + i), flip));
  }
}

/// The chunk that gathers input bytes at[0 .. 63] (-1: the zero point)
/// from two windows of 64 bytes (a chunk of a stride-2 plane that spans two
/// rows reads the ends of rows two apart); false where they do not fit.
bool planChunk(const int64_t (&at)[64], int64_t plane, FlatChunk& k) {
  int64_t low = plane, second = plane;
  for (int64_t a : at)
    if (a >= 0) low = std::min(low, a);
  k.from[0] = plane <= 64 || low == plane ? 0 : low;  // buildFlat: a plane of 64 bytes from 0
  for (int64_t a : at)
    if (a >= k.from[0] + 64) second = std::min(second, a);
  k.from[1] = second == plane ? k.from[0] + 64 : second;
  k.inside = 0;
  alignas(64) uint8_t index[64];
  for (int64_t i = 0; i < 64; ++i) {
    index[i] = 0;
    if (at[i] < 0) continue;
    if (at[i] - k.from[0] < 64)
      index[i] = static_cast<uint8_t>(at[i] - k.from[0]);
    else if (at[i] - k.from[1] < 64)
      index[i] = static_cast<uint8_t>(64 + at[i] - k.from[1]);
    else
      return false;
    k.inside |= __mmask64{1} << i;
  }
  k.index = BytePermutation(index, k.inside);
  k.load0 = firstBytes(plane - k.from[0]);
  k.load1 = firstBytes(plane - k.from[1]);
  return true;
}

/// Flat mode's layout and build table, or false where the plane has more
/// than kFlatBlocks * 64 flat positions or some chunk of quads reads more
/// than two windows of the input.
bool planFlat(const QConvParams& p, int64_t groups, FlatPlanes& f) {
  const int64_t reach = p.stride_w * (p.w_out - 1) + (p.k_w - 1) * p.dilation_w + 1;
  f.wrow = (reach + p.stride_w - 1) / p.stride_w;
  const int64_t positions = p.h_out * f.wrow;
  f.blocks = (positions + 63) / 64;
  if (f.blocks > kFlatBlocks) return false;
  // Window row kh reads row phase (kh d_h) % s_h, (kh d_h) / s_h rows down.
  const int64_t below = (p.k_h - 1) * p.dilation_h / p.stride_h;
  f.rowBytes = p.stride_w * f.wrow;
  f.quads = (f.blocks * 64 + below * f.wrow + kLanes - 1) / kLanes * kLanes;
  f.taps = p.k_h * groups;
  f.direct =
      p.stride_h == 1 && p.stride_w == 1 && p.dilation_h == 1 && p.dilation_w == 1 && groups == 1;
  for (int64_t t = 0; t < f.taps; ++t) {
    const int64_t kh = t / groups, g = t % groups;
    const int64_t phase = kh * p.dilation_h % p.stride_h, down = kh * p.dilation_h / p.stride_h;
    f.tapOffset[t] = f.direct ? kh * f.wrow : ((phase * groups + g) * f.quads + down * f.wrow) * 4;
  }
  for (int64_t b = 0; b < f.blocks; ++b) {
    int64_t j = 0;
    alignas(64) uint8_t compact[64] = {}, expand[64] = {};
    __mmask64 outputs = 0;
    for (int64_t i = 0; i < 64; ++i) {
      const int64_t at = 64 * b + i;
      if (at >= positions || at % f.wrow >= p.w_out) continue;
      if (j == 0) f.first[b] = at / f.wrow * p.w_out + at % f.wrow;
      const int64_t slot = f.direct ? 16 * (i % 4) + i / 4 : i;  // its sum vector and lane
      compact[j] = Requant16::packOrderByte(slot);               // packBytes64's order to flat
      expand[slot] = static_cast<uint8_t>(j);
      outputs |= __mmask64{1} << slot;
      ++j;
    }
    f.count[b] = j;
    f.compact[b] = BytePermutation(compact, firstBytes(j));
    f.expand[b] = BytePermutation(expand, outputs);
  }
  const int64_t plane = f.inputBytes = p.h_in * p.w_in;
  if (f.direct) {
    // The padded rows laid end to end, 64 bytes a chunk (at most 64 input
    // bytes in order: two windows always fit); the bytes past them that
    // the last block reads are outputs past the plane or taps of weight 0.
    const int64_t bytes = (p.h_out + p.k_h - 1) * f.wrow;
    f.blockBytes = 64, f.vectorStep = 1;
    f.chunks.resize((bytes + 63) / 64);
    for (int64_t c = 0; c < static_cast<int64_t>(f.chunks.size()); ++c) {
      int64_t at[64];
      for (int64_t i = 0; i < 64; ++i) {
        const int64_t k = 64 * c + i, iy = k / f.wrow - p.pad_top, ix = k % f.wrow - p.pad_left;
        at[i] =
            k < bytes && iy >= 0 && iy < p.h_in && ix >= 0 && ix < p.w_in ? iy * p.w_in + ix : -1;
      }
      if (!planChunk(at, plane, f.chunks[c])) return false;
    }
    const int64_t read = 64 * f.blocks + 3 + (p.k_h - 1) * f.wrow;
    f.builtBytes = (std::max(64 * static_cast<int64_t>(f.chunks.size()), read) + 63) / 64 * 64;
    return true;
  }
  f.builtBytes = p.stride_h * groups * f.quads * 4;
  // Quad i of (phase, group) holds, for l < 4, byte stride_w * i +
  // dilation_w (4 g + l) of the phase's padded rows laid end to end:
  // source[phase][that] is its place in the input plane, or -1 (padding).
  const int64_t perPhase = groups * f.quads / kLanes;
  const int64_t length = p.stride_w * f.quads + 4 * groups * p.dilation_w;
  std::vector<int32_t> source(p.stride_h * length, -1);
  for (int64_t iy = 0; iy < p.h_in; ++iy) {
    const int64_t py = iy + p.pad_top, at = py / p.stride_h * f.rowBytes + p.pad_left;
    for (int64_t ix = 0; ix < p.w_in && p.pad_left + ix < f.rowBytes && at + ix < length; ++ix)
      source[py % p.stride_h * length + at + ix] = static_cast<int32_t>(iy * p.w_in + ix);
  }
  f.chunks.resize(p.stride_h * perPhase);
  for (int64_t c = 0; c < p.stride_h * perPhase; ++c) {
    const int64_t phase = c / perPhase, g = c % perPhase / (f.quads / kLanes);
    const int64_t first = c % (f.quads / kLanes) * kLanes;
    int64_t at[64];
    for (int64_t i = 0; i < 64; ++i) {
      const int64_t l = i % 4, byte = p.stride_w * (first + i / 4) + p.dilation_w * (4 * g + l);
      at[i] = 4 * g + l < p.k_w ? source[phase * length + byte] : -1;
    }
    if (!planChunk(at, plane, f.chunks[c])) return false;
  }
  return true;
}

/// The plan for p's geometry: each thread keeps the plans of the last
/// layers it ran (a plan takes a sizeable part of a 56x56 layer to make),
/// null where flat mode does not fit.
const FlatPlanes* flatPlanes(const QConvParams& p, int64_t groups) {
  const int64_t geometry[12] = {p.h_in,    p.w_in,     p.h_out,      p.w_out,
                                p.k_h,     p.k_w,      p.stride_h,   p.stride_w,
                                p.pad_top, p.pad_left, p.dilation_h, p.dilation_w};
  struct Entry {
    std::unique_ptr<FlatPlanes> plan;
    bool fits;
  };
  thread_local std::vector<Entry> cache;
  for (const Entry& e : cache)
    if (std::equal(geometry, geometry + 12, e.plan->geometry))
      return e.fits ? e.plan.get() : nullptr;
  constexpr size_t kKept = 32;
  if (cache.size() == kKept) cache.erase(cache.begin());
  auto plan = std::make_unique<FlatPlanes>();
  std::copy(geometry, geometry + 12, plan->geometry);
  const bool fits = planFlat(p, groups, *plan);
  cache.push_back({std::move(plan), fits});
  return fits ? cache.back().plan.get() : nullptr;
}

}  // namespace

DepthwiseVnni::DepthwiseVnni(const QConvParams& p)
    : p_(p),
      epilogue_(p.out),
      usable_(depthwiseVnniFits(p)),
      flip_(p.x_signed ? 0x80 : 0),
      zero_(static_cast<uint8_t>(static_cast<uint8_t>(p.x_zero) ^ flip_)),
      rows_(vnniRows(p)),
      fewTaps_(p.k_h <= 4 && p.k_w <= 4),
      tapLoad_(0),
      tapLanes_(0),
      tapIndex_(_mm256_setzero_si256()),
      bands_(0),
      bandRows_(0),
      bandPlans_{},
      built_(nullptr),
      padded_(nullptr) {
  if (!usable_) return;
  if (fewTaps_) {
    alignas(32) int16_t index[16] = {};
    for (int64_t kh = 0; kh < p.k_h; ++kh)
      for (int64_t l = 0; l < p.k_w; ++l) {
        index[4 * kh + l] = static_cast<int16_t>(kh * p.k_w + l);
        tapLanes_ |= static_cast<__mmask16>(1u << (4 * kh + l));
      }
    tapIndex_ = _mm256_load_si256(reinterpret_cast<const __m256i*>(index));
    tapLoad_ = static_cast<__mmask16>((1u << (p.k_h * p.k_w)) - 1);
  }
  int64_t builtBytes = (p.h_in + 1) * rows_.rowBytes, paddedBytes = p.h_in * rows_.paddedLength;
  if (p.out.kind != QOutput::kInt32 && p.out.y_type != DType::kI32 && planBands()) {
    builtBytes = paddedBytes = 0;
    for (const FlatPlanes* f : bandPlans_) builtBytes = std::max(builtBytes, f->builtBytes);
  }
  built_ = scratch<uint8_t>(builtBytes + paddedBytes);
  padded_ = built_ + builtBytes;
}

bool DepthwiseVnni::quadTaps(const int16_t* taps, int32_t* quads, int32_t& sum) const {
  if (fewTaps_) {
    const __m256i v = _mm256_maskz_permutexvar_epi16(tapLanes_, tapIndex_,
                                                     _mm256_maskz_loadu_epi16(tapLoad_, taps));
    if (_mm256_cmpgt_epi16_mask(v, _mm256_set1_epi16(127)) |
        _mm256_cmplt_epi16_mask(v, _mm256_set1_epi16(-128)))
      return false;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(quads), _mm256_cvtepi16_epi8(v));
    sum =
        _mm512_reduce_add_epi32(_mm512_zextsi256_si512(_mm256_madd_epi16(v, _mm256_set1_epi16(1))));
    return true;
  }
  sum = 0;
  for (int64_t kh = 0; kh < p_.k_h; ++kh)
    for (int64_t g = 0; g < rows_.groups; ++g) {
      uint32_t word = 0;
      for (int64_t l = 0; l < 4; ++l) {
        const int64_t kw = 4 * g + l;
        const int32_t v = kw < p_.k_w ? taps[kh * p_.k_w + kw] : 0;
        if (v < -128 || v > 127) return false;
        sum += v;
        word |= static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(v))) << (8 * l);
      }
      quads[kh * rows_.groups + g] = static_cast<int32_t>(word);
    }
  return true;
}

void DepthwiseVnni::plane(const uint8_t* x, const int32_t* quads, int32_t bias, float multiplier,
                          const uint8_t* residual, uint8_t* y) const {
  if (bands_ == 0) return planeRows(x, quads, bias, multiplier, residual, y);
  for (int64_t band = 0; band < bands_; ++band) {
    const FlatPlanes& f = *bandPlans_[band == 0 ? 0 : band == bands_ - 1 ? 2 : 1];
    const int64_t oy = band * bandRows_, at = oy * p_.w_out;
    buildFlat(f, x + std::max<int64_t>(oy * p_.stride_h - p_.pad_top, 0) * p_.w_in);
    flatBand(f, quads, bias, multiplier, residual ? residual + at : nullptr, y + at);
  }
}

/// The band sizes and plans, or false where flat mode does not fit.
bool DepthwiseVnni::planBands() {
  const QConvParams& p = p_;
  const int64_t reach = p.stride_w * (p.w_out - 1) + (p.k_w - 1) * p.dilation_w + 1;
  bandRows_ = std::min(p.h_out, kFlatBlocks * 64 / ((reach + p.stride_w - 1) / p.stride_w));
  if (bandRows_ == 0) return false;
  bands_ = (p.h_out + bandRows_ - 1) / bandRows_;
  // Band `band` as a convolution of its own: the input rows it reads,
  // the padding above them, its output rows.
  const auto bandParams = [&](int64_t band) {
    QConvParams q = p;
    const int64_t oy = band * bandRows_;
    q.h_out = std::min(bandRows_, p.h_out - oy);
    const int64_t first = oy * p.stride_h - p.pad_top;
    const int64_t last = (oy + q.h_out - 1) * p.stride_h - p.pad_top + (p.k_h - 1) * p.dilation_h;
    q.pad_top = std::max<int64_t>(-first, 0);
    q.h_in = std::max<int64_t>(std::min(last, p.h_in - 1) - std::max<int64_t>(first, 0) + 1, 0);
    return q;
  };
  const FlatPlanes* middle = nullptr;
  for (int64_t band = 1; band + 1 < bands_; ++band) {
    const FlatPlanes* plan = flatPlanes(bandParams(band), rows_.groups);
    if (!plan || (middle && plan != middle)) return bands_ = 0, false;
    middle = plan;
  }
  bandPlans_[0] = flatPlanes(bandParams(0), rows_.groups);
  bandPlans_[2] = flatPlanes(bandParams(bands_ - 1), rows_.groups);
  bandPlans_[1] = middle ? middle : bandPlans_[0];
  if (!bandPlans_[0] || !bandPlans_[2]) return bands_ = 0, false;
  return true;
}

// ---- Row mode ----

/// Input row `row` (uint8 after the flip) with the zero point around it.
void DepthwiseVnni::padRow(const uint8_t* row, uint8_t* padded) const {
  std::memset(padded, zero_, static_cast<size_t>(rows_.paddedLength));
  const int64_t copy = std::min(p_.w_in, rows_.paddedLength - p_.pad_left);
  copyFlipped(row, copy, _mm512_set1_epi8(static_cast<char>(flip_)), padded + p_.pad_left);
}

/// A padded row built into quads of column taps.
void DepthwiseVnni::buildRow(const uint8_t* padded, uint8_t* out) const {
  const VnniRows& r = rows_;
  const __m512i zeros = _mm512_set1_epi8(static_cast<char>(zero_));
  for (int64_t g = 0; g < r.groups; ++g)
    for (int64_t c = 0; c < r.chunks; ++c) {
      const uint8_t* from = padded + c * kLanes * p_.stride_w + 4 * g * p_.dilation_w;
      const __m512i quads = r.index(_mm512_loadu_si512(from));
      _mm512_storeu_si512(out + (g * r.chunks + c) * 64,
                          _mm512_mask_blend_epi8(r.past[g], quads, zeros));
    }
}

namespace {

/// What rowChunks needs of one output row.
struct RowJob {
  const QConvParams& p;
  const Requant16& e;
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
/// instruction's latency, on MobileNetV2's 144 planes of 56x56).
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
  const Requant16& e = j.e;
  const int64_t size = e.type == DType::kI32 ? 4 : 1;
  for (int i = 0; i < N; ++i) {
    const int64_t first = (c + i) * kLanes, at = j.oy * p.w_out + first;
    const __mmask16 mask = lanes16(0, std::min(kLanes, p.w_out - first));
    __m512i res = _mm512_setzero_si512();
    if (e.kind == QOutput::kRequantAdd)
      res = widen16(loadBytes16(_mm_setzero_si128(), mask, j.residual + at), e.rSigned);
    storeQ16(j.y + at * size, mask, e.type, finish16(e, acc[i], j.bias, j.multiplier, res));
  }
}

}  // namespace

void DepthwiseVnni::planeRows(const uint8_t* x, const int32_t* quads, int32_t bias,
                              float multiplier, const uint8_t* residual, uint8_t* y) const {
  const VnniRows& r = rows_;
  // Every row padded first, then built: a vpermb right after the masked
  // stores that padded its row waited for them (no store forwarding from
  // a masked store: a third of the kernel's time).
  for (int64_t iy = 0; iy < p_.h_in; ++iy) padRow(x + iy * p_.w_in, padded_ + iy * r.paddedLength);
  for (int64_t iy = 0; iy < p_.h_in; ++iy)
    buildRow(padded_ + iy * r.paddedLength, built_ + iy * r.rowBytes);
  // Rows outside the image read the zero point.
  uint8_t* outside = built_ + p_.h_in * r.rowBytes;
  std::memset(outside, zero_, static_cast<size_t>(r.rowBytes));
  for (int64_t oy = 0; oy < p_.h_out; ++oy) {
    const uint8_t* rows[16];
    for (int64_t kh = 0; kh < p_.k_h; ++kh) {
      const int64_t iy = oy * p_.stride_h - p_.pad_top + kh * p_.dilation_h;
      rows[kh] = iy >= 0 && iy < p_.h_in ? built_ + iy * r.rowBytes : outside;
    }
    const RowJob job{p_, epilogue_, r, rows, quads, bias, multiplier, residual, y, oy};
    int64_t c = 0;
    for (; c + 4 <= r.chunks; c += 4) rowChunks<4>(job, c);
    if (r.chunks - c == 3) rowChunks<3>(job, c);
    if (r.chunks - c == 2) rowChunks<2>(job, c);
    if (r.chunks - c == 1) rowChunks<1>(job, c);
  }
}

// ---- Flat mode ----

/// The input rows of plan f built into quads: [phase][group][quads] of 4
/// bytes, or (direct) padded with the zero point and laid end to end.
void DepthwiseVnni::buildFlat(const FlatPlanes& f, const uint8_t* x) const {
  const __m512i fill = _mm512_set1_epi8(static_cast<char>(zero_));
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(flip_));
  const auto chunks = static_cast<int64_t>(f.chunks.size());
  const int64_t size = f.inputBytes;
  if (size <= 64) {
    // The whole plane in one register (7x7 and smaller; chunks index it
    // from 0): a chunk is one vpermb.
    const __m512i plane = _mm512_xor_si512(_mm512_maskz_loadu_epi8(firstBytes(size), x), flip);
    for (int64_t c = 0; c < chunks; ++c) {
      const FlatChunk& k = f.chunks[c];
      _mm512_store_si512(built_ + 64 * c, k.index.masked(fill, k.inside, plane));
    }
  } else {
    for (int64_t c = 0; c < chunks; ++c) {
      const FlatChunk& k = f.chunks[c];
      const __m512i bytes = k.index(_mm512_maskz_loadu_epi8(k.load0, x + k.from[0]),
                                    _mm512_maskz_loadu_epi8(k.load1, x + k.from[1]));
      _mm512_store_si512(built_ + 64 * c,
                         _mm512_mask_mov_epi8(fill, k.inside, _mm512_xor_si512(bytes, flip)));
    }
  }
}

namespace {

/// A block's four vpdpbusd chains over its taps (f.taps of them, or T
/// where T is not 0: 3x3 windows unrolled), from the bias.
template <int T>
[[gnu::always_inline]] inline void flatSums(const FlatPlanes& f, const uint8_t* block,
                                            const int32_t* quads, int32_t bias, __m512i (&acc)[4]) {
  for (__m512i& a : acc) a = _mm512_set1_epi32(bias);
  const int64_t taps = T ? T : f.taps;
  for (int64_t t = 0; t < taps; ++t) {
    const __m512i w = _mm512_set1_epi32(quads[t]);
    const uint8_t* from = block + f.tapOffset[t];
    for (int i = 0; i < 4; ++i)
      acc[i] = _mm512_dpbusd_epi32(acc[i], _mm512_loadu_si512(from + f.vectorStep * i), w);
  }
}

/// A block's epilogue (the sums hold the bias) and one vpermb that packs
/// the outputs among its 64 positions into y (f.compact reads
/// packBytes64's order). kFast: rounded before the zero point and the
/// clamp, which packBytes64 adds (packsToBytes).
template <QOutput kKind, bool kFast>
[[gnu::always_inline]] inline void flatStore(const Requant16& e, const FlatPlanes& f, int64_t b,
                                             const __m512i (&acc)[4], float multiplier,
                                             const uint8_t* residual, uint8_t* y) {
  Requant16 same = e;
  same.kind = kKind;  // a constant the compiler folds into requant16
  const __mmask64 outputs = firstBytes(f.count[b]);
  __m512i r = _mm512_setzero_si512(), q[4];
  if constexpr (kKind == QOutput::kRequantAdd)
    r = f.expand[b](_mm512_maskz_loadu_epi8(outputs, residual + f.first[b]));
  const __m128i parts[4] = {_mm512_extracti32x4_epi32(r, 0), _mm512_extracti32x4_epi32(r, 1),
                            _mm512_extracti32x4_epi32(r, 2), _mm512_extracti32x4_epi32(r, 3)};
  const __m512 m = _mm512_set1_ps(multiplier);
  for (int i = 0; i < 4; ++i) {
    const __m512i residual16 = widen16(parts[i], e.rSigned);
    if constexpr (kFast && kKind == QOutput::kRequantAdd)
      q[i] = residualRound16(e, acc[i], m, residual16);
    else if constexpr (kFast)
      q[i] = scaleRound16(acc[i], m);
    else
      q[i] = requant16(same, acc[i], m, residual16);
  }
  const __m512i bytes =
      packBytes64(e, q[0], q[1], q[2], q[3], kFast ? e.zero16 : _mm512_setzero_si512());
  _mm512_mask_storeu_epi8(y + f.first[b], outputs, f.compact[b](bytes));
}

/// Every block of a band: four vpdpbusd chains and their epilogue each,
/// in one loop with the sums in registers (a call a block kept them on
/// the stack).
template <int T, QOutput kKind, bool kFast>
void flatBlocks(const Requant16& e, const FlatPlanes& f, const uint8_t* built, const int32_t* quads,
                int32_t bias, float multiplier, const uint8_t* residual, uint8_t* y) {
  for (int64_t b = 0; b < f.blocks; ++b) {
    if (f.count[b] == 0) continue;
    __m512i acc[4];
    flatSums<T>(f, built + f.blockBytes * b, quads, bias, acc);
    flatStore<kKind, kFast>(e, f, b, acc, multiplier, residual, y);
  }
}

template <int T>
void flatBlocksOf(const QEpilogue& p, const Requant16& e, const FlatPlanes& f, const uint8_t* built,
                  const int32_t* quads, int32_t bias, float multiplier, const uint8_t* residual,
                  uint8_t* y) {
  const bool fast = packsToBytes(p, &multiplier, 1);
  if (p.kind == QOutput::kRequantAdd && fast)
    flatBlocks<T, QOutput::kRequantAdd, true>(e, f, built, quads, bias, multiplier, residual, y);
  else if (p.kind == QOutput::kRequantAdd)
    flatBlocks<T, QOutput::kRequantAdd, false>(e, f, built, quads, bias, multiplier, residual, y);
  else if (fast)
    flatBlocks<T, QOutput::kRequant, true>(e, f, built, quads, bias, multiplier, residual, y);
  else
    flatBlocks<T, QOutput::kRequant, false>(e, f, built, quads, bias, multiplier, residual, y);
}

}  // namespace

/// A band's blocks, 3x3 windows unrolled.
void DepthwiseVnni::flatBand(const FlatPlanes& f, const int32_t* quads, int32_t bias,
                             float multiplier, const uint8_t* residual, uint8_t* y) const {
  if (f.taps == 3)
    flatBlocksOf<3>(p_.out, epilogue_, f, built_, quads, bias, multiplier, residual, y);
  else
    flatBlocksOf<0>(p_.out, epilogue_, f, built_, quads, bias, multiplier, residual, y);
}

}  // namespace cgc::rt::detail

#pragma GCC diagnostic pop
#endif
