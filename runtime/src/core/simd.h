// The vector registers of the instruction set a runtime is compiled for, as
// GCC vector types of their native width, and how many there are: what the
// kernels' register tiles are sized from.
//
// The layouts are in blocks of 16 floats (kChannelBlock, the packed panels),
// which is one AVX-512 register. A register tile must still be written in
// vectors of the native width: GCC 12 lowers a 16-float vector on AVX2 to
// stack traffic through general registers, and a 16-float vector type made
// of two native ones to spills: on AVX2 the packed convolution GEMM runs
// several times faster with 8-float vectors than with 16-float ones, even in
// a tile that fits the registers (a micro-benchmark over gemmPacked;
// bench/history/2026-11-code-comment-measurements.md).
#pragma once

#include <cstdint>

#include "core/isa.h"

namespace cgc::rt::simd {

#if CGC_ISA_SKX
inline constexpr int kLanes = 16;  // floats per register (zmm)
inline constexpr int kRegisters = 32;
#elif CGC_ISA_AVX2
inline constexpr int kLanes = 8;  // ymm
inline constexpr int kRegisters = 16;
#elif CGC_ISA_NEON
inline constexpr int kLanes = 4;  // NEON q registers
inline constexpr int kRegisters = 32;
#else
inline constexpr int kLanes = 4;  // SSE xmm
inline constexpr int kRegisters = 16;
#endif

/// kLanes floats: one register.
typedef float Floats __attribute__((vector_size(kLanes * sizeof(float))));
typedef int32_t Ints __attribute__((vector_size(kLanes * sizeof(int32_t))));

/// kLanes floats at any float's address. Kernels load and store registers
/// through it (load, store), never by memcpy into a Floats: GCC's Cascade
/// Lake and Ice Lake tunings move at most 32 bytes a piece (-mmove-max=256),
/// so a 64-byte memcpy goes through the stack as two halves and the
/// register it fills cannot stay one.
typedef float UnalignedFloats
    __attribute__((vector_size(kLanes * sizeof(float)), aligned(4), may_alias));

inline Floats load(const float* from) { return *reinterpret_cast<const UnalignedFloats*>(from); }
inline void store(float* to, Floats v) { *reinterpret_cast<UnalignedFloats*>(to) = v; }

/// Registers that hold a block of 16 floats (one channel block).
inline constexpr int kPerBlock = 16 / kLanes;

}  // namespace cgc::rt::simd
