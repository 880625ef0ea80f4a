// Every runtime kernel against a plain, obviously correct reference loop,
// over awkward shapes: odd sizes, 1x1, strides, groups, padding, broadcasts.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cgc/kernels.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::test::randomFloats;
using cgc::test::requireClose;

namespace {

/// Dense row-major strides.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

}  // namespace

TEST_CASE("gemm matches the reference for every transpose and bias form") {
  struct Case {
    int64_t m, n, k;
  };
  for (Case c :
       {Case{1, 1, 1}, Case{7, 13, 5}, Case{33, 65, 300}, Case{70, 3, 2}, Case{5, 40, 257}}) {
    for (int trans = 0; trans < 4; ++trans) {
      for (int biasForm = 0; biasForm < 4; ++biasForm) {
        bool ta = trans & 1, tb = trans & 2;
        auto a = randomFloats(c.m * c.k, 1), b = randomFloats(c.k * c.n, 2);
        auto bias = randomFloats(c.m * c.n, 3);
        GemmParams p{c.m, c.n, c.k, ta, tb, 0.75f, 1.5f, 0, 0};
        if (biasForm == 1) p.c_stride_n = 1;  // [n]
        if (biasForm == 2) p.c_stride_m = 1;  // [m, 1]
        if (biasForm == 3) {
          p.c_stride_m = c.n;
          p.c_stride_n = 1;
        }  // [m, n]
        std::vector<float> y(c.m * c.n), ref(c.m * c.n);
        gemm(p, a.data(), b.data(), biasForm ? bias.data() : nullptr, y.data());
        for (int64_t i = 0; i < c.m; ++i)
          for (int64_t j = 0; j < c.n; ++j) {
            double sum = 0;
            for (int64_t q = 0; q < c.k; ++q)
              sum += double(ta ? a[q * c.m + i] : a[i * c.k + q]) *
                     (tb ? b[j * c.k + q] : b[q * c.n + j]);
            double cv = biasForm ? bias[i * p.c_stride_m + j * p.c_stride_n] : 0.0;
            ref[i * c.n + j] = static_cast<float>(0.75 * sum + (biasForm ? 1.5 * cv : 0.0));
          }
        INFO("m=" << c.m << " n=" << c.n << " k=" << c.k << " trans=" << trans
                  << " bias=" << biasForm);
        requireClose(y, ref);
      }
    }
  }
}

TEST_CASE("batched matmul broadcasts batch dimensions") {
  // A [2, 1, 3, 4] x B [3, 4, 5] -> [2, 3, 3, 5]
  auto a = randomFloats(2 * 3 * 4, 4), b = randomFloats(3 * 4 * 5, 5);
  MatMulParams p{};
  p.batch_rank = 2;
  p.batch_shape[0] = 2;
  p.batch_shape[1] = 3;
  p.a_batch_strides[0] = 12;
  p.a_batch_strides[1] = 0;
  p.b_batch_strides[0] = 0;
  p.b_batch_strides[1] = 20;
  p.m = 3;
  p.k = 4;
  p.n = 5;
  std::vector<float> y(2 * 3 * 3 * 5), ref(y.size());
  matmul<float>(p, a.data(), b.data(), nullptr, y.data());
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 5; ++c) {
          float sum = 0;
          for (int q = 0; q < 4; ++q) sum += a[i * 12 + r * 4 + q] * b[j * 20 + q * 5 + c];
          ref[((i * 3 + j) * 3 + r) * 5 + c] = sum;
        }
  requireClose(y, ref);
}

