// The weight packing of the recurrent kernel (rnn.cpp): W and R as blocks
// of kUnits hidden units, each laid out [k][gates][kUnits], the order in
// which the recurrent product and the input projection read them. Constant
// weights are packed at compile time (the pack-rnn-weights pass,
// packRnnWeights); weights given at run time are packed per call by the
// kernel's threads (packRnnRows), each its own units, and cached while they
// stay the same.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cgc/kernels.h"
#include "rnn/rnn_support.h"

namespace cgc::rt {
namespace {

using detail::gatesOf;
using detail::kUnits;
using detail::packedDirectionSize;
using detail::privateBuffer;
using detail::splitsGru;

/// Units [u0, u0 + units) of gates [firstGate, firstGate + gates) of the
/// [gates x hidden, k] matrix m as blocks of kUnits units, each laid out
/// [k][gates][kUnits] and zero-padded past the last unit: the order in
/// which the recurrent product and the input projection read them.
void packBlocks(const float* m, int64_t hidden, int64_t k, int64_t firstGate, int gates, int64_t u0,
                int64_t units, float* out) {
  const int64_t blocks = (units + kUnits - 1) / kUnits;
  const int64_t cols = gates * kUnits, blockSize = k * cols;
  std::fill_n(out, blocks * blockSize, 0.f);
  // Transposes 16-column tiles: each source row's cache line is read whole
  // at once. (Rows a power of two apart share an L1 set, so walking all the
  // block's rows side by side, or writing down columns, thrashes.)
  constexpr int64_t kTile = 16;
  const float* src[4 * kUnits];
  float tile[4 * kUnits][kTile];
  for (int64_t blk = 0; blk < blocks; ++blk) {
    float* dst = out + blk * blockSize;
    const int64_t first = blk * kUnits;
    const int64_t count = std::min<int64_t>(kUnits, units - first);
    for (int g = 0; g < gates; ++g)
      for (int64_t u = 0; u < count; ++u)
        src[g * kUnits + u] = m + ((firstGate + g) * hidden + u0 + first + u) * k;
    for (int64_t i0 = 0; i0 < k; i0 += kTile) {
      const int64_t width = std::min(kTile, k - i0);
      for (int g = 0; g < gates; ++g)
        for (int64_t u = 0; u < count; ++u)
          std::copy_n(src[g * kUnits + u] + i0, width, tile[g * kUnits + u]);
      for (int64_t i = 0; i < width; ++i)
        for (int g = 0; g < gates; ++g)
          for (int64_t u = 0; u < count; ++u)
            dst[(i0 + i) * cols + g * kUnits + u] = tile[g * kUnits + u][i];
    }
  }
}

}  // namespace

namespace detail {

int64_t packedDirectionSize(const RnnParams& p, bool recurrent) {
  const int64_t blocks = (p.hidden_size + kUnits - 1) / kUnits;
  return blocks * kUnits * gatesOf(p.cell) * (recurrent ? p.hidden_size : p.input_size);
}

/// Rows of gates [firstGate, firstGate + gates) of W or R (k columns) for
/// a thread's units [u0, u0 + units), its `blocks` blocks of kUnits, as
/// packBlocks lays them out.
///
/// Constant weights were packed at compile time (the pack-rnn-weights pass:
/// RnnParams::packed_weights), for every unit in that order, so this
/// thread's blocks are a range of them. Weights given at run time are
/// packed here, and nearly always stay the same from call to call: each
/// thread keeps its last packings together with the rows they came from,
/// and reuses one while those rows still compare equal (a sequential read,
/// far cheaper than packing again). Weights over kCacheFloats (16 MB, LSTM
/// hidden 1024) per thread are packed afresh each call into one of two
/// rotating buffers (two packings are live at once for GRU), so that large
/// models do not hold a second and third copy of their weights.
const float* packRnnRows(const RnnParams& p, const float* r, int64_t k, int64_t firstGate,
                         int gates, int64_t u0, int64_t units, int64_t blocks) {
  const int64_t h = p.hidden_size;
  if (p.packed_weights) {
    const int64_t allBlocks = (h + kUnits - 1) / kUnits;
    return r + (allBlocks * firstGate + u0 / kUnits * gates) * k * kUnits;
  }
  constexpr int64_t kCacheFloats = int64_t{1} << 22;
  struct Entry {
    const float* r = nullptr;
    int64_t hidden = 0, k = 0, firstGate = 0, gates = 0, u0 = 0, units = 0;
    std::vector<float> rows, packed;
    uint64_t used = 0;
  };
  constexpr size_t kEntries = 8;
  thread_local std::vector<Entry> cache(kEntries);
  thread_local uint64_t clock = 0;
  const int64_t chunk = units * k;  // one gate's rows for these units
  auto sameRows = [&](const Entry& e) {
    if (e.r != r || e.hidden != h || e.k != k || e.firstGate != firstGate || e.gates != gates ||
        e.u0 != u0 || e.units != units)
      return false;
    for (int64_t g = 0; g < gates; ++g)
      if (std::memcmp(e.rows.data() + g * chunk, r + ((firstGate + g) * h + u0) * k,
                      static_cast<size_t>(chunk) * sizeof(float)) != 0)
        return false;
    return true;
  };
  const int64_t packedSize = blocks * k * gates * kUnits;
  if (gates * chunk > kCacheFloats) {
    thread_local std::vector<float> ring[2];
    thread_local int next = 0;
    std::vector<float>& buf = ring[next];
    next ^= 1;
    float* out = privateBuffer(buf, static_cast<size_t>(packedSize + 1));
    packBlocks(r, h, k, firstGate, gates, u0, units, out);
    return out;
  }
  Entry* victim = &cache[0];
  for (Entry& e : cache) {
    if (sameRows(e)) {
      e.used = ++clock;
      return e.packed.data();
    }
    if (e.used < victim->used) victim = &e;
  }
  Entry& e = *victim;
  e = Entry{r, h, k, firstGate, gates, u0, units, {}, {}, ++clock};
  e.rows.resize(static_cast<size_t>(gates * chunk));
  for (int64_t g = 0; g < gates; ++g)
    std::memcpy(e.rows.data() + g * chunk, r + ((firstGate + g) * h + u0) * k,
                static_cast<size_t>(chunk) * sizeof(float));
  e.packed.resize(static_cast<size_t>(packedSize + 1));
  packBlocks(e.rows.data(), units, k, 0, gates, 0, units, e.packed.data());
  return e.packed.data();
}

}  // namespace detail

int64_t packedRnnWeightCount(const RnnParams& p, bool recurrent) {
  return p.num_directions * packedDirectionSize(p, recurrent);
}

void packRnnWeights(const RnnParams& p, const float* weights, bool recurrent, float* packed) {
  const int64_t h = p.hidden_size, k = recurrent ? h : p.input_size;
  const int64_t g = gatesOf(p.cell), allBlocks = (h + kUnits - 1) / kUnits;
  for (int32_t d = 0; d < p.num_directions; ++d) {
    const float* m = weights + d * g * h * k;
    float* out = packed + d * packedDirectionSize(p, recurrent);
    if (recurrent && splitsGru(p)) {  // as Direction::run asks for them
      packBlocks(m, h, k, 0, 2, 0, h, out);
      packBlocks(m, h, k, 2, 1, 0, h, out + allBlocks * 2 * k * kUnits);
    } else {
      packBlocks(m, h, k, 0, static_cast<int>(g), 0, h, out);
    }
  }
}

}  // namespace cgc::rt
