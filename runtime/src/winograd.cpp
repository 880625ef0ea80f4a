// Winograd F(2x2, 3x3) convolution (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016) for 3x3 layers at stride 1.
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

constexpr int64_t kXi = 16;  // elements of a transformed 4x4 patch
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

/// V_xi[t][c] = (B^T d B)[xi] for `tiles` tiles from firstTile on (tw per
/// tile row) and the 16 channels of one block, whose padded copy is
/// `padded` (pw vectors per row); V_xi[t] lies at v + xi * xiStride + t *
/// tileStride.
void transformInput(const float* padded, int64_t pw, int64_t tw, int64_t firstTile, int64_t tiles,
                    float* v, int64_t xiStride, int64_t tileStride) {
  for (int64_t t = 0; t < tiles; ++t)
    for (int part = 0; part < kPerBlock; ++part) {
      const int64_t i = (firstTile + t) / tw, j = (firstTile + t) % tw;
      const float* patch = padded + (2 * i * pw + 2 * j) * kChannelBlock + part * simd::kLanes;
      Lanes d[4][4];
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) load(patch + (r * pw + c) * kChannelBlock, d[r][c]);
      // B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], down the columns, then
      // along the rows.
      Lanes bd[4][4];
      for (int c = 0; c < 4; ++c) {
        bd[0][c] = d[0][c] - d[2][c];
        bd[1][c] = d[1][c] + d[2][c];
        bd[2][c] = d[2][c] - d[1][c];
        bd[3][c] = d[1][c] - d[3][c];
      }
      float* out = v + t * tileStride + part * simd::kLanes;
      for (int r = 0; r < 4; ++r) {
        store(out + (4 * r + 0) * xiStride, bd[r][0] - bd[r][2]);
        store(out + (4 * r + 1) * xiStride, bd[r][1] + bd[r][2]);
        store(out + (4 * r + 2) * xiStride, bd[r][2] - bd[r][1]);
        store(out + (4 * r + 3) * xiStride, bd[r][1] - bd[r][3]);
      }
    }
}

/// The 2x2 outputs A^T M A of one tile for a register of output channels, from
/// M_xi at m + xi * xiStride; A^T = [1 1 1 0; 0 1 -1 -1].
void transformOutput(const float* m, int64_t xiStride, Lanes (&out)[2][2]) {
  Lanes am[2][4];
  for (int c = 0; c < 4; ++c) {
    Lanes m0, m1, m2, m3;
    load(m + (0 + c) * xiStride, m0);
    load(m + (4 + c) * xiStride, m1);
    load(m + (8 + c) * xiStride, m2);
    load(m + (12 + c) * xiStride, m3);
    am[0][c] = m0 + m1 + m2;
    am[1][c] = m1 - m2 - m3;
  }
  for (int r = 0; r < 2; ++r) {
    out[r][0] = am[r][0] + am[r][1] + am[r][2];
    out[r][1] = am[r][1] - am[r][2] - am[r][3];
  }
}

}  // namespace

bool convTakesWinograd(const ConvParams& p) {
  return p.groups == 1 && p.k_d == 1 && p.d_in == 1 && p.d_out == 1 && p.k_h == 3 && p.k_w == 3 &&
         p.stride_h == 1 && p.stride_w == 1 && p.dilation_h == 1 && p.dilation_w == 1 &&
         p.pool_h_out == 0;
}

bool convPrefersWinograd(const ConvParams& p) {
  return convTakesWinograd(p) && p.c_in >= kMinChannels &&
         (p.h_out + 1) / 2 * ((p.w_out + 1) / 2) >= kMinTiles;
}

namespace {

/// Channels rounded up to whole blocks: the transforms' width.
int64_t blocks(int64_t channels) { return (channels + kChannelBlock - 1) / kChannelBlock; }

}  // namespace

int64_t winogradWeightCount(const ConvParams& p) {
  return kXi * blocks(p.c_in) * blocks(p.c_out) * kChannelBlock * kChannelBlock;
}

