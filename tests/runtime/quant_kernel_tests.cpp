// The int8 kernels against reference integer loops: awkward shapes (1 to
// 70 positions, depths that are not multiples of 4, blocks of channels that
// do not divide), activation zero points at 0, 128 and 255 (and int8's
// -128, 0, 127), per-tensor and per-channel scales, weights at both ends of
// int8 (pairs that would saturate AVX2's vpmaddubsw) and uint8 weights
// (the int16 packing), outputs saturating at both ends, every packing, on
// teams of 1 to 3 threads; then every int8 convolution variant of
// cgc/kernels/qconv_variants.def that the runtime has, forced on every case
// it takes. The requantisation must match exactly: the reference computes
// the same float operations.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "cgc/isa_tiers.h"
#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::DType;
using cgc::test::onTeam;

namespace {

uint32_t nextRandom(uint32_t& s) {
  s = s * 1664525u + 1013904223u;
  return s >> 8;
}

/// Bytes in [lo, hi], with runs of the extremes.
std::vector<uint8_t> randomBytes(size_t n, int lo, int hi, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (auto& x : v) {
    const uint32_t r = nextRandom(seed);
    const int value = r % 7 == 0 ? hi : r % 11 == 0 ? lo : lo + static_cast<int>(r % (hi - lo + 1));
    x = static_cast<uint8_t>(value);
  }
  return v;
}

int32_t at(const std::vector<uint8_t>& v, size_t i, bool isSigned) {
  return isSigned ? static_cast<int8_t>(v[i]) : v[i];
}

int32_t roundClampRef(float v, int32_t zero, int32_t lo, int32_t hi) {
  if (std::isnan(v)) return lo;
  const double r = std::nearbyint(static_cast<double>(v));
  return static_cast<int32_t>(std::clamp<double>(r + zero, lo, hi));
}

/// The epilogue's definition (quant.h), from an exact int32 sum.
int32_t finishRef(const QEpilogue& e, int64_t acc, int32_t bias, float wScale, int32_t r) {
  if (e.kind == QOutput::kInt32) return static_cast<int32_t>(acc + bias);
  const float divisor = e.kind == QOutput::kRequantAdd ? e.mid_scale : e.y_scale;
  const float multiplier = e.x_scale * wScale / divisor;
  const float scaled = static_cast<float>(acc + bias) * multiplier;
  if (e.kind == QOutput::kRequant) return roundClampRef(scaled, e.y_zero, e.y_min, e.y_max);
  const int32_t mid = roundClampRef(scaled, e.mid_zero, e.mid_min, e.mid_max);
  const float a = static_cast<float>(mid - e.mid_zero) * (e.mid_scale / e.y_scale);
  const float b = static_cast<float>(r - e.r_zero) * (e.r_scale / e.y_scale);
  return roundClampRef(a + b, e.y_zero, e.y_min, e.y_max);
}

int32_t outputAt(const std::vector<uint8_t>& y, size_t i, DType t) {
  if (t == DType::kI32) {
    int32_t v;
    std::memcpy(&v, y.data() + 4 * i, 4);
    return v;
  }
  return at(y, i, t == DType::kI8);
}

struct QTensors {
  std::vector<uint8_t> x, w, wZero, residual;
  std::vector<float> wScale;
  std::vector<int32_t> bias;
};

/// Runs `kernel(team)` on 1, 2 and 3 threads into a fresh y each time and
/// compares with `expected`.
template <typename Kernel>
void checkOnTeams(Kernel kernel, size_t count, DType yType, const std::vector<int32_t>& expected) {
  const size_t size = yType == DType::kI32 ? 4 : 1;
  for (int threads : {1, 2, 3}) {
    INFO("threads " << threads);
    std::vector<uint8_t> y(count * size, 0xcd);
    if (threads == 1)
      kernel(Team::serial(), y.data());
    else
      onTeam(threads, [&](const Team& team) { kernel(team, y.data()); });
    for (size_t i = 0; i < count; ++i) {
      INFO("element " << i);
      REQUIRE(outputAt(y, i, yType) == expected[i]);
    }
  }
}

QEpilogue epilogueFor(int variant, bool ySigned) {
  QEpilogue e;
  e.y_type = ySigned ? DType::kI8 : DType::kU8;
  const int32_t lo = ySigned ? -128 : 0, hi = ySigned ? 127 : 255;
  e.x_scale = 0.02f;
  // Variant 1 saturates at both ends; its multipliers (0.4 to 0.9) run
  // both the kernels' round-then-clamp path (at most 1/2) and the other.
  e.y_scale = variant == 1 ? 0.0005f : 0.35f;
  e.y_zero = ySigned ? 3 : 131;
  e.y_min = lo;
  e.y_max = hi;
  if (variant == 2) e.y_min = e.y_zero;  // a fused Relu
  if (variant == 3) {
    e.kind = QOutput::kRequantAdd;
    e.mid_scale = 0.4f;
    e.mid_zero = 7;
    e.mid_min = lo;
    e.mid_max = hi;
    e.r_scale = 0.05f;
    e.r_zero = 17;
    e.r_signed = true;
    e.y_min = e.y_zero;  // Relu after the Add
  }
  if (variant == 4) {
    e.kind = QOutput::kInt32;
    e.y_type = DType::kI32;
  }
  return e;
}

struct ConvCase {
  int64_t n, c_in, h, w, c_out, groups, k_h, k_w, stride, pad, dilation;
};

/// The int8 convolutions' cases: shapes that take each path of every
/// variant (qconv_variants.def).
const ConvCase kQConvCases[] = {
    {1, 3, 9, 7, 5, 1, 3, 3, 2, 1, 1},       // stem-like, strided, padded
    {1, 17, 13, 11, 7, 1, 1, 1, 1, 0, 1},    // pointwise, 143 positions
    {2, 8, 6, 6, 10, 2, 3, 3, 1, 1, 1},      // groups, two images
    {1, 19, 10, 12, 19, 19, 3, 3, 1, 1, 1},  // depthwise
    {1, 6, 11, 9, 6, 6, 3, 3, 2, 1, 1},      // depthwise, stride 2
    {1, 3, 5, 71, 3, 3, 3, 3, 2, 1, 1},      // depthwise, stride 2, rows of 16s
    {1, 5, 8, 8, 4, 1, 3, 3, 1, 2, 2},       // dilation
    {1, 4, 1, 23, 9, 1, 1, 3, 1, 1, 1},      // 1-D
    {1, 64, 7, 7, 70, 1, 3, 3, 1, 1, 1},     // depth 576, 49 positions
    {1, 6, 12, 40, 9, 1, 7, 1, 1, 3, 1},     // 7x1 window, rows longer than a tile
    {1, 9, 11, 13, 16, 1, 1, 1, 2, 0, 1},    // strided 1x1
    {1, 128, 9, 9, 40, 1, 3, 3, 2, 1, 1},    // strided 3x3, depth 1152, 5 blocks
    {2, 7, 3, 1, 11, 1, 3, 1, 1, 1, 1},      // one column: a tile spans many rows
    {1, 8, 12, 37, 8, 8, 5, 5, 1, 2, 1},     // depthwise 5x5: two quads of taps a row
    {1, 4, 9, 9, 4, 4, 3, 3, 1, 2, 2},       // depthwise, dilation
    {1, 5, 6, 75, 6, 1, 3, 3, 2, 1, 1},      // stride 2, rows of 38: a copy of 32s and a tail
    {1, 4, 7, 20, 5, 1, 3, 3, 3, 1, 1},      // stride 3: the copy gathers
    {2, 3, 7, 7, 3, 3, 3, 3, 1, 1, 1},       // depthwise 7x7 planes: one flat block
    {1, 5, 13, 10, 5, 5, 3, 3, 2, 2, 2},     // depthwise, stride 2 and dilation 2
    {1, 2, 64, 33, 2, 2, 3, 3, 1, 1, 1},     // depthwise, flat mode in 3 bands
    {1, 1, 140, 60, 1, 1, 3, 3, 2, 1, 1},    // depthwise, stride 2 in 3 bands
    {1, 2, 9, 121, 2, 2, 3, 3, 2, 1, 1},     // depthwise, stride 2, chunks over two rows
    {1, 1, 3, 1100, 1, 1, 3, 3, 1, 1, 1},    // depthwise, a row too long for flat mode
    {1, 3, 9, 21, 3, 3, 3, 3, 1, 0, 1},      // depthwise, flat mode's rows unpadded
    {1, 2, 11, 70, 2, 2, 3, 1, 1, 1, 1},     // depthwise 3x1: taps 1 to 3 of each quad 0
    {1, 2, 20, 61, 2, 2, 1, 4, 1, 1, 1},     // depthwise 1x4, rows 63 long: one vector a row
    {1, 16, 14, 14, 48, 1, 1, 1, 1, 0, 1},   // 7 tiles: two threads split the channels
    {1, 3, 10, 10, 3, 3, 3, 3, 5, 1, 1},     // depthwise, stride 5: past one vpermb (loops)
    // The product along channels (7x7 and smaller planes, 14x14 at 3x3):
    {2, 8, 5, 5, 64, 1, 3, 3, 1, 1, 1},     // tiles of 7, 7, 7 and 4; chunks of 3 and 1 vectors
    {1, 12, 14, 14, 64, 2, 3, 3, 2, 1, 1},  // groups of 2 vectors, stride 2
    {1, 8, 9, 9, 16, 1, 3, 3, 1, 2, 2},     // one vector, dilation 2, 81 positions
};

/// c's geometry as qconv's parameters.
QConvParams qconvParamsOf(const ConvCase& c) {
  QConvParams p{};
  p.n = c.n, p.c_in = c.c_in, p.h_in = c.h, p.w_in = c.w, p.c_out = c.c_out, p.groups = c.groups;
  p.k_h = c.k_h, p.k_w = c.k_w, p.stride_h = p.stride_w = c.stride;
  p.pad_top = p.pad_left = c.pad, p.dilation_h = p.dilation_w = c.dilation;
  p.h_out = (c.h + 2 * c.pad - (c.k_h - 1) * c.dilation - 1) / c.stride + 1;
  p.w_out = (c.w + 2 * c.pad - (c.k_w - 1) * c.dilation - 1) / c.stride + 1;
  return p;
}

/// qconv on case c against the reference loops, its weights packed so
/// (kNone: as the model has them), or, given a variant `kernel`, forced
/// onto it on weights packed as it reads them. False, and nothing run,
/// where `kernel` does not take this layer (or its weights, packed, do not
/// fit its packing).
bool checkQConv(const ConvCase& c, bool xSigned, int32_t xZero, bool wSigned, bool perChannel,
                int variant, QPacking packing, QConvVariant kernel = QConvVariant::kNone) {
  QConvParams p = qconvParamsOf(c);
  p.x_signed = xSigned, p.w_signed = wSigned, p.per_channel = perChannel, p.x_zero = xZero;
  p.out = epilogueFor(variant, xSigned);
  if (kernel != QConvVariant::kNone) {
    if (!qconvVariantRuns(kernel, p, cgc::runtime_isa_tier())) return false;
    packing = variantInfo(kernel).packing;
    p.variant = kernel;
  }
  const int64_t cinG = c.c_in / c.groups, coutG = c.c_out / c.groups, taps = c.k_h * c.k_w;
  const uint32_t seed = static_cast<uint32_t>(c.c_in * 131 + c.c_out * 7 + variant);
  QTensors t;
  t.x = randomBytes(c.n * c.c_in * c.h * c.w, xSigned ? -128 : 0, xSigned ? 127 : 255, seed);
  // A forced variant that reads int8 weights gets w - w_zero within int8
  // (its extremes still saturate AVX2's pairs); the others, weights from
  // both ends, which a zero point may push beyond it (the int16 packing).
  const bool fits = kernel != QConvVariant::kNone && packing != QPacking::kWide;
  const int wLo = wSigned ? (fits ? -125 : -128) : (fits ? 15 : 0);
  const int wHi = wSigned ? (fits ? 124 : 127) : (fits ? 225 : 255);
  t.w = randomBytes(c.c_out * cinG * taps, wLo, wHi, seed + 1);
  const int64_t scales = perChannel ? c.c_out : 1;
  t.wZero = randomBytes(scales, wSigned ? -3 : (fits ? 100 : 0), wSigned ? 3 : (fits ? 140 : 255),
                        seed + 2);
  for (int64_t i = 0; i < scales; ++i)
    t.wScale.push_back(0.01f + 0.003f * static_cast<float>(i % 5));
  for (int64_t i = 0; i < c.c_out; ++i) t.bias.push_back(static_cast<int32_t>(i * 37 % 500) - 250);
  const int64_t outCount = c.n * c.c_out * p.h_out * p.w_out;
  t.residual = randomBytes(outCount, -128, 127, seed + 3);

  std::vector<int32_t> expected(outCount);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t co = 0; co < c.c_out; ++co)
      for (int64_t oy = 0; oy < p.h_out; ++oy)
        for (int64_t ox = 0; ox < p.w_out; ++ox) {
          const int64_t g = co / coutG;
          const int32_t wz = at(t.wZero, perChannel ? co : 0, wSigned);
          int64_t acc = 0;
          for (int64_t ci = 0; ci < cinG; ++ci)
            for (int64_t kh = 0; kh < c.k_h; ++kh)
              for (int64_t kw = 0; kw < c.k_w; ++kw) {
                const int64_t iy = oy * c.stride - c.pad + kh * c.dilation;
                const int64_t ix = ox * c.stride - c.pad + kw * c.dilation;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                const int32_t xv =
                    at(t.x, ((n * c.c_in + g * cinG + ci) * c.h + iy) * c.w + ix, xSigned);
                const int32_t wv = at(t.w, ((co * cinG + ci) * c.k_h + kh) * c.k_w + kw, wSigned);
                acc += static_cast<int64_t>(xv - xZero) * (wv - wz);
              }
          const int64_t i = ((n * c.c_out + co) * p.h_out + oy) * p.w_out + ox;
          const int32_t bias = variant == 4 ? 0 : t.bias[co];
          expected[i] =
              finishRef(p.out, acc, bias, t.wScale[perChannel ? co : 0], at(t.residual, i, true));
        }

