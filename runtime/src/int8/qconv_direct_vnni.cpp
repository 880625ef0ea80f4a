// The int8 direct convolution's product along positions on AVX-512 VNNI
// (qconv_direct.cpp calls it where the build has VNNI): a tile of 32
// positions times a block of 8 output channels on vpdpbusd
// (quant_microkernels_vnni.h), and the requantising epilogue on those
// registers, 16 lanes at a time (requant_skx.h: the same float operations
// as finishQ, built with -ffp-contract=off), stored with one masked store
// per channel and run of y.
#include "core/isa.h"

#if CGC_ISA_VNNI
#include "int8/qconv_direct.h"
#include "int8/quant_microkernels_vnni.h"
#include "int8/requant_skx.h"

namespace cgc::rt::detail {

// GCC 12's extracts pass _mm512_undefined_* (bug 105593, as requant_skx.h).
#pragma GCC diagnostic push
CGC_IGNORE_MAYBE_UNINITIALIZED

namespace {

constexpr int64_t kBlock = kMaxBlock;  // output channels per packed block

/// c = the biases plus the products of one tile and one block
/// (quant_microkernels.h), quad q of the tile at offsets[q]. Starting from
/// the biases saves an add per vector in the epilogue. Not inlined: next to
/// the epilogue's constants, GCC spilled the two activation vectors on every
/// quad (64 to 64 channels 3x3 at 56x56 ran slower).
__attribute__((noinline)) void tileProducts(const uint8_t* a, const int64_t* offsets, int64_t quads,
                                            const int8_t* w, const int32_t* bias,
                                            __m512i (&c)[2][kBlock]) {
  __m512i sums[2][kBlock];
  for (int64_t j = 0; j < kBlock; ++j) sums[0][j] = sums[1][j] = _mm512_set1_epi32(bias[j]);
  productVnni(
      a, [offsets](int64_t q) { return offsets[q]; }, quads, w, sums);
  for (int h = 0; h < 2; ++h)
    for (int64_t j = 0; j < kBlock; ++j) c[h][j] = sums[h][j];
}

/// storeBlock where the tile's 32 positions are one run of bytes in y:
/// per channel one masked load of the residual and one store of both
/// halves (a quarter off the epilogue of a 16-to-96 1x1 layer on 112x112,
/// which the epilogue dominates).
template <QOutput kKind>
void storeRun(const Requant16& e, const __m512i (&c)[2][kBlock], const BlockJob& job,
              __mmask32 lanes, int64_t base) {
  Requant16 same = e;
  same.kind = kKind;  // a constant the compiler folds into requant16
  for (int64_t j = 0; j < job.channels; ++j) {
    __m512i r[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    if constexpr (kKind == QOutput::kRequantAdd) {
      const __m256i bytes = _mm256_maskz_loadu_epi8(lanes, job.residual + j * job.plane + base);
      r[0] = widen16(_mm256_castsi256_si128(bytes), e.rSigned);
      r[1] = widen16(_mm256_extracti128_si256(bytes, 1), e.rSigned);
    }
    __m128i q[2];
    for (int h = 0; h < 2; ++h)
      q[h] = narrow16(e.type, requant16(same, c[h][j], job.multiplier[j], r[h]));
    _mm256_mask_storeu_epi8(job.y + j * job.plane + base, lanes,
                            _mm256_inserti128_si256(_mm256_castsi128_si256(q[0]), q[1], 1));
  }
}

/// A channel's residual for the tile's lanes (zero elsewhere), per half.
void loadResidual(const BlockJob& job, int64_t channel, const TileRuns& runs, bool oneRun,
                  __mmask32 lanes, bool isSigned, __m512i (&r)[2]) {
  const uint8_t* residual = job.residual + channel * job.plane;
  __m256i bytes;
  if (oneRun) {
    bytes = _mm256_maskz_loadu_epi8(lanes, residual + runs.runs[0][0].base);
  } else {
    __m128i half[2] = {_mm_setzero_si128(), _mm_setzero_si128()};
    for (int h = 0; h < 2; ++h)
      for (int64_t i = 0; i < runs.count[h]; ++i)
        half[h] = loadBytes16(half[h], runs.runs[h][i].lanes, residual + runs.runs[h][i].base);
    bytes = _mm256_inserti128_si256(_mm256_castsi128_si256(half[0]), half[1], 1);
  }
  r[0] = widen16(_mm256_castsi256_si128(bytes), isSigned);
  r[1] = widen16(_mm256_extracti128_si256(bytes, 1), isSigned);
}

/// kRequant or kRequantAdd into int8 or uint8 (packsToBytes): two channels' 64 sums
/// rounded, then packed into bytes at once with the zero point and the
/// clamp (packBytes64), stored a channel (one run) or a run of a half at a
/// time.
template <QOutput kKind>
void storePacked(const Requant16& e, const __m512i (&c)[2][kBlock], const BlockJob& job,
                 const TileRuns& runs) {
  const bool oneRun = runs.oneRun();
  const __mmask32 lanes = runs.lanes32();
  for (int64_t j = 0; j < job.channels; j += 2) {
    __m512i q[2][2];  // [channel j, j + 1][half]
    for (int k = 0; k < 2; ++k) {
      const __m512 m = _mm512_set1_ps(job.multiplier[j + k]);  // terms pad with zeros
      if constexpr (kKind == QOutput::kRequantAdd) {
        __m512i r[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
        if (j + k < job.channels) loadResidual(job, j + k, runs, oneRun, lanes, e.rSigned, r);
        for (int h = 0; h < 2; ++h) q[k][h] = residualRound16(e, c[h][j + k], m, r[h]);
      } else {
        for (int h = 0; h < 2; ++h) q[k][h] = scaleRound16(c[h][j + k], m);
      }
    }
    const __m512i bytes = _mm512_permutexvar_epi32(
        e.order, packBytes64(e, q[0][0], q[0][1], q[1][0], q[1][1], e.zero16));
    for (int64_t k = j; k < std::min(j + 2, job.channels); ++k) {
      uint8_t* y = job.y + k * job.plane;
      const __m256i channel =
          k == j ? _mm512_castsi512_si256(bytes) : _mm512_extracti64x4_epi64(bytes, 1);
      if (oneRun) {
        _mm256_mask_storeu_epi8(y + runs.runs[0][0].base, lanes, channel);
        continue;
      }
      for (int h = 0; h < 2; ++h) {
        const __m128i half =
            h == 0 ? _mm256_castsi256_si128(channel) : _mm256_extracti128_si256(channel, 1);
        for (int64_t i = 0; i < runs.count[h]; ++i)
          _mm_mask_storeu_epi8(y + runs.runs[h][i].base, runs.runs[h][i].lanes, half);
      }
    }
  }
}

/// The epilogue of one block: 8 channels x 2 halves of sums into y.
template <QOutput kKind>
void storeBlock(const Requant16& e, const __m512i (&c)[2][kBlock], const BlockJob& job,
                const TileRuns& runs) {
  if (e.type != DType::kI32 && runs.oneRun())
    return storeRun<kKind>(e, c, job, runs.lanes32(), runs.runs[0][0].base);
  const int64_t size = e.type == DType::kI32 ? 4 : 1;
  for (int64_t j = 0; j < job.channels; ++j)
    for (int h = 0; h < 2; ++h) {
      const TileRuns::Run* run = runs.runs[h];
      const int64_t count = runs.count[h];
      __m512i r = _mm512_setzero_si512();
      if constexpr (kKind == QOutput::kRequantAdd) {
        __m128i bytes = _mm_setzero_si128();
        for (int64_t i = 0; i < count; ++i)
          bytes = loadBytes16(bytes, run[i].lanes, job.residual + j * job.plane + run[i].base);
        r = widen16(bytes, e.rSigned);
      }
      Requant16 same = e;
      same.kind = kKind;  // a constant the compiler folds into requant16
      const __m512i q = requant16(same, c[h][j], job.multiplier[j], r);
      for (int64_t i = 0; i < count; ++i)
        storeQ16(job.y + (j * job.plane + run[i].base) * size, run[i].lanes, e.type, q);
    }
}

/// One tile x one block: the products in registers, then the epilogue.
void tileBlock(const Requant16& e, const uint8_t* a, const int64_t* offsets, int64_t quads,
               const BlockJob& job, const TileRuns& runs) {
  __m512i c[2][kBlock];
  tileProducts(a, offsets, quads, job.w, job.bias, c);
  if (job.packs && e.kind == QOutput::kRequantAdd)
    return storePacked<QOutput::kRequantAdd>(e, c, job, runs);
  if (job.packs) return storePacked<QOutput::kRequant>(e, c, job, runs);
  switch (e.kind) {
    case QOutput::kRequant:
      return storeBlock<QOutput::kRequant>(e, c, job, runs);
    case QOutput::kRequantAdd:
      return storeBlock<QOutput::kRequantAdd>(e, c, job, runs);
    default:
      return storeBlock<QOutput::kInt32>(e, c, job, runs);
  }
}

}  // namespace

void tileBlocks(const Requant16& e, const uint8_t* a, int64_t count, const int64_t* offsets,
                int64_t quads, const BlockJob& job, const TileRuns* runs) {
  for (int64_t i = 0; i < count; ++i)
    tileBlock(e, a + i * kQTile * kQuad, offsets, quads, job, runs[i]);
}

#pragma GCC diagnostic pop

}  // namespace cgc::rt::detail
#endif
