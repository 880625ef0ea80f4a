// Which instruction-set tier this runtime was built for, from the
// compile-time conditions core/isa.h derives from the tier table: what the
// kernels packing int8 weights at run time and the kernel tests ask.
#include "cgc/runtime.h"
#include "core/isa.h"

namespace cgc {

const char* runtime_isa_tier() { return CGC_ISA_BEST; }

}  // namespace cgc
