// Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions (Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2016) for 3x3 layers
// at stride 1. The text below is F(2x2, 3x3)'s; F(4x4, 3x3) is the same
// with 4x4 tiles of outputs from 6x6 patches: 36 products per channel pair
// and tile of 16 outputs (144 direct) instead of 16 per 4 (36), and
// transforms with coefficients up to 8, whose rounding errors are larger
// (measured below).
//
// Each 2x2 block of outputs (a tile) of one output channel is
// A^T [sum over input channels of (G g G^T) . (B^T d B)] A, where d is the
// 4x4 input patch the tile reads and g the 3x3 kernel: 16 multiplies per
// channel pair and tile instead of 36. Over all channels those are 16
// GEMMs, one per element xi of the 4x4 transformed patch:
// M_xi[tile][o] = V_xi[tile][c] U_xi[c][o]. U = G g G^T is computed at
// compile time (the pack-conv-weights pass, winogradWeights); the kernel
// transforms the input into V, runs the 16 GEMMs on LIBXSMM, and transforms
// M back into outputs with the epilogue.
//
// ONNX Runtime's CPU convolutions (MLAS) have no Winograd path. Measured on
// two Zen 4 threads against the packed direct kernel (conv.cpp), which
// itself reaches 90-95% of the FMA peak: 56x56 64-to-64 1064 to 564 us,
// 28x28 128-to-128 1093 to 512, 14x14 256-to-256 1146 to 523, 13x13
// 64-to-256 275 to 131; in ResNet-50 its 3x3 layers run 1.4-1.8x faster.
// On 7x7 planes (16 tiles) it loses: the 16 products stream U, 16/9 of the
// direct weights, for 8 tiles a thread (512 channels: 1.2 ms to 2.1 with
// the weights coming from memory). With 16 input channels the 16 products
// are 16 deep and the transforms outweigh what they save: PathNet-style
// 16-to-16 layers on 32x32 planes, one Zen 3 thread, 6.4 ms against 5.2
// on the packed kernel.
//
// Layout: the input is first copied zero-padded and channel-blocked
// (padInput), so each transform step is one vector of 16 channels.
// Channel counts that are not multiples of 16 are padded in the
// transforms, not in the tensors: the copy's last block has zero lanes past
// c_in, U has zero rows and columns past c_in and c_out, and only the real
// channels of M reach y (NCHW there; the channel-blocked layout needs whole
// blocks). The team
// splits the tiles; a thread takes its tiles in chunks whose V and M stay
// in L2. A chunk's outputs go straight into a channel-blocked y, or are
// gathered as rows of positions and transposed into the NCHW planes, a
// row segment at a time.
#include <algorithm>
#include <cstring>

#include "conv_support.h"
#include "scratch.h"
#include "simd.h"

