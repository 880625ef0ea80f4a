// The int8 elementwise kernels' functions of a tier
// (quant_elementwise_skx.cpp, quant_elementwise_vbmi.cpp), which
// quant_elementwise.cpp calls where the
// build has the tier (core/build_tier.h).
#pragma once

#include <cstdint>

#include "cgc/kernels.h"

namespace cgc::rt::detail {

/// qlookup's y[i] = table[x[i]] for i < count, 64 bytes at a time (two
/// vpermt2b, or their emulation, each over half the table, and a blend by
/// the index's top bit).
void lookupBytesSkx(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t count);

/// max_pool_int8's 3x3 windows of one plane at strides 1 and 2 (dilation
/// 1), in 64-byte vectors (max_pool_skx.h), without and with VBMI; rowMax:
/// scratch of w_out * stride_w + 194 elements.
template <typename Q>
void maxPool3x3Skx(const PoolParams& p, const Q* x, Q* y, Q* rowMax);
template <typename Q>
void maxPool3x3Vbmi(const PoolParams& p, const Q* x, Q* y, Q* rowMax);
/// Its 2x2 windows at strides 1 and 2 (every AVX-512 build).
template <typename Q>
void maxPool2x2Skx(const PoolParams& p, const Q* x, Q* y, Q* rowMax);

}  // namespace cgc::rt::detail
