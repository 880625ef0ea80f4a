// What the int8 direct convolution's two products share: the layout of the
// copied input planes and of the work (qconv_direct.cpp decides it), and
// the product that runs along output channels (qconv_channels_vnni.h), which
// reads the same planes and the same packed weights as the product along
// positions.
#pragma once

#include <cstdint>

#include "cgc/kernels.h"
#include "int8/quant_support.h"

namespace cgc::rt::detail {

/// Output channels a channel vector holds, and positions a channel tile.
inline constexpr int64_t kChannelLanes = 16;
inline constexpr int64_t kTilePositions = 7;

struct DirectGeometry {
  int64_t cinG, coutG, channelQuads, taps, quads;
  bool tapPlanes;                          // a column plane per column tap (else per phase)
  int64_t columnPlanes;                    // per row phase
  int64_t hq, wq, planeBytes, imageBytes;  // a plane, and an (image, group)'s planes
  int64_t virtualPositions, tiles, blocks, chunkBlocks, chunks;
  bool channelTiles;  // the product along channels (qconv_channels_vnni.cpp), not positions
};

/// Where a tile's 32 positions go in y, per half of 16 lanes: runs of
/// contiguous outputs (a row, or rows that follow each other), as the
/// lanes (a mask) and the y position of the half's lane 0. Made once per
/// tile for all its channels.
struct TileRuns {
  struct Run {
    uint16_t lanes;
    int64_t base;
  };
  Run runs[2][kQTile / 2];
  int64_t count[2];

  /// Whether the tile's 32 positions are one run of y, and that run's
  /// lanes.
  bool oneRun() const {
    return count[0] == 1 && count[1] == 1 && runs[1][0].base == runs[0][0].base + 16;
  }
  uint32_t lanes32() const { return runs[0][0].lanes | uint32_t{runs[1][0].lanes} << 16; }
};

/// One block's job: where its weights, terms and results are.
struct BlockJob {
  const int8_t* w;   // the block's packed weights
  int64_t channels;  // of its 8, those that exist
  const int32_t* bias;
  const float* multiplier;
  uint8_t* y;               // channel 0 of the block, position 0 (bytes of y's type)
  const uint8_t* residual;  // likewise, or null
  int64_t plane;            // h_out * w_out
  bool packs;               // into bytes by storePacked (its conditions hold)
};

/// The product along positions of `count` tiles (kQTile * kQuad bytes
/// apart from a on; runs[i]: tile i's) and one block, each then through
/// the epilogue: the portable loops for a QEpilogue (qconv_direct.cpp),
/// VNNI's for its Requant16 (requant_skx.h, qconv_direct_vnni.cpp: builds
/// with VNNI), the epilogue each reads.
struct Requant16;
void tileBlocks(const QEpilogue& e, const uint8_t* a, int64_t count, const int64_t* offsets,
                int64_t quads, const BlockJob& job, const TileRuns* runs);
void tileBlocks(const Requant16& e, const uint8_t* a, int64_t count, const int64_t* offsets,
                int64_t quads, const BlockJob& job, const TileRuns* runs);

/// The channel-vector product over an (image, group)'s copied planes:
/// every output of every image and group, split over the team. `planes`
/// and `offsets` are qconvDirect's (the byte offset of each quad from a
/// position's first); the other arguments are qconvDirect's own. A
/// function per tier (qconv_channels_vnni.cpp, qconv_channels_vbmi.cpp),
/// which builds without the tier lack.
void channelTilesVnni(const QConvParams& p, const DirectGeometry& g, const uint8_t* planes,
                      const int64_t* offsets, const uint8_t* packed, const int32_t* weightSums,
                      const float* w_scale, const int32_t* bias, const void* residual, void* y,
                      const Team& team);
void channelTilesVbmi(const QConvParams& p, const DirectGeometry& g, const uint8_t* planes,
                      const int64_t* offsets, const uint8_t* packed, const int32_t* weightSums,
                      const float* w_scale, const int32_t* bias, const void* residual, void* y,
                      const Team& team);

}  // namespace cgc::rt::detail
