// The recurrent kernel (RNN, GRU, LSTM) against a plain loop that follows
// the ONNX equations one batch entry and one gate at a time, over awkward
// shapes (hidden 1, odd sizes), every direction, both layouts, sequence
// lengths, initial states, peepholes, clip, linear_before_reset, input_forget
// and non-default activations.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "cgc/kernels.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::test::onTeam;
using cgc::test::randomFloats;
using cgc::test::requireClose;

namespace {

double refActivate(const RnnActivationParams& a, double x) {
  switch (a.fn) {
    case RnnActivation::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case RnnActivation::kTanh:
      return std::tanh(x);
    case RnnActivation::kRelu:
      return x > 0 ? x : 0;
    case RnnActivation::kHardSigmoid:
      return std::min(1.0, std::max(0.0, a.alpha * x + a.beta));
    case RnnActivation::kLeakyRelu:
      return x < 0 ? a.alpha * x : x;
    case RnnActivation::kAffine:
      return a.alpha * x + a.beta;
    case RnnActivation::kScaledTanh:
      return a.alpha * std::tanh(a.beta * x);
    case RnnActivation::kThresholdedRelu:
      return x > a.alpha ? x : 0;
    case RnnActivation::kElu:
      return x < 0 ? a.alpha * (std::exp(x) - 1) : x;
    case RnnActivation::kSoftsign:
      return x / (1 + std::fabs(x));
    case RnnActivation::kSoftplus:
      return std::log(1 + std::exp(x));
  }
  return x;
}

struct Tensors {
  std::vector<float> x, w, r, b, h0, c0, peephole;
  std::vector<int32_t> lens;
};

struct Outputs {
  std::vector<float> y, y_h, y_c;
};

int64_t gates(RnnCell cell) { return cell == RnnCell::kLstm ? 4 : cell == RnnCell::kGru ? 3 : 1; }

/// ONNX's equations, one batch entry, one output element at a time.
Outputs reference(const RnnParams& p, const Tensors& t) {
  int64_t S = p.seq_length, N = p.batch, I = p.input_size, H = p.hidden_size;
  int64_t D = p.num_directions, G = gates(p.cell);
  Outputs out{std::vector<float>(S * D * N * H), std::vector<float>(D * N * H),
              std::vector<float>(D * N * H)};
  auto xAt = [&](int64_t s, int64_t n, int64_t i) {
    return t.x[(p.batch_major ? n * S + s : s * N + n) * I + i];
  };
  auto yIndex = [&](int64_t s, int64_t d, int64_t n, int64_t j) {
    return (p.batch_major ? (n * S + s) * D + d : (s * D + d) * N + n) * H + j;
  };
  auto stateIndex = [&](int64_t d, int64_t n, int64_t j) {
    return (p.batch_major ? n * D + d : d * N + n) * H + j;
  };
  for (int64_t d = 0; d < D; ++d) {
    const float* w = t.w.data() + d * G * H * I;
    const float* r = t.r.data() + d * G * H * H;
    const float* wb = t.b.empty() ? nullptr : t.b.data() + d * 2 * G * H;
    const float* pp = t.peephole.empty() ? nullptr : t.peephole.data() + d * 3 * H;
    const RnnActivationParams* act = p.activations.data() + 3 * d;
    auto clip = [&](double v) {
      return p.clip > 0 ? std::min<double>(p.clip, std::max<double>(-p.clip, v)) : v;
    };
    for (int64_t n = 0; n < N; ++n) {
      std::vector<double> h(H, 0), c(H, 0);
      for (int64_t j = 0; j < H; ++j) {
        if (!t.h0.empty()) h[j] = t.h0[stateIndex(d, n, j)];
        if (!t.c0.empty()) c[j] = t.c0[stateIndex(d, n, j)];
      }
      bool backward = p.reverse || d == 1;
      for (int64_t step = 0; step < S; ++step) {
        int64_t s = backward ? S - 1 - step : step;
        if (!t.lens.empty() && s >= t.lens[n]) continue;  // y stays zero
        // x W^T + Wb and, separately, h R^T + Rb for gate row `row`.
        auto xw = [&](int64_t row) {
          double v = wb ? wb[row] : 0;
          for (int64_t i = 0; i < I; ++i) v += xAt(s, n, i) * w[row * I + i];
          return v;
        };
        auto hr = [&](int64_t row, const std::vector<double>& state) {
          double v = wb ? wb[G * H + row] : 0;
          for (int64_t k = 0; k < H; ++k) v += state[k] * r[row * H + k];
          return v;
        };
        std::vector<double> hNew(H), cNew(H);
        for (int64_t j = 0; j < H; ++j) {
          if (p.cell == RnnCell::kRnn) {
            hNew[j] = refActivate(act[0], clip(xw(j) + hr(j, h)));
          } else if (p.cell == RnnCell::kLstm) {
            double peepI = pp ? pp[j] * c[j] : 0, peepF = pp ? pp[2 * H + j] * c[j] : 0;
            double i = refActivate(act[0], clip(xw(j) + hr(j, h) + peepI));
            double f = p.input_forget
                           ? 1 - i
                           : refActivate(act[0], clip(xw(2 * H + j) + hr(2 * H + j, h) + peepF));
            double g = refActivate(act[1], clip(xw(3 * H + j) + hr(3 * H + j, h)));
            cNew[j] = f * c[j] + i * g;
            double peepO = pp ? pp[H + j] * cNew[j] : 0;
            double o = refActivate(act[0], clip(xw(H + j) + hr(H + j, h) + peepO));
            hNew[j] = o * refActivate(act[2], cNew[j]);
          } else {
            double z = refActivate(act[0], clip(xw(j) + hr(j, h)));
            double hTilde;
            if (p.linear_before_reset) {
              double rg = refActivate(act[0], clip(xw(H + j) + hr(H + j, h)));
              hTilde = refActivate(act[1], clip(xw(2 * H + j) + rg * hr(2 * H + j, h)));
            } else {
              std::vector<double> rh(H);
              for (int64_t k = 0; k < H; ++k)
                rh[k] = refActivate(act[0], clip(xw(H + k) + hr(H + k, h))) * h[k];
              hTilde = refActivate(act[1], clip(xw(2 * H + j) + hr(2 * H + j, rh)));
            }
            hNew[j] = (1 - z) * hTilde + z * h[j];
          }
        }
        h = hNew;
        if (p.cell == RnnCell::kLstm) c = cNew;
        for (int64_t j = 0; j < H; ++j) out.y[yIndex(s, d, n, j)] = static_cast<float>(h[j]);
      }
      for (int64_t j = 0; j < H; ++j) {
        out.y_h[stateIndex(d, n, j)] = static_cast<float>(h[j]);
        out.y_c[stateIndex(d, n, j)] = static_cast<float>(c[j]);
      }
    }
  }
  return out;
}

struct Options {
  bool bias = false, lens = false, initial = false, peephole = false;
  float recurrentScale = 1.0f;  // R's entries lie in [-scale, scale]
};

Tensors makeTensors(const RnnParams& p, const Options& o, uint32_t seed) {
  int64_t D = p.num_directions, G = gates(p.cell), H = p.hidden_size;
  Tensors t;
  t.x = randomFloats(p.seq_length * p.batch * p.input_size, seed);
  t.w = randomFloats(D * G * H * p.input_size, seed + 1);
  t.r = randomFloats(D * G * H * H, seed + 2);
  for (float& v : t.r) v *= o.recurrentScale;
  if (o.bias) t.b = randomFloats(D * 2 * G * H, seed + 3);
  if (o.initial) {
    t.h0 = randomFloats(D * p.batch * H, seed + 4);
    if (p.cell == RnnCell::kLstm) t.c0 = randomFloats(D * p.batch * H, seed + 5);
  }
  if (o.peephole && p.cell == RnnCell::kLstm) t.peephole = randomFloats(D * 3 * H, seed + 6);
  if (o.lens)  // full, short, empty, then full again
    for (int64_t n = 0; n < p.batch; ++n) {
      int64_t pattern[] = {p.seq_length, (p.seq_length + 1) / 2, 0};
      t.lens.push_back(static_cast<int32_t>(pattern[n % 3]));
    }
  return t;
}

Outputs runKernel(const RnnParams& p, const Tensors& t, int threads = 1) {
  int64_t D = p.num_directions, H = p.hidden_size;
  // NaN-filled, so that an element the kernel forgets to write shows.
  Outputs out{std::vector<float>(p.seq_length * D * p.batch * H, NAN),
              std::vector<float>(D * p.batch * H, NAN), std::vector<float>(D * p.batch * H, NAN)};
  auto data = [](const auto& v) { return v.empty() ? nullptr : v.data(); };
  auto call = [&](const Team& team) {
    rnn(p, t.x.data(), t.w.data(), t.r.data(), data(t.b), data(t.lens), data(t.h0), data(t.c0),
        data(t.peephole), out.y.data(), out.y_h.data(),
        p.cell == RnnCell::kLstm ? out.y_c.data() : nullptr, team);
  };
  if (threads == 1)
    call(Team::serial());
  else
    onTeam(threads, call);
  return out;
}

RnnParams makeParams(RnnCell cell, int64_t seq, int64_t batch, int64_t input, int64_t hidden,
                     int direction, bool batchMajor) {
  RnnParams p{};
  p.cell = cell;
  p.seq_length = seq;
  p.batch = batch;
  p.input_size = input;
  p.hidden_size = hidden;
  p.num_directions = direction == 2 ? 2 : 1;
  p.reverse = direction == 1;
  p.batch_major = batchMajor;
  for (int d = 0; d < 2; ++d) {
    p.activations[3 * d] = {RnnActivation::kSigmoid, 0.f, 0.f};
    if (cell == RnnCell::kRnn) p.activations[3 * d] = {RnnActivation::kTanh, 0.f, 0.f};
    p.activations[3 * d + 1] = {RnnActivation::kTanh, 0.f, 0.f};
    p.activations[3 * d + 2] = {RnnActivation::kTanh, 0.f, 0.f};
  }
  return p;
}

void check(const RnnParams& p, const Options& o, uint32_t seed, int threads = 1) {
  Tensors t = makeTensors(p, o, seed);
  Outputs expected = reference(p, t);
  Outputs actual = runKernel(p, t, threads);
  requireClose(actual.y, expected.y, 1e-5);
  requireClose(actual.y_h, expected.y_h, 1e-5);
  if (p.cell == RnnCell::kLstm) requireClose(actual.y_c, expected.y_c, 1e-5);
}

struct Shape {
  int64_t seq, batch, input, hidden;
};
// Batches 13 and 25 take several register-block passes of uneven sizes
// (the recurrent product holds at most 6 LSTM, 8 GRU or 24 RNN rows).
constexpr Shape kShapes[] = {{1, 1, 1, 1},  {4, 3, 5, 1},   {5, 2, 3, 7},  {3, 4, 17, 9},
                             {6, 3, 2, 16}, {3, 13, 6, 20}, {2, 25, 4, 18}};

}  // namespace