namespace {

std::vector<float> referenceConv(const ConvParams& p, const std::vector<float>& x,
                                 const std::vector<float>& w, const float* bias) {
  std::vector<float> y(p.n * p.c_out * p.h_out * p.w_out);
  int64_t cinG = p.c_in / p.groups, coutG = p.c_out / p.groups;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < p.c_out; ++o)
      for (int64_t oh = 0; oh < p.h_out; ++oh)
        for (int64_t ow = 0; ow < p.w_out; ++ow) {
          double sum = bias ? bias[o] : 0.0;
          int64_t g = o / coutG;
          for (int64_t c = 0; c < cinG; ++c)
            for (int64_t kh = 0; kh < p.k_h; ++kh)
              for (int64_t kw = 0; kw < p.k_w; ++kw) {
                int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
                int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
                if (ih < 0 || ih >= p.h_in || iw < 0 || iw >= p.w_in) continue;
                sum += double(x[((n * p.c_in + g * cinG + c) * p.h_in + ih) * p.w_in + iw]) *
                       w[((o * cinG + c) * p.k_h + kh) * p.k_w + kw];
              }
          y[((n * p.c_out + o) * p.h_out + oh) * p.w_out + ow] = static_cast<float>(sum);
        }
  return y;
}

int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t d, int64_t padBegin, int64_t padEnd) {
  return (in + padBegin + padEnd - ((k - 1) * d + 1)) / s + 1;
}

}  // namespace

TEST_CASE("conv matches a direct loop: groups, strides, pads, dilations") {
  struct Case {
    int64_t n, cin, h, w, cout, groups, k_h, k_w, s_h, s_w, pt, pl, pb, pr, dh, dw;
  };
  for (Case c : {Case{1, 3, 7, 9, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
                 Case{2, 4, 8, 8, 6, 2, 3, 2, 2, 3, 0, 1, 2, 0, 1, 1},
                 Case{1, 6, 5, 5, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  // depthwise
                 Case{1, 5, 6, 7, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},  // pointwise
                 Case{1, 2, 9, 9, 2, 1, 3, 3, 1, 2, 2, 2, 2, 2, 2, 3},  // dilated
                 Case{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1}}) {
    ConvParams p{c.n,
                 c.cin,
                 1,
                 c.h,
                 c.w,
                 c.cout,
                 1,
                 outSize(c.h, c.k_h, c.s_h, c.dh, c.pt, c.pb),
                 outSize(c.w, c.k_w, c.s_w, c.dw, c.pl, c.pr),
                 c.groups,
                 1,
                 c.k_h,
                 c.k_w,
                 1,
                 c.s_h,
                 c.s_w,
                 0,
                 c.pt,
                 c.pl,
                 1,
                 c.dh,
                 c.dw};
    auto x = randomFloats(c.n * c.cin * c.h * c.w, 6);
    auto w = randomFloats(c.cout * (c.cin / c.groups) * c.k_h * c.k_w, 7);
    auto bias = randomFloats(c.cout, 8);
    std::vector<float> y(p.n * p.c_out * p.h_out * p.w_out);
    conv(p, x.data(), w.data(), bias.data(), nullptr, y.data());
    requireClose(y, referenceConv(p, x, w, bias.data()));
    conv(p, x.data(), w.data(), nullptr, nullptr, y.data());
    requireClose(y, referenceConv(p, x, w, nullptr));
  }
}

TEST_CASE("conv_transpose matches a scatter loop") {
  struct Case {
    int64_t cin, h, w, coutG, groups, k, s, pad, d, outPad;
  };
  for (Case c : {Case{2, 3, 4, 3, 1, 3, 2, 1, 1, 1}, Case{4, 5, 5, 1, 2, 2, 1, 0, 2, 0},
                 Case{1, 1, 1, 2, 1, 1, 1, 0, 1, 0}}) {
    int64_t hOut = (c.h - 1) * c.s - 2 * c.pad + (c.k - 1) * c.d + 1 + c.outPad;
    int64_t wOut = (c.w - 1) * c.s - 2 * c.pad + (c.k - 1) * c.d + 1 + c.outPad;
    int64_t cout = c.coutG * c.groups, cinG = c.cin / c.groups;
    ConvParams p{1,   c.cin, 1, c.h, c.w, cout, 1,     hOut,  wOut, c.groups, 1,
                 c.k, c.k,   1, c.s, c.s, 0,    c.pad, c.pad, 1,    c.d,      c.d};
    auto x = randomFloats(c.cin * c.h * c.w, 9), w = randomFloats(c.cin * c.coutG * c.k * c.k, 10);
    auto bias = randomFloats(cout, 11);
    std::vector<float> y(cout * hOut * wOut), ref(y.size());
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t i = 0; i < hOut * wOut; ++i) ref[o * hOut * wOut + i] = bias[o];
    for (int64_t ci = 0; ci < c.cin; ++ci) {
      int64_t g = ci / cinG;
      for (int64_t oc = 0; oc < c.coutG; ++oc)
        for (int64_t ih = 0; ih < c.h; ++ih)
          for (int64_t iw = 0; iw < c.w; ++iw)
            for (int64_t kh = 0; kh < c.k; ++kh)
              for (int64_t kw = 0; kw < c.k; ++kw) {
                int64_t oh = ih * c.s - c.pad + kh * c.d, ow = iw * c.s - c.pad + kw * c.d;
                if (oh < 0 || oh >= hOut || ow < 0 || ow >= wOut) continue;
                ref[((g * c.coutG + oc) * hOut + oh) * wOut + ow] +=
                    x[(ci * c.h + ih) * c.w + iw] * w[((ci * c.coutG + oc) * c.k + kh) * c.k + kw];
              }
    }
    conv_transpose(p, x.data(), w.data(), bias.data(), y.data());
    requireClose(y, ref);
  }
}

TEST_CASE("pooling matches reference windows") {
  PoolParams p{3, 1, 7, 6, 1, 0, 0, 1, 3, 2, 1, 2, 2, 0, 1, 1, 1, 1, 1, false};
  p.h_out = outSize(7, 3, 2, 1, 1, 1);
  p.w_out = outSize(6, 2, 2, 1, 1, 0);
  auto x = randomFloats(3 * 7 * 6, 12);
  for (bool includePad : {false, true}) {
    p.count_include_pad = includePad;
    std::vector<float> maxY(3 * p.h_out * p.w_out), avgY(maxY.size()), maxRef(maxY.size()),
        avgRef(maxY.size());
    max_pool(p, x.data(), maxY.data());
    avg_pool(p, x.data(), avgY.data());
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t oh = 0; oh < p.h_out; ++oh)
        for (int64_t ow = 0; ow < p.w_out; ++ow) {
          float m = -std::numeric_limits<float>::infinity(), s = 0;
          int count = 0;
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 2; ++kw) {
              int64_t ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
              if (ih < 0 || ih >= 7 || iw < 0 || iw >= 6) continue;
              float v = x[(c * 7 + ih) * 6 + iw];
              m = std::max(m, v);
              s += v;
              ++count;
            }
          int64_t at = (c * p.h_out + oh) * p.w_out + ow;
          maxRef[at] = m;
          avgRef[at] = s / (includePad ? 6 : count);
        }
    requireClose(maxY, maxRef);
    requireClose(avgY, avgRef);
  }
  std::vector<float> g(3);
  global_avg_pool({3, 42}, x.data(), g.data());
  for (int c = 0; c < 3; ++c) {
    float s = 0;
    for (int i = 0; i < 42; ++i) s += x[c * 42 + i];
    CHECK(g[c] == Approx(s / 42).margin(1e-6));
  }
}

