// What every family of kernels shares: the largest rank, the fused
// activations, the status of kernels that can fail, broadcasting.
#pragma once

#include <array>
#include <cstdint>

#include "cgc/reflect.h"
#include "cgc/team.h"
#include "cgc/types.h"

namespace cgc::rt {

/// Largest tensor rank that the strided kernels handle.
inline constexpr int kMaxRank = 8;

/// One entry per dimension, up to kMaxRank.
template <typename T>
using PerDim = std::array<T, kMaxRank>;

/// What a kernel that can fail on its data returns; generated code turns
/// anything but kOk into the error run() reports, naming the node.
/// The values are the C interface's cgc_status codes (cgc/c_api.h).
CGC_ENUM(Status, kOk,
         kIndexOutOfRange,    // an index input outside its axis (Gather, Scatter)
         kSizeBeyondBound,    // a data-dependent size over its compile-time bound
         kBranchNotCompiled,  // an If branch that cgc could not compile for these shapes
         kValueOutOfRange)    // an input value the op does not accept (TopK's k beyond its axis)

/// What run() reports for a failed node ("an index is out of range").
constexpr const char* statusMessage(Status status) {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kIndexOutOfRange:
      return "an index is out of range";
    case Status::kSizeBeyondBound:
      return "a data-dependent size exceeds its bound (see --bound)";
    case Status::kBranchNotCompiled:
      return "the branch taken could not be compiled for these shapes (cgc said why when it "
             "compiled the model)";
    case Status::kValueOutOfRange:
      return "an input's value is outside what the op accepts (a k beyond its axis or "
             "negative)";
  }
  return "unknown failure";
}

/// Where a kernel whose output size depends on its data (NonZero, Unique,
/// NonMaxSuppression, ...) writes that size: the actual extent of each
/// dynamic dimension of its output, in order (the compiler's size slots).
/// The kernel also zeroes its output past those extents, and fails with
/// kSizeBeyondBound rather than write past the bound it was compiled for.
/// A kernel that reads an input of data-dependent size exactly (Unique of a
/// 1-D input, NonMaxSuppression of filtered boxes) takes that input's
/// extents as a `const Extents*`, null when the input is static.
struct Extents {
  int64_t dims[1];  // as many as the output has dynamic dimensions
};

/// Activation applied by a GEMM or convolution to its result before storing
/// it (the fuse-epilogues pass folds a following Relu or Clip into the node,
/// so the output is written once instead of read back by a second kernel).
CGC_ENUM(Activation, kNone, kRelu,
         kClip)  // act_min <= y <= act_max (ReLU6 is Clip(0, 6))

/// Numpy broadcasting, already resolved: the output has `shape`; an operand's
/// stride is 0 along a broadcast dimension. Strides are in elements.
struct BroadcastParams {
  int32_t rank;
  int64_t count;
  PerDim<int64_t> shape;
  PerDim<int64_t> a_strides;
  PerDim<int64_t> b_strides;
  CGC_REFLECT(BroadcastParams, rank, count, shape, a_strides, b_strides)
};

}  // namespace cgc::rt
