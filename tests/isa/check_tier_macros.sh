#!/usr/bin/env bash
# No code tests a CPU feature macro (__AVX512VNNI__, __AVX2__, __FMA__, __AMX_TILE__,
# __ARM_FEATURE_DOTPROD, ...) itself: kernels test the tiers' CGC_ISA_*
# conditions, which core/isa.h derives from runtime/include/cgc/isa_tiers.def,
# so that the compile-time conditions, the run-time check, the targets and
# the compiler's int8 choice cannot disagree. Prints every offending line.
# Usage: check_tier_macros.sh SOURCE_DIR
set -u
cd "$1"
pattern='__(AVX[A-Z0-9_]*|AMX[A-Z0-9_]*|SSE[0-9A-Z_]*|SSSE3|FMA|F16C|BMI2?|POPCNT|ARM_NEON|ARM_FEATURE_[A-Z0-9_]+)__?'
found=$(grep -rnE "^[[:space:]]*#[[:space:]]*(if|elif|ifdef|ifndef)\b.*$pattern|defined[[:space:]]*\(?[[:space:]]*$pattern" \
          runtime compiler codegen lowering passes ir onnx_frontend tests bench \
          --include='*.cpp' --include='*.h' --include='*.hpp' --include='*.in' || true)
if [ -n "$found" ]; then
  echo "$found"
  echo "FAIL: raw CPU feature macros above; test a tier (CGC_ISA_*, core/isa.h) instead"
  exit 1
fi
echo "no raw CPU feature macro outside the tier table"