  std::vector<uint8_t> packed;
  const void* weights = t.w.data();
  if (packing != QPacking::kNone) {
    const QWeightShape shape{c.groups, coutG, cinG * taps, true, wSigned, perChannel, taps};
    const bool depthwise = c.groups == c.c_in && c.groups == c.c_out;
    const QPacking wanted = depthwise && kernel == QConvVariant::kNone ? QPacking::kWide : packing;
    const QPackInfo info =
        planQWeights(shape, t.w.data(), t.wZero.data(), wanted, cgc::runtime_isa_tier());
    if (info.packing != wanted && kernel != QConvVariant::kNone) return false;
    packed.resize(info.bytes);
    packQWeights(shape, info, t.w.data(), t.wZero.data(), packed.data());
    p.packing = info.packing, p.pack_nb = info.nb, p.split_entries = info.split_entries;
    weights = packed.data();
  }
  checkOnTeams(
      [&](const Team& team, uint8_t* y) {
        qconv(p, t.x.data(), weights, t.wScale.data(), t.wZero.data(),
              variant == 4 ? nullptr : t.bias.data(), variant == 3 ? t.residual.data() : nullptr, y,
              team);
      },
      outCount, p.out.y_type, expected);
  return true;
}

}  // namespace

TEST_CASE("qconv matches the integer reference") {
  for (const ConvCase& c : kQConvCases)
    for (QPacking packing :
         {QPacking::kNone, QPacking::kQuadsSplit, QPacking::kQuads, QPacking::kTapQuads})
      for (int variant : {0, 1, 2, 3, 4})
        for (auto [xSigned, xZero] :
             {std::pair{false, 0}, std::pair{false, 128}, std::pair{false, 255},
              std::pair{true, -128}, std::pair{true, 127}}) {
          const bool wSigned = variant != 2 || c.c_in % 2 == 0;  // some uint8 weights
          const bool perChannel = (variant + c.c_out) % 2 == 0;
          INFO("case c_in " << c.c_in << " c_out " << c.c_out << " groups " << c.groups
                            << " packing " << enumName(packing) << " variant " << variant
                            << " x zero " << xZero << (xSigned ? " int8" : " uint8")
                            << (wSigned ? " int8 w" : " uint8 w")
                            << (perChannel ? " per channel" : " per tensor"));
          checkQConv(c, xSigned, xZero, wSigned, perChannel, variant, packing);
        }
}

