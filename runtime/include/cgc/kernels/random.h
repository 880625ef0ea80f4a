// Random kernels: RandomUniform(Like), RandomNormal(Like) and Bernoulli.
// Each element is a pure function of the seed and its index (a counter-based
// generator: SplitMix64 of seed and index), so a run gives the same values
// every time, the constant folder gives the values generated code would, and
// threads could split the work without sharing state. The compiler fixes the
// seed: the node's `seed` attribute, else a hash of the node's name.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

CGC_ENUM(RandomDistribution,
         kUniform,    // in [a, b)
         kNormal,     // mean a, standard deviation b
         kBernoulli)  // 1 with the probability in the input, else 0

struct RandomParams {
  RandomDistribution distribution;
  DType dtype;        // of y
  DType input_dtype;  // of Bernoulli's probabilities (float or double)
  int64_t count;
  double a, b;
  int64_t seed;
  CGC_REFLECT(RandomParams, distribution, dtype, input_dtype, count, a, b, seed)
};

/// y: count elements of dtype. `probabilities` (Bernoulli only, else null).
void random_fill(const RandomParams& p, const void* probabilities, void* y);

/// The seed of a `seed` attribute (a float in ONNX): its bits, mixed.
int64_t random_seed(float seed);

}  // namespace cgc::rt
