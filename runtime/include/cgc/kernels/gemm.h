// Matrix products: Gemm and batched MatMul, with fused epilogues.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

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
  CGC_REFLECT(GemmParams, m, n, k, trans_a, trans_b, alpha, beta, c_stride_m, c_stride_n,
              activation, act_min, act_max)
};

/// Team split of the output: see detail::splitOutput in gemm_core.h.
void gemm(const GemmParams& p, const float* a, const float* b, const float* c, float* y,
          const Team& team = Team::serial());

/// Batched MatMul with broadcast batch dimensions: for every batch index,
/// Y[m, n] = act(A[m, k] B[k, n] + bias[n]). Batch strides are in elements
/// (0 broadcasts).
struct MatMulParams {
  int32_t batch_rank;
  PerDim<int64_t> batch_shape;
  PerDim<int64_t> a_batch_strides;
  PerDim<int64_t> b_batch_strides;
  int64_t m, n, k;
  Activation activation = Activation::kNone;
  float act_min = 0.0f, act_max = 0.0f;
  CGC_REFLECT(MatMulParams, batch_rank, batch_shape, a_batch_strides, b_batch_strides, m, n, k,
              activation, act_min, act_max)
};

/// bias ([n]) may be null. float: splits batches over the team when there
/// are at least as many as threads, otherwise each batch's output; double:
/// plain loops on the team's first thread.
template <typename T>
void matmul(const MatMulParams& p, const T* a, const T* b, const T* bias, T* y,
            const Team& team = Team::serial());

/// Scaled dot-product attention, fused (passes/fuse_attention.cpp): for
/// every batch b, head h and query row i,
///   s[j] = scale * (q[b, h, i] . k[b, h, j]) (+ mask), j < keys,
///   y[b, h, i] = softmax(s) . v[b, h, j]
/// with a numerically stable softmax and float sums. q ([batch, heads,
/// rows, depth]) and y ([batch, heads, rows, depth_v]) are dense; K's and
/// V's rows (`depth` and `depth_v` floats) are read where their strides put
/// them (elements; 0 broadcasts), so a key/value cache kept in place is read
/// over its capacity and each key once. The mask, at most one of the two:
/// `add` (float) is added to the scaled score; `condition` (bool) replaces
/// the score by `fill` where it equals `fill_when`. It is read at
/// b * mask_batch_stride + h * mask_head_stride + i * mask_row_stride +
/// j * mask_key_stride. The team splits the rows, or, with fewer rows than
/// threads, each row's keys into chunks combined at the end.
struct AttentionParams {
  int64_t batch, heads, rows, keys, depth, depth_v;
  float scale;
  int64_t k_batch_stride, k_head_stride, k_key_stride;
  int64_t v_batch_stride, v_head_stride, v_key_stride;
  float fill = 0.0f;
  bool fill_when = true;
  int64_t mask_batch_stride = 0, mask_head_stride = 0, mask_row_stride = 0, mask_key_stride = 0;
  CGC_REFLECT(AttentionParams, batch, heads, rows, keys, depth, depth_v, scale, k_batch_stride,
              k_head_stride, k_key_stride, v_batch_stride, v_head_stride, v_key_stride, fill,
              fill_when, mask_batch_stride, mask_head_stride, mask_row_stride, mask_key_stride)
};

/// `add` and `condition` may be null (no mask).
void attention(const AttentionParams& p, const float* q, const float* k, const float* v,
               const float* add, const uint8_t* condition, float* y,
               const Team& team = Team::serial());

/// Weights stored narrower than float, for a matrix product whose B is a
/// constant (passes/narrow_weights.cpp packs them at compile time): kBf16,
/// each weight rounded to bfloat16 (nearest, ties to even); kInt8, per
/// output column n, w ~= q * scale[n] with q in [-127, 127] (symmetric, no
/// zero point).
CGC_ENUM(WeightFormat, kBf16, kInt8)

/// The packed layout, the same on every instruction set: W [k, n] in panels
/// of kNarrowPanel columns (the last one padded with zeros), panel after
/// panel. kBf16: per pair of rows (k padded to even), 32 bits per column,
/// the even row's weight in the low half and the odd row's in the high half
/// (vdpbf16ps's operand). kInt8: per row, one byte per column.
inline constexpr int64_t kNarrowPanel = 32;

/// Bytes pack_narrow_weights writes for a [k, n] W.
int64_t narrow_weights_bytes(WeightFormat format, int64_t k, int64_t n);

/// Packs the float W [k, n] (row-major) into `packed`
/// (narrow_weights_bytes of them); kInt8 also writes scale[n] (an all-zero
/// column gets scale 1). For kBf16 `scale` is unused and may be null.
void pack_narrow_weights(WeightFormat format, int64_t k, int64_t n, const float* w, void* packed,
                         float* scale);

/// Y[m, n] = act(A[m, k] W[k, n] + bias[n]) with W packed narrow: A and Y
/// float and row-major (a MatMul's batch dimensions folded into m). kInt8
/// widens the weights and multiplies in float; kBf16 may round A to
/// bfloat16 too (products of bf16 operands, sums in float), so its result
/// is within bf16 precision of the float product.
struct NarrowMatMulParams {
  int64_t m, n, k;
  WeightFormat format;
  Activation activation = Activation::kNone;
  float act_min = 0.0f, act_max = 0.0f;
  CGC_REFLECT(NarrowMatMulParams, m, n, k, format, activation, act_min, act_max)
};

/// scale: kInt8's per-column scales (null for kBf16); bias ([n]) may be
/// null. Splits panels of columns, or rows where there are few panels,
/// over the team.
void matmul_narrow(const NarrowMatMulParams& p, const float* a, const void* w, const float* scale,
                   const float* bias, float* y, const Team& team = Team::serial());

/// The variants of matmul_narrow (cgc/kernels/narrow_variants.def), in
/// priority order; kNone: matmul_narrow chooses (chooseNarrowVariant).
enum class NarrowVariant : int32_t {
  kNone,
#define CGC_NARROW_VARIANT(name, tier, bf16, int8) k##name,
#include "cgc/kernels/narrow_variants.def"
#undef CGC_NARROW_VARIANT
};

/// A variant's declaration: its name ("WidenSkx"), the instruction-set tier
/// it needs and the weight formats it takes.
struct NarrowVariantInfo {
  NarrowVariant variant;
  const char* name;
  const char* tier;
  bool bf16, int8;

  bool takes(WeightFormat format) const { return format == WeightFormat::kBf16 ? bf16 : int8; }
};
inline constexpr NarrowVariantInfo kNarrowVariants[] = {
#define CGC_NARROW_VARIANT(name, tier, bf16, int8) \
  {NarrowVariant::k##name, #name, tier, bf16, int8},
#include "cgc/kernels/narrow_variants.def"
#undef CGC_NARROW_VARIANT
};

/// Whether this runtime has variant v (it was built with v's tier) and v
/// takes p's weight format.
bool narrowVariantTakes(NarrowVariant v, const NarrowMatMulParams& p);

/// The variant matmul_narrow runs for p: the first of the table that this
/// runtime has, that takes p and that prefers it; else the first that takes it.
NarrowVariant chooseNarrowVariant(const NarrowMatMulParams& p);

/// matmul_narrow on variant v, which narrowVariantTakes (tests and
/// benchmarks compare the variants through it).
void matmul_narrow_variant(NarrowVariant v, const NarrowMatMulParams& p, const float* a,
                           const void* w, const float* scale, const float* bias, float* y,
                           const Team& team = Team::serial());

}  // namespace cgc::rt
