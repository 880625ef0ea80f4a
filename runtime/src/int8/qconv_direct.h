// What the int8 direct convolution's two products share: the layout of the
// copied input planes and of the work (qconv_direct.cpp decides it), and
// the product that runs along output channels (qconv_channels_vnni.cpp), which
// reads the same planes and the same packed weights as the product along
// positions.
#pragma once

#include <cstdint>

#include "cgc/kernels.h"
#include "core/isa.h"

namespace cgc::rt::detail {

/// Whether this build has the channel-vector product (AVX-512 VNNI).
#if CGC_ISA_VNNI
inline constexpr bool kChannelTiles = true;
#else
inline constexpr bool kChannelTiles = false;
#endif

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

/// The channel-vector product over an (image, group)'s copied planes:
/// every output of every image and group, split over the team. `planes`
/// and `offsets` are qconvDirect's (the byte offset of each quad from a
/// position's first); the other arguments are qconvDirect's own.
void channelTiles(const QConvParams& p, const DirectGeometry& g, const uint8_t* planes,
                  const int64_t* offsets, const uint8_t* packed, const int32_t* weightSums,
                  const float* w_scale, const int32_t* bias, const void* residual, void* y,
                  const Team& team);

}  // namespace cgc::rt::detail