TEST_CASE("recurrent cells match the ONNX equations in every direction and layout") {
  uint32_t seed = 1;
  for (RnnCell cell : {RnnCell::kRnn, RnnCell::kGru, RnnCell::kLstm})
    for (int direction = 0; direction < 3; ++direction)
      for (bool batchMajor : {false, true})
        for (const Shape& s : kShapes)
          for (int variant = 0; variant < 4; ++variant) {
            INFO("cell " << static_cast<int>(cell) << " direction " << direction << " batch_major "
                         << batchMajor << " shape " << s.seq << "x" << s.batch << "x" << s.input
                         << "x" << s.hidden << " variant " << variant);
            RnnParams p =
                makeParams(cell, s.seq, s.batch, s.input, s.hidden, direction, batchMajor);
            Options o;
            o.bias = variant >= 1;
            o.initial = variant >= 2;
            o.lens = variant == 3;
            o.peephole = variant >= 2;
            p.linear_before_reset = variant % 2 == 1;
            p.clip = variant == 2 ? 0.5f : 0.f;
            check(p, o, seed++);
          }
}

TEST_CASE("recurrent weights larger than L2: every other step walks the blocks backwards") {
  // 300 LSTM units (1.4 MB of recurrent weights) or GRU units (1.1 MB) on one
  // thread, 1.5 MB on each of two: past the 1 MiB where steps alternate.
  uint32_t seed = 400;
  for (RnnCell cell : {RnnCell::kGru, RnnCell::kLstm})
    for (int threads : {1, 2})
      for (int direction = 0; direction < 3; ++direction) {
        INFO("cell " << static_cast<int>(cell) << " threads " << threads << " direction "
                     << direction);
        const int64_t hidden = threads == 1 ? 300 : 450;
        RnnParams p = makeParams(cell, 4, 2, 3, hidden, direction, false);
        Options o;
        o.bias = o.initial = true;
        // Weights of a trained cell's size (PyTorch initialises them in
        // +-1/sqrt(hidden)): at +-1, 300-term sums saturate every gate and
        // amplify float rounding past the tolerance.
        o.recurrentScale = 1.0f / std::sqrt(static_cast<float>(hidden));
        check(p, o, seed++, threads);
      }
}