TEST_CASE("every int8 conv variant this runtime has, on every case it takes") {
  // The variants of cgc/kernels/qconv_variants.def, each forced on the
  // cases above that it computes, on weights packed as it reads them,
  // against the reference loops.
  const char* tier = cgc::runtime_isa_tier();
  std::string ran, skipped;
  for (const QConvVariantInfo& v : kQConvVariants) {
    if (!cgc::isaTierIncludes(tier, v.tier)) {
      skipped += std::string(" ") + v.name + " (tier " + v.tier + ")";
      continue;
    }
    int count = 0;
    for (const ConvCase& c : kQConvCases) {
      bool taken = false;
      for (int variant : {0, 1, 2, 3, 4})
        for (auto [xSigned, xZero] : {std::pair{false, 128}, std::pair{true, -128}}) {
          const bool wSigned = variant != 2 || c.c_in % 2 == 0;  // some uint8 weights
          const bool perChannel = (variant + c.c_out) % 2 == 0;
          INFO("variant " << v.name << " case c_in " << c.c_in << " c_out " << c.c_out << " groups "
                          << c.groups << " stride " << c.stride << " epilogue " << variant
                          << " x zero " << xZero << (xSigned ? " int8" : " uint8")
                          << (wSigned ? " int8 w" : " uint8 w"));
          taken =
              checkQConv(c, xSigned, xZero, wSigned, perChannel, variant, v.packing, v.variant) ||
              taken;
        }
      count += taken;
    }
    INFO("variant " << v.name);
    CHECK(count > 0);  // every variant the runtime has meets a case
    ran += std::string(" ") + v.name + " (" + std::to_string(count) + " cases)";
  }
  std::printf("int8 conv variants run on tier %s:%s; skipped for want of a tier:%s\n", tier,
              ran.c_str(), skipped.empty() ? " none" : skipped.c_str());
}

