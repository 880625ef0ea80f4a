// Signal kernels: DFT, STFT and MelWeightMatrix. The transforms are plain
// O(n * bins) sums in double with exact twiddle indices ((k * t) mod n), so
// any length works and results match numpy's FFT to float precision.
#pragma once

#include "cgc/kernels/common.h"

namespace cgc::rt {

/// DFT of x [outer, in_len, inner, 1 or 2 (complex_input)] along in_len,
/// as a length-n transform (the signal cut or zero-padded to n), into y
/// [outer, bins, inner, 2]: bins n, or n / 2 + 1 when onesided. inverse:
/// the inverse transform, divided by n.
struct DftParams {
  int64_t outer, in_len, inner, n, bins;
  bool complex_input;
  bool inverse;
  CGC_REFLECT(DftParams, outer, in_len, inner, n, bins, complex_input, inverse)
};

template <typename T>
void dft(const DftParams& p, const T* x, T* y);

/// STFT of signal [batch, length, 1 or 2] in frames of frame_length taken
/// every step, each multiplied by the window (frame_length values; null: a
/// rectangular window), into y [batch, frames, bins, 2].
struct StftParams {
  int64_t batch, length, frames, frame_length, step, bins;
  bool complex_input;
  CGC_REFLECT(StftParams, batch, length, frames, frame_length, step, bins, complex_input)
};

template <typename T>
void stft(const StftParams& p, const T* signal, const T* window, T* y);

/// MelWeightMatrix [dft_length / 2 + 1, num_mel_bins] of out_type, with the
/// sample rate (an integer of rate_type) and the edge frequencies (of
/// edge_type) read at run time, with the ONNX reference's arithmetic.
/// Weights that would land outside the matrix are left out.
struct MelWeightMatrixParams {
  int64_t num_mel_bins, dft_length;
  DType rate_type;
  DType edge_type;
  DType out_type;
  CGC_REFLECT(MelWeightMatrixParams, num_mel_bins, dft_length, rate_type, edge_type, out_type)
};

void mel_weight_matrix(const MelWeightMatrixParams& p, const void* sample_rate,
                       const void* lower_edge_hertz, const void* upper_edge_hertz, void* y);

}  // namespace cgc::rt
