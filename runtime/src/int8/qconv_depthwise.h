// What qconv_depthwise.cpp's loops share with their AVX2 tier
// (qconv_depthwise_avx2.cpp), which they call where the build has AVX2
// (core/build_tier.h): the paired taps of an output row, and the two steps
// that have a vector form.
#pragma once

#include <cstdint>

namespace cgc::rt::detail {

/// The taps of one output row that read inside the image, paired for
/// vpmaddwd: each pair's two sources (columns c + 0..15 of a tap read
/// source + c) and its two weights as one int32 (the second 0 when odd).
struct TapPairs {
  const int16_t* source[2][128];
  int32_t weights[128];
  int64_t count = 0;
};

/// out[i] = src[2 * i] - zero for the first 16s of `count` (while the
/// loads stay within the row); returns how many it wrote.
template <typename T>
int64_t everyOtherAvx2(const T* src, int64_t count, int16_t zero, int16_t* out);

/// acc[0 .. 16s of columns) = the window sums of one output row; returns
/// how many it wrote.
int64_t rowSumsAvx2(int64_t columns, const TapPairs& pairs, int32_t* acc);

}  // namespace cgc::rt::detail