TEST_CASE("qgemm matches the integer reference") {
  for (int64_t m : {1, 5, 33, 70})
    for (int64_t k : {3, 17, 64})
      for (int64_t n : {1, 7, 40})
        for (bool transB : {false, true})
          for (QPacking packing :
               {QPacking::kNone, QPacking::kQuadsSplit, QPacking::kQuads, QPacking::kWide}) {
            const int variant = static_cast<int>((m + k + n) % 5);
            const bool aSigned = m % 2 == 1, bSigned = n != 7, perColumn = k != 17;
            const int32_t aZero = aSigned ? (k == 3 ? -128 : 127) : (k == 3 ? 0 : 255);
            INFO("m " << m << " k " << k << " n " << n << " trans_b " << transB << " packing "
                      << enumName(packing) << " variant " << variant);
            QGemmParams p{};
            p.m = m, p.n = n, p.k = k, p.trans_b = transB;
            // n 40: the zero point of A given at run time (MatMulInteger).
            const bool runtimeZero = n == 40;
            const uint8_t aZeroByte = static_cast<uint8_t>(aZero);
            p.a_signed = aSigned, p.b_signed = bSigned, p.per_column = perColumn;
            p.a_zero = runtimeZero ? 0 : aZero;
            p.out = epilogueFor(variant, aSigned);
            const uint32_t seed = static_cast<uint32_t>(m * 1000 + k * 10 + n);
            QTensors t;
            t.x = randomBytes(m * k, aSigned ? -128 : 0, aSigned ? 127 : 255, seed);
            t.w = randomBytes(k * n, bSigned ? -128 : 0, bSigned ? 127 : 255, seed + 1);
            const int64_t scales = perColumn ? n : 1;
            t.wZero = randomBytes(scales, bSigned ? -2 : 100, bSigned ? 2 : 140, seed + 2);
            for (int64_t i = 0; i < scales; ++i)
              t.wScale.push_back(0.02f + 0.001f * static_cast<float>(i));
            for (int64_t i = 0; i < n; ++i)
              t.bias.push_back(static_cast<int32_t>(i * 53 % 300) - 150);
            t.residual = randomBytes(m * n, -128, 127, seed + 3);
            std::vector<int32_t> expected(m * n);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                const int32_t bz = at(t.wZero, perColumn ? j : 0, bSigned);
                int64_t acc = 0;
                for (int64_t d = 0; d < k; ++d)
                  acc += static_cast<int64_t>(at(t.x, i * k + d, aSigned) - aZero) *
                         (at(t.w, transB ? j * k + d : d * n + j, bSigned) - bz);
                expected[i * n + j] =
                    finishRef(p.out, acc, variant == 4 ? 0 : t.bias[j], t.wScale[perColumn ? j : 0],
                              at(t.residual, i * n + j, true));
              }
            std::vector<uint8_t> packed;
            const void* b = t.w.data();
            if (packing != QPacking::kNone) {
              const QWeightShape shape{1, n, k, transB, bSigned, perColumn};
              const QPackInfo info =
                  planQWeights(shape, t.w.data(), t.wZero.data(), packing, cgc::runtime_isa_tier());
              packed.resize(info.bytes);
              packQWeights(shape, info, t.w.data(), t.wZero.data(), packed.data());
              p.packing = info.packing, p.pack_nb = info.nb;
              b = packed.data();
            }
            checkOnTeams(
                [&](const Team& team, uint8_t* y) {
                  qgemm(p, t.x.data(), runtimeZero ? &aZeroByte : nullptr, b, t.wScale.data(),
                        t.wZero.data(), variant == 4 ? nullptr : t.bias.data(),
                        variant == 3 ? t.residual.data() : nullptr, y, team);
                },
                m * n, p.out.y_type, expected);
          }
}