TEST_CASE("binary ops broadcast like numpy, including scalars and rank 5") {
  std::vector<int64_t> out = {2, 1, 3, 4, 5};
  std::vector<int64_t> aShape = {2, 1, 3, 1, 5}, bShape = {1, 1, 1, 4, 1};
  auto a = randomFloats(2 * 3 * 5, 13), b = randomFloats(4, 14);
  auto as = stridesOf(aShape), bs = stridesOf(bShape);
  BinaryParams p{};
  p.bc.rank = 5;
  p.bc.count = 2 * 3 * 4 * 5;
  for (int d = 0; d < 5; ++d) {
    p.bc.shape[d] = out[d];
    p.bc.a_strides[d] = aShape[d] == 1 ? 0 : as[d];
    p.bc.b_strides[d] = bShape[d] == 1 ? 0 : bs[d];
  }
  for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
    p.op = op;
    std::vector<float> y(p.bc.count), ref(p.bc.count);
    binary<float>(p, a.data(), b.data(), y.data());
    int64_t i = 0;
    for (int64_t d0 = 0; d0 < 2; ++d0)
      for (int64_t d2 = 0; d2 < 3; ++d2)
        for (int64_t d3 = 0; d3 < 4; ++d3)
          for (int64_t d4 = 0; d4 < 5; ++d4, ++i) {
            float u = a[d0 * 15 + d2 * 5 + d4], v = b[d3];
            ref[i] = op == BinaryOp::kAdd   ? u + v
                     : op == BinaryOp::kSub ? u - v
                     : op == BinaryOp::kMul ? u * v
                                            : u / v;
          }
    requireClose(y, ref);
  }
  // Scalar operand, integer types, in place.
  std::vector<int64_t> xi = {7, -7, 9, 0};
  std::vector<int64_t> two = {2};
  BinaryParams s{BinaryOp::kDiv, {}};
  s.bc.rank = 1;
  s.bc.count = 4;
  s.bc.shape[0] = 4;
  s.bc.a_strides[0] = 1;
  s.bc.b_strides[0] = 0;
  binary<int64_t>(s, xi.data(), two.data(), xi.data());
  CHECK(xi == std::vector<int64_t>{3, -3, 4, 0});
}