TEST_CASE("LSTM input_forget couples the forget gate to the input gate") {
  for (int direction = 0; direction < 3; ++direction) {
    RnnParams p = makeParams(RnnCell::kLstm, 4, 3, 5, 6, direction, false);
    p.input_forget = true;
    Options o;
    o.bias = o.initial = o.peephole = o.lens = true;
    check(p, o, 100 + direction);
  }
}

TEST_CASE("recurrent cells apply non-default activations with alpha and beta") {
  RnnParams p = makeParams(RnnCell::kLstm, 3, 2, 4, 5, 2, false);
  p.activations[0] = {RnnActivation::kHardSigmoid, 0.3f, 0.4f};
  p.activations[1] = {RnnActivation::kScaledTanh, 1.5f, 0.7f};
  p.activations[2] = {RnnActivation::kAffine, 0.8f, 0.1f};
  p.activations[3] = {RnnActivation::kSigmoid, 0.f, 0.f};
  p.activations[4] = {RnnActivation::kLeakyRelu, 0.1f, 0.f};
  p.activations[5] = {RnnActivation::kElu, 0.9f, 0.f};
  Options o;
  o.bias = o.initial = true;
  check(p, o, 200);

  RnnParams g = makeParams(RnnCell::kGru, 4, 3, 3, 4, 2, true);
  g.activations[0] = {RnnActivation::kSoftsign, 0.f, 0.f};
  g.activations[1] = {RnnActivation::kRelu, 0.f, 0.f};
  g.activations[3] = {RnnActivation::kSigmoid, 0.f, 0.f};
  g.activations[4] = {RnnActivation::kSoftplus, 0.f, 0.f};
  check(g, o, 201);

  RnnParams r = makeParams(RnnCell::kRnn, 5, 2, 3, 3, 1, false);
  r.activations[0] = {RnnActivation::kThresholdedRelu, 0.2f, 0.f};
  check(r, o, 202);
}