TEST_CASE("quantize and dequantize: half to even, saturation, per axis") {
  const std::vector<float> x = {0.0f,    0.5f,     1.5f,   2.5f,   -0.5f,   -1.5f, -2.5f,
                                1000.0f, -1000.0f, 126.5f, 127.5f, -128.5f, NAN};
  const int32_t expectU8[] = {128, 128, 130, 130, 128, 126, 126, 255, 0, 254, 255, 0, 0};
  const int32_t expectI8[] = {0, 0, 2, 2, 0, -2, -2, 127, -128, 126, 127, -128, -128};
  for (bool isSigned : {false, true}) {
    QuantizeParams p{isSigned ? DType::kI8 : DType::kU8, 1, 1, static_cast<int64_t>(x.size())};
    const float scale = 1.0f;
    const uint8_t zero = isSigned ? 0 : 128;
    std::vector<uint8_t> y(x.size());
    quantize_linear(p, x.data(), &scale, &zero, y.data());
    for (size_t i = 0; i < x.size(); ++i) {
      INFO("x " << x[i]);
      REQUIRE(at(y, i, isSigned) == (isSigned ? expectI8[i] : expectU8[i]));
    }
  }
  // Per axis 1 of [2, 3, 2], on teams.
  QuantizeParams p{DType::kU8, 2, 3, 2, true};
  const std::vector<float> values = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
  const float scales[] = {1.0f, 2.0f, 0.5f};
  const uint8_t zeros[] = {10, 20, 30};
  std::vector<int32_t> expected;
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t axis = i / 2 % 3;
    expected.push_back(roundClampRef(values[i] / scales[axis], zeros[axis], 0, 255));
  }
  checkOnTeams([&](const Team& team,
                   uint8_t* y) { quantize_linear(p, values.data(), scales, zeros, y, team); },
               values.size(), DType::kU8, expected);
  // Dequantize the int32 bias form.
  const std::vector<int32_t> big = {-2147483647, 5, 100000};
  const float s = 0.5f;
  std::vector<float> out(3);
  dequantize_linear({DType::kI32, 1, 1, 3}, big.data(), &s, nullptr, out.data());
  REQUIRE(out[1] == 2.5f);
  REQUIRE(out[2] == 50000.0f);
}

