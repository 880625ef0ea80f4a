// Recurrent cells: ONNX RNN, GRU and LSTM over a whole sequence, split over
// a thread team as DeepCPU's weight-centric streamlining does.
//
// Each thread owns a fixed range of hidden units (every gate of them) for the
// whole call. Per direction it first computes the input projection of all
// time steps for its units (a LIBXSMM GEMM per block of units, since it does
// not depend on the state), then packs its rows of R once, as blocks of
// kUnits units laid out [hidden][gates][kUnits], so the per-step recurrent
// product is a register-blocked GEMV/GEMM (up to 6 batch rows x 4 gates of
// accumulators per pass) that streams the thread's weight block
// contiguously and keeps it in that thread's cache across steps (R for
// hidden 256 is 1 MB: it fits the L2s of the team). The gate arithmetic runs
// right after, on all of the thread's units and batch rows at once, with
// vectorised sigmoid and tanh. h_t goes to a double buffer shared by the team, so one barrier per
// step suffices (GRU without linear_before_reset needs r * h_{t-1} of every
// unit before its h-gate product, hence a second barrier). Cells too small
// to split a step over the team run their steps on one thread while another
// computes the input projection ahead of them (pipelinedRnn).
// The packing of W and R into those blocks (at compile time, or per call
// for weights given at run time) is rnn_packing.cpp.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cgc/kernels.h"
#include "core/fast_math.h"
#include "core/simd.h"
#include "gemm/gemm_core.h"
#include "rnn/rnn_support.h"

