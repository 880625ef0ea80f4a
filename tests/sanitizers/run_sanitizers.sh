#!/usr/bin/env bash
# Builds every sample model's generated code, the runtime and a driver with
# AddressSanitizer + UndefinedBehaviorSanitizer (-Wall -Wextra -Werror) and
# runs it. Any sanitizer report fails the test.
# Usage: run_sanitizers.sh CGC SAMPLES_DIR RUNTIME_DIR WORK_DIR
set -eu
cgc=$1 samples=$2 runtime=$3 work=$4
rm -rf "$work" && mkdir -p "$work/runtime"
flags="-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all -Wall -Wextra -Werror"

# The runtime once, with sanitizers.
objects=()
for src in "$runtime"/src/*.cpp; do
  obj="$work/runtime/$(basename "$src" .cpp).o"
  c++ $flags -I"$runtime/include" -c "$src" -o "$obj" &
  objects+=("$obj")
done
wait

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for sample in tiny_cnn mlp shapes deconv batch_norm_only; do
  out="$work/$sample"
  "$cgc" compile "$samples/$sample/model.onnx" -o "$out" --name "San_$sample" --quiet
  prefix="san_$sample"
  c++ $flags -I"$runtime/include" -I"$out" -Wa,-I"$out" \
      -DCGC_MODEL_HEADER="\"$prefix.h\"" -DCGC_MODEL_PREFIX="$prefix" \
      "$out/$prefix.cpp" "$(dirname "$0")/driver.cpp" "${objects[@]}" \
      -lxsmm -lxsmmnoblas -lpthread -ldl -o "$out/driver"
  "$out/driver"
done
echo "sanitizers: all sample models ran clean under ASan and UBSan"
