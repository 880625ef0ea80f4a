// Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions (Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2016) for 3x3 layers
// at stride 1, F(2x2, 5x5) for 5x5 layers, F(2x2, 2x2) for 2x2 ones (the
// phases of a stride-2 ConvTranspose: DCGAN's), and the one-dimensional
// F(2, 7) and F(4, 3) (or F(2, 3)) for 1x7, 7x1, 1x3 and 3x1 layers
// (Inception-v3's). The text below is F(2x2, 3x3)'s; F(4x4, 3x3) is the
// same with 4x4 tiles of outputs from 6x6 patches: 36 products per channel
// pair and tile of 16 outputs (144 direct) instead of 16 per 4 (36), and
// transforms with coefficients up to 8, whose rounding errors are larger
// (measured below). F(2x2, 5x5) takes the same 6x6 patches and input
// transform (the same points) for 2x2 tiles: 36 products instead of 100;
// F(2x2, 2x2) 3x3 patches at the points 0, 1 and infinity: 9 instead of 16.
// The 1-D forms transform one axis only (a Form whose other patch is 1):
// F(2, 7) makes tiles of 2 outputs along the window's axis from patches of
// 8 inputs, 8 products per channel pair and tile instead of 14, at the
// points 0, +-1, +-2, +-1/2 and infinity; F(4, 3) is F(4x4, 3x3)'s
// transform along one axis, 6 products instead of 12. Errors, on
// He-initialised layers, of the largest output: F(2, 7) 1.5e-6 and 2.8e-6
// on 192-to-192 1x7 and 768-to-768 7x1 (direct 1.4e-6 and 3.1e-6), F(2x2,
// 5x5) 2.1e-6 and 3.7e-6 on 48-to-64 and 192-to-192 (direct 1.3e-6 and
// 2.7e-6), F(4x4, 3x3) 3.8e-6 to 7.4e-6.
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
// ONNX Runtime's CPU convolutions (MLAS) have no Winograd path. Against the
// packed direct kernel (conv.cpp) it wins on 3x3 layers of 13x13 planes and
// larger (bench/micro/run.sh; the numbers: bench/history/
// 2026-11-code-comment-measurements.md). On 7x7 planes (16 tiles) it loses:
// the 16 products stream U, 16/9 of the direct weights, for 8 tiles a
// thread. With 16 input channels the 16 products are 16 deep and the
// transforms outweigh what they save (PathNet-style 16-to-16 layers).
//
// Layout: the input is first copied zero-padded and channel-blocked
// (padInput), so each transform step is one vector of 16 channels.
// Channel counts that are not multiples of 16 are padded in the
// transforms, not in the tensors: the copy's last block has zero lanes past
// c_in, U has zero rows and columns past c_in and c_out, and only the real
// channels of M reach y (NCHW there; the channel-blocked layout needs whole
// blocks). The team splits the tiles of a group of images (one image, unless the planes are
// small: then enough images that each thread has a chunk of tiles, which
// may span images); a thread takes its tiles in chunks whose V and M stay
// in L2. A chunk's outputs go straight into a channel-blocked y, or are
// gathered as rows of positions and transposed into the NCHW planes, a
// row segment at a time.
#include <algorithm>
#include <cstring>

#include "conv/conv_strategies.h"
#include "conv/conv_support.h"
#include "core/scratch.h"
#include "core/simd.h"