TEST_CASE("recurrent outputs are optional") {
  RnnParams p = makeParams(RnnCell::kLstm, 4, 3, 5, 6, 2, false);
  Options o;
  o.bias = o.initial = o.lens = true;
  Tensors t = makeTensors(p, o, 300);
  Outputs expected = reference(p, t);
  std::vector<float> y_c(expected.y_c.size(), NAN);
  rnn(p, t.x.data(), t.w.data(), t.r.data(), t.b.data(), t.lens.data(), t.h0.data(), t.c0.data(),
      nullptr, nullptr, nullptr, y_c.data());
  requireClose(y_c, expected.y_c, 1e-5);
}

TEST_CASE("recurrent cells split over 2- and 3-thread teams match the ONNX equations") {
  // Hidden sizes around the 16-unit blocks the threads split: fewer blocks
  // than threads, a partial last block, several blocks per thread.
  // Cells this small run their steps on thread 0 while thread 1 projects
  // the input a chunk of 8 steps ahead: 21 steps end in a partial chunk.
  constexpr Shape shapes[] = {{3, 1, 5, 7},  {4, 3, 9, 33},  {5, 5, 16, 48},
                              {2, 2, 3, 70}, {3, 13, 6, 40}, {21, 2, 5, 12}};
  uint32_t seed = 500;
  for (int threads : {2, 3})
    for (RnnCell cell : {RnnCell::kRnn, RnnCell::kGru, RnnCell::kLstm})
      for (int direction = 0; direction < 3; ++direction)
        for (const Shape& s : shapes)
          for (int variant = 0; variant < 2; ++variant) {
            INFO("threads " << threads << " cell " << static_cast<int>(cell) << " direction "
                            << direction << " hidden " << s.hidden << " variant " << variant);
            RnnParams p =
                makeParams(cell, s.seq, s.batch, s.input, s.hidden, direction, variant == 1);
            Options o;
            o.bias = o.initial = true;
            o.lens = o.peephole = variant == 1;
            p.linear_before_reset = variant == 1;
            check(p, o, seed++, threads);
          }
}

TEST_CASE("fast sigmoid and tanh stay close to libm at large and tiny inputs") {
  // Saturation and the small-|x| branch of tanh, through a one-unit LSTM
  // whose gates see exactly these pre-activations (x * w, no state).
  for (float v : {-30.f, -9.f, -0.7f, -0.624f, -1e-3f, 1e-6f, 0.3f, 0.626f, 5.f, 40.f}) {
    RnnParams p = makeParams(RnnCell::kLstm, 1, 1, 1, 1, 0, false);
    Tensors t;
    t.x = {v};
    t.w = {1.f, 1.f, 1.f, 1.f};
    t.r = {0.f, 0.f, 0.f, 0.f};
    Outputs expected = reference(p, t);
    Outputs actual = runKernel(p, t);
    INFO("input " << v);
    REQUIRE(actual.y_c[0] == Approx(expected.y_c[0]).epsilon(1e-6).margin(1e-30));
    REQUIRE(actual.y[0] == Approx(expected.y[0]).epsilon(1e-6).margin(1e-30));
  }
}