TEST_CASE("unary ops match std math") {
  auto x = randomFloats(37, 15);
  for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kLeakyRelu, UnaryOp::kClip, UnaryOp::kSigmoid,
                     UnaryOp::kTanh, UnaryOp::kHardSigmoid, UnaryOp::kExp, UnaryOp::kNeg,
                     UnaryOp::kAbs, UnaryOp::kFloor, UnaryOp::kCeil}) {
    UnaryParams p{op, 37, 0.3f, 0.4f};
    std::vector<float> y(37), ref(37);
    unary<float>(p, x.data(), y.data());
    for (int i = 0; i < 37; ++i) {
      float v = x[i];
      switch (op) {
        case UnaryOp::kRelu:
          ref[i] = std::max(v, 0.0f);
          break;
        case UnaryOp::kLeakyRelu:
          ref[i] = v >= 0 ? v : 0.3f * v;
          break;
        case UnaryOp::kClip:
          ref[i] = std::min(std::max(v, 0.3f), 0.4f);
          break;
        case UnaryOp::kSigmoid:
          ref[i] = 1 / (1 + std::exp(-v));
          break;
        case UnaryOp::kTanh:
          ref[i] = std::tanh(v);
          break;
        case UnaryOp::kHardSigmoid:
          ref[i] = std::max(0.0f, std::min(1.0f, 0.3f * v + 0.4f));
          break;
        case UnaryOp::kExp:
          ref[i] = std::exp(v);
          break;
        case UnaryOp::kNeg:
          ref[i] = -v;
          break;
        case UnaryOp::kAbs:
          ref[i] = std::fabs(v);
          break;
        case UnaryOp::kFloor:
          ref[i] = std::floor(v);
          break;
        case UnaryOp::kCeil:
          ref[i] = std::ceil(v);
          break;
        default:
          break;
      }
    }
    requireClose(y, ref);
  }
}

TEST_CASE("strided copies cover transposes, negative steps and rank 0") {
  // Transpose [2,3,4] with perm (2,0,1).
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = static_cast<float>(i);
  StridedCopyParams t{3, 4, 0, {4, 2, 3}, {1, 12, 4}};
  std::vector<float> y(24);
  strided_copy(t, x.data(), y.data());
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) CHECK(y[(a * 2 + b) * 3 + c] == x[(b * 3 + c) * 4 + a]);
  // Slice x[1, ::-2, 3:0:-1] of [2,3,4] -> [2, 3]
  StridedCopyParams s{2, 4, 12 + 2 * 4 + 3, {2, 3}, {-8, -1}};
  std::vector<float> z(6);
  strided_copy(s, x.data(), z.data());
  CHECK(z == std::vector<float>{23, 22, 21, 15, 14, 13});
  // Rank 0, 8-byte elements.
  std::vector<int64_t> big = {5, 6, 7};
  int64_t one = 0;
  StridedCopyParams scalar{0, 8, 2, {}, {}};
  strided_copy(scalar, big.data(), &one);
  CHECK(one == 7);
}