TEST_CASE("dynamic quantize, quantised add, table lookups, int8 pools") {
  const std::vector<float> x = {-1.0f, 0.0f, 2.0f, 0.3f};
  std::vector<uint8_t> y(4);
  float scale;
  uint8_t zero;
  dynamic_quantize_linear({4}, x.data(), y.data(), &scale, &zero);
  REQUIRE(scale == 3.0f / 255.0f);
  REQUIRE(zero == 85);
  REQUIRE(y[0] == 0);
  REQUIRE(y[2] == 255);

  const auto a = randomBytes(1037, 0, 255, 5), b = randomBytes(1037, -128, 127, 6);
  QAddParams add{1037, false, true, DType::kU8, 0.05f, 0.02f, 0.06f, 100, -3, 9, 9, 255};
  std::vector<int32_t> expected;
  for (size_t i = 0; i < a.size(); ++i) {
    const float fa = static_cast<float>(a[i] - 100) * 0.05f;
    const float fb = static_cast<float>(at(b, i, true) + 3) * 0.02f;
    expected.push_back(roundClampRef((fa + fb) / 0.06f, 9, 9, 255));
  }
  checkOnTeams([&](const Team& team, uint8_t* out) { qadd(add, a.data(), b.data(), out, team); },
               a.size(), DType::kU8, expected);

  // Table lookups: whole vectors of 64 and the tail, split over teams.
  const auto table = randomBytes(256, 0, 255, 7);
  for (size_t count : {size_t{1}, size_t{64}, size_t{1037}}) {
    const auto x = randomBytes(count, 0, 255, 8);
    std::vector<int32_t> looked;
    for (uint8_t v : x) looked.push_back(table[v]);
    checkOnTeams(
        [&](const Team& team, uint8_t* out) {
          qlookup({static_cast<int64_t>(count)}, x.data(), table.data(), out, team);
        },
        count, DType::kU8, looked);
  }

  // Max pooling, int8 and uint8; rows of 150 columns: vectors of 64 and
  // their tails.
  for (auto [k, stride, pad] : {std::tuple{3, 2, 1}, std::tuple{3, 1, 1}, std::tuple{3, 2, 0},
                                std::tuple{2, 2, 0}, std::tuple{2, 1, 0}, std::tuple{2, 2, 1}})
    for (int64_t w : {13, 150})
      for (bool isSigned : {true, false}) {
        PoolParams p{};
        p.n_c = 5, p.h_in = 11, p.w_in = w, p.k_h = p.k_w = k, p.stride_h = p.stride_w = stride;
        p.pad_top = p.pad_left = pad;
        p.h_out = (11 + 2 * pad - k) / stride + 1, p.w_out = (w + 2 * pad - k) / stride + 1;
        const auto in = randomBytes(5 * 11 * w, isSigned ? -128 : 0, isSigned ? 127 : 255, 9);
        std::vector<int32_t> ref;
        for (int64_t c = 0; c < 5; ++c)
          for (int64_t oy = 0; oy < p.h_out; ++oy)
            for (int64_t ox = 0; ox < p.w_out; ++ox) {
              int32_t best = isSigned ? -128 : 0;
              for (int64_t i = 0; i < k; ++i)
                for (int64_t j = 0; j < k; ++j) {
                  const int64_t iy = oy * stride - pad + i, ix = ox * stride - pad + j;
                  if (iy >= 0 && iy < 11 && ix >= 0 && ix < w)
                    best = std::max(best, at(in, (c * 11 + iy) * w + ix, isSigned));
                }
              ref.push_back(best);
            }
        INFO("pool " << k << " stride " << stride << " pad " << pad << " width " << w
                     << (isSigned ? " int8" : " uint8"));
        checkOnTeams(
            [&](const Team& team, uint8_t* out) {
              if (isSigned)
                max_pool_int8<int8_t>(p, reinterpret_cast<const int8_t*>(in.data()),
                                      reinterpret_cast<int8_t*>(out), team);
              else
                max_pool_int8<uint8_t>(p, in.data(), out, team);
            },
            ref.size(), isSigned ? DType::kI8 : DType::kU8, ref);
      }

  QGlobalPoolParams g{7, 49, false, DType::kU8, 0.1f, 0.03f, 12, 4};
  const auto planes = randomBytes(7 * 49, 0, 255, 10);
  std::vector<int32_t> ref;
  for (int64_t c = 0; c < 7; ++c) {
    int32_t sum = 0;
    for (int64_t i = 0; i < 49; ++i) sum += planes[c * 49 + i];
    ref.push_back(
        roundClampRef(static_cast<float>(sum - 49 * 12) * (0.1f / (49.0f * 0.03f)), 4, 0, 255));
  }
  checkOnTeams(
      [&](const Team& team, uint8_t* out) { qglobal_avg_pool(g, planes.data(), out, team); },
      ref.size(), DType::kU8, ref);
}
