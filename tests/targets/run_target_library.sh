#!/usr/bin/env bash
# A library built for several targets, through cgc run (cgc compile --target
# a,b,c and the shared library of its builds): by default it runs the best
# build this CPU has; each build this CPU can run, forced with CGC_TARGET,
# gives the reference outputs (PyTorch's); a build it cannot run, and the
# wrong uses, fail with a one-line error and exit 1. Then the same library
# through cgc compile and cgc build.
# Usage: run_target_library.sh CGC SAMPLES_DIR WORK_DIR
set -eu
cgc=$1 samples=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
export CGC_CACHE_DIR="$work/cache"
list=x86-64-v2,x86-64-v3,cascadelake
best_first="cascadelake x86-64-v3 x86-64-v2"
runnable=$("$cgc" targets --runnable)
runs_here() { grep -qx "$1" <<<"$runnable"; }

# fails_with CODE TEXT COMMAND...: COMMAND exits CODE and prints TEXT.
fails_with() {
  local code=$1 text=$2
  shift 2
  local rc=0
  "$@" >"$work/out.txt" 2>&1 || rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$text" "$work/out.txt"; then
    echo "FAIL: $* exited $rc, expected $code and '$text':"
    cat "$work/out.txt"
    exit 1
  fi
  echo "ok: $* -> exit $rc: $(grep -F -- "$text" "$work/out.txt" | head -1)"
}

best=""
for target in $best_first; do
  if runs_here "$target"; then best=$target && break; fi
done
# Runs the command with each target forced (CGC_TARGET): the target's build
# where this CPU runs it, else a one-line refusal.
each_target_forced() {
  for target in $best_first; do
    if runs_here "$target"; then
      CGC_TARGET=$target "$@" 2>"$work/err.txt" || { cat "$work/err.txt"; exit 1; }
      grep -F "this CPU runs the $target build" "$work/err.txt"
    else
      CGC_TARGET=$target fails_with 1 "CGC_TARGET=$target: this CPU lacks" "$@"
    fi
  done
}

for model in tiny_cnn inception; do
  data=$samples/$model/test_data_set_0
  run=("$cgc" run "$samples/$model/model.onnx" --target "$list" --inputs "$data" --check "$data")
  "${run[@]}" 2>"$work/err.txt" || { cat "$work/err.txt"; exit 1; }
  grep -F "this CPU runs the $best build (of $list)" "$work/err.txt"
  each_target_forced "${run[@]}"
done

model=$samples/tiny_cnn/model.onnx
CGC_TARGET=znver9 fails_with 1 "CGC_TARGET=znver9: the library was built for cascadelake, x86-64-v3, x86-64-v2 only" \
  "$cgc" run "$model" --target "$list" --fill-missing-inputs
fails_with 1 "--target lists x86-64-v3 twice" "$cgc" compile "$model" --target x86-64-v3,x86-64-v3 -o "$work/c"
fails_with 1 "one library holds one processor family" \
  "$cgc" compile "$model" --target x86-64-v3,aarch64 -o "$work/c"
fails_with 1 "unknown target 'znver9'" "$cgc" compile "$model" --target x86-64-v3,znver9 -o "$work/c"
fails_with 1 "--weights file with several targets" \
  "$cgc" compile "$model" --target "$list" --weights file -o "$work/c"
fails_with 1 "a profile is measured for one build" "$cgc" tune "$model" --target "$list"

# What cgc compile writes: the dispatcher, and each build under its own prefix.
"$cgc" compile "$model" --target "$list" --name TinyCnn -o "$work/c" -q
for file in tiny_cnn.h tiny_cnn.cpp tiny_cnn_x86_64_v2.cpp tiny_cnn_x86_64_v3.cpp \
            tiny_cnn_cascadelake.cpp tiny_cnn_cascadelake.weights.bin; do
  test -s "$work/c/$file" || { echo "FAIL: cgc compile wrote no $file"; exit 1; }
done
# cgc build of that output: each build compiled with its target's flags and
# linked with its target's runtime into an object kept beside the library;
# the x86-64-v3 one holds no AVX-512 instruction (none EVEX-encoded, the
# 0x62 prefix, so no zmm or mask register either), where the cascadelake one
# does; the library runs each build this CPU can, forced with CGC_TARGET.
"$cgc" build "$work/c/tiny_cnn.cpp" -o "$work/fleet.so" -q
evex() { objdump -d --insn-width=15 "$1" | grep -P '^ +[0-9a-f]+:\t62 [0-9a-f ]*\t' || true; }
test -n "$(evex "$work/fleet.cascadelake.o")" || { echo "FAIL: no EVEX code in the cascadelake build"; exit 1; }
if [ -n "$(evex "$work/fleet.x86-64-v3.o")" ]; then
  echo "FAIL: AVX-512 instructions in the x86-64-v3 build:"; evex "$work/fleet.x86-64-v3.o" | head; exit 1
fi
echo "ok: no AVX-512 instruction in $work/fleet.x86-64-v3.o"
data=$samples/tiny_cnn/test_data_set_0
cd "$work"  # --library fleet.so: a path relative to it, not a name for dlopen to search
prebuilt=("$cgc" run "$model" --target "$list" --library fleet.so --name TinyCnn
          --inputs "$data" --check "$data")
each_target_forced "${prebuilt[@]}"
# Given with its builds (out/*.cpp), the dispatcher builds the same library;
# alone, or with another model, it is a one-line error, and so are models of
# different targets (two of the builds, each a model of its own).
"$cgc" build "$work"/c/*.cpp -o "$work/all.so" -q -O0
"$cgc" run "$model" --target "$list" --library all.so --name TinyCnn --inputs "$data" --check "$data" -q
mkdir -p "$work/alone" && cp "$work"/c/tiny_cnn.{h,cpp} "$work"/c/tiny_cnn_x86_64_v3.* "$work/alone"
fails_with 1 "$work/alone/tiny_cnn_cascadelake.cpp: error: no such generated source: $work/alone/tiny_cnn.cpp needs it for target cascadelake" \
  "$cgc" build "$work/alone/tiny_cnn.cpp" -o "$work/alone.so"
fails_with 1 "is a library for several targets, built on its own: build $work/alone/tiny_cnn_x86_64_v3.cpp into another library" \
  "$cgc" build "$work/c/tiny_cnn.cpp" "$work/alone/tiny_cnn_x86_64_v3.cpp" -o "$work/mixed.so"
fails_with 1 "$work/none/fleet.so: error: no such directory for the library" \
  "$cgc" build "$work/c/tiny_cnn.cpp" -o "$work/none/fleet.so"
fails_with 1 "$work/c/tiny_cnn_x86_64_v2.cpp is for target x86-64-v2 and $work/c/tiny_cnn_x86_64_v3.cpp for x86-64-v3" \
  "$cgc" build "$work/c/tiny_cnn_x86_64_v2.cpp" "$work/c/tiny_cnn_x86_64_v3.cpp" -o "$work/mixed.so"
echo "target library: OK (this CPU runs the $best build by default)"