TEST_CASE("concat, gather, cast and softmax") {
  std::vector<uint8_t> a = {1, 2, 3, 4}, b = {9, 8};
  const void* parts[] = {a.data(), b.data()};
  int64_t partBytes[] = {2, 1};
  std::vector<uint8_t> joined(6);
  concat({2, 2, partBytes}, parts, joined.data());
  CHECK(joined == std::vector<uint8_t>{1, 2, 9, 3, 4, 8});

  std::vector<float> data = {0, 1, 2, 3, 4, 5};  // [3, 2]
  std::vector<int64_t> idx = {-1, 0, 7};
  std::vector<float> picked(6);
  CHECK(gather({1, 3, 8, 3}, data.data(), idx.data(), picked.data()) == Status::kIndexOutOfRange);
  CHECK(picked == std::vector<float>{4, 5, 0, 1, 0, 0});
  std::vector<int32_t> idx32 = {1};
  std::vector<float> col(3);
  CHECK(gather({3, 2, 4, 1}, data.data(), idx32.data(), col.data()) == Status::kOk);
  CHECK(col == std::vector<float>{1, 3, 5});

  std::vector<float> f = {1.9f, -1.9f, 0.0f};
  std::vector<int64_t> i64(3);
  cast({cgc::DType::kF32, cgc::DType::kI64, 3}, f.data(), i64.data());
  CHECK(i64 == std::vector<int64_t>{1, -1, 0});
  std::vector<uint8_t> flags(3);
  cast({cgc::DType::kF32, cgc::DType::kBool, 3}, f.data(), flags.data());
  CHECK(flags == std::vector<uint8_t>{1, 1, 0});

  auto x = randomFloats(2 * 5 * 3, 16);
  std::vector<float> y(x.size()), logY(x.size());
  softmax({2, 5, 3, false}, x.data(), y.data());
  softmax({2, 5, 3, true}, x.data(), logY.data());
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 3; ++i) {
      double sum = 0;
      for (int a2 = 0; a2 < 5; ++a2) sum += std::exp(x[(o * 5 + a2) * 3 + i]);
      for (int a2 = 0; a2 < 5; ++a2) {
        int at = (o * 5 + a2) * 3 + i;
        CHECK(y[at] == Approx(std::exp(x[at]) / sum).epsilon(1e-5));
        CHECK(logY[at] == Approx(x[at] - std::log(sum)).epsilon(1e-5).margin(1e-6));
      }
    }
}

TEST_CASE("batch_norm normalises per channel, in place") {
  auto x = randomFloats(2 * 3 * 4, 17);
  std::vector<float> ref(x.size());
  float scale[] = {1, 2, 0.5f}, bias[] = {0, 1, -1}, mean[] = {0.1f, -0.2f, 0},
        var[] = {1, 0.5f, 2};
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 4; ++i) {
        int at = (n * 3 + c) * 4 + i;
        ref[at] = scale[c] * (x[at] - mean[c]) / std::sqrt(var[c] + 1e-5f) + bias[c];
      }
  batch_norm({2, 3, 4, 1e-5f}, x.data(), scale, bias, mean, var, x.data());
  requireClose(x, ref);
}

TEST_CASE("compare and where broadcast like numpy") {
  std::vector<float> a = {1, 2, 3, 4, 5, 6};  // [2, 3]
  std::vector<float> b = {2, 5};              // [2, 1]
  CompareParams p{CompareOp::kGreaterOrEqual, {}};
  p.bc.rank = 2;
  p.bc.count = 6;
  p.bc.shape[0] = 2;
  p.bc.shape[1] = 3;
  p.bc.a_strides[0] = 3;
  p.bc.a_strides[1] = 1;
  p.bc.b_strides[0] = 1;
  p.bc.b_strides[1] = 0;
  std::vector<uint8_t> mask(6);
  compare<float>(p, a.data(), b.data(), mask.data());
  CHECK(mask == std::vector<uint8_t>{0, 1, 1, 0, 1, 1});

  // where(mask [2,3], a [2,3], scalar 0)
  float zero = 0;
  WhereParams w{};
  w.rank = 2;
  w.count = 6;
  w.elem_bytes = 4;
  w.shape[0] = 2;
  w.shape[1] = 3;
  w.cond_strides[0] = 3;
  w.cond_strides[1] = 1;
  w.a_strides[0] = 3;
  w.a_strides[1] = 1;
  std::vector<float> y(6);
  where(w, mask.data(), a.data(), &zero, y.data());
  CHECK(y == std::vector<float>{0, 2, 3, 0, 5, 6});
}