namespace cgc::rt {
namespace {

// Transformed inputs and products of a chunk (V and M, in floats): 512 KiB,
// half of L2. In ResNet-50, 256 KiB made the 14x14 layers 5-15% slower (U
// streamed once more per chunk), 1 MiB was within noise.
constexpr int64_t kChunkFloats = 128 * 1024;
// Tiles per image below which the direct kernel wins (see above): 7x7
// planes have 16, 13x13 and 14x14 ones 49. Input channels below which it
// wins: 32.
constexpr int64_t kMinTiles = 49;
constexpr int64_t kMinChannels = 32;

// A register of a channel block's lanes (simd.h); a block is kPerBlock.
using Lanes = simd::Floats;
using simd::kPerBlock;

// Vectors pass by reference: by value they change the ABI where AVX-512 is
// off (the sanitizer builds).
void load(const float* from, Lanes& v) { std::memcpy(&v, from, sizeof v); }
void store(float* to, const Lanes& v) { std::memcpy(to, &v, sizeof v); }

/// The transforms of F(kTile x kTile, 3x3): kPatch = kTile + 2 inputs a
/// side, kXi = kPatch^2 products per tile.
template <int kTile>
struct Winograd {
  static constexpr int kPatch = kTile + 2, kXi = kPatch * kPatch;
};

/// B^T x for one column of a patch, F(2x2): B^T = [1 0 -1 0; 0 1 1 0;
/// 0 -1 1 0; 0 1 0 -1].
__attribute__((always_inline)) inline void inputColumn(const Lanes (&d)[4], Lanes (&r)[4]) {
  r[0] = d[0] - d[2];
  r[1] = d[1] + d[2];
  r[2] = d[2] - d[1];
  r[3] = d[1] - d[3];
}

/// F(4x4): B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0;
/// 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1].
__attribute__((always_inline)) inline void inputColumn(const Lanes (&d)[6], Lanes (&r)[6]) {
  const Lanes four = 4.0f - Lanes{}, five = 5.0f - Lanes{}, two = 2.0f - Lanes{};
  r[0] = four * d[0] - five * d[2] + d[4];
  r[1] = d[3] + d[4] - four * (d[1] + d[2]);
  r[2] = d[4] - d[3] + four * (d[1] - d[2]);
  r[3] = d[4] - d[2] + two * (d[3] - d[1]);
  r[4] = d[4] - d[2] + two * (d[1] - d[3]);
  r[5] = four * d[1] - five * d[3] + d[5];
}

/// A^T m for one column of products, F(2x2): A^T = [1 1 1 0; 0 1 -1 -1].
__attribute__((always_inline)) inline void outputColumn(const Lanes (&m)[4], Lanes (&o)[2]) {
  o[0] = m[0] + m[1] + m[2];
  o[1] = m[1] - m[2] - m[3];
}

/// F(4x4): A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
__attribute__((always_inline)) inline void outputColumn(const Lanes (&m)[6], Lanes (&o)[4]) {
  const Lanes two = 2.0f - Lanes{}, four = 4.0f - Lanes{}, eight = 8.0f - Lanes{};
  const Lanes sum12 = m[1] + m[2], diff12 = m[1] - m[2];
  const Lanes sum34 = m[3] + m[4], diff34 = m[3] - m[4];
  o[0] = m[0] + sum12 + sum34;
  o[1] = diff12 + two * diff34;
  o[2] = sum12 + four * sum34;
  o[3] = diff12 + eight * diff34 + m[5];
}

/// V_xi[t][c] = (B^T d B)[xi] for `tiles` tiles from firstTile on (tw per
/// tile row) and the 16 channels of one block, whose padded copy is
/// `padded` (pw vectors per row); V_xi[t] lies at v + xi * xiStride + t *
/// tileStride.
template <int kTile>
void transformInput(const float* padded, int64_t pw, int64_t tw, int64_t firstTile, int64_t tiles,
                    float* v, int64_t xiStride, int64_t tileStride) {
  constexpr int kPatch = Winograd<kTile>::kPatch;
  for (int64_t t = 0; t < tiles; ++t)
    for (int part = 0; part < kPerBlock; ++part) {
      const int64_t i = (firstTile + t) / tw, j = (firstTile + t) % tw;
      const float* patch =
          padded + (kTile * i * pw + kTile * j) * kChannelBlock + part * simd::kLanes;
      // Down the columns, then along the rows.
      Lanes bd[kPatch][kPatch];
      for (int c = 0; c < kPatch; ++c) {
        Lanes column[kPatch], transformed[kPatch];
        for (int r = 0; r < kPatch; ++r) load(patch + (r * pw + c) * kChannelBlock, column[r]);
        inputColumn(column, transformed);
        for (int r = 0; r < kPatch; ++r) bd[r][c] = transformed[r];
      }
      float* out = v + t * tileStride + part * simd::kLanes;
      for (int r = 0; r < kPatch; ++r) {
        Lanes row[kPatch];
        inputColumn(bd[r], row);
        for (int c = 0; c < kPatch; ++c) store(out + (kPatch * r + c) * xiStride, row[c]);
      }
    }
}

/// The kTile x kTile outputs A^T M A of one tile for a register of output
/// channels, from M_xi at m + xi * xiStride.
template <int kTile>
void transformOutput(const float* m, int64_t xiStride, Lanes (&out)[kTile][kTile]) {
  constexpr int kPatch = Winograd<kTile>::kPatch;
  Lanes am[kTile][kPatch];
  for (int c = 0; c < kPatch; ++c) {
    Lanes column[kPatch], transformed[kTile];
    for (int r = 0; r < kPatch; ++r) load(m + (kPatch * r + c) * xiStride, column[r]);
    outputColumn(column, transformed);
    for (int r = 0; r < kTile; ++r) am[r][c] = transformed[r];
  }
  for (int r = 0; r < kTile; ++r) outputColumn(am[r], out[r]);
}

}  // namespace

bool convTakesWinograd(const ConvParams& p) {
  return p.groups == 1 && p.k_d == 1 && p.d_in == 1 && p.d_out == 1 && p.k_h == 3 && p.k_w == 3 &&
         p.stride_h == 1 && p.stride_w == 1 && p.dilation_h == 1 && p.dilation_w == 1 &&
         p.pool_h_out == 0;
}

namespace {

/// F(4x4, 3x3) against F(2x2, 3x3) and the packed kernel, one Zen 4 thread
/// (bench/... micro-benchmark over conv): 56x56 64-to-64 1136 to 754 us,
/// 28x28 128-to-128 1011 to 634, 14x14 256-to-256 993 to 862, 13x13
/// 64-to-256 255 to 210, 10x10 192-to-192 277 to 243, 55x55 16-to-64 566
/// (packed) to 318, PathNet's 64 x 16-to-16 on 32x32 3684 (packed) to
/// 2698. It loses where its 36 products of c_in x c_out stream for few
/// tiles: 7x7 and 8x8 planes (4 tiles), 14x14 512-to-512 (5949 to 18202:
/// 37 MB of transformed weights for chunks of 3 tiles). The AVX2 runtime on
/// the same core: F(4x4) wins on the same layers (56x56 64-to-64 2372
/// packed, 1819 F(2x2), 1071 F(4x4)) except PathNet's, whose 16 x 16
/// products it runs slower than the packed kernel (4534 against 3968).
bool prefersTile4(const ConvParams& p, int vectorLanes) {
  const int64_t tiles = (p.h_out + 3) / 4 * ((p.w_out + 3) / 4);
  const int lanes = vectorLanes > 0 ? vectorLanes : simd::kLanes;
  const int64_t fewest = lanes >= 16 ? 32 : 64;  // c_in + c_out
  return p.c_in >= 16 && p.c_in + p.c_out >= fewest && p.c_in + p.c_out <= 512 && tiles >= 9;
}

}  // namespace

bool convPrefersWinograd(const ConvParams& p, int vectorLanes) {
  return convTakesWinograd(p) &&
         ((p.c_in >= kMinChannels && (p.h_out + 1) / 2 * ((p.w_out + 1) / 2) >= kMinTiles) ||
          prefersTile4(p, vectorLanes));
}

int64_t convWinogradTile(const ConvParams& p, int vectorLanes) {
  return prefersTile4(p, vectorLanes) ? 4 : 2;
}

namespace {

/// Channels rounded up to whole blocks: the transforms' width.
int64_t blocks(int64_t channels) { return (channels + kChannelBlock - 1) / kChannelBlock; }

}  // namespace

int64_t winogradWeightCount(const ConvParams& p) {
  const int64_t patch = p.winograd_tile + 2;
  return patch * patch * blocks(p.c_in) * blocks(p.c_out) * kChannelBlock * kChannelBlock;
}

namespace {

/// G for F(2x2, 3x3) and F(4x4, 3x3): the transform of a kernel's rows.
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                              {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                              {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6},
                              {1.0 / 24, -1.0 / 12, 1.0 / 6},
                              {0, 0, 1}};

}  // namespace

void winogradWeights(const ConvParams& p, const float* w, float* u) {
  const int patch = static_cast<int>(p.winograd_tile + 2);
  auto g = [&](int r, int q) { return patch == 4 ? kG2[r][q] : kG4[r][q]; };
  const int64_t cIn = blocks(p.c_in) * kChannelBlock, cOut = blocks(p.c_out) * kChannelBlock;
  std::fill_n(u, winogradWeightCount(p), 0.0f);
  for (int64_t o = 0; o < p.c_out; ++o)
    for (int64_t c = 0; c < p.c_in; ++c) {
      const float* kernel = w + (o * p.c_in + c) * 9;
      double gk[6][3] = {};  // G g
      for (int r = 0; r < patch; ++r)
        for (int k = 0; k < 3; ++k)
          for (int q = 0; q < 3; ++q) gk[r][k] += g(r, q) * kernel[q * 3 + k];
      for (int r = 0; r < patch; ++r)
        for (int col = 0; col < patch; ++col) {
          double sum = 0;  // (G g G^T)[r][col]
          for (int k = 0; k < 3; ++k) sum += gk[r][k] * g(col, k);
          u[((patch * r + col) * cIn + c) * cOut + o] = static_cast<float>(sum);
        }
    }
}

namespace detail {
namespace {

template <int kTile>
void convWinogradTiles(const ConvParams& p, const float* x, const float* u, const float* bias,
                       const float* residual, float* y, const Team& team) {
  constexpr int64_t kXi = Winograd<kTile>::kXi;
  const int64_t th = (p.h_out + kTile - 1) / kTile, tw = (p.w_out + kTile - 1) / kTile;  // tiles
  const int64_t ph = kTile * th + 2, pw = kTile * tw + 2;  // the padded input they read
  const int64_t blocksIn = blocks(p.c_in), blocksOut = blocks(p.c_out);
  // The transforms' channels: whole blocks.
  const int64_t cIn = blocksIn * kChannelBlock, cOut = blocksOut * kChannelBlock;
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  const int64_t chunkTiles = std::max<int64_t>(1, kChunkFloats / (kXi * (cIn + cOut)));
  // The output rows a chunk's tiles touch: those of its whole tile rows
  // and of the partial ones at either end.
  const int64_t chunkPositions = (chunkTiles / tw + 2) * kTile * p.w_out;
  float* v = scratch<float>(kXi * chunkTiles * (cIn + cOut) + chunkPositions * cOut +
                            blocksIn * ph * pw * kChannelBlock);
  float* m = v + kXi * chunkTiles * cIn;
  float* rows = m + kXi * chunkTiles * cOut;  // [position][channel] for an NCHW y
  // Every thread reads the whole padded image: each pads its share of the
  // channel blocks into thread 0's scratch.
  float* padded = team.shareFromFirst(rows + chunkPositions * cOut);
  const Bounds bounds = activationBounds(p);
  const Lanes low = bounds.low - Lanes{}, high = bounds.high - Lanes{};
  // Tiles, not tile rows: 14x14 planes have 7 rows, 4 + 3 on two threads.
  const Range mine = team.split(th * tw);
  for (int64_t n = 0; n < p.n; ++n) {
    if (n > 0) team.barrier();  // all done with image n - 1
    padInput(p, x + n * p.c_in * inSpatial, 1, ph, pw, team.split(blocksIn), {0, ph},
             p.blocked_input ? kChannelBlock : 1, padded, !p.blocked_input);
    team.barrier();
    const Epilogue e = epilogueOf(p, bias, residual, n, 0);
    float* yn = y + n * p.c_out * spatial;
    for (int64_t t0 = mine.begin; t0 < mine.end; t0 += chunkTiles) {
      const int64_t tiles = std::min(mine.end, t0 + chunkTiles) - t0;
      for (int64_t cb = 0; cb < blocksIn; ++cb)
        transformInput<kTile>(padded + cb * ph * pw * kChannelBlock, pw, tw, t0, tiles,
                              v + cb * kChannelBlock, tiles * cIn, cIn);
      for (int64_t xi = 0; xi < kXi; ++xi)
        gemmRows(tiles, cOut, cIn, v + xi * tiles * cIn, cIn, u + xi * cIn * cOut, cOut,
                 m + xi * tiles * cOut, cOut);
      const int64_t firstRow = kTile * (t0 / tw);
      for (int64_t t = 0; t < tiles; ++t)
        for (int64_t ob = 0; ob < blocksOut; ++ob)
          for (int part = 0; part < kPerBlock; ++part) {
            const int64_t c0 = ob * kChannelBlock + part * simd::kLanes;  // first channel
            Lanes out[kTile][kTile];
            transformOutput<kTile>(m + t * cOut + c0, tiles * cOut, out);
            const int64_t oh0 = kTile * ((t0 + t) / tw), ow0 = kTile * ((t0 + t) % tw);
            for (int64_t oh = oh0; oh < std::min(oh0 + kTile, p.h_out); ++oh)
              for (int64_t ow = ow0; ow < std::min(ow0 + kTile, p.w_out); ++ow) {
                Lanes& o = out[oh - oh0][ow - ow0];
                if (!p.blocked_output) {  // the epilogue comes with the transpose
                  store(rows + ((oh - firstRow) * p.w_out + ow) * cOut + c0, o);
                  continue;
                }
                const int64_t at =
                    (ob * spatial + oh * p.w_out + ow) * kChannelBlock + part * simd::kLanes;
                Lanes term;
                if (bias) {
                  load(bias + c0, term);
                  o += term;
                }
                if (e.residual) {
                  load(e.residual + at, term);
                  o += term;
                }
                o = o < low ? low : o;  // a NaN stays NaN, as in std::clamp
                o = high < o ? high : o;
                store(yn + at, o);
              }
          }
      if (p.blocked_output) continue;
      // Each output row's columns that this chunk's tiles cover, into the
      // NCHW planes with the epilogue.
      const int64_t last = t0 + tiles - 1;
      for (int64_t oh = firstRow; oh < std::min(p.h_out, kTile * (last / tw) + kTile); ++oh) {
        const int64_t i = oh / kTile;
        const int64_t from = i == t0 / tw ? kTile * (t0 % tw) : 0;
        const int64_t to =
            i == last / tw ? std::min(p.w_out, kTile * (last % tw) + kTile) : p.w_out;
        const int64_t pos = oh * p.w_out + from;
        transpose(rows + (pos - firstRow * p.w_out) * cOut, cOut, to - from, p.c_out, yn + pos,
                  spatial, e.at(0, pos));
      }
    }
  }
  team.barrier();  // thread 0's padded copy outlives the others' reads
}

}  // namespace

void convWinograd(const ConvParams& p, const float* x, const float* u, const float* bias,
                  const float* residual, float* y, const Team& team) {
  if (p.winograd_tile == 4) return convWinogradTiles<4>(p, x, u, bias, residual, y, team);
  convWinogradTiles<2>(p, x, u, bias, residual, y, team);
}

}  // namespace detail
}  // namespace cgc::rt
