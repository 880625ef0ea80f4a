// A 2-D plane laid out so that a sliding window (depthwise convolution, max
// pooling) becomes one contiguous loop per tap over the whole plane.
//
// The plane is copied into sh x sw padded phases: phase (a, b) holds the
// padded rows = a mod sh and columns = b mod sw, wq columns wide. Output
// j = oh * wq + ow then reads, for every tap, one phase at j plus a
// constant offset (tapOffset). Columns ow >= w_out of each row are computed
// and dropped. Loops per output row and tap, 7 to 56 wide in MobileNetV2 and
// GoogLeNet, were all overhead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cgc::rt::detail {

class PlanePhases {
 public:
  /// Outputs are computed in blocks of kBlock vectors of kLanes floats:
  /// reads run up to a block past the last output.
  static constexpr int64_t kLanes = 16, kBlock = 4, kSlack = kBlock * kLanes;

  PlanePhases(int64_t hIn, int64_t wIn, int64_t hOut, int64_t wOut, int64_t kH, int64_t kW,
              int64_t strideH, int64_t strideW, int64_t dilationH, int64_t dilationW,
              int64_t padTop, int64_t padLeft)
      : hIn_(hIn),
        wIn_(wIn),
        hOut_(hOut),
        wOut_(wOut),
        sh_(strideH),
        sw_(strideW),
        padTop_(padTop),
        padLeft_(padLeft) {
    paddedRows_ = sh_ * (hOut - 1) + (kH - 1) * dilationH + 1;
    const int64_t paddedCols = sw_ * (wOut - 1) + (kW - 1) * dilationW + 1;
    const int64_t hq = (paddedRows_ + sh_ - 1) / sh_;
    wq_ = (paddedCols + sw_ - 1) / sw_;
    // Throwaway columns of the last row read up to wq past a phase's end.
    phaseSize_ = (hq + 1) * wq_;
    length_ = (hOut * wq_ + kSlack - 1) / kSlack * kSlack;
    colBegin_ = std::max<int64_t>(0, padLeft);
    colEnd_ = std::min(paddedCols, padLeft + wIn);
    for (int64_t kh = 0; kh < kH; ++kh)
      for (int64_t kw = 0; kw < kW; ++kw) {
        const int64_t dr = kh * dilationH, dc = kw * dilationW;
        tapOffsets_.push_back(((dr % sh_) * sw_ + dc % sw_) * phaseSize_ + (dr / sh_) * wq_ +
                              dc / sw_);
      }
  }

  /// Floats of scratch the phases and the output rows need together.
  int64_t scratchSize() const { return fillSize() + length_; }
  /// Floats fill() writes: the phases and the slack read past them.
  int64_t fillSize() const { return phasesSize() + kSlack; }
  /// Where the output rows (wq apart, length() floats) start in the scratch.
  float* outputs(float* scratch) const { return scratch + fillSize(); }
  int64_t length() const { return length_; }
  int64_t rowStride() const { return wq_; }
  /// Offset from an output index to its input for each tap (kh-major).
  const std::vector<int64_t>& tapOffsets() const { return tapOffsets_; }

  /// Copies plane `in` into the phases in `scratch`, `padding` elsewhere.
  void fill(const float* in, float padding, float* scratch) const {
    std::fill_n(scratch, fillSize(), padding);
    if (colBegin_ >= colEnd_) return;
    for (int64_t r = 0; r < paddedRows_; ++r) {
      const int64_t ih = r - padTop_;
      if (ih < 0 || ih >= hIn_) continue;
      const float* row = in + ih * wIn_;  // padded column c is row[c - padLeft]
      float* rowPhases = scratch + (r % sh_) * sw_ * phaseSize_ + (r / sh_) * wq_;
      if (sw_ == 1) {
        std::copy(row + (colBegin_ - padLeft_), row + (colEnd_ - padLeft_), rowPhases + colBegin_);
        continue;
      }
      for (int64_t b = 0; b < sw_; ++b) {  // padded columns q * sw + b
        const int64_t q0 = std::max<int64_t>(0, (colBegin_ - b + sw_ - 1) / sw_);
        const int64_t q1 = (colEnd_ - b + sw_ - 1) / sw_;
        float* dst = rowPhases + b * phaseSize_;
        const float* src = row + (b - padLeft_);
        if (sw_ == 2)  // a constant stride GCC vectorises with permutes
          for (int64_t q = q0; q < q1; ++q) dst[q] = src[2 * q];
        else
          for (int64_t q = q0; q < q1; ++q) dst[q] = src[q * sw_];
      }
    }
  }

  /// out[oh * w_out + ow] = f(rows[oh * wq + ow], oh * w_out + ow), for
  /// output rows oh in [begin, end) (all of them by default).
  template <typename F>
  void store(const float* rows, float* out, F f, int64_t begin = 0, int64_t end = -1) const {
    for (int64_t oh = begin; oh < (end < 0 ? hOut_ : end); ++oh) {
      const float* __restrict a = rows + oh * wq_;
      float* __restrict o = out + oh * wOut_;
      for (int64_t ow = 0; ow < wOut_; ++ow) o[ow] = f(a[ow], oh * wOut_ + ow);
    }
  }

 private:
  int64_t phasesSize() const { return sh_ * sw_ * phaseSize_; }

  int64_t hIn_, wIn_, hOut_, wOut_, sh_, sw_, padTop_, padLeft_;
  int64_t paddedRows_, wq_, phaseSize_, length_, colBegin_, colEnd_;
  std::vector<int64_t> tapOffsets_;
};

}  // namespace cgc::rt::detail