TEST_CASE("reductions over any set of axes match a reference") {
  // x [2, 3, 4], reduce axes {0, 2} -> [3]
  auto x = randomFloats(24, 18);
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kProd,
        ReduceOp::kSumSquare, ReduceOp::kL1, ReduceOp::kL2, ReduceOp::kLogSumExp}) {
    ReduceParams p{op, 3, 24, 3, 8, {2, 3, 4}, {0, 1, 0}};
    std::vector<float> y(3), ref(3);
    reduce<float>(p, x.data(), y.data());
    for (int j = 0; j < 3; ++j) {
      double sum = 0, sq = 0, l1 = 0, prod = 1, mx = -1e30, mn = 1e30, lse = 0;
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 4; ++k) {
          double v = x[(i * 3 + j) * 4 + k];
          sum += v;
          sq += v * v;
          l1 += std::fabs(v);
          prod *= v;
          mx = std::max(mx, v);
          mn = std::min(mn, v);
          lse += std::exp(v);
        }
      double r = op == ReduceOp::kSum         ? sum
                 : op == ReduceOp::kMean      ? sum / 8
                 : op == ReduceOp::kMax       ? mx
                 : op == ReduceOp::kMin       ? mn
                 : op == ReduceOp::kProd      ? prod
                 : op == ReduceOp::kSumSquare ? sq
                 : op == ReduceOp::kL1        ? l1
                 : op == ReduceOp::kL2        ? std::sqrt(sq)
                                              : std::log(lse);
      ref[j] = static_cast<float>(r);
    }
    INFO("op " << static_cast<int>(op));
    requireClose(y, ref);
  }
}

TEST_CASE("arg_reduce picks the first or last extreme") {
  std::vector<float> x = {1, 5, 5, 2, 7, 0, 7, 7};  // [2, 4], axis 1
  std::vector<int64_t> y(2);
  arg_reduce({2, 4, 1, true, false}, x.data(), y.data());
  CHECK(y == std::vector<int64_t>{1, 0});
  arg_reduce({2, 4, 1, true, true}, x.data(), y.data());
  CHECK(y == std::vector<int64_t>{2, 3});
  arg_reduce({2, 4, 1, false, false}, x.data(), y.data());
  CHECK(y == std::vector<int64_t>{0, 1});
}

TEST_CASE("index_map pads (constant, reflect, edge) and tiles") {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};  // [2, 3]
  IndexMapParams p{};
  p.rank = 2;
  p.elem_bytes = 4;
  p.in_shape[0] = 2;
  p.in_shape[1] = 3;
  p.out_shape[0] = 2;
  p.out_shape[1] = 7;
  p.pad_begin[1] = 2;  // pads: columns 2 before, 2 after
  p.out_count = 14;
  p.value = 9;
  p.dtype = cgc::DType::kF32;
  std::vector<float> y(14);
  p.mode = IndexMapMode::kConstant;
  index_map(p, x.data(), nullptr, y.data());
  CHECK(y == std::vector<float>{9, 9, 1, 2, 3, 9, 9, 9, 9, 4, 5, 6, 9, 9});
  p.mode = IndexMapMode::kReflect;
  index_map(p, x.data(), nullptr, y.data());
  CHECK(y == std::vector<float>{3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4});
  p.mode = IndexMapMode::kEdge;
  index_map(p, x.data(), nullptr, y.data());
  CHECK(y == std::vector<float>{1, 1, 1, 2, 3, 3, 3, 4, 4, 4, 5, 6, 6, 6});
  p.mode = IndexMapMode::kTile;
  p.out_shape[0] = 4;
  p.out_shape[1] = 6;
  p.out_count = 24;
  std::vector<float> t(24);
  index_map(p, x.data(), nullptr, t.data());
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; ++c) CHECK(t[r * 6 + c] == x[(r % 2) * 3 + c % 3]);
}
