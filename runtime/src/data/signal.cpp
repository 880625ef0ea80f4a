// Signal kernels (cgc/kernels/signal.h): DFT and STFT as direct sums in
// double with a twiddle table indexed by (k * t) mod n, exact for any
// length; MelWeightMatrix with the ONNX reference's arithmetic (the mel
// edges in float32 as numpy computes them, the bins in double).
#include <cmath>
#include <vector>

#include "cgc/kernels.h"
#include "core/type_dispatch.h"

namespace cgc::rt {
namespace {

/// cos and sin of 2 pi j / n for j < n.
struct Twiddles {
  explicit Twiddles(int64_t n) : n(n), re(static_cast<size_t>(n)), im(static_cast<size_t>(n)) {
    const double kTwoPi = 6.283185307179586476925286766559;
    for (int64_t j = 0; j < n; ++j) {
      const double angle = kTwoPi * static_cast<double>(j) / static_cast<double>(n);
      re[j] = std::cos(angle);
      im[j] = std::sin(angle);
    }
  }
  int64_t n;
  std::vector<double> re, im;
};

}  // namespace

template <typename T>
void dft(const DftParams& p, const T* x, T* y) {
  if (p.n <= 0) return;
  const Twiddles tw(p.n);
  const int64_t channels = p.complex_input ? 2 : 1;
  const int64_t used = std::min(p.in_len, p.n);
  const double sign = p.inverse ? 1.0 : -1.0;
  const double scale = p.inverse ? 1.0 / static_cast<double>(p.n) : 1.0;
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t i = 0; i < p.inner; ++i)
      for (int64_t k = 0; k < p.bins; ++k) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < used; ++t) {
          const T* v = x + ((o * p.in_len + t) * p.inner + i) * channels;
          const double a = static_cast<double>(v[0]);
          const double b = p.complex_input ? static_cast<double>(v[1]) : 0.0;
          const int64_t j = (k % p.n) * t % p.n;
          const double c = tw.re[j], s = sign * tw.im[j];
          re += a * c - b * s;
          im += a * s + b * c;
        }
        T* out = y + ((o * p.bins + k) * p.inner + i) * 2;
        out[0] = static_cast<T>(re * scale);
        out[1] = static_cast<T>(im * scale);
      }
}

template <typename T>
void stft(const StftParams& p, const T* signal, const T* window, T* y) {
  if (p.frame_length <= 0) return;
  const Twiddles tw(p.frame_length);
  const int64_t channels = p.complex_input ? 2 : 1;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t f = 0; f < p.frames; ++f)
      for (int64_t k = 0; k < p.bins; ++k) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < p.frame_length; ++t) {
          const int64_t at = f * p.step + t;
          if (at >= p.length) break;
          const T* v = signal + (b * p.length + at) * channels;
          const double w = window ? static_cast<double>(window[t]) : 1.0;
          const double a = static_cast<double>(v[0]) * w;
          const double c = p.complex_input ? static_cast<double>(v[1]) * w : 0.0;
          const int64_t j = (k % p.frame_length) * t % p.frame_length;
          const double cs = tw.re[j], sn = -tw.im[j];
          re += a * cs - c * sn;
          im += a * sn + c * cs;
        }
        T* out = y + ((b * p.frames + f) * p.bins + k) * 2;
        out[0] = static_cast<T>(re);
        out[1] = static_cast<T>(im);
      }
}

void mel_weight_matrix(const MelWeightMatrixParams& p, const void* sample_rate,
                       const void* lower_edge_hertz, const void* upper_edge_hertz, void* y) {
  const int64_t bins = p.dft_length / 2 + 1, mels = p.num_mel_bins;
  for (int64_t i = 0; i < bins * mels; ++i) detail::storeDouble(p.out_type, y, i, 0.0);
  const double rate = detail::loadDouble(p.rate_type, sample_rate, 0);
  const float lower = static_cast<float>(detail::loadDouble(p.edge_type, lower_edge_hertz, 0));
  const float upper = static_cast<float>(detail::loadDouble(p.edge_type, upper_edge_hertz, 0));
  const float lowMel = 2595.f * std::log10(1.f + lower / 700.f);
  const float highMel = 2595.f * std::log10(1.f + upper / 700.f);
  const float step = (highMel - lowMel) / static_cast<float>(mels + 2);
  std::vector<int64_t> edges(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double mel = static_cast<double>(i) * step + lowMel;
    const double hertz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
    const double bin = std::floor(static_cast<double>(p.dft_length + 1) * hertz / rate);
    // A rate of 0 or absurd edges give bins no row holds; clamp before the
    // conversion, the rows outside are skipped below.
    edges[i] = std::isfinite(bin) ? static_cast<int64_t>(std::max(-1.0, std::min(bin, 1e12))) : -1;
  }
  auto set = [&](int64_t row, int64_t column, double value) {
    if (row >= 0 && row < bins) detail::storeDouble(p.out_type, y, row * mels + column, value);
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t low = edges[i], center = edges[i + 1], high = edges[i + 2];
    if (center == low) {
      set(center, i, 1.0);
    } else {
      for (int64_t j = std::max<int64_t>(low, -1); j <= center && j <= bins; ++j)
        set(j, i, static_cast<double>(j - low) / static_cast<double>(center - low));
    }
    if (high > center)
      for (int64_t j = std::max<int64_t>(center, -1); j < high && j <= bins; ++j)
        set(j, i, static_cast<double>(high - j) / static_cast<double>(high - center));
  }
}

template void dft<float>(const DftParams&, const float*, float*);
template void dft<double>(const DftParams&, const double*, double*);
template void stft<float>(const StftParams&, const float*, const float*, float*);
template void stft<double>(const StftParams&, const double*, const double*, double*);

}  // namespace cgc::rt
