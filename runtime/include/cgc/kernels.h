// cgc runtime kernels: what generated code calls.
//
// Every kernel takes a plain parameter struct whose values the compiler knows
// at compile time (the generated code passes them as `static constexpr`
// literals) plus raw tensor pointers. Kernels are precompiled once into
// libcgc_runtime so that a generated translation unit stays light to compile.
// Tensors are dense, row-major (NCHW for images), and never alias unless the
// kernel's comment says in-place is allowed.
#pragma once

#include <cstdint>

#include "cgc/team.h"
#include "cgc/types.h"

namespace cgc::rt {

/// Largest tensor rank that the strided kernels handle.
inline constexpr int kMaxRank = 8;

// ---------------------------------------------------------------- elementwise

enum class UnaryOp : int32_t {
  kRelu,
  kLeakyRelu,    // alpha
  kClip,         // alpha = min, beta = max
  kSigmoid,
  kTanh,
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kSqrt,
  kExp,
  kLog,
  kNeg,
  kAbs,
  kReciprocal,
  kFloor,
  kCeil,
  kIdentity,
  kErf,
  kSoftplus,
  kElu,       // alpha
  kSoftsign,
  kNot,       // logical not of a bool (stored as uint8)
};

struct UnaryParams {
  UnaryOp op;
  int64_t count;
  float alpha;
  float beta;
};

/// y[i] = op(x[i]). In place (x == y) is allowed. Team-parallel.
template <typename T>
void unary(const UnaryParams& p, const T* x, T* y, const Team& team = Team::serial());

enum class BinaryOp : int32_t {
  kAdd, kSub, kMul, kDiv, kPow, kMin, kMax,
  kPRelu,  // a < 0 ? b * a : a
  kAnd, kOr, kXor,  // on bools (uint8)
};

/// Numpy broadcasting, already resolved: the output has `shape`; an operand's
/// stride is 0 along a broadcast dimension. Strides are in elements.
struct BroadcastParams {
  int32_t rank;
  int64_t count;
  int64_t shape[kMaxRank];
  int64_t a_strides[kMaxRank];
  int64_t b_strides[kMaxRank];
};

struct BinaryParams {
  BinaryOp op;
  BroadcastParams bc;
};

/// y = a op b with broadcasting. y may alias an operand of the output's size.
/// Team-parallel.
template <typename T>
void binary(const BinaryParams& p, const T* a, const T* b, T* y,
            const Team& team = Team::serial());

enum class CompareOp : int32_t { kEqual, kGreater, kLess, kGreaterOrEqual, kLessOrEqual };

struct CompareParams {
  CompareOp op;
  BroadcastParams bc;
};

/// y = a op b with broadcasting, as bools (one byte each, 0 or 1).
template <typename T>
void compare(const CompareParams& p, const T* a, const T* b, uint8_t* y);

/// Where: y = cond ? a : b, all three broadcast to `shape`. Elements are
/// moved as elem_bytes-byte words.
struct WhereParams {
  int32_t rank;
  int64_t count;
  int64_t elem_bytes;
  int64_t shape[kMaxRank];
  int64_t cond_strides[kMaxRank];
  int64_t a_strides[kMaxRank];
  int64_t b_strides[kMaxRank];
};

void where(const WhereParams& p, const uint8_t* cond, const void* a,
           const void* b, void* y);

// --------------------------------------------------------------- convolution

/// Activation applied by a GEMM or convolution to its result before storing
/// it (the fuse-epilogues pass folds a following Relu or Clip into the node,
/// so the output is written once instead of read back by a second kernel).
enum class Activation : int32_t {
  kNone,
  kRelu,
  kClip,  // act_min <= y <= act_max (ReLU6 is Clip(0, 6))
};

/// Convolution over (depth,) height and width: NC(D)HW input, OI(D)HW
/// weights (I = c_in / groups). 1-D and 2-D convolutions have unit depth
/// (and height) with unit window, stride and dilation there.
/// Epilogue: y = act(conv(x, w) + bias + residual).
struct ConvParams {
  int64_t n, c_in, d_in, h_in, w_in;
  int64_t c_out, d_out, h_out, w_out;
  int64_t groups;
  int64_t k_d, k_h, k_w;
  int64_t stride_d, stride_h, stride_w;
  int64_t pad_front, pad_top, pad_left;
  int64_t dilation_d, dilation_h, dilation_w;
  // Defaulted so that initializers written before the epilogue stay valid.
  Activation activation = Activation::kNone;  // ignored by conv_transpose
  float act_min = 0.0f, act_max = 0.0f;
  // w is in packConvWeights' layout (set by the pack-conv-weights pass).
  bool packed_weights = false;
  // Where pool_h_out > 0, y holds the 3x3, stride-2 max pooling (pads
  // pool_pad_top/left in front, the rest implied by pool_h/w_out) of the
  // output instead of the output: n x c_out x pool_h_out x pool_w_out (the
  // fuse-conv-maxpool pass, where convFusesMaxPool).
  int64_t pool_h_out = 0, pool_w_out = 0, pool_pad_top = 0, pool_pad_left = 0;
  // x, or y and the residual, in the channel-blocked layout
  // [n][c / kChannelBlock][d][h][w][kChannelBlock] instead of NCHW (the
  // block-activations pass). Needs packed or Winograd weights and, on that
  // side, a multiple of kChannelBlock channels.
  bool blocked_input = false, blocked_output = false;
  // w is in winogradWeights' layout and conv runs Winograd F(2x2, 3x3) (the
  // pack-conv-weights pass, where convPrefersWinograd); packed_weights is
  // then false. Takes either layout on both sides.
  bool winograd = false;
};

/// Channels per block of the channel-blocked activation layout: one
/// AVX-512 vector, so a vector of output channels leaves a convolution
/// without a transpose and the next one reads its inputs in place.
constexpr int64_t kChannelBlock = 16;

/// bias and residual (same shape as y, must not alias it) may be null.
/// Splits the output over the team: by output columns for im2col layers, by
/// the GEMM split (see gemm) for pointwise ones, by channels for depthwise.
void conv(const ConvParams& p, const float* x, const float* w,
          const float* bias, const float* residual, float* y,
          const Team& team = Team::serial());
inline void conv(const ConvParams& p, const float* x, const float* w,
                 const float* bias, float* y) {
  conv(p, x, w, bias, nullptr, y);
}

/// Whether conv runs faster on weights stored by packConvWeights (groups 1,
/// c_out at least 3/4 of itself rounded up to 16, depth c_in x window at
/// least 128): windows larger than 1x1 and strided or padded ones, which
/// the packed kernel reads in place instead of through an im2col copy, and
/// 1x1 layers with at most 64 outputs per channel, or 196 with 256 output
/// channels or more, where the NCHW GEMM's vectors along positions run
/// part-empty.
bool convPrefersPackedWeights(const ConvParams& p);

/// Whether conv, on packed or Winograd weights, can read x
/// (takesBlockedInput) or write y and the residual (takesBlockedOutput) in
/// the channel-blocked layout: groups 1, that side's channels in
/// kChannelBlocks, not a few-channel stem (its direct loop reads NCHW
/// planes), no fused pooling.
bool convTakesBlockedInput(const ConvParams& p);
bool convTakesBlockedOutput(const ConvParams& p);

struct PoolParams;

/// Whether conv can store `pool` (a MaxPool reading its whole output) of
/// its output instead of the output: 3x3 windows at stride 2 over a 2-D
/// stem with few input channels, whose output is the largest tensor of a
/// CNN and otherwise goes to memory and back.
bool convFusesMaxPool(const ConvParams& conv, const PoolParams& pool);

/// Floats packConvWeights writes: c_out rounded up to 16, times the depth.
int64_t packedConvWeightCount(const ConvParams& p);

/// Repacks OI(D)HW weights (groups 1) for conv with packed_weights: output
/// channels padded with zeros to a multiple of 16, in panels of 64 (the
/// last one narrower), each stored [c_in * taps][panel width], so the
/// kernel's vectors run along output channels.
void packConvWeights(const ConvParams& p, const float* w, float* packed);

/// Whether conv can run as Winograd F(2x2, 3x3) (takes): 2-D 3x3 windows
/// at stride 1, no dilation, groups 1, channels in kChannelBlocks on both
/// sides, no fused pooling; and whether that is faster (prefers): at least
/// 49 tiles of 2x2 outputs, 13x13 and larger planes.
bool convTakesWinograd(const ConvParams& p);
bool convPrefersWinograd(const ConvParams& p);

/// Floats winogradWeights writes: 16 x c_in x c_out.
int64_t winogradWeightCount(const ConvParams& p);

/// The Winograd transform G g G^T of each 3x3 kernel g of OIHW weights
/// (groups 1), stored as 16 row-major c_in x c_out matrices, one per
/// element of the 4x4 transformed kernel (conv with winograd).
void winogradWeights(const ConvParams& p, const float* w, float* u);

/// Transposed convolution, weights [c_in, c_out / groups, k_d, k_h, k_w].
/// The *_in sizes are the input's, *_out the output's; pads are the ones
/// cropped from the full output (resolved from output_shape / auto_pad by the
/// compiler). Splits output channels over the team.
void conv_transpose(const ConvParams& p, const float* x, const float* w,
                    const float* bias, float* y, const Team& team = Team::serial());

// ------------------------------------------------------------------- pooling

/// Pooling over (depth,) height and width; 1-D and 2-D pools have unit
/// depth (and height) with unit window, stride and dilation there.
struct PoolParams {
  int64_t n_c;  // batch * channels
  int64_t d_in, h_in, w_in, d_out, h_out, w_out;
  int64_t k_d, k_h, k_w;
  int64_t stride_d, stride_h, stride_w;
  int64_t pad_front, pad_top, pad_left;
  int64_t dilation_d, dilation_h, dilation_w;
  bool count_include_pad;  // average pool only
};

/// Team-parallel over the N * C planes.
void max_pool(const PoolParams& p, const float* x, float* y,
              const Team& team = Team::serial());
void avg_pool(const PoolParams& p, const float* x, float* y,
              const Team& team = Team::serial());

/// y[i] = mean(x[i * spatial .. (i + 1) * spatial)), i < n_c.
void global_avg_pool(int64_t n_c, int64_t spatial, const float* x, float* y,
                     const Team& team = Team::serial());
/// global_avg_pool of x in the channel-blocked layout (n_c a multiple of
/// kChannelBlock); y is the same in either layout.
void global_avg_pool_blocked(int64_t n_c, int64_t spatial, const float* x, float* y,
                             const Team& team = Team::serial());

// --------------------------------------------------------------------- GEMM

/// Y[m, n] = act(alpha * op(A) op(B) + beta * C), op = transpose when asked.
/// A is [m, k] ([k, m] when trans_a), B is [k, n] ([n, k] when trans_b). C may
/// be null; otherwise C[i, j] is read at i * c_stride_m + j * c_stride_n
/// (strides of 0 broadcast).
struct GemmParams {
  int64_t m, n, k;
  bool trans_a, trans_b;
  float alpha, beta;
  int64_t c_stride_m, c_stride_n;
  Activation activation = Activation::kNone;
  float act_min = 0.0f, act_max = 0.0f;
};

/// Team split of the output: see detail::splitOutput in gemm_core.h.
void gemm(const GemmParams& p, const float* a, const float* b, const float* c,
          float* y, const Team& team = Team::serial());

/// Batched MatMul with broadcast batch dimensions: for every batch index,
/// Y[m, n] = act(A[m, k] B[k, n] + bias[n]). Batch strides are in elements
/// (0 broadcasts).
struct MatMulParams {
  int32_t batch_rank;
  int64_t batch_shape[kMaxRank];
  int64_t a_batch_strides[kMaxRank];
  int64_t b_batch_strides[kMaxRank];
  int64_t m, n, k;
  Activation activation = Activation::kNone;
  float act_min = 0.0f, act_max = 0.0f;
};

/// bias ([n]) may be null. Splits batches over the team when there are at
/// least as many as threads, otherwise each batch's output.
void matmul(const MatMulParams& p, const float* a, const float* b,
            const float* bias, float* y, const Team& team = Team::serial());
inline void matmul(const MatMulParams& p, const float* a, const float* b,
                   float* y) {
  matmul(p, a, b, nullptr, y);
}
/// float64: plain loops, no epilogue.
void matmul(const MatMulParams& p, const double* a, const double* b, double* y);

// ------------------------------------------------------------ normalisation

/// Inference BatchNormalization over NC(spatial) data. In place (x == y) is
/// allowed.
struct BatchNormParams {
  int64_t n, c, spatial;
  float epsilon;
};

void batch_norm(const BatchNormParams& p, const float* x, const float* scale,
                const float* bias, const float* mean, const float* var,
                float* y, const Team& team = Team::serial());

/// Softmax over the middle axis of [outer, axis, inner]; log_softmax when log.
/// Team-parallel over outer (and blocks of inner).
struct SoftmaxParams {
  int64_t outer, axis, inner;
  bool log;
};

void softmax(const SoftmaxParams& p, const float* x, float* y,
             const Team& team = Team::serial());

/// InstanceNormalization over NC(spatial) data: every (n, c) plane is
/// normalised by its own mean and variance, then scaled and shifted per
/// channel.
struct InstanceNormParams {
  int64_t n, c, spatial;
  float epsilon;
};

void instance_norm(const InstanceNormParams& p, const float* x,
                   const float* scale, const float* bias, float* y);

/// LayerNormalization of x viewed as [outer, inner]: each row is normalised,
/// then y = normalised * scale + bias with scale and bias of `inner` values
/// (bias may be null). mean and inv_std_dev (outer values each) may be null.
struct LayerNormParams {
  int64_t outer, inner;
  float epsilon;
};

void layer_norm(const LayerNormParams& p, const float* x, const float* scale,
                const float* bias, float* y, float* mean, float* inv_std_dev,
                const Team& team = Team::serial());

enum class ReduceOp : int32_t { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSumExp };

/// Reduction of x (shape `shape`) into y: element i of x accumulates into
/// y[sum_d index_d * out_strides[d]], where out_strides is 0 on reduced axes.
/// `reduced` is the number of x elements per y element (for Mean).
struct ReduceParams {
  ReduceOp op;
  int32_t rank;
  int64_t count;
  int64_t out_count;
  int64_t reduced;
  int64_t shape[kMaxRank];
  int64_t out_strides[kMaxRank];
};

template <typename T>
void reduce(const ReduceParams& p, const T* x, T* y);

/// ArgMax / ArgMin over the middle axis of [outer, axis, inner]; ties pick the
/// first index, or the last with select_last.
struct ArgParams {
  int64_t outer, axis, inner;
  bool max, select_last;
};

void arg_reduce(const ArgParams& p, const float* x, int64_t* y);

/// Pad and Tile as index maps: output index o reads input index i_d per dim:
/// constant pad (out of range -> value), reflect, edge, or tile (o mod dim).
enum class IndexMapMode : int32_t { kConstant, kReflect, kEdge, kTile };

struct IndexMapParams {
  IndexMapMode mode;
  int32_t rank;
  int64_t elem_bytes;
  int64_t out_count;
  int64_t in_shape[kMaxRank];
  int64_t out_shape[kMaxRank];
  int64_t pad_begin[kMaxRank];
  double value;  // constant pad value, converted to the element type
  DType dtype;
};

void index_map(const IndexMapParams& p, const void* x, void* y);

// ----------------------------------------------------------------- recurrent

enum class RnnCell : int32_t { kRnn, kGru, kLstm };

/// The activation functions ONNX allows in recurrent cells.
enum class RnnActivation : int32_t {
  kSigmoid, kTanh, kRelu,
  kHardSigmoid,      // max(0, min(1, alpha * x + beta))
  kLeakyRelu,        // x < 0 ? alpha * x : x
  kAffine,           // alpha * x + beta
  kScaledTanh,       // alpha * tanh(beta * x)
  kThresholdedRelu,  // x > alpha ? x : 0
  kElu,              // x < 0 ? alpha * (exp(x) - 1) : x
  kSoftsign, kSoftplus,
};

struct RnnActivationParams {
  RnnActivation fn;
  float alpha, beta;
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
  RnnActivationParams activations[6];
  // w and r are in packRnnWeights' layout (set by the pack-rnn-weights pass).
  bool packed_weights = false;
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

void rnn(const RnnParams& p, const float* x, const float* w, const float* r,
         const float* b, const int32_t* sequence_lens, const float* initial_h,
         const float* initial_c, const float* peephole, float* y, float* y_h,
         float* y_c, const Team& team = Team::serial());

// ------------------------------------------------------------------ resize

enum class ResizeMode : int32_t { kNearest, kLinear, kCubic };
enum class NearestMode : int32_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class ResizeCoordinates : int32_t {
  kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric,
  kTfHalfPixelForNn, kTfCropAndResize,
};

/// ONNX Resize (and Upsample) of a dense tensor, separably along every axis,
/// with the ONNX reference implementation's arithmetic: output coordinate x
/// maps to an input coordinate from `scales` (as given, not out / in), the
/// neighbours come from the edge-padded input, and the result is the
/// product-weighted sum over axes. roi (tf_crop_and_resize only) is per axis
/// in normalised coordinates; outside it the output is extrapolation_value.
struct ResizeParams {
  ResizeMode mode;
  NearestMode nearest_mode;
  ResizeCoordinates coordinates;
  int32_t rank;
  int64_t in_shape[kMaxRank];
  int64_t out_shape[kMaxRank];
  double scales[kMaxRank];
  float roi_start[kMaxRank];
  float roi_end[kMaxRank];
  double cubic_coeff_a;
  bool exclude_outside;
  float extrapolation_value;
};

void resize(const ResizeParams& p, const float* x, float* y);

// ------------------------------------------------------------ data movement

/// y[i...] = x[offset + sum_d i_d * in_strides[d]] for every index of `shape`.
/// Covers Transpose (permuted strides), Slice (offset, scaled or negative
/// strides) and broadcasting copies (zero strides). Strides and offset are in
/// elements of elem_bytes bytes (1, 2, 4 or 8).
struct StridedCopyParams {
  int32_t rank;
  int64_t elem_bytes;
  int64_t offset;
  int64_t shape[kMaxRank];
  int64_t in_strides[kMaxRank];
};

void strided_copy(const StridedCopyParams& p, const void* x, void* y,
                  const Team& team = Team::serial());

/// Concatenation along an axis, viewing each input as [outer, part_bytes[i]]
/// and the output as [outer, sum(part_bytes)].
void concat(int64_t outer, int32_t num_inputs, const int64_t* part_bytes,
            const void* const* inputs, void* y);

/// ONNX Gather: data viewed as [outer, axis_dim, inner_bytes]; each index
/// (negative counts from the end) picks one [inner_bytes] block. Indices out
/// of range produce zeros.
struct GatherParams {
  int64_t outer, axis_dim, inner_bytes, num_indices;
};

void gather(const GatherParams& p, const void* data, const int64_t* indices,
            void* y);
void gather(const GatherParams& p, const void* data, const int32_t* indices,
            void* y);

/// IEEE half precision <-> float (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
/// bfloat16 <-> float; float to bfloat16 truncates, as ONNX's reference does.
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

/// Element type conversion (float to integer truncates toward zero, as C++;
/// float16 and bfloat16 go through float).
void cast(DType from, DType to, int64_t count, const void* x, void* y);

}  // namespace cgc::rt