namespace cgc::rt {
namespace {

using detail::gatesOf;
using detail::kUnits;
using detail::packedDirectionSize;
using detail::privateBuffer;
using detail::splitsGru;

/// Applies activation `a` (after clipping when clip > 0) to v[0, n). Long
/// runs matter: each element is a chain of dependent operations (exp's
/// polynomial, a division), and only independent vectors overlap them.
void activate(const RnnActivationParams& a, float clip, float* v, int64_t n = kUnits) {
  if (clip > 0.f)
    for (int64_t u = 0; u < n; ++u) v[u] = std::clamp(v[u], -clip, clip);
  switch (a.fn) {
    case RnnActivation::kSigmoid:
      for (int64_t u = 0; u < n; ++u) v[u] = detail::fastSigmoid(v[u]);
      return;
    case RnnActivation::kTanh:
      for (int64_t u = 0; u < n; ++u) v[u] = detail::fastTanh(v[u]);
      return;
    case RnnActivation::kRelu:
      for (int64_t u = 0; u < n; ++u) v[u] = std::max(v[u], 0.f);
      return;
    case RnnActivation::kHardSigmoid:
      for (int64_t u = 0; u < n; ++u) v[u] = std::clamp(a.alpha * v[u] + a.beta, 0.f, 1.f);
      return;
    case RnnActivation::kLeakyRelu:
      for (int64_t u = 0; u < n; ++u) v[u] = v[u] < 0.f ? a.alpha * v[u] : v[u];
      return;
    case RnnActivation::kAffine:
      for (int64_t u = 0; u < n; ++u) v[u] = a.alpha * v[u] + a.beta;
      return;
    case RnnActivation::kScaledTanh:
      for (int64_t u = 0; u < n; ++u) v[u] = a.alpha * detail::fastTanh(a.beta * v[u]);
      return;
    case RnnActivation::kThresholdedRelu:
      for (int64_t u = 0; u < n; ++u) v[u] = v[u] > a.alpha ? v[u] : 0.f;
      return;
    case RnnActivation::kElu:
      for (int64_t u = 0; u < n; ++u) v[u] = v[u] < 0.f ? a.alpha * std::expm1(v[u]) : v[u];
      return;
    case RnnActivation::kSoftsign:
      for (int64_t u = 0; u < n; ++u) v[u] = v[u] / (1.f + std::fabs(v[u]));
      return;
    case RnnActivation::kSoftplus:
      for (int64_t u = 0; u < n; ++u) v[u] = std::log1p(std::exp(v[u]));
      return;
  }
}

/// One register (simd.h), kParts to a block of kUnits units. Spelled as a
/// vector type because plain float arrays get spilled to the stack; of
/// alignment 4, as it is read from any float.
using Vec = simd::UnalignedFloats;
constexpr int kParts = kUnits / simd::kLanes;
/// Registers a product's sums may take: 24 of AVX-512's 32, 12 of AVX2's 16.
constexpr int kSumRegisters = simd::kRegisters * 3 / 4;

/// acc[b][G * kUnits] = h[b] . packed block for `rows` (<= BB) batch rows;
/// h rows past `rows` repeat the last one so the loop has fixed bounds.
template <int G, int BB>
void blockProduct(int64_t hidden, const float* packed, const float* h, int64_t ldh, int rows,
                  float* acc, int64_t ldo) {
  static_assert(kUnits * sizeof(float) == kParts * sizeof(Vec));
  constexpr int R = G * kParts;  // registers of a row's gates
  const float* hr[BB];
  for (int b = 0; b < BB; ++b) hr[b] = h + std::min(b, rows - 1) * ldh;
  // Few accumulators make each k wait for the previous FMA's result (4
  // cycles): batch-1 products then alternate two sets over even and odd k.
  constexpr int kChains = 2 * BB * R <= kSumRegisters / 3 * 2 ? 2 : 1;
  Vec sum[kChains][BB][R] = {};
  const Vec* w = reinterpret_cast<const Vec*>(packed);
  int64_t k = 0;
  for (; k + kChains <= hidden; k += kChains, w += kChains * R)
    for (int c = 0; c < kChains; ++c)
      for (int b = 0; b < BB; ++b) {
        const float hv = hr[b][k + c];
        for (int g = 0; g < R; ++g) sum[c][b][g] += hv * w[c * R + g];
      }
  for (; k < hidden; ++k, w += R)
    for (int b = 0; b < BB; ++b) {
      const float hv = hr[b][k];
      for (int g = 0; g < R; ++g) sum[0][b][g] += hv * w[g];
    }
  for (int b = 0; b < rows; ++b) {
    Vec* out = reinterpret_cast<Vec*>(acc + b * ldo);
    for (int g = 0; g < R; ++g) {
      out[g] = sum[0][b][g];
      for (int c = 1; c < kChains; ++c) out[g] += sum[c][b][g];
    }
  }
}

/// Most batch rows per register block for G gates: BB x G x kParts
/// accumulators plus a broadcast fit the registers, and every pass over
/// the rows streams the weight block once more. (The accumulators stay in
/// registers only with GCC's sra-max-scalarization-size raised:
/// runtime/CMakeLists.txt.)
template <int G>
constexpr int kMaxBlockRows = std::max(1, kSumRegisters / (G * kParts));

template <int G, int BB = kMaxBlockRows<G>>
void blockProductOf(int rowsInBlock, int64_t hidden, const float* packed, const float* h,
                    int64_t ldh, float* acc, int64_t ldo) {
  if constexpr (BB > 1) {
    if (rowsInBlock < BB)
      return blockProductOf<G, BB - 1>(rowsInBlock, hidden, packed, h, ldh, acc, ldo);
  }
  blockProduct<G, BB>(hidden, packed, h, ldh, BB, acc, ldo);
}

/// All `rows` in as few passes as registers allow, of near-equal size
/// (10 rows as 5 + 5, not 6 + 4: a short pass does a long one's loads).
template <int G>
void product(int64_t hidden, const float* packed, const float* h, int64_t ldh, int64_t rows,
             float* acc, int64_t ldo) {
  const int64_t passes = (rows + kMaxBlockRows<G> - 1) / kMaxBlockRows<G>;
  for (int64_t pass = 0, b = 0; pass < passes; ++pass) {
    const int64_t count = (rows - b) / (passes - pass);
    blockProductOf<G>(static_cast<int>(count), hidden, packed, h + b * ldh, ldh, acc + b * ldo,
                      ldo);
    b += count;
  }
}

/// out[row * ldo + g * kUnits + u] = in[row] . packed block, for `rows` rows
/// of `in` (ldi apart) and `gates` (1..4) packed gates.
void blockRows(int gates, int64_t k, const float* packed, const float* in, int64_t ldi,
               int64_t rows, float* out, int64_t ldo) {
  switch (gates) {
    case 1:
      return product<1>(k, packed, in, ldi, rows, out, ldo);
    case 2:
      return product<2>(k, packed, in, ldi, rows, out, ldo);
    case 3:
      return product<3>(k, packed, in, ldi, rows, out, ldo);
    default:
      return product<4>(k, packed, in, ldi, rows, out, ldo);
  }
}

/// acc[batch][g * kUnits] for `gates` packed gates of R.
void recurrentProduct(int gates, int64_t hidden, const float* packed, const float* h, int64_t batch,
                      float* acc) {
  blockRows(gates, hidden, packed, h, hidden, batch, acc, gates * kUnits);
}

/// Scratch that every thread of a team reads: thread 0 allocates it per call
/// and the others find it under the call's first output pointer (outputs of
/// concurrent calls never alias, else they would race on them anyway).
class SharedScratch {
 public:
  SharedScratch(const Team& team, const void* key, size_t n) : team_(team), key_(key) {
    if (team.size() == 1) {
      thread_local std::vector<float> own;
      data_ = privateBuffer(own, n);
      return;
    }
    if (team.thread() == 0) {
      std::lock_guard lock(mutex());
      table()[key] = std::make_unique<float[]>(n);
    }
    team.barrier();
    std::lock_guard lock(mutex());
    data_ = table().at(key).get();
  }
  ~SharedScratch() {
    if (team_.size() == 1) return;
    team_.barrier();  // nobody reads it any more
    if (team_.thread() == 0) {
      std::lock_guard lock(mutex());
      table().erase(key_);
    }
  }
  float* data() const { return data_; }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::unordered_map<const void*, std::unique_ptr<float[]>>& table() {
    static std::unordered_map<const void*, std::unique_ptr<float[]>> t;
    return t;
  }
  const Team& team_;
  const void* key_;
  float* data_ = nullptr;
};

/// Floats of the scratch a team shares: the double-buffered h and GRU's
/// r * h_{t-1} (Direction's constructor lays them out).
size_t stateFloats(const RnnParams& p) { return static_cast<size_t>(3 * p.batch * p.hidden_size); }

struct Inputs {
  const float *x, *w, *r, *b;
  const int32_t* lens;
  const float *h0, *c0, *peephole;
  float *y, *y_h, *y_c;
};

/// The input projection of small cells, computed on a second thread while
/// the first runs the steps, a chunk of steps ahead of it (rnn() says when).
struct ProjectionPipeline {
  static constexpr int64_t kChunkSteps = 8;
  float* xw[2];                       // per direction, as Direction::project lays it out
  std::atomic<int64_t> projected[2];  // steps ready, in processing order
};

/// One direction, this thread's units [u0, u0 + units).
class Direction {
 public:
  Direction(const RnnParams& p, int32_t d, const Team& team, float* shared)
      : p_(p),
        d_(d),
        team_(team),
        h_(p.hidden_size),
        g_(gatesOf(p.cell)),
        act_(p.activations.data() + 3 * d) {
    int64_t blocks = (h_ + kUnits - 1) / kUnits;
    Range mine = team.split(blocks);
    blocks_ = mine.size();
    u0_ = std::min(h_, mine.begin * kUnits);
    units_ = std::min(h_, mine.end * kUnits) - u0_;
    pad_ = blocks_ * kUnits;
    hbuf_[0] = shared;
    hbuf_[1] = shared + p.batch * h_;
    rh_ = shared + 2 * p.batch * h_;
  }

