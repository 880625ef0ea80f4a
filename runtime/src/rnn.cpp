// Recurrent cells: ONNX RNN, GRU and LSTM over a whole sequence.
//
// Per direction, the input projection of every time step is one GEMM up
// front (X [seq * batch, input] x W^T, biases added once), since it does not
// depend on the state. Each step then only needs the recurrent GEMM
// h_{t-1} [batch, hidden] x R^T and the elementwise gate arithmetic, which is
// the part that cannot be batched over time.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cgc/kernels.h"
#include "gemm_core.h"

namespace cgc::rt {
namespace {

float activate(const RnnActivationParams& a, float x) {
  switch (a.fn) {
    case RnnActivation::kSigmoid: return 1.f / (1.f + std::exp(-x));
    case RnnActivation::kTanh: return std::tanh(x);
    case RnnActivation::kRelu: return std::max(x, 0.f);
    case RnnActivation::kHardSigmoid:
      return std::clamp(a.alpha * x + a.beta, 0.f, 1.f);
    case RnnActivation::kLeakyRelu: return x < 0.f ? a.alpha * x : x;
    case RnnActivation::kAffine: return a.alpha * x + a.beta;
    case RnnActivation::kScaledTanh: return a.alpha * std::tanh(a.beta * x);
    case RnnActivation::kThresholdedRelu: return x > a.alpha ? x : 0.f;
    case RnnActivation::kElu: return x < 0.f ? a.alpha * std::expm1(x) : x;
    case RnnActivation::kSoftsign: return x / (1.f + std::fabs(x));
    case RnnActivation::kSoftplus: return std::log1p(std::exp(x));
  }
  return x;
}

int64_t gatesOf(RnnCell cell) {
  switch (cell) {
    case RnnCell::kRnn: return 1;
    case RnnCell::kGru: return 3;
    case RnnCell::kLstm: return 4;
  }
  return 1;
}

/// One direction's view of the tensors and its scratch buffers. Offsets are
/// in elements; `row` is the row of x (and of the projection) for a step and
/// batch entry.
class Direction {
 public:
  Direction(const RnnParams& p, int32_t d)
      : p_(p),
        d_(d),
        h_(p.hidden_size),
        g_(gatesOf(p.cell)),
        act_(p.activations + 3 * d),
        xw_(p.seq_length * p.batch * g_ * h_),
        rec_(p.batch * g_ * h_),
        h_state_(p.batch * h_, 0.f),
        c_state_(p.cell == RnnCell::kLstm ? p.batch * h_ : 0, 0.f),
        gru_(p.cell == RnnCell::kGru ? p.batch * 3 * h_ : 0) {}

  int64_t row(int64_t t, int64_t b) const {
    return p_.batch_major ? b * p_.seq_length + t : t * p_.batch + b;
  }
  int64_t yOffset(int64_t t, int64_t b) const {
    int64_t dirs = p_.num_directions;
    return p_.batch_major ? ((b * p_.seq_length + t) * dirs + d_) * h_
                          : ((t * dirs + d_) * p_.batch + b) * h_;
  }
  int64_t stateOffset(int64_t b) const {
    return p_.batch_major ? (b * p_.num_directions + d_) * h_
                          : (d_ * p_.batch + b) * h_;
  }

  float clip(float v) const {
    return p_.clip > 0.f ? std::clamp(v, -p_.clip, p_.clip) : v;
  }
  float f(int k, float v) const { return activate(act_[k], clip(v)); }

  void run(const float* x, const float* w, const float* r, const float* b,
           const int32_t* lens, const float* h0, const float* c0,
           const float* peephole, float* y, float* y_h, float* y_c);

 private:
  void project(const float* x, const float* w, const float* b);
  void loadState(const float* from, std::vector<float>& state);
  void storeState(const std::vector<float>& state, float* to) const;
  void rnnStep(int64_t t, const std::vector<bool>& active);
  void lstmStep(int64_t t, const std::vector<bool>& active, const float* p);
  void gruStep(int64_t t, const std::vector<bool>& active, const float* r,
               const float* rb_h);

