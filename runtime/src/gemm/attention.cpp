// Fused scaled dot-product attention (cgc/kernels/gemm.h): a decoder step's
// q . K^T, scale, mask, softmax and . V in one pass over K and V, read in
// their stored layout. One query row over a long cache is two matrix-vector
// products bound by the bytes of K and V: unfused, K was copied by a
// Transpose and the scores went through memory three times. Rows are split
// over the team; with fewer rows than threads (few heads, one token), each
// row's keys are split into chunks whose partial softmax sums (their own
// maximum, sum of exponentials and weighted sum of V) are combined after a
// barrier, as flash-decoding does.
#include <algorithm>
#include <cmath>
#include <limits>

#include "cgc/kernels.h"
#include "core/fast_math.h"
#include "core/scratch.h"
#include "core/simd.h"

namespace cgc::rt {
namespace {

using simd::kLanes;

/// Keys below which a row is not split into chunks.
constexpr int64_t kMinChunk = 64;

float dot(const float* a, const float* b, int64_t n) {
  simd::Floats acc0 = {}, acc1 = {};
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    acc0 += simd::load(a + i) * simd::load(b + i);
    acc1 += simd::load(a + i + kLanes) * simd::load(b + i + kLanes);
  }
  if (i + kLanes <= n) {
    acc0 += simd::load(a + i) * simd::load(b + i);
    i += kLanes;
  }
  acc0 += acc1;
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += acc0[l];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

/// y[0, n) += w * x[0, n).
void addScaled(float* y, const float* x, float w, int64_t n) {
  const simd::Floats wv = simd::Floats{} + w;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    simd::store(y + i, simd::load(y + i) + wv * simd::load(x + i));
  for (; i < n; ++i) y[i] += w * x[i];
}

/// One row's keys [begin, end): its maximum score, the sum of exp(score -
/// maximum) and out[depth_v] = the sum of exp(score - maximum) . v.
struct Partial {
  float maximum, sum;
};

Partial attendKeys(const AttentionParams& p, const float* q, const float* k, const float* v,
                   const float* add, const uint8_t* condition, int64_t begin, int64_t end,
                   float* scores, float* out) {
  float maximum = -std::numeric_limits<float>::infinity();
  for (int64_t j = begin; j < end; ++j) {
    float s = p.scale * dot(q, k + j * p.k_key_stride, p.depth);
    if (add) s += add[j * p.mask_key_stride];
    if (condition && (condition[j * p.mask_key_stride] != 0) == p.fill_when) s = p.fill;
    scores[j - begin] = s;
    maximum = std::max(maximum, s);
  }
  std::fill_n(out, p.depth_v, 0.0f);
  float sum = 0.0f;
  for (int64_t j = begin; j < end; ++j) {
    const float e = detail::fastExp(scores[j - begin] - maximum);
    sum += e;
    addScaled(out, v + j * p.v_key_stride, e, p.depth_v);
  }
  return {maximum, sum};
}

/// The pointers of unit `row` (batch, head, query row).
struct RowData {
  const float *q, *k, *v, *add;
  const uint8_t* condition;
  float* y;
};

RowData rowData(const AttentionParams& p, const float* q, const float* k, const float* v,
                const float* add, const uint8_t* condition, float* y, int64_t row) {
  const int64_t i = row % p.rows, h = row / p.rows % p.heads, b = row / p.rows / p.heads;
  const int64_t mask = b * p.mask_batch_stride + h * p.mask_head_stride + i * p.mask_row_stride;
  return {q + row * p.depth,
          k + b * p.k_batch_stride + h * p.k_head_stride,
          v + b * p.v_batch_stride + h * p.v_head_stride,
          add ? add + mask : nullptr,
          condition ? condition + mask : nullptr,
          y + row * p.depth_v};
}

void normalise(float* y, const float* out, Partial part, int64_t n) {
  const float inv = part.sum != 0.0f ? 1.0f / part.sum : 0.0f;  // no keys: zeros
  for (int64_t d = 0; d < n; ++d) y[d] = out[d] * inv;
}

}  // namespace

void attention(const AttentionParams& p, const float* q, const float* k, const float* v,
               const float* add, const uint8_t* condition, float* y, const Team& team) {
  const int64_t rows = p.batch * p.heads * p.rows;
  if (rows == 0) return;
  const int64_t chunks =
      rows >= team.size() ? 1
                          : std::max<int64_t>(1, std::min<int64_t>((team.size() + rows - 1) / rows,
                                                                   p.keys / kMinChunk));
  const int64_t outLength = (p.depth_v + 15) / 16 * 16;  // whole cache lines
  if (chunks == 1) {
    const int64_t scores = (p.keys + 15) / 16 * 16;
    float* scratch = detail::scratch(scores + outLength);
    float* out = scratch + scores;
    const Range mine = team.split(rows);
    for (int64_t row = mine.begin; row < mine.end; ++row) {
      const RowData r = rowData(p, q, k, v, add, condition, y, row);
      const Partial part =
          attendKeys(p, r.q, r.k, r.v, r.add, r.condition, 0, p.keys, scratch, out);
      normalise(r.y, out, part, p.depth_v);
    }
    return;
  }
  // Each (row, chunk) leaves a slot in thread 0's scratch, after that
  // thread's own scores: its maximum and sum, and a cache line on, its sum
  // of V.
  const int64_t units = rows * chunks, stride = 16 + outLength;
  const int64_t chunkKeys = (p.keys + chunks - 1) / chunks;
  const int64_t own = (chunkKeys + 15) / 16 * 16;
  float* scratch = detail::scratch(own + (team.thread() == 0 ? units * stride : 0));
  float* partials = team.shareFromFirst(scratch + own);
  const Range mine = team.split(units);
  for (int64_t unit = mine.begin; unit < mine.end; ++unit) {
    const int64_t row = unit / chunks, chunk = unit % chunks;
    const int64_t begin = std::min(p.keys, chunk * chunkKeys);
    const int64_t end = std::min(p.keys, begin + chunkKeys);
    const RowData r = rowData(p, q, k, v, add, condition, y, row);
    float* slot = partials + unit * stride;
    const Partial part =
        attendKeys(p, r.q, r.k, r.v, r.add, r.condition, begin, end, scratch, slot + 16);
    slot[0] = part.maximum;
    slot[1] = part.sum;
  }
  team.barrier();
  const Range combined = team.split(rows);
  for (int64_t row = combined.begin; row < combined.end; ++row) {
    const float* slots = partials + row * chunks * stride;
    float maximum = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < chunks; ++c) maximum = std::max(maximum, slots[c * stride]);
    float* yRow = y + row * p.depth_v;
    std::fill_n(yRow, p.depth_v, 0.0f);
    float sum = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      const float* slot = slots + c * stride;
      if (slot[1] == 0.0f) continue;  // an empty chunk
      const float w = detail::fastExp(slot[0] - maximum);
      sum += w * slot[1];
      addScaled(yRow, slot + 16, w, p.depth_v);
    }
    normalise(yRow, yRow, {maximum, sum}, p.depth_v);
  }
  team.barrier();  // thread 0's scratch stays in use until every row is combined
}

}  // namespace cgc::rt