  void run(const Inputs& in, const ProjectionPipeline* pipeline = nullptr);

  /// The input projection of the steps [s0, s1) in processing order (the
  /// rows of those steps, reversed for a backward direction) into xw, laid
  /// out as project() lays out xw_. Needs prepareProjection first; a
  /// batch-major layout, whose steps' rows interleave, only the whole
  /// sequence.
  void projectSteps(const Inputs& in, int64_t s0, int64_t s1, float* xw);
  void prepareProjection(const Inputs& in);
  int64_t projectionSize() const { return p_.seq_length * p_.batch * g_ * pad_ + kUnits; }

 private:
  int64_t row(int64_t t, int64_t b) const {
    return p_.batch_major ? b * p_.seq_length + t : t * p_.batch + b;
  }
  int64_t yOffset(int64_t t, int64_t b) const {
    int64_t dirs = p_.num_directions;
    return p_.batch_major ? ((b * p_.seq_length + t) * dirs + d_) * h_
                          : ((t * dirs + d_) * p_.batch + b) * h_;
  }
  int64_t stateOffset(int64_t b) const {
    return p_.batch_major ? (b * p_.num_directions + d_) * h_ : (d_ * p_.batch + b) * h_;
  }
  bool splitGru() const { return splitsGru(p_); }
  void project(const Inputs& in);
  const float* pack(const float* r, int64_t k, int64_t firstGate, int gates);
  void lstmEpilogue(int64_t t, const float* hPrev, float* hNext, const Inputs& in);
  void step(int64_t t, const float* hPrev, float* hNext, const Inputs& in);

