#!/usr/bin/env bash
# The x86 levels end to end: compiles sample models with cgc compile
# --target, builds each with the target's flags against the runtime built
# for it (libcgc_runtime_<target>.a), checks with objdump that the model's
# object and every object of that runtime hold no instruction the target
# lacks, then runs them here against the samples' reference outputs.
#
# What is checked, and why there: the linked executable also holds LIBXSMM's
# static library, which carries code for every ISA behind its own CPUID
# dispatch (and JITs at run time, limited by the ModelSpec's xsmm_target),
# so the executable would always show AVX-512. The model's object and cgc's
# runtime are what the target's flags compile; in them:
#   x86-64-v3: no zmm register and no k mask register (AVX-512), and in
#              the runtime ymm FMAs (its kernels are vector code, not
#              scalar loops; the model's own code is calls and tables);
#   x86-64-v2: no ymm or zmm register (no AVX at all);
#   x86-64-v4: zmm registers in the runtime (its AVX-512 paths). Where
#              the CPU lacks AVX-512F, creating the model must fail with
#              CGC_ERROR_CPU naming avx512f (driver exit 3), not SIGILL;
#              where it has it, the outputs are compared;
#   cascadelake: v4's, and vpdpbusd in the runtime (its int8 kernels) but
#              no VBMI byte permute (vpermb, vpermt2b, vpermi2b): Cascade
#              Lake has VNNI without VBMI;
#   x86-64-v4-vnni: v4's, and vpdpbusd and vpermb in the runtime (its int8
#              kernels), no vdpbf16ps; where the CPU lacks AVX-512 VNNI or
#              VBMI, the model must be refused the same way, naming the
#              feature;
#   zen4:      x86-64-v4-vnni's, and vdpbf16ps in the runtime (matmul_narrow's
#              bfloat16 kernel).
# Usage: run_x86_targets.sh CGC RUNTIME_DIR(build)/runtime INCLUDE_DIR SAMPLES WORK TARGET=FLAGS...
set -eu
cgc=$1 runtime=$2 include=$3 samples=$4 work=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
models=(tiny_cnn inception branches mlp)
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 "$here/make_raw.py" "$samples" "$work/raw" "${models[@]}"

# check_isa TARGET runtime|model FILE: objdump's disassembly of FILE against
# the target's rules.
check_isa() {
  local target=$1 kind=$2
  shift 2
  objdump -d --no-show-raw-insn "$@" > "$work/$target.asm"
  local zmm ymm kmask fma vnni vbmi bf16
  zmm=$(grep -c '%zmm' "$work/$target.asm" || true)
  vbmi=$(grep -cE 'vperm(b|t2b|i2b)\b' "$work/$target.asm" || true)
  vnni=$(grep -cE 'vpdpbusd.*%zmm' "$work/$target.asm" || true)
  bf16=$(grep -c 'vdpbf16ps' "$work/$target.asm" || true)
  ymm=$(grep -c '%ymm' "$work/$target.asm" || true)
  kmask=$(grep -cE '%k[0-7]\b' "$work/$target.asm" || true)
  fma=$(grep -cE 'vfmadd[0-9a-z]*ps.*%ymm' "$work/$target.asm" || true)
  echo "$target: $zmm zmm, $ymm ymm, $kmask k-mask operands, $fma ymm FMAs, $vnni zmm vpdpbusd, $vbmi VBMI permutes, $bf16 vdpbf16ps in $*"
  case $target/$kind in
    x86-64-v2/*) [ "$zmm" -eq 0 ] && [ "$ymm" -eq 0 ] && [ "$kmask" -eq 0 ] ;;
    x86-64-v3/runtime) [ "$zmm" -eq 0 ] && [ "$kmask" -eq 0 ] && [ "$fma" -gt 0 ] ;;
    x86-64-v3/model) [ "$zmm" -eq 0 ] && [ "$kmask" -eq 0 ] ;;
    x86-64-v4/runtime) [ "$zmm" -gt 0 ] && [ "$vnni" -eq 0 ] ;;
    cascadelake/runtime) [ "$zmm" -gt 0 ] && [ "$vnni" -gt 0 ] && [ "$vbmi" -eq 0 ] ;;
    x86-64-v4-vnni/runtime) [ "$zmm" -gt 0 ] && [ "$vnni" -gt 0 ] && [ "$vbmi" -gt 0 ] && [ "$bf16" -eq 0 ] ;;
    zen4/runtime) [ "$zmm" -gt 0 ] && [ "$vnni" -gt 0 ] && [ "$vbmi" -gt 0 ] && [ "$bf16" -gt 0 ] ;;
  esac || { echo "FAIL: $target code holds instructions its target lacks (or lacks its vectors)"; exit 1; }
}

status=0
for spec in "$@"; do
  target=${spec%%=*} flags=${spec#*=}
  library="$runtime/libcgc_runtime_$target.a"
  check_isa "$target" runtime "$library"
  for model in "${models[@]}"; do
    out="$work/$target/$model" prefix="tgt_$model"
    "$cgc" compile "$samples/$model/model.onnx" -o "$out" --name "Tgt_$model" --target "$target" --quiet
    # shellcheck disable=SC2086
    c++ -std=c++20 -O2 $flags -I"$include" -I"$out" -Wa,-I"$out" -c "$out/$prefix.cpp" \
        -o "$out/$prefix.o"
    check_isa "$target" model "$out/$prefix.o"
    c++ -std=c++20 -O2 -I"$include" -I"$out" -DCGC_MODEL_HEADER="\"$prefix.h\"" \
        -DCGC_MODEL_PREFIX="$prefix" -DCGC_MODEL_CLASS="cgc_models::Tgt_$model" \
        "$here/driver.cpp" "$out/$prefix.o" "$library" -lxsmm -lxsmmnoblas -lpthread -ldl \
        -o "$out/driver"
    set +e
    "$out/driver" "$work/raw/$model" 2> "$out/stderr.txt"
    code=$?
    set -e
    cat "$out/stderr.txt"
    if [ $code -eq 3 ] && [[ "$target" = x86-64-v4* || "$target" = cascadelake || "$target" = zen4 ]] &&
       grep -qE 'avx512(f|vnni|vbmi|bf16)' "$out/stderr.txt"; then
      echo "$target/$model: refused at creation (CGC_ERROR_CPU, names the feature): this CPU cannot run it"
    elif [ $code -ne 0 ]; then
      echo "FAIL: $target/$model (driver exit $code)"
      status=1
    fi
  done
done
exit $status