void winogradWeights(const ConvParams& p, const float* w, float* u) {
  static constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const int64_t cIn = blocks(p.c_in) * kChannelBlock, cOut = blocks(p.c_out) * kChannelBlock;
  std::fill_n(u, winogradWeightCount(p), 0.0f);
  for (int64_t o = 0; o < p.c_out; ++o)
    for (int64_t c = 0; c < p.c_in; ++c) {
      const float* g = w + (o * p.c_in + c) * 9;
      double gg[4][3] = {};  // G g
      for (int r = 0; r < 4; ++r)
        for (int k = 0; k < 3; ++k)
          for (int q = 0; q < 3; ++q) gg[r][k] += kG[r][q] * g[q * 3 + k];
      for (int r = 0; r < 4; ++r)
        for (int col = 0; col < 4; ++col) {
          double sum = 0;  // (G g G^T)[r][col]
          for (int k = 0; k < 3; ++k) sum += gg[r][k] * kG[col][k];
          u[((4 * r + col) * cIn + c) * cOut + o] = static_cast<float>(sum);
        }
    }
}

namespace detail {

void convWinograd(const ConvParams& p, const float* x, const float* u, const float* bias,
                  const float* residual, float* y, const Team& team) {
  const int64_t th = (p.h_out + 1) / 2, tw = (p.w_out + 1) / 2;  // tiles
  const int64_t ph = 2 * th + 2, pw = 2 * tw + 2;                // the padded input they read
  const int64_t blocksIn = blocks(p.c_in), blocksOut = blocks(p.c_out);
  // The transforms' channels: whole blocks.
  const int64_t cIn = blocksIn * kChannelBlock, cOut = blocksOut * kChannelBlock;
  const int64_t inSpatial = p.h_in * p.w_in, spatial = p.h_out * p.w_out;
  const int64_t chunkTiles = std::max<int64_t>(1, kChunkFloats / (kXi * (cIn + cOut)));
  // The output rows a chunk's tiles touch: those of its whole tile rows
  // and of the partial ones at either end.
  const int64_t chunkPositions = (chunkTiles / tw + 2) * 2 * p.w_out;
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
        transformInput(padded + cb * ph * pw * kChannelBlock, pw, tw, t0, tiles,
                       v + cb * kChannelBlock, tiles * cIn, cIn);
      for (int64_t xi = 0; xi < kXi; ++xi)
        gemmRows(tiles, cOut, cIn, v + xi * tiles * cIn, cIn, u + xi * cIn * cOut, cOut,
                 m + xi * tiles * cOut, cOut);
      const int64_t firstRow = 2 * (t0 / tw);
      for (int64_t t = 0; t < tiles; ++t)
        for (int64_t ob = 0; ob < blocksOut; ++ob)
          for (int part = 0; part < kPerBlock; ++part) {
            const int64_t c0 = ob * kChannelBlock + part * simd::kLanes;  // first channel
            Lanes out[2][2];
            transformOutput(m + t * cOut + c0, tiles * cOut, out);
            const int64_t oh0 = 2 * ((t0 + t) / tw), ow0 = 2 * ((t0 + t) % tw);
            for (int64_t oh = oh0; oh < std::min(oh0 + 2, p.h_out); ++oh)
              for (int64_t ow = ow0; ow < std::min(ow0 + 2, p.w_out); ++ow) {
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
      for (int64_t oh = firstRow; oh < std::min(p.h_out, 2 * (last / tw) + 2); ++oh) {
        const int64_t i = oh / 2;
        const int64_t from = i == t0 / tw ? 2 * (t0 % tw) : 0;
        const int64_t to = i == last / tw ? std::min(p.w_out, 2 * (last % tw) + 2) : p.w_out;
        const int64_t pos = oh * p.w_out + from;
        transpose(rows + (pos - firstRow * p.w_out) * cOut, cOut, to - from, p.c_out, yn + pos,
                  spatial, e.at(0, pos));
      }
    }
  }
  team.barrier();  // thread 0's padded copy outlives the others' reads
}

}  // namespace detail
}  // namespace cgc::rt