  const RnnParams& p_;
  int32_t d_;
  const Team& team_;
  int64_t h_, g_;
  const RnnActivationParams* act_;
  int64_t blocks_, u0_, units_, pad_;
  float* hbuf_[2];
  float* rh_;  // GRU: r * h_{t-1}, [batch, hidden]
  float *xw_ = nullptr, *c_ = nullptr, *z_ = nullptr, *acc_ = nullptr;
  float *peep_ = nullptr, *rbh_ = nullptr, *gates_ = nullptr;
  const float *packed_ = nullptr, *packedH_ = nullptr;
  const float *packedW_ = nullptr, *bias_ = nullptr;
};

/// xw [rows, blocks, G, kUnits] for this thread's units = x W^T + biases,
/// laid out as the recurrent accumulators are. W is packed like R (and
/// cached the same way), so each block is a plain row-major GEMM over all
/// time steps at once, run on LIBXSMM with the biases as its epilogue (the
/// recurrent product, which streams the block again for every few rows,
/// reached half its speed here). Every recurrent bias is a plain addend
/// except GRU's Rb_h with linear_before_reset, which the reset gate scales.
void Direction::project(const Inputs& in) {
  thread_local std::vector<float> buf;
  xw_ = privateBuffer(buf, static_cast<size_t>(projectionSize()));
  if (units_ == 0) return;
  prepareProjection(in);
  projectSteps(in, 0, p_.seq_length, xw_);
}

void Direction::prepareProjection(const Inputs& in) {
  const int64_t ld = g_ * pad_;
  packedW_ = pack(in.w, p_.input_size, 0, static_cast<int>(g_));
  const int64_t blockCols = g_ * kUnits;
  thread_local std::vector<float> biasBuf;
  bias_ = nullptr;
  if (!in.b) return;
  bool keepRbh = p_.cell == RnnCell::kGru && p_.linear_before_reset;
  float* bias = privateBuffer(biasBuf, static_cast<size_t>(ld));
  std::fill_n(bias, ld, 0.f);
  for (int64_t g = 0; g < g_; ++g)
    for (int64_t u = 0; u < units_; ++u) {
      int64_t j = g * h_ + u0_ + u;
      bias[(u / kUnits) * blockCols + g * kUnits + u % kUnits] =
          in.b[j] + (keepRbh && g == 2 ? 0.f : in.b[g_ * h_ + j]);
    }
  bias_ = bias;
}

void Direction::projectSteps(const Inputs& in, int64_t s0, int64_t s1, float* xw) {
  const bool backward = p_.reverse || d_ == 1;
  const int64_t t0 = backward ? p_.seq_length - s1 : s0;
  const int64_t t1 = backward ? p_.seq_length - s0 : s1;
  const int64_t r0 = t0 * p_.batch, rows = (t1 - t0) * p_.batch;
  const int64_t k = p_.input_size, ld = g_ * pad_, blockCols = g_ * kUnits;
  for (int64_t blk = 0; blk < blocks_; ++blk) {
    detail::Epilogue epilogue;
    if (bias_) epilogue.col_bias = bias_ + blk * blockCols;
    detail::gemmRows(rows, blockCols, k, in.x + r0 * k, k, packedW_ + blk * k * blockCols,
                     blockCols, xw + r0 * ld + blk * blockCols, ld, epilogue);
  }
}

/// Rows of gates [firstGate, firstGate + gates) of W or R (k columns) for
/// this thread's units, as packRnnRows (rnn_packing.cpp) lays them out.
const float* Direction::pack(const float* r, int64_t k, int64_t firstGate, int gates) {
  return detail::packRnnRows(p_, r, k, firstGate, gates, u0_, units_, blocks_);
}

/// The gates of all this thread's units for every batch row at once (gate
/// order i o f c, peepholes i o f; acc_ laid out as xw_): each activation
/// then runs over batch x units values. c is updated in place; rows past
/// their sequence length keep their state and get zeros in Y.
void Direction::lstmEpilogue(int64_t t, const float* hPrev, float* hNext, const Inputs& in) {
  const int64_t B = p_.batch, n = B * pad_, ld = 4 * pad_;
  float* i = gates_;
  float* f = i + n;
  float* g = f + n;
  float* o = g + n;
  const float* pi = peep_;
  const float* po = peep_ + pad_;
  const float* pf = peep_ + 2 * pad_;
  // Whole vectors of 16 units (pad_ is a multiple of 16): written as
  // scalars, GCC kept these loops scalar (the gate arrays share gates_), a
  // quarter of a 256-unit LSTM's step at batch 10. (Vectors pass by
  // reference: by value they change the ABI where AVX-512 is off.) Through
  // simd::load and store, not memcpy (simd.h): under GCC's Intel tunings a
  // memcpy took the gate sums through the stack, 12% of the step.
  auto load = [](const float* from, Vec& v) { v = simd::load(from); };
  auto store = [](float* to, const Vec& v) { simd::store(to, v); };
  float* const gates[4] = {i, o, f, g};
  const float* const peepholes[4] = {pi, nullptr, pf, nullptr};
  for (int64_t b = 0; b < B; ++b) {
    const float* c = c_ + b * pad_;
    for (int64_t blk = 0; blk < blocks_; ++blk) {
      const float* a = acc_ + b * ld + blk * 4 * kUnits;
      const float* xw = xw_ + row(t, b) * ld + blk * 4 * kUnits;
      for (int part = 0; part < kParts; ++part) {
        const int64_t at = part * simd::kLanes;  // in the block
        const int64_t u = blk * kUnits + at, j = b * pad_ + u;
        Vec cu, sum, term;
        load(c + u, cu);
        for (int gate = 0; gate < 4; ++gate) {
          load(a + gate * kUnits + at, sum);
          load(xw + gate * kUnits + at, term);
          sum += term;
          if (peepholes[gate]) {
            load(peepholes[gate] + u, term);
            sum += term * cu;
          }
          store(gates[gate] + j, sum);
        }
      }
    }
  }
  activate(act_[0], p_.clip, i, n);
  if (p_.input_forget)
    for (int64_t j = 0; j < n; ++j) f[j] = 1.f - i[j];
  else
    activate(act_[0], p_.clip, f, n);
  activate(act_[1], p_.clip, g, n);
  for (int64_t b = 0; b < B; ++b) {
    const float* c = c_ + b * pad_;
    for (int64_t u = 0; u < pad_; u += simd::kLanes) {
      const int64_t j = b * pad_ + u;
      Vec fv, cv, iv, gv, ov, pv;
      load(f + j, fv);
      load(c + u, cv);
      load(i + j, iv);
      load(g + j, gv);
      load(o + j, ov);
      load(po + u, pv);
      const Vec cNew = fv * cv + iv * gv;
      store(g + j, cNew);  // the new c
      store(o + j, ov + pv * cNew);
    }
  }
  activate(act_[0], p_.clip, o, n);
  std::copy_n(g, n, f);  // f keeps the new c; g becomes h(c)
  activate(act_[2], 0.f, g, n);
  for (int64_t b = 0; b < B; ++b) {
    const float* hp = hPrev + b * h_ + u0_;
    float* hn = hNext + b * h_ + u0_;
    float* y = in.y ? in.y + yOffset(t, b) + u0_ : nullptr;
    if (in.lens && t >= in.lens[b]) {  // state carries over, y is zero
      std::copy_n(hp, units_, hn);
      if (y) std::fill_n(y, units_, 0.f);
      continue;
    }
    std::copy_n(f + b * pad_, pad_, c_ + b * pad_);
    for (int64_t u = 0; u < units_; ++u) hn[u] = o[b * pad_ + u] * g[b * pad_ + u];
    if (y) std::copy_n(hn, units_, y);
  }
}

void Direction::step(int64_t t, const float* hPrev, float* hNext, const Inputs& in) {
  const int64_t B = p_.batch, ldx = g_ * pad_;
  // Where this thread's recurrent weights exceed L2, every other step walks
  // their blocks backwards: it starts on the ones the step before ended on,
  // still in L2. (Forwards every time, a thread's 8 MB of a 1024-unit LSTM
  // left nothing in L2 for the next step. Weights that fit gain nothing,
  // and measured slower backwards.)
  constexpr int64_t kL2Bytes = 1 << 20;
  const bool alternate =
      blocks_ * h_ * g_ * kUnits * static_cast<int64_t>(sizeof(float)) > kL2Bytes;
  auto blockAt = [&](int64_t i) { return alternate && t % 2 == 1 ? blocks_ - 1 - i : i; };
  if (p_.cell == RnnCell::kLstm) {
    for (int64_t i = 0; i < blocks_; ++i) {
      const int64_t blk = blockAt(i);
      blockRows(4, h_, packed_ + blk * h_ * 4 * kUnits, hPrev, h_, B, acc_ + blk * 4 * kUnits, ldx);
    }
    lstmEpilogue(t, hPrev, hNext, in);
    team_.barrier();  // h_t complete before step t + 1 reads it
    return;
  }
  auto active = [&](int64_t b) { return !in.lens || t < in.lens[b]; };
  if (splitGru()) {
    // Phase 1: z and r, and r * h_{t-1} for this thread's units.
    for (int64_t i = 0; i < blocks_; ++i) {
      const int64_t blk = blockAt(i);
      int64_t first = u0_ + blk * kUnits;
      int64_t count = std::min<int64_t>(kUnits, u0_ + units_ - first);
      recurrentProduct(2, h_, packed_ + blk * h_ * 2 * kUnits, hPrev, B, acc_);
      for (int64_t b = 0; b < B; ++b) {
        const float* a = acc_ + b * 2 * kUnits;
        const float* xw = xw_ + row(t, b) * ldx + blk * g_ * kUnits;
        float z[kUnits], r[kUnits];
        for (int u = 0; u < kUnits; ++u) {
          z[u] = a[u] + xw[u];
          r[u] = a[kUnits + u] + xw[kUnits + u];
        }
        activate(act_[0], p_.clip, z);
        activate(act_[0], p_.clip, r);
        std::copy_n(z, kUnits, z_ + b * pad_ + blk * kUnits);
        const float* hp = hPrev + b * h_ + first;
        float* rh = rh_ + b * h_ + first;
        for (int64_t u = 0; u < count; ++u) rh[u] = r[u] * hp[u];
      }
    }
    team_.barrier();
  }
  for (int64_t i = 0; i < blocks_; ++i) {
    const int64_t blk = blockAt(i);
    int64_t first = u0_ + blk * kUnits;
    int64_t count = std::min<int64_t>(kUnits, u0_ + units_ - first);
    if (splitGru())
      recurrentProduct(1, h_, packedH_ + blk * h_ * kUnits, rh_, B, acc_);
    else
      recurrentProduct(static_cast<int>(g_), h_, packed_ + blk * h_ * g_ * kUnits, hPrev, B, acc_);
    for (int64_t b = 0; b < B; ++b) {
      const float* hp = hPrev + b * h_ + first;
      float* hn = hNext + b * h_ + first;
      float* y = in.y ? in.y + yOffset(t, b) + first : nullptr;
      if (!active(b)) {  // state carries over, y is zero
        std::copy_n(hp, count, hn);
        if (y) std::fill_n(y, count, 0.f);
        continue;
      }
      const float* xw = xw_ + row(t, b) * ldx + blk * g_ * kUnits;
      switch (p_.cell) {
        case RnnCell::kLstm:
          break;  // see the start of step
        case RnnCell::kRnn: {
          float v[kUnits];
          const float* a = acc_ + b * kUnits;
          for (int u = 0; u < kUnits; ++u) v[u] = a[u] + xw[u];
          activate(act_[0], p_.clip, v);
          std::copy_n(v, count, hn);
          break;
        }
        case RnnCell::kGru: {
          float z[kUnits], cand[kUnits], hpad[kUnits] = {};
          std::copy_n(hp, count, hpad);
          if (splitGru()) {
            const float* a = acc_ + b * kUnits;
            std::copy_n(z_ + b * pad_ + blk * kUnits, kUnits, z);
            for (int u = 0; u < kUnits; ++u) cand[u] = a[u] + xw[2 * kUnits + u];
          } else {
            const float* a = acc_ + b * 3 * kUnits;
            const float* rb = rbh_ + blk * kUnits;
            float r[kUnits];
            for (int u = 0; u < kUnits; ++u) {
              z[u] = a[u] + xw[u];
              r[u] = a[kUnits + u] + xw[kUnits + u];
            }
            activate(act_[0], p_.clip, z);
            activate(act_[0], p_.clip, r);
            for (int u = 0; u < kUnits; ++u)
              cand[u] = xw[2 * kUnits + u] + r[u] * (a[2 * kUnits + u] + rb[u]);
          }
          activate(act_[1], p_.clip, cand);
          for (int u = 0; u < kUnits; ++u) cand[u] = (1.f - z[u]) * cand[u] + z[u] * hpad[u];
          std::copy_n(cand, count, hn);
          break;
        }
      }
      if (y) std::copy_n(hn, count, y);
    }
  }
  team_.barrier();  // h_t complete before step t + 1 reads it
}

void Direction::run(const Inputs& in, const ProjectionPipeline* pipeline) {
  const int64_t B = p_.batch;
  if (pipeline)
    xw_ = pipeline->xw[d_];
  else
    project(in);
  thread_local std::vector<float> cBuf, zBuf, accBuf, peepBuf, rbBuf, gateBuf;
  if (splitGru()) {
    packed_ = pack(in.r, h_, 0, 2);
    packedH_ = pack(in.r, h_, 2, 1);
  } else {
    packed_ = pack(in.r, h_, 0, static_cast<int>(g_));
  }
  acc_ = privateBuffer(accBuf, static_cast<size_t>(B * g_ * pad_));
  c_ = privateBuffer(cBuf, static_cast<size_t>(B * pad_ + kUnits));
  z_ = privateBuffer(zBuf, static_cast<size_t>(B * pad_ + kUnits));
  gates_ = privateBuffer(gateBuf, static_cast<size_t>(4 * B * pad_));
  peep_ = privateBuffer(peepBuf, static_cast<size_t>(3 * pad_ + kUnits));
  rbh_ = privateBuffer(rbBuf, static_cast<size_t>(pad_ + kUnits));
  std::fill_n(c_, B * pad_, 0.f);
  std::fill_n(peep_, 3 * pad_, 0.f);
  std::fill_n(rbh_, pad_, 0.f);
  for (int64_t u = 0; u < units_; ++u) {
    if (in.peephole)
      for (int k = 0; k < 3; ++k) peep_[k * pad_ + u] = in.peephole[k * h_ + u0_ + u];
    if (in.b && p_.cell == RnnCell::kGru) rbh_[u] = in.b[5 * h_ + u0_ + u];
  }
  for (int64_t b = 0; b < B; ++b) {
    float* h = hbuf_[0] + b * h_ + u0_;
    if (in.h0)
      std::copy_n(in.h0 + stateOffset(b) + u0_, units_, h);
    else
      std::fill_n(h, units_, 0.f);
    if (in.c0) std::copy_n(in.c0 + stateOffset(b) + u0_, units_, c_ + b * pad_);
  }
  team_.barrier();
  bool backward = p_.reverse || d_ == 1;
  for (int64_t s = 0; s < p_.seq_length; ++s) {
    int64_t t = backward ? p_.seq_length - 1 - s : s;
    if (pipeline) rt::wait_until(pipeline->projected[d_], [s](int64_t ready) { return ready > s; });
    step(t, hbuf_[s % 2], hbuf_[(s + 1) % 2], in);
  }
  const float* hLast = hbuf_[p_.seq_length % 2];
  for (int64_t b = 0; b < B; ++b) {
    if (in.y_h) std::copy_n(hLast + b * h_ + u0_, units_, in.y_h + stateOffset(b) + u0_);
    if (in.y_c) std::copy_n(c_ + b * pad_, units_, in.y_c + stateOffset(b) + u0_);
  }
  team_.barrier();  // the next direction reuses the h buffers
}

/// Small cells on a team: thread 0 runs every step while thread 1 computes
/// the input projection a chunk of steps ahead, so the projection (a
/// quarter of a 64-unit LSTM's time on one thread) overlaps the steps
/// instead of preceding them. Steps that small cannot be split over the
/// team: a barrier per step costs more than a second thread saves.
/// Time-major layouts only (a step's rows are contiguous there).
void pipelinedRnn(const RnnParams& p, const Inputs* in, const void* key, const Team& team) {
  ProjectionPipeline local;
  ProjectionPipeline* pipeline = team.shareFromFirst(&local);
  if (team.thread() == 0) {
    thread_local std::vector<float> xwBuf;
    SharedScratch shared(Team::serial(), key, stateFloats(p));
    const int64_t size = Direction(p, 0, Team::serial(), shared.data()).projectionSize();
    float* xw = privateBuffer(xwBuf, static_cast<size_t>(p.num_directions * size));
    for (int32_t d = 0; d < p.num_directions; ++d) {
      local.xw[d] = xw + d * size;
      local.projected[d].store(0, std::memory_order_relaxed);
    }
    team.barrier();  // buffers set: thread 1 may project
    for (int32_t d = 0; d < p.num_directions; ++d)
      Direction(p, d, Team::serial(), shared.data()).run(in[d], pipeline);
  } else {
    team.barrier();
    if (team.thread() == 1) {  // a Direction of its own, whose h buffers go unused
      SharedScratch shared(Team::serial(), key, stateFloats(p));
      for (int32_t d = 0; d < p.num_directions; ++d) {
        Direction projector(p, d, Team::serial(), shared.data());
        projector.prepareProjection(in[d]);
        for (int64_t s0 = 0; s0 < p.seq_length; s0 += ProjectionPipeline::kChunkSteps) {
          const int64_t s1 = std::min(p.seq_length, s0 + ProjectionPipeline::kChunkSteps);
          projector.projectSteps(in[d], s0, s1, pipeline->xw[d]);
          pipeline->projected[d].store(s1, std::memory_order_release);
          pipeline->projected[d].notify_all();
        }
      }
    }
  }
  team.barrier();  // thread 1 is done with thread 0's pipeline
}

}  // namespace

void rnn(const RnnParams& p, const float* x, const float* w, const float* r, const float* b,
         const int32_t* sequence_lens, const float* initial_h, const float* initial_c,
         const float* peephole, float* y, float* y_h, float* y_c, const Team& team) {
  int64_t g = gatesOf(p.cell), h = p.hidden_size;
  bool lstm = p.cell == RnnCell::kLstm;
  Inputs in[2];
  const int64_t wSize = p.packed_weights ? packedDirectionSize(p, false) : g * h * p.input_size;
  const int64_t rSize = p.packed_weights ? packedDirectionSize(p, true) : g * h * h;
  for (int32_t d = 0; d < p.num_directions; ++d)
    in[d] = Inputs{x,
                   w + d * wSize,
                   r + d * rSize,
                   b ? b + d * 2 * g * h : nullptr,
                   sequence_lens,
                   initial_h,
                   lstm ? initial_c : nullptr,
                   lstm && peephole ? peephole + d * 3 * h : nullptr,
                   y,
                   y_h,
                   lstm ? y_c : nullptr};
  const void* key = y ? static_cast<const void*>(y) : y_h ? static_cast<const void*>(y_h) : y_c;
  // A step is one barrier apart from the next: below this many multiply-adds
  // per step the barrier costs more than a second thread saves (LSTM hidden
  // 64 at batch 1 runs faster on one thread).
  constexpr int64_t kMinParallelStep = int64_t{1} << 17;
  if (team.size() > 1 && g * h * (h + p.input_size) * p.batch < kMinParallelStep) {
    if (!p.batch_major) {
      pipelinedRnn(p, in, key, team);
    } else if (team.thread() == 0) {
      rnn(p, x, w, r, b, sequence_lens, initial_h, initial_c, peephole, y, y_h, y_c,
          Team::serial());
    }
    return;
  }
  SharedScratch shared(team, key, stateFloats(p));
  for (int32_t d = 0; d < p.num_directions; ++d) Direction(p, d, team, shared.data()).run(in[d]);
}

}  // namespace cgc::rt