namespace cgc::rt {
namespace {

// Transformed inputs and products of a chunk (V and M, in floats): 512 KiB,
// half of L2. Half as much makes ResNet-50's 14x14 layers slower (U
// streamed once more per chunk); twice as much gains nothing.
constexpr int64_t kChunkFloats = 128 * 1024;
// Tiles per image below which the direct kernel wins (see above): 7x7
// planes have 16, 13x13 and 14x14 ones 49. Input channels below which it
// wins: 32. Both measured on one and two Zen 4 threads, and not derived
// from the machine (cgc/machine.h) yet.
constexpr int64_t kMinTiles = 49;
constexpr int64_t kMinChannels = 32;

/// The most floats of transformed weights (U) for which the 5x5 and 1-D
/// forms beat the packed kernel: 16 MB measured on a Zen 4 (see
/// convPrefersWinograd), half its 32 MiB L3. Every thread reads all of U,
/// so U stays in the L3 they share or streams from memory.
int64_t maxTransformedWeights(const MachineInfo& m) {
  return m.lastLevelBytes() / 2 / static_cast<int64_t>(sizeof(float));
}

/// The fewest tiles (over the batch) for those forms: 32 measured on two
/// threads. Each thread streams all of U for its share of the tiles, so
/// the share is what must pay for it: 16 tiles a core.
int64_t minTilesOther(const MachineInfo& m) {
  constexpr int64_t kMinTilesPerCore = 16;
  return kMinTilesPerCore * std::max(1, m.cores);
}

// A register of a channel block's lanes (simd.h); a block is kPerBlock.
using Lanes = simd::Floats;
using simd::kPerBlock;

// Vectors pass by reference: by value they change the ABI where AVX-512 is
// off (the sanitizer builds).
void load(const float* from, Lanes& v) { v = simd::load(from); }
void store(float* to, const Lanes& v) { simd::store(to, v); }

/// A Winograd form: tiles of TileH x TileW outputs from patches of
/// PatchH x PatchW inputs, kXi products per channel pair and tile. An axis
/// whose patch is 1 (the 1-D forms' other axis) is not transformed.
template <int TileH, int TileW, int PatchH, int PatchW>
struct Form {
  static constexpr int kTileH = TileH, kTileW = TileW, kPatchH = PatchH, kPatchW = PatchW;
  static constexpr int kXi = PatchH * PatchW;
};
// F(tile, window): the output transform follows from the patch and the
// tile (outputColumn's overloads), the input transform from the patch.
using F2x2Of3x3 = Form<2, 2, 4, 4>;
using F4x4Of3x3 = Form<4, 4, 6, 6>;
using F2x2Of5x5 = Form<2, 2, 6, 6>;
using F2x2Of2x2 = Form<2, 2, 3, 3>;
using F1x2Of1x7 = Form<1, 2, 1, 8>;
using F2x1Of7x1 = Form<2, 1, 8, 1>;
using F1x2Of1x3 = Form<1, 2, 1, 4>;
using F1x4Of1x3 = Form<1, 4, 1, 6>;
using F2x1Of3x1 = Form<2, 1, 4, 1>;
using F4x1Of3x1 = Form<4, 1, 6, 1>;

/// The axis a 1-D form does not transform.
__attribute__((always_inline)) inline void inputColumn(const Lanes (&d)[1], Lanes (&r)[1]) {
  r[0] = d[0];
}

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

/// F(2, 2), at the points 0, 1 and infinity: B^T = [-1 1 0; 0 1 0; 0 -1 1].
__attribute__((always_inline)) inline void inputColumn(const Lanes (&d)[3], Lanes (&r)[3]) {
  r[0] = d[1] - d[0];
  r[1] = d[1];
  r[2] = d[2] - d[1];
}

/// F(2, 7), at the points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity (those
/// of F(4x4, 3x3) and two more): B^T = [-1 0 21/4 0 -21/4 0 1 0;
/// 0 1 1 -17/4 -17/4 1 1 0; 0 -1 1 17/4 -17/4 -1 1 0;
/// 0 1/2 1/4 -5/2 -5/4 2 1 0; 0 -1/2 1/4 5/2 -5/4 -2 1 0;
/// 0 2 4 -5/2 -5 1/2 1 0; 0 -2 4 5/2 -5 -1/2 1 0; 0 -1 0 21/4 0 -21/4 0 1].
__attribute__((always_inline)) inline void inputColumn(const Lanes (&d)[8], Lanes (&r)[8]) {
  auto c = [](float v) { return v - Lanes{}; };
  const Lanes even1 = d[2] + d[6] - c(4.25f) * d[4], odd1 = d[1] + d[5] - c(4.25f) * d[3];
  const Lanes even2 = c(0.25f) * d[2] - c(1.25f) * d[4] + d[6];
  const Lanes odd2 = c(0.5f) * d[1] - c(2.5f) * d[3] + c(2.0f) * d[5];
  const Lanes even3 = c(4.0f) * d[2] - c(5.0f) * d[4] + d[6];
  const Lanes odd3 = c(2.0f) * d[1] - c(2.5f) * d[3] + c(0.5f) * d[5];
  r[0] = d[6] - d[0] + c(5.25f) * (d[2] - d[4]);
  r[1] = even1 + odd1;
  r[2] = even1 - odd1;
  r[3] = even2 + odd2;
  r[4] = even2 - odd2;
  r[5] = even3 + odd3;
  r[6] = even3 - odd3;
  r[7] = d[7] - d[1] + c(5.25f) * (d[3] - d[5]);
}

__attribute__((always_inline)) inline void outputColumn(const Lanes (&m)[1], Lanes (&o)[1]) {
  o[0] = m[0];
}

/// F(2, 2): A^T = [1 1 0; 0 1 1].
__attribute__((always_inline)) inline void outputColumn(const Lanes (&m)[3], Lanes (&o)[2]) {
  o[0] = m[0] + m[1];
  o[1] = m[1] + m[2];
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

/// F(2, 5), at F(4, 3)'s points (so B^T is F(4x4)'s):
/// A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 1].
__attribute__((always_inline)) inline void outputColumn(const Lanes (&m)[6], Lanes (&o)[2]) {
  o[0] = m[0] + m[1] + m[2] + m[3] + m[4];
  o[1] = m[1] - m[2] + (2.0f - Lanes{}) * (m[3] - m[4]) + m[5];
}

/// F(2, 7): A^T = [1 1 1 1 1 1 1 0; 0 1 -1 2 -2 1/2 -1/2 1].
__attribute__((always_inline)) inline void outputColumn(const Lanes (&m)[8], Lanes (&o)[2]) {
  const Lanes sum12 = m[1] + m[2], sum34 = m[3] + m[4], sum56 = m[5] + m[6];
  o[0] = m[0] + sum12 + sum34 + sum56;
  o[1] = m[1] - m[2] + (2.0f - Lanes{}) * (m[3] - m[4]) + (0.5f - Lanes{}) * (m[5] - m[6]) + m[7];
}

/// Where the tiles of a group of images lie: tile g, counted over the
/// group, is tile (row(g), col(g)) of the group's image image(g), th x tw
/// tiles an image. The group's output rows run image after image, h_out
/// each.
struct TileGrid {
  int64_t th, tw, tileH, hOut;

  int64_t image(int64_t g) const { return g / (th * tw); }
  int64_t row(int64_t g) const { return g % (th * tw) / tw; }
  int64_t col(int64_t g) const { return g % tw; }
  /// The group's output rows that tile g covers: [first, end).
  int64_t firstRow(int64_t g) const { return image(g) * hOut + tileH * row(g); }
  int64_t endRow(int64_t g) const { return image(g) * hOut + std::min(hOut, tileH * (row(g) + 1)); }
};

/// V_xi[t][c] = (B^T d B)[xi] for `tiles` tiles from firstTile on and the
/// 16 channels of one block, whose padded copy is `padded` in the group's
/// first image (pw vectors per row, imageFloats floats from one image's to
/// the next's); V_xi[t] lies at v + xi * xiStride + t * tileStride.
template <typename W>
void transformInput(const float* padded, int64_t imageFloats, int64_t pw, const TileGrid& grid,
                    int64_t firstTile, int64_t tiles, float* v, int64_t xiStride,
                    int64_t tileStride) {
  constexpr int kPatchH = W::kPatchH, kPatchW = W::kPatchW;
  for (int64_t t = 0; t < tiles; ++t)
    for (int part = 0; part < kPerBlock; ++part) {
      const int64_t g = firstTile + t;
      const float* patch =
          padded + grid.image(g) * imageFloats +
          (W::kTileH * grid.row(g) * pw + W::kTileW * grid.col(g)) * kChannelBlock +
          part * simd::kLanes;
      // Down the columns, then along the rows.
      Lanes bd[kPatchH][kPatchW];
      for (int c = 0; c < kPatchW; ++c) {
        Lanes column[kPatchH], transformed[kPatchH];
        for (int r = 0; r < kPatchH; ++r) load(patch + (r * pw + c) * kChannelBlock, column[r]);
        inputColumn(column, transformed);
        for (int r = 0; r < kPatchH; ++r) bd[r][c] = transformed[r];
      }
      float* out = v + t * tileStride + part * simd::kLanes;
      for (int r = 0; r < kPatchH; ++r) {
        Lanes row[kPatchW];
        inputColumn(bd[r], row);
        for (int c = 0; c < kPatchW; ++c) store(out + (kPatchW * r + c) * xiStride, row[c]);
      }
    }
}

/// The kTileH x kTileW outputs A^T M A of one tile for a register of
/// output channels, from M_xi at m + xi * xiStride.
template <typename W>
void transformOutput(const float* m, int64_t xiStride, Lanes (&out)[W::kTileH][W::kTileW]) {
  constexpr int kPatchH = W::kPatchH, kPatchW = W::kPatchW;
  Lanes am[W::kTileH][kPatchW];
  for (int c = 0; c < kPatchW; ++c) {
    Lanes column[kPatchH], transformed[W::kTileH];
    for (int r = 0; r < kPatchH; ++r) load(m + (kPatchW * r + c) * xiStride, column[r]);
    outputColumn(column, transformed);
    for (int r = 0; r < W::kTileH; ++r) am[r][c] = transformed[r];
  }
  for (int r = 0; r < W::kTileH; ++r) outputColumn(am[r], out[r]);
}

/// The tiles and patches of the form a layer runs as, from its window and
/// winograd_tile (convWinograd instantiates the same forms): along an axis
/// whose window is k, a tile of 1 and a patch of 1 where k is 1 (the axis a
/// 1-D form does not transform), else a tile of winograd_tile for k = 3
/// (F(2, 3) or F(4, 3)) and of 2 for the others (F(2, 7), F(2, 5), F(2, 2)),
/// and a patch of tile + k - 1.
struct FormShape {
  int64_t tileH, tileW, patchH, patchW;
};

FormShape formOf(const ConvParams& p) {
  auto tile = [&](int64_t k) { return k == 1 ? 1 : k == 3 ? p.winograd_tile : 2; };
  const int64_t tileH = tile(p.k_h), tileW = tile(p.k_w);
  return {tileH, tileW, tileH + p.k_h - 1, tileW + p.k_w - 1};
}

/// 1x7, 7x1, 1x3 or 3x1 windows: F(1x2, 1x7), F(2x1, 7x1), F(1x4, 1x3) or
/// F(4x1, 3x1).
bool isOneDimensional(const ConvParams& p) {
  return (p.k_h == 1 && (p.k_w == 7 || p.k_w == 3)) || (p.k_w == 1 && (p.k_h == 7 || p.k_h == 3));
}

}  // namespace

bool convTakesWinograd(const ConvParams& p) {
  return p.groups == 1 && p.k_d == 1 && p.d_in == 1 && p.d_out == 1 &&
         ((p.k_h == 3 && p.k_w == 3) || (p.k_h == 5 && p.k_w == 5) || (p.k_h == 2 && p.k_w == 2) ||
          isOneDimensional(p)) &&
         p.stride_h == 1 && p.stride_w == 1 && p.dilation_h == 1 && p.dilation_w == 1 &&
         p.pool_h_out == 0;
}

namespace {

/// F(4x4, 3x3) against F(2x2, 3x3) and the packed kernel (bench/micro/run.sh
/// over conv; the numbers: bench/history/2026-11-code-comment-measurements.md):
/// it wins from 10x10 planes up, PathNet's 16-to-16 layers included on
/// AVX-512 (not on AVX2). It loses where its 36 products of c_in x c_out
/// stream for few tiles: 7x7 and 8x8 planes (4 tiles), 14x14 512-to-512
/// (37 MB of transformed weights for chunks of 3 tiles).
/// On a team, each thread streams all of U for its share of the tiles: where
/// U outgrows a core's L2, F(4x4) needs the share minTilesOther asks of the
/// other forms (cgc tune's choices on 14x14 and 28x28 layers:
/// bench/history/2026-11-27-zen5-tune-variants.md).
bool prefersTile4(const ConvParams& p, const ConvContext& context) {
  if (p.k_h != 3 || p.k_w != 3) return false;
  const int64_t tiles = p.n * ((p.h_out + 3) / 4) * ((p.w_out + 3) / 4);
  const int lanes = context.lanes() > 0 ? context.lanes() : simd::kLanes;
  const int64_t fewest = lanes >= 16 ? 32 : 64;  // c_in + c_out
  if (p.c_in < 16 || p.c_in + p.c_out < fewest || p.c_in + p.c_out > 512 || tiles < 9 * p.n)
    return false;
  ConvParams four = p;
  four.winograd_tile = 4;
  const int64_t bytes = winogradWeightCount(four) * static_cast<int64_t>(sizeof(float));
  return bytes <= context.machine.l2Bytes || tiles >= minTilesOther(context.machine);
}

/// The tile of the forms that have one: 4 for 1x3 and 3x1 windows, else 2.
int64_t fixedTile(const ConvParams& p) { return isOneDimensional(p) && p.k_h * p.k_w == 3 ? 4 : 2; }

}  // namespace

bool convPrefersWinograd(const ConvParams& p, const ConvContext& context) {
  if (!convTakesWinograd(p)) return false;
  // Against the packed kernel, 16 input channels or more (bench/micro/run.sh
  // float 1 ...; the numbers: bench/history/2026-11-code-comment-measurements.md):
  //  - F(2, 7) wins on 8x8 to 35x35 planes up to 512 channels, loses at
  //    768-to-768 (chunks of 10 tiles stream 19 MB of transformed weights);
  //  - F(2x2, 5x5) wins on 7x7 to 35x35 planes up to 256-to-512 (19 MB),
  //    loses at 384-to-384 (21 MB);
  //  - F(4, 3) along 1x3 and 3x1 windows wins up to 768-to-768 on 8x8 (14 MB);
  //  - F(2x2, 2x2) wins on DCGAN's phase convolutions, batch 64 (tiles taken
  //    across images).
  // So: transformed weights up to 16 MB, half the L3 (maxTransformedWeights).
  // But in a model, on two threads, Inception-v3's 1x3 and 3x1 layers on 8x8
  // planes (16 tiles of 4) lose (cgc run --profile-out): each thread streams
  // all of U from memory for 8 tiles, where the packed kernel splits the
  // weights. So also 32 tiles or more over the batch on two cores, 16 a core
  // (minTilesOther).
  if (p.k_h != 3 || p.k_w != 3) {
    ConvParams chosen = p;
    chosen.winograd_tile = fixedTile(p);
    const FormShape form = formOf(chosen);
    const int64_t tiles =
        p.n * ((p.h_out + form.tileH - 1) / form.tileH) * ((p.w_out + form.tileW - 1) / form.tileW);
    return p.c_in >= 16 && tiles >= minTilesOther(context.machine) &&
           winogradWeightCount(chosen) <= maxTransformedWeights(context.machine);
  }
  return (p.c_in >= kMinChannels && (p.h_out + 1) / 2 * ((p.w_out + 1) / 2) >= kMinTiles) ||
         prefersTile4(p, context);
}

int64_t convWinogradTile(const ConvParams& p, const ConvContext& context) {
  return prefersTile4(p, context) ? 4 : fixedTile(p);
}

bool convWinogradTakesTile(const ConvParams& p, int64_t tile) {
  if (isOneDimensional(p) || p.k_h != 3) return tile == fixedTile(p);
  return tile == 2 || tile == 4;
}

namespace {

/// Channels rounded up to whole blocks: the transforms' width.
int64_t blocks(int64_t channels) { return (channels + kChannelBlock - 1) / kChannelBlock; }

}  // namespace

int64_t winogradWeightCount(const ConvParams& p) {
  const FormShape form = formOf(p);
  return form.patchH * form.patchW * blocks(p.c_in) * blocks(p.c_out) * kChannelBlock *
         kChannelBlock;
}

namespace {

/// G for F(2x2, 3x3): the transform of a kernel's rows.
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

/// G's entry (row, q) for an axis of `taps` kernel taps whose patch is
/// `patch` inputs. Past F(2, 3), at the first patch - 1 of the points 0, 1,
/// -1, 2, -2, 1/2, -1/2 and infinity: row j evaluates the kernel's
/// polynomial at point a_j, divided by the product of a_j's differences from
/// the other finite points (Lagrange's denominator); the last row is the
/// point at infinity. F(4, 3)'s 1/4, -1/6, 1/24 ... and F(2, 7)'s -2/9,
/// 1/90, 32/45 ... come out of it.
double gOf(int patch, int taps, int row, int q) {
  if (patch == 1) return 1;
  if (patch == 4) return kG2[row][q];
  constexpr double kPoints[7] = {0, 1, -1, 2, -2, 0.5, -0.5};
  if (row == patch - 1) return q == taps - 1 ? 1 : 0;
  double power = 1, denominator = 1;
  for (int i = 0; i < q; ++i) power *= kPoints[row];
  for (int l = 0; l < patch - 1; ++l)
    if (l != row) denominator *= kPoints[row] - kPoints[l];
  return power / denominator;
}

}  // namespace

void winogradWeights(const ConvParams& p, const float* w, float* u) {
  const int kh = static_cast<int>(p.k_h), kw = static_cast<int>(p.k_w);
  const FormShape form = formOf(p);
  const int patchH = static_cast<int>(form.patchH), patchW = static_cast<int>(form.patchW);
  const int64_t cIn = blocks(p.c_in) * kChannelBlock, cOut = blocks(p.c_out) * kChannelBlock;
  // G of each axis, once; the output channel innermost, so that u is
  // written in runs.
  double gH[8][7] = {}, gW[8][7] = {};
  for (int r = 0; r < patchH; ++r)
    for (int q = 0; q < kh; ++q) gH[r][q] = gOf(patchH, kh, r, q);
  for (int col = 0; col < patchW; ++col)
    for (int k = 0; k < kw; ++k) gW[col][k] = gOf(patchW, kw, col, k);
  std::fill_n(u, winogradWeightCount(p), 0.0f);
  for (int64_t c = 0; c < p.c_in; ++c)
    for (int64_t o = 0; o < p.c_out; ++o) {
      const float* kernel = w + (o * p.c_in + c) * kh * kw;
      double gk[8][7] = {};  // G g, down the kernel's columns
      for (int r = 0; r < patchH; ++r)
        for (int k = 0; k < kw; ++k)
          for (int q = 0; q < kh; ++q) gk[r][k] += gH[r][q] * kernel[q * kw + k];
      for (int r = 0; r < patchH; ++r)
        for (int col = 0; col < patchW; ++col) {
          double sum = 0;  // (G g G^T)[r][col]
          for (int k = 0; k < kw; ++k) sum += gk[r][k] * gW[col][k];
          u[((patchW * r + col) * cIn + c) * cOut + o] = static_cast<float>(sum);
        }
    }
}

namespace detail {
namespace {

/// A chunk's products M (tiles from t0 on, of the group of images from n0
/// on), transformed into outputs: stored with the epilogue into a
/// channel-blocked y, or gathered as rows of positions in `rows` and
/// transposed into the NCHW planes with the epilogue, a row segment at a
/// time.
template <typename W>
void storeChunk(const ConvParams& p, const TileGrid& grid, int64_t n0, int64_t t0, int64_t tiles,
                const float* m, int64_t cOut, float* rows, const float* bias, const float* residual,
                float* y) {
  constexpr int64_t kTileH = W::kTileH, kTileW = W::kTileW;
  const int64_t spatial = p.h_out * p.w_out, blocksOut = cOut / kChannelBlock;
  const Bounds bounds = activationBounds(p);
  const Lanes low = bounds.low - Lanes{}, high = bounds.high - Lanes{};
  const int64_t firstRow = grid.firstRow(t0);  // of the group: rows[0]
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t g = t0 + t, image = n0 + grid.image(g);
    const Epilogue e = epilogueOf(p, bias, residual, image, 0);
    float* yn = y + image * p.c_out * spatial;
    const int64_t oh0 = kTileH * grid.row(g), ow0 = kTileW * grid.col(g);
    const int64_t rowBase = grid.image(g) * p.h_out - firstRow;  // rows' row of oh 0
    for (int64_t ob = 0; ob < blocksOut; ++ob)
      for (int part = 0; part < kPerBlock; ++part) {
        const int64_t c0 = ob * kChannelBlock + part * simd::kLanes;  // first channel
        Lanes out[kTileH][kTileW];
        transformOutput<W>(m + t * cOut + c0, tiles * cOut, out);
        for (int64_t oh = oh0; oh < std::min(oh0 + kTileH, p.h_out); ++oh)
          for (int64_t ow = ow0; ow < std::min(ow0 + kTileW, p.w_out); ++ow) {
            Lanes& o = out[oh - oh0][ow - ow0];
            if (!p.blocked_output) {  // the epilogue comes with the transpose
              store(rows + ((rowBase + oh) * p.w_out + ow) * cOut + c0, o);
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
  }
  if (p.blocked_output) return;
  // Each output row's columns that the chunk's tiles cover.
  const int64_t last = t0 + tiles - 1;
  for (int64_t r = firstRow; r < grid.endRow(last); ++r) {
    const int64_t image = r / p.h_out, oh = r % p.h_out, i = oh / kTileH;
    auto isTileRowOf = [&](int64_t g) { return image == grid.image(g) && i == grid.row(g); };
    const int64_t from = isTileRowOf(t0) ? kTileW * grid.col(t0) : 0;
    const int64_t to =
        isTileRowOf(last) ? std::min(p.w_out, kTileW * grid.col(last) + kTileW) : p.w_out;
    const int64_t pos = oh * p.w_out + from;
    transpose(rows + ((r - firstRow) * p.w_out + from) * cOut, cOut, to - from, p.c_out,
              y + (n0 + image) * p.c_out * spatial + pos, spatial,
              epilogueOf(p, bias, residual, n0 + image, 0).at(0, pos));
  }
}

/// The Winograd convolution in form W. Images are taken in groups whose
/// tiles give each thread at least a chunk (one image, unless its planes
/// are small: DCGAN's 4x4 to 16x16 at batch 64), so that each chunk runs U
/// past enough tiles.
template <typename W>
void convWinogradTiles(const ConvParams& p, const float* x, const float* u, const float* bias,
                       const float* residual, float* y, const Team& team) {
  constexpr int64_t kXi = W::kXi, kTileH = W::kTileH, kTileW = W::kTileW;
  const int64_t th = (p.h_out + kTileH - 1) / kTileH, tw = (p.w_out + kTileW - 1) / kTileW;
  const TileGrid grid{th, tw, kTileH, p.h_out};
  // The padded input the tiles read.
  const int64_t ph = kTileH * th + W::kPatchH - kTileH, pw = kTileW * tw + W::kPatchW - kTileW;
  const int64_t blocksIn = blocks(p.c_in), blocksOut = blocks(p.c_out);
  // The transforms' channels: whole blocks.
  const int64_t cIn = blocksIn * kChannelBlock, cOut = blocksOut * kChannelBlock;
  const int64_t inSpatial = p.h_in * p.w_in, imageFloats = blocksIn * ph * pw * kChannelBlock;
  const int64_t chunkTiles = std::max<int64_t>(1, kChunkFloats / (kXi * (cIn + cOut)));
  const int64_t groupImages = std::clamp<int64_t>(
      (chunkTiles * team.size() + th * tw - 1) / (th * tw), 1, std::max<int64_t>(1, p.n));
  // The output rows a chunk's tiles touch: those of its whole tile rows
  // and of the partial ones at either end.
  const int64_t chunkPositions = (chunkTiles / tw + 2) * kTileH * p.w_out;
  float* v = scratch<float>(kXi * chunkTiles * (cIn + cOut) + chunkPositions * cOut +
                            groupImages * imageFloats);
  float* m = v + kXi * chunkTiles * cIn;
  float* rows = m + kXi * chunkTiles * cOut;  // [position][channel] for an NCHW y
  // Every thread reads the whole padded group: each pads its share of the
  // channel blocks into thread 0's scratch.
  float* padded = team.shareFromFirst(rows + chunkPositions * cOut);
  for (int64_t n0 = 0; n0 < p.n; n0 += groupImages) {
    const int64_t images = std::min(groupImages, p.n - n0);
    if (n0 > 0) team.barrier();  // all done with the last group
    for (int64_t image = 0; image < images; ++image)
      padInput(p, x + (n0 + image) * p.c_in * inSpatial, 1, ph, pw, team.split(blocksIn), {0, ph},
               p.blocked_input ? kChannelBlock : 1, padded + image * imageFloats, !p.blocked_input);
    team.barrier();
    // Tiles, not tile rows: 14x14 planes have 7 rows, 4 + 3 on two threads.
    const Range mine = team.split(images * th * tw);
    for (int64_t t0 = mine.begin; t0 < mine.end; t0 += chunkTiles) {
      const int64_t tiles = std::min(mine.end, t0 + chunkTiles) - t0;
      for (int64_t cb = 0; cb < blocksIn; ++cb)
        transformInput<W>(padded + cb * ph * pw * kChannelBlock, imageFloats, pw, grid, t0, tiles,
                          v + cb * kChannelBlock, tiles * cIn, cIn);
      for (int64_t xi = 0; xi < kXi; ++xi)
        gemmRows(tiles, cOut, cIn, v + xi * tiles * cIn, cIn, u + xi * cIn * cOut, cOut,
                 m + xi * tiles * cOut, cOut);
      storeChunk<W>(p, grid, n0, t0, tiles, m, cOut, rows, bias, residual, y);
    }
  }
  team.barrier();  // thread 0's padded copy outlives the others' reads
}

}  // namespace

bool takesWinograd(const ConvParams& p) { return convTakesWinograd(p); }

bool prefersWinograd(const ConvParams& p, const ConvContext& context) {
  return convPrefersWinograd(p, context);
}

void convWinograd(const ConvParams& p, const float* x, const float* u, const float* bias,
                  const float* residual, float* y, const Team& team) {
  auto run = [&](auto form) {
    convWinogradTiles<decltype(form)>(p, x, u, bias, residual, y, team);
  };
  const bool four = p.winograd_tile == 4;
  if (p.k_h == 1 && p.k_w == 7) return run(F1x2Of1x7{});
  if (p.k_h == 7 && p.k_w == 1) return run(F2x1Of7x1{});
  if (p.k_h == 1) return four ? run(F1x4Of1x3{}) : run(F1x2Of1x3{});
  if (p.k_w == 1) return four ? run(F4x1Of3x1{}) : run(F2x1Of3x1{});
  if (p.k_h == 5) return run(F2x2Of5x5{});
  if (p.k_h == 2) return run(F2x2Of2x2{});
  four ? run(F4x4Of3x3{}) : run(F2x2Of3x3{});
}

}  // namespace detail
}  // namespace cgc::rt