  const RnnParams& p_;
  int32_t d_;
  int64_t h_, g_;
  const RnnActivationParams* act_;
  std::vector<float> xw_;   // [seq * batch, G * hidden] input projection
  std::vector<float> rec_;  // [batch, G * hidden] recurrent projection
  std::vector<float> h_state_, c_state_;
  std::vector<float> gru_;  // [batch, 3 * hidden]: z, r, r * h_{t-1}
};

/// xw = x W^T + biases. Every recurrent bias is a plain addend except GRU's
/// Rb_h with linear_before_reset, which the reset gate scales.
void Direction::project(const float* x, const float* w, const float* b) {
  int64_t rows = p_.seq_length * p_.batch, n = g_ * h_, k = p_.input_size;
  detail::sgemm(rows, n, k, x, k, 1, w, 1, k, xw_.data(), n, false);
  if (!b) return;
  std::vector<float> bias(b, b + n);
  bool keepRbh = p_.cell == RnnCell::kGru && p_.linear_before_reset;
  for (int64_t j = 0; j < n; ++j)
    if (!(keepRbh && j >= 2 * h_)) bias[j] += b[n + j];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) xw_[i * n + j] += bias[j];
}

void Direction::loadState(const float* from, std::vector<float>& state) {
  if (!from) return;
  for (int64_t b = 0; b < p_.batch; ++b)
    std::copy_n(from + stateOffset(b), h_, state.data() + b * h_);
}

void Direction::storeState(const std::vector<float>& state, float* to) const {
  if (!to) return;
  for (int64_t b = 0; b < p_.batch; ++b)
    std::copy_n(state.data() + b * h_, h_, to + stateOffset(b));
}

void Direction::rnnStep(int64_t t, const std::vector<bool>& active) {
  for (int64_t b = 0; b < p_.batch; ++b) {
    if (!active[b]) continue;
    const float* xw = xw_.data() + row(t, b) * h_;
    const float* rec = rec_.data() + b * h_;
    float* h = h_state_.data() + b * h_;
    for (int64_t j = 0; j < h_; ++j) h[j] = f(0, xw[j] + rec[j]);
  }
}

void Direction::lstmStep(int64_t t, const std::vector<bool>& active,
                         const float* p) {
  int64_t n = 4 * h_;
  for (int64_t b = 0; b < p_.batch; ++b) {
    if (!active[b]) continue;
    const float* xw = xw_.data() + row(t, b) * n;
    const float* rec = rec_.data() + b * n;
    float* h = h_state_.data() + b * h_;
    float* c = c_state_.data() + b * h_;
    for (int64_t j = 0; j < h_; ++j) {
      auto pre = [&](int gate) { return xw[gate * h_ + j] + rec[gate * h_ + j]; };
      float cPrev = c[j];
      // Gate order i o f c; peepholes are i o f.
      float i = f(0, pre(0) + (p ? p[j] * cPrev : 0.f));
      float fg = p_.input_forget
                     ? 1.f - i
                     : f(0, pre(2) + (p ? p[2 * h_ + j] * cPrev : 0.f));
      float cand = f(1, pre(3));
      c[j] = fg * cPrev + i * cand;
      float o = f(0, pre(1) + (p ? p[h_ + j] * c[j] : 0.f));
      h[j] = o * activate(act_[2], c[j]);
    }
  }
}

/// The reset gate scales either h_{t-1} before the h-gate GEMM (default) or
/// that GEMM's result (linear_before_reset), so the GEMM runs in between.
void Direction::gruStep(int64_t t, const std::vector<bool>& active,
                        const float* r, const float* rb_h) {
  int64_t n = 3 * h_;
  for (int64_t b = 0; b < p_.batch; ++b) {
    const float* xw = xw_.data() + row(t, b) * n;
    const float* rec = rec_.data() + b * n;
    const float* h = h_state_.data() + b * h_;
    float* z = gru_.data() + b * n;
    for (int64_t j = 0; j < 2 * h_; ++j) z[j] = f(0, xw[j] + rec[j]);
    for (int64_t j = 0; j < h_; ++j) z[2 * h_ + j] = z[h_ + j] * h[j];
  }
  if (!p_.linear_before_reset)
    detail::sgemm(p_.batch, h_, h_, gru_.data() + 2 * h_, n, 1, r + 2 * h_ * h_,
                  1, h_, rec_.data() + 2 * h_, n, false);
  for (int64_t b = 0; b < p_.batch; ++b) {
    if (!active[b]) continue;
    const float* xw = xw_.data() + row(t, b) * n + 2 * h_;
    const float* rec = rec_.data() + b * n + 2 * h_;
    const float* z = gru_.data() + b * n;
    float* h = h_state_.data() + b * h_;
    for (int64_t j = 0; j < h_; ++j) {
      float pre = p_.linear_before_reset
                      ? xw[j] + z[h_ + j] * (rec[j] + (rb_h ? rb_h[j] : 0.f))
                      : xw[j] + rec[j];
      float cand = f(1, pre);
      h[j] = (1.f - z[j]) * cand + z[j] * h[j];
    }
  }
}

void Direction::run(const float* x, const float* w, const float* r,
                    const float* b, const int32_t* lens, const float* h0,
                    const float* c0, const float* peephole, float* y,
                    float* y_h, float* y_c) {
  int64_t n = g_ * h_;
  project(x, w, b);
  loadState(h0, h_state_);
  loadState(c0, c_state_);
  const float* rb_h = b ? b + n + 2 * h_ : nullptr;
  // GRU's h-gate GEMM needs the reset gate first unless linear_before_reset.
  int64_t recCols =
      p_.cell == RnnCell::kGru && !p_.linear_before_reset ? 2 * h_ : n;
  bool backward = p_.reverse || d_ == 1;
  std::vector<bool> active(p_.batch);
  for (int64_t s = 0; s < p_.seq_length; ++s) {
    int64_t t = backward ? p_.seq_length - 1 - s : s;
    for (int64_t bi = 0; bi < p_.batch; ++bi)
      active[bi] = !lens || t < lens[bi];
    detail::sgemm(p_.batch, recCols, h_, h_state_.data(), h_, 1, r, 1, h_,
                  rec_.data(), n, false);
    switch (p_.cell) {
      case RnnCell::kRnn: rnnStep(t, active); break;
      case RnnCell::kLstm: lstmStep(t, active, peephole); break;
      case RnnCell::kGru: gruStep(t, active, r, rb_h); break;
    }
    if (!y) continue;
    for (int64_t bi = 0; bi < p_.batch; ++bi) {
      float* out = y + yOffset(t, bi);
      if (active[bi]) std::copy_n(h_state_.data() + bi * h_, h_, out);
      else std::fill_n(out, h_, 0.f);
    }
  }
  storeState(h_state_, y_h);
  storeState(c_state_, y_c);
}

}  // namespace

void rnn(const RnnParams& p, const float* x, const float* w, const float* r,
         const float* b, const int32_t* sequence_lens, const float* initial_h,
         const float* initial_c, const float* peephole, float* y, float* y_h,
         float* y_c) {
  int64_t g = gatesOf(p.cell), h = p.hidden_size;
  for (int32_t d = 0; d < p.num_directions; ++d) {
    Direction dir(p, d);
    dir.run(x, w + d * g * h * p.input_size, r + d * g * h * h,
            b ? b + d * 2 * g * h : nullptr, sequence_lens, initial_h,
            p.cell == RnnCell::kLstm ? initial_c : nullptr,
            peephole ? peephole + d * 3 * h : nullptr, y, y_h,
            p.cell == RnnCell::kLstm ? y_c : nullptr);
  }
}

}  // namespace cgc::rt
