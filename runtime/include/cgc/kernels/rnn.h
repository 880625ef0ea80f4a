// Recurrent layers: ONNX RNN, GRU and LSTM, and their weight packing.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

CGC_ENUM(RnnCell, kRnn, kGru, kLstm)

/// The activation functions ONNX allows in recurrent cells.
CGC_ENUM(RnnActivation, kSigmoid, kTanh, kRelu,
         kHardSigmoid,      // max(0, min(1, alpha * x + beta))
         kLeakyRelu,        // x < 0 ? alpha * x : x
         kAffine,           // alpha * x + beta
         kScaledTanh,       // alpha * tanh(beta * x)
         kThresholdedRelu,  // x > alpha ? x : 0
         kElu,              // x < 0 ? alpha * (exp(x) - 1) : x
         kSoftsign, kSoftplus)

struct RnnActivationParams {
  RnnActivation fn;
  float alpha, beta;
  CGC_REFLECT(RnnActivationParams, fn, alpha, beta)
};

/// ONNX RNN, GRU and LSTM over a whole sequence, every direction. Shapes
/// (G = gates: 1, 3 or 4; D = num_directions):
///   x [seq, batch, input] ([batch, seq, input] when batch_major)
///   w [D, G * hidden, input], r [D, G * hidden, hidden], b [D, 2 * G * hidden]
///   sequence_lens [batch], initial_h / initial_c [D, batch, hidden]
///   ([batch, D, hidden] when batch_major), peephole [D, 3 * hidden] (iof)
///   y [seq, D, batch, hidden] ([batch, seq, D, hidden] when batch_major),
///   y_h / y_c shaped like initial_h.
/// Gate order is ONNX's: LSTM i o f c, GRU z r h. Every pointer but x, w, r
/// may be null. Steps at or past a batch entry's sequence length write zeros
/// to y and leave its state alone, so y_h / y_c hold the last valid state.
/// activations[3 * d + k] is function k (f, g, h) of direction d; clip <= 0
/// means no clipping. Team-parallel over hidden units (one barrier per
/// step); every output pointer that is non-null must be distinct per
/// concurrent call.
struct RnnParams {
  RnnCell cell;
  int64_t seq_length, batch, input_size, hidden_size;
  int32_t num_directions;
  bool reverse;  // a single direction running from the last step
  bool batch_major;
  bool linear_before_reset;  // GRU
  bool input_forget;         // LSTM: f = 1 - i
  float clip;
  std::array<RnnActivationParams, 6> activations;
  // w and r are in packRnnWeights' layout (set by the pack-rnn-weights pass).
  bool packed_weights = false;
  CGC_REFLECT(RnnParams, cell, seq_length, batch, input_size, hidden_size, num_directions, reverse,
              batch_major, linear_before_reset, input_forget, clip, activations, packed_weights)
};

/// Floats of W (recurrent false) or R (true) in packRnnWeights' layout: per
/// direction, the hidden units in blocks of 16 (zero-padded), each block
/// [k][gates][16], k the input or hidden size (GRU without
/// linear_before_reset: R's z and r gates, then its h gate).
int64_t packedRnnWeightCount(const RnnParams& p, bool recurrent);

/// Packs ONNX's W [directions, gates x hidden, input] or R [directions,
/// gates x hidden, hidden] into the order rnn reads them, so that a model's
/// constant weights are packed once at compile time rather than at every
/// call (where rnn packs and caches weights given at run time).
void packRnnWeights(const RnnParams& p, const float* weights, bool recurrent, float* packed);

void rnn(const RnnParams& p, const float* x, const float* w, const float* r, const float* b,
         const int32_t* sequence_lens, const float* initial_h, const float* initial_c,
         const float* peephole, float* y, float* y_h, float* y_c,
         const Team& team = Team::serial());

}  // namespace cgc::rt
