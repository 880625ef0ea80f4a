// Quantised (int8) kernels: QuantizeLinear and DequantizeLinear, dynamic
// quantisation, the int8 convolution and matrix product with their
// requantising epilogue, and the int8 forms of pooling and addition that
// the fuse-quantized pass leaves between them.
//
// Arithmetic follows ONNX: quantise is saturate(round_half_even(x / scale)
// + zero_point), dequantise (x - zero_point) * scale. The products
// accumulate exactly in int32 (zero points subtracted exactly, whatever the
// instruction set), then requantise as ONNX Runtime's MLAS does:
// q = saturate(round_half_even(float(acc + bias) * multiplier) + zero_point)
// with multiplier = x_scale * w_scale[c] / y_scale evaluated in float.
#pragma once

#include "cgc/kernels/common.h"
#include "cgc/kernels/pool.h"

namespace cgc::rt {

/// QuantizeLinear / DequantizeLinear over [outer][axis_size][inner]: scale
/// and zero point per index along the axis (axis_size 1: per tensor).
/// `type` is the quantised side's element type: kU8 or kI8, and kI32 for
/// dequantize_linear (biases). A null zero point is 0.
struct QuantizeParams {
  DType type = DType::kU8;
  int64_t outer = 1, axis_size = 1, inner = 1;
  bool per_axis = false;  // scale and zero point have axis_size values
  CGC_REFLECT(QuantizeParams, type, outer, axis_size, inner, per_axis)
};

void quantize_linear(const QuantizeParams& p, const float* x, const float* scale,
                     const void* zero_point, void* y, const Team& team = Team::serial());
void dequantize_linear(const QuantizeParams& p, const void* x, const float* scale,
                       const void* zero_point, float* y, const Team& team = Team::serial());

/// DynamicQuantizeLinear: uint8 y with scale (max(0, max x) - min(0, min
/// x)) / 255 (1 / 255 when that range is empty) and the zero point that maps
/// 0 exactly, as ONNX's reference.
struct DynamicQuantizeParams {
  int64_t count;
  CGC_REFLECT(DynamicQuantizeParams, count)
};

void dynamic_quantize_linear(const DynamicQuantizeParams& p, const float* x, uint8_t* y,
                             float* y_scale, uint8_t* y_zero_point);

/// What an int8 product does with its int32 sums acc[c] (c: output channel
/// or column) before storing them:
///  kInt32:       y = acc (ConvInteger, MatMulInteger);
///  kRequant:     y = clamp(round(float(acc + bias[c]) * m[c]) + y_zero, y_min, y_max),
///                m[c] = x_scale * w_scale[c] / y_scale; an activation fused
///                before the QuantizeLinear is in [y_min, y_max] (Relu: y_min
///                = y_zero);
///  kRequantAdd:  the same into `mid` (zero mid_zero, range [mid_min,
///                mid_max]), then the quantised sum with the residual r:
///                y = clamp(round((mid - mid_zero) * (mid_scale / y_scale)
///                + (r - r_zero) * (r_scale / y_scale)) + y_zero, y_min,
///                y_max): DequantizeLinear, Add, QuantizeLinear by the
///                ratios of the scales, as ONNX Runtime's QLinearAdd (MLAS)
///                computes it (a division per output was most of the
///                epilogue).
CGC_ENUM(QOutput, kInt32, kRequant, kRequantAdd)

struct QEpilogue {
  QOutput kind = QOutput::kRequant;
  DType y_type = DType::kU8;  // kU8, kI8; kI32 with kInt32
  float x_scale = 1.0f, y_scale = 1.0f;
  int32_t y_zero = 0, y_min = 0, y_max = 255;
  int32_t mid_zero = 0, mid_min = 0, mid_max = 255;
  float mid_scale = 1.0f;
  bool r_signed = false;  // the residual is int8 (else uint8)
  int32_t r_zero = 0;
  float r_scale = 1.0f;
  CGC_REFLECT(QEpilogue, kind, y_type, x_scale, y_scale, y_zero, y_min, y_max, mid_zero, mid_min,
              mid_max, mid_scale, r_signed, r_zero, r_scale)
};

/// How qconv's and qgemm's weights are stored. kNone: as ONNX has them
/// (the kernel packs them into scratch on every call). The packed kinds
/// hold w - w_zero per output channel, in blocks of `pack_nb` channels:
///  kQuads:      int8, [block][k / 4][pack_nb][4] (VNNI's vpdpbusd and the
///               portable loops);
///  kQuadsSplit: kQuads whose pairs that could saturate AVX2's vpmaddubsw
///               for some uint8 activation are split in two: the main
///               weights limit each such pair to |w| <= 64, and a short list
///               per channel holds the rest (see packQWeights);
///  kWide:       int16, same order, where w - w_zero does not fit int8
///               (uint8 weights with a zero point far from 128);
///  kTapQuads:   kQuads with the depth tap by tap, the channels of each
///               tap padded to a multiple of 4 with zeros: quad q is tap
///               q / ceil(c_in / groups / 4), channels 4 (q % that) on
///               (the direct convolution of AVX-512 VNNI, qconv_direct.cpp).
/// Then, per output channel, int32 sums of the packed weights (the
/// compensation for the activations' zero point).
CGC_ENUM(QPacking, kNone, kQuads, kQuadsSplit, kWide, kTapQuads)

/// The variants of the int8 convolution (cgc/kernels/qconv_variants.def):
/// QConvVariant (kNone: qconv chooses, chooseQConvVariant),
/// QConvVariantInfo {variant, name, tier, packing}, kQConvVariants and
/// variantInfo(v).
#define CGC_VARIANTS_PREFIX QConv
#define CGC_VARIANTS_DEF "cgc/kernels/qconv_variants.def"
#define CGC_VARIANTS_LAYOUT QPacking
#define CGC_VARIANTS_FIELD packing
#define CGC_QCONV_VARIANT CGC_VARIANT
#include "cgc/kernels/variant_table.h"
#undef CGC_QCONV_VARIANT

/// Convolution of uint8 or int8 NCHW activations with int8 or uint8 OIHW
/// weights (1-D or 2-D; groups; depthwise when groups == c_in == c_out),
/// int32 accumulation, then `out`. Weights are per tensor or per output
/// channel (w_scale and w_zero have c_out values when per_channel).
struct QConvParams {
  int64_t n, c_in, h_in = 1, w_in, c_out, h_out = 1, w_out;
  int64_t groups = 1;
  int64_t k_h = 1, k_w = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  bool x_signed = false, w_signed = true, per_channel = false;
  int32_t x_zero = 0;
  QPacking packing = QPacking::kNone;
  int64_t pack_nb = 0;        // output channels per packed block
  int64_t split_entries = 0;  // kQuadsSplit: length of the split list
  QEpilogue out;
  // The variant qconv runs (the pack-quantized-weights pass's choice, or a
  // test's); kNone: qconv chooses, as chooseQConvVariant.
  QConvVariant variant = QConvVariant::kNone;
  CGC_REFLECT(QConvParams, n, c_in, h_in, w_in, c_out, h_out, w_out, groups, k_h, k_w, stride_h,
              stride_w, pad_top, pad_left, dilation_h, dilation_w, x_signed, w_signed, per_channel,
              x_zero, packing, pack_nb, split_entries, out, variant)
};

/// x: n x c_in x h_in x w_in (uint8, or int8 when x_signed); w: the weights
/// (packing kNone: c_out x c_in / groups x k_h x k_w; else packQWeights'
/// bytes); w_scale, w_zero: per tensor or per channel (w_zero may be null);
/// bias: int32 per output channel or null; residual: kRequantAdd's r, the
/// shape of y; y: n x c_out x h_out x w_out. Runs p.variant where this
/// build's tier has it and it reads p's packing, else chooseQConvVariant's
/// (planQConv's, packing the weights into scratch, where they are not
/// packed). Splits images, output channels and output rows over the team.
void qconv(const QConvParams& p, const void* x, const void* w, const float* w_scale,
           const void* w_zero, const int32_t* bias, const void* residual, void* y,
           const Team& team = Team::serial());

/// Batched int8 matrix product with broadcast batch dimensions:
/// Y[m, n] = out(sum_k (A[m, k] - a_zero) (B[k, n] - b_zero[n])). B (the
/// weights) per tensor or per column; with trans_b, B is stored [n, k].
struct QGemmParams {
  int32_t batch_rank = 0;
  PerDim<int64_t> batch_shape{};
  PerDim<int64_t> a_batch_strides{};
  PerDim<int64_t> b_batch_strides{};  // in elements of the unpacked B
  int64_t m, n, k;
  bool trans_b = false;
  bool a_signed = false, b_signed = true, per_column = false;
  int32_t a_zero = 0;
  QPacking packing = QPacking::kNone;
  int64_t pack_nb = 0;
  QEpilogue out;
  CGC_REFLECT(QGemmParams, batch_rank, batch_shape, a_batch_strides, b_batch_strides, m, n, k,
              trans_b, a_signed, b_signed, per_column, a_zero, packing, pack_nb, out)
};

/// As qconv: b is packQWeights' bytes unless packing is kNone (packed B
/// has no batch dimensions); a_zero_point, where not null, is A's zero
/// point computed at run time (MatMulInteger after DynamicQuantizeLinear),
/// else p.a_zero. Splits batches and rows of Y over the team.
void qgemm(const QGemmParams& p, const void* a, const void* a_zero_point, const void* b,
           const float* b_scale, const void* b_zero, const int32_t* bias, const void* residual,
           void* y, const Team& team = Team::serial());

/// The packing qconv and qgemm read fastest on a CPU of instruction-set
/// tier `tier` (cgc/isa_tiers.def) for weights whose w - w_zero all fit
/// int8, and the block of output channels that tier's kernels use for a
/// packing: the int8 products' kernels by tier (qpack.cpp), the first whose
/// tier `tier` includes: "vnni" kQuads in blocks of 8 (vpdpbusd), "avx2"
/// kQuadsSplit in blocks of 3 (vpmaddubsw), else kQuads in blocks of 4 (the
/// portable loops). The compiler asks for its target's tier; the kernels,
/// packing on every call where nothing was packed, for runtime_isa_tier().
QPacking preferredQPacking(const char* tier);
int64_t preferredQBlock(QPacking packing, const char* tier);

/// The weights of a qconv (groups x c_out / groups output channels of
/// depth c_in / groups x k_h x k_w) or a qgemm (one group of n columns of
/// depth k; trans_b: B stored [n, k]) in one shape: what packQWeights reads.
struct QWeightShape {
  int64_t groups, channels, depth;  // channels and depth per group
  bool transposed = true;           // stored [channel][depth] (else [depth][channel])
  bool w_signed = true, per_channel = false;
  int64_t taps = 1;  // window taps per input channel (the depth is channels x taps)
};

/// How packQWeights would store these weights for a CPU of `tier`:
/// `preferred` where every w - w_zero fits int8, kWide otherwise, in
/// preferredQBlock's blocks; and the bytes and split entries it writes.
struct QPackInfo {
  QPacking packing;
  int64_t nb, bytes, split_entries;
};
QPackInfo planQWeights(const QWeightShape& s, const void* w, const void* w_zero, QPacking preferred,
                       const char* tier);

/// Writes the packed weights (info.bytes bytes) that qconv and qgemm read.
void packQWeights(const QWeightShape& s, const QPackInfo& info, const void* w, const void* w_zero,
                  uint8_t* packed);

/// A qconv's weights in packQWeights' terms (OIHW, groups x c_out / groups
/// channels of depth c_in / groups x k_h x k_w).
QWeightShape qconvWeightShape(const QConvParams& p);

/// Whether variant v runs p on a CPU of instruction-set tier `tier`: the
/// tier includes v's, v takes p's shape, and p's weights are packed as v
/// reads them or not packed at all (kNone: the caller packs them for v).
bool qconvVariantRuns(QConvVariant v, const QConvParams& p, const char* tier);

/// The variant called `name` ("Direct"), or kNone.
QConvVariant qconvVariantNamed(const char* name);

/// The variant to run p on a CPU of `tier`: the first of kQConvVariants
/// that runs p there (qconvVariantRuns) and prefers it, else the first
/// that runs it; kNone where none does. qconv runs this where p.variant is
/// kNone or does not run p on its build's tier.
QConvVariant chooseQConvVariant(const QConvParams& p, const char* tier);

/// A layer's variant and how its weights are packed for it.
struct QConvPlan {
  QConvVariant variant;
  QPackInfo info;
};

/// The plan for p (weights w as the model has them: p.packing kNone) on a
/// CPU of `tier`: p.variant where it runs p there, else chooseQConvVariant's,
/// its packing (packQWeights' blocks for `tier`); where some w -
/// w_zero does not fit int8, kWide and the variant chosen for it. The
/// pack-quantized-weights pass packs and records this with its target's
/// tier; qconv, given unpacked weights, packs them so on every call.
QConvPlan planQConv(const QConvParams& p, const void* w, const void* w_zero, const char* tier);

/// The quantised sum of two same-shape int8 or uint8 tensors (DequantizeLinear,
/// Add, an optional Relu, QuantizeLinear): y = clamp(round(((a - a_zero) *
/// a_scale + (b - b_zero) * b_scale) / y_scale) + y_zero, y_min, y_max).
struct QAddParams {
  int64_t count;
  bool a_signed = false, b_signed = false;
  DType y_type = DType::kU8;
  float a_scale, b_scale, y_scale;
  int32_t a_zero = 0, b_zero = 0, y_zero = 0, y_min = 0, y_max = 255;
  CGC_REFLECT(QAddParams, count, a_signed, b_signed, y_type, a_scale, b_scale, y_scale, a_zero,
              b_zero, y_zero, y_min, y_max)
};

void qadd(const QAddParams& p, const void* a, const void* b, void* y,
          const Team& team = Team::serial());

/// A function of one int8 or uint8 tensor, as a table of its 256 results:
/// y[i] = table[byte of x[i]] (fuse-quantized makes the table from the
/// elementwise ops between a DequantizeLinear and a QuantizeLinear).
struct QLookupParams {
  int64_t count;
  CGC_REFLECT(QLookupParams, count)
};

void qlookup(const QLookupParams& p, const void* x, const uint8_t* table, void* y,
             const Team& team = Team::serial());

/// Max pooling of int8 or uint8 data (exact: the quantisation is monotonic,
/// so a DequantizeLinear, MaxPool, QuantizeLinear with one scale and zero
/// point is this). Team-parallel over the N * C planes.
template <typename T>
void max_pool_int8(const PoolParams& p, const T* x, T* y, const Team& team = Team::serial());

/// Global average pooling of int8 or uint8 planes with requantisation
/// (DequantizeLinear, GlobalAveragePool, QuantizeLinear):
/// y = clamp(round(float(sum - spatial * x_zero) * (x_scale / (spatial *
/// y_scale))) + y_zero).
struct QGlobalPoolParams {
  int64_t n_c, spatial;
  bool x_signed = false;
  DType y_type = DType::kU8;
  float x_scale, y_scale;
  int32_t x_zero = 0, y_zero = 0;
  CGC_REFLECT(QGlobalPoolParams, n_c, spatial, x_signed, y_type, x_scale, y_scale, x_zero, y_zero)
};

void qglobal_avg_pool(const QGlobalPoolParams& p, const void* x, void* y,
                      const Team& team = Team::serial());

}  // namespace cgc::rt
