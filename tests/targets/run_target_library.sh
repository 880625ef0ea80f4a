#!/usr/bin/env bash
# A library built for several targets, through cgc run (cgc compile --target
# a,b,c and the shared library of its builds): by default it runs the best
# build this CPU has; each build this CPU can run, forced with CGC_TARGET,
# gives the reference outputs (PyTorch's); a build it cannot run, and the
# wrong uses, fail with a one-line error and exit 1.
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
for model in tiny_cnn inception; do
  data=$samples/$model/test_data_set_0
  run=("$cgc" run "$samples/$model/model.onnx" --target "$list" --inputs "$data" --check "$data")
  "${run[@]}" 2>"$work/err.txt" || { cat "$work/err.txt"; exit 1; }
  grep -F "this CPU runs the $best build (of $list)" "$work/err.txt"
  for target in $best_first; do
    if runs_here "$target"; then
      CGC_TARGET=$target "${run[@]}" 2>"$work/err.txt" || { cat "$work/err.txt"; exit 1; }
      grep -F "this CPU runs the $target build" "$work/err.txt"
    else
      CGC_TARGET=$target fails_with 1 "CGC_TARGET=$target: this CPU lacks" "${run[@]}"
    fi
  done
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
echo "target library: OK (this CPU runs the $best build by default)"
