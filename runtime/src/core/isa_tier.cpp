// Which instruction-set tier this runtime was built for, from the
// compile-time conditions core/isa.h derives from the tier table: what the
// int8 packing (buildQIsa) and the kernel tests ask.
#include "cgc/runtime.h"
#include "core/isa.h"

namespace cgc {

const char* runtime_isa_tier() { return CGC_ISA_BEST; }

}  // namespace cgc
