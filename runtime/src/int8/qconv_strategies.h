// The int8 convolution's variants (cgc/kernels/qconv_variants.def), each
// in the file of its kernel: the depthwise ones (qconv_depthwise.cpp), the
// direct ones (qconv_direct.cpp, with the product along channels of
// qconv_channels_vnni.cpp), the implicit GEMM on each packing (qconv.cpp):
// the declarations of their functions, which qconv.cpp's dispatch table
// lists.
#pragma once

#include "cgc/kernels.h"

namespace cgc::rt::detail {

/// Each variant's functions: takes<Name> (the layers it computes; p's
/// packing is its own, or kNone), prefers<Name> (whether it should run them
/// rather than the variants after it, on a CPU of instruction-set tier
/// `tier`) and qconv<Name> (qconv on weights packed as the variant reads
/// them, which hold w - w_zero).
#define CGC_QCONV_VARIANT(name, variantTier, variantPacking)                                 \
  bool takes##name(const QConvParams& p);                                                    \
  bool prefers##name(const QConvParams& p, const char* tier);                                \
  void qconv##name(const QConvParams& p, const void* x, const void* w, const float* w_scale, \
                   const int32_t* bias, const void* residual, void* y, const Team& team);
#include "cgc/kernels/qconv_variants.def"
#undef CGC_QCONV_VARIANT

}  // namespace cgc::rt::detail
