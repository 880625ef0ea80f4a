// What the recurrent kernel (rnn.cpp) and its weight packing
// (rnn_packing.cpp) share: the block of hidden units that both lay out, the
// cell's gate count, the thread-private buffers, and the packing entry
// points the kernel calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cgc/kernels.h"

namespace cgc::rt::detail {

constexpr int kUnits = 16;  // hidden units per packed block

inline int64_t gatesOf(RnnCell cell) {
  switch (cell) {
    case RnnCell::kRnn:
      return 1;
    case RnnCell::kGru:
      return 3;
    case RnnCell::kLstm:
      return 4;
  }
  return 1;
}

/// Grows a thread-private buffer; never shrinks, so steady state allocates
/// nothing.
inline float* privateBuffer(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

/// Whether GRU's R is packed as two parts: z and r, then h, whose product
/// needs r * h_{t-1} of every unit first (linear_before_reset off).
inline bool splitsGru(const RnnParams& p) {
  return p.cell == RnnCell::kGru && !p.linear_before_reset;
}

/// Floats of one direction's W (recurrent false) or R in packRnnWeights'
/// layout.
int64_t packedDirectionSize(const RnnParams& p, bool recurrent);

/// Rows of gates [firstGate, firstGate + gates) of one direction's W or R
/// (`r`, k columns) for the units [u0, u0 + units) of a thread, `blocks`
/// blocks of kUnits, packed as the recurrent product and the input
/// projection read them: taken from weights packed at compile time, or
/// packed here (and cached) from weights given at run time.
const float* packRnnRows(const RnnParams& p, const float* r, int64_t k, int64_t firstGate,
                         int gates, int64_t u0, int64_t units, int64_t blocks);

}  // namespace cgc::rt::detail
