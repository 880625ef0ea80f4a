// CGC_IGNORE_MAYBE_UNINITIALIZED, inside a `#pragma GCC diagnostic push`:
// GCC 12's AVX-512 conversions, extracts, permutes and min/max pass
// _mm512_undefined_* as the masked-off source, which -Wmaybe-uninitialized
// (and, in the sanitizers' builds, -Wuninitialized) reports once inlined
// (GCC bug 105593, a false positive). Clang has neither the bug nor the
// warning (and warns on its name).
#pragma once

#if defined(__clang__)
#define CGC_IGNORE_MAYBE_UNINITIALIZED
#else
#define CGC_IGNORE_MAYBE_UNINITIALIZED                        \
  _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#endif