TEST_CASE("recurrent weights changed in place between calls are repacked") {
  // The kernel reuses its packing of R while R's rows are unchanged; the
  // same buffer with new contents must give the new results.
  for (RnnCell cell : {RnnCell::kGru, RnnCell::kLstm}) {
    RnnParams p = makeParams(cell, 3, 2, 4, 20, 2, false);
    Options o;
    o.bias = true;
    Tensors t = makeTensors(p, o, 700);
    for (int round = 0; round < 3; ++round) {
      INFO("cell " << static_cast<int>(cell) << " round " << round);
      if (round == 2)
        t.r[t.r.size() / 2] += 0.5f;  // one weight of direction 1
      else if (round == 1)
        t.r = randomFloats(t.r.size(), 701);
      requireClose(runKernel(p, t).y, reference(p, t).y, 1e-5);
    }
  }
}

TEST_CASE("recurrent weights too large to cache are packed per call") {
  // 4 gates x 1100 x 1100 floats is past the per-thread packing cache limit.
  // Weights scaled by ~1/sqrt(1100) keep the gates out of saturation, where
  // float sums over 1100 terms would differ from the double reference by
  // more than the tolerance.
  RnnParams p = makeParams(RnnCell::kLstm, 2, 1, 1100, 1100, 0, false);
  Options o;
  o.bias = o.initial = true;
  Tensors t = makeTensors(p, o, 800);
  for (auto* v : {&t.w, &t.r})
    for (float& x : *v) x *= 0.03f;
  Outputs expected = reference(p, t);
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    Outputs actual = runKernel(p, t, threads);
    requireClose(actual.y, expected.y, 1e-5);
    requireClose(actual.y_c, expected.y_c, 1e-5);
  }
}

TEST_CASE("recurrent weights packed at compile time give the same results") {
  // pack-rnn-weights stores W and R in packRnnWeights' order: blocks of 16
  // units (a partial last block: hidden 7, 20, 33), GRU's R in two parts
  // without linear_before_reset; teams read their blocks from it, including
  // the pipelined path (thread 1 projects with the packed W); 70 units at
  // batch 30 are enough work per step to split the blocks over the team.
  constexpr Shape shapes[] = {{4, 3, 5, 7}, {3, 2, 9, 33}, {21, 1, 6, 20}, {3, 30, 16, 70}};
  uint32_t seed = 800;
  for (int threads : {1, 2, 3})
    for (RnnCell cell : {RnnCell::kRnn, RnnCell::kGru, RnnCell::kLstm})
      for (int direction = 0; direction < 3; ++direction)
        for (const Shape& s : shapes)
          for (bool linearBeforeReset : {false, true}) {
            INFO("threads " << threads << " cell " << static_cast<int>(cell) << " direction "
                            << direction << " hidden " << s.hidden << " linear_before_reset "
                            << linearBeforeReset);
            RnnParams p = makeParams(cell, s.seq, s.batch, s.input, s.hidden, direction, false);
            p.linear_before_reset = cell == RnnCell::kGru && linearBeforeReset;
            Options o;
            o.bias = o.initial = true;
            // At PyTorch's scale: 21 steps of R in [-1, 1] amplify the
            // rounding of the chunked projection past the tolerance.
            o.recurrentScale = 1.0f / std::sqrt(static_cast<float>(s.hidden));
            Tensors t = makeTensors(p, o, seed++);
            const Outputs expected = reference(p, t);
            RnnParams packed = p;
            packed.packed_weights = true;
            Tensors tp = t;
            tp.w.assign(static_cast<size_t>(packedRnnWeightCount(p, false)), NAN);
            tp.r.assign(static_cast<size_t>(packedRnnWeightCount(p, true)), NAN);
            packRnnWeights(p, t.w.data(), false, tp.w.data());
            packRnnWeights(p, t.r.data(), true, tp.r.data());
            const Outputs actual = runKernel(packed, tp, threads);
            requireClose(actual.y, expected.y, 1e-5);
            requireClose(actual.y_h, expected.y_h, 1e-5);
          }
}
