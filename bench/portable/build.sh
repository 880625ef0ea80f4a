#!/usr/bin/env bash
# Builds self-contained timing programs (timing_driver.cpp) for a model at
# several executor configurations, for a machine that has no cgc: the
# runtime and LIBXSMM are linked statically, libstdc++ too; only glibc is
# needed there. The programs take AVX-512 (x86-64-v4) code; LIBXSMM
# dispatches its kernels for the CPU it finds at run time.
#   build.sh CGC BUILD_DIR MODEL.onnx OUT_DIR NAME CONFIG... [-- CGC_ARGS...]
# CONFIG is ExT (2x8); OUT_DIR/NAME_ExT is the program for it. The weights
# are read at run time from the file given on the command line; they are the
# same for every configuration, so one copy is kept, OUT_DIR/NAME.weights.bin.
set -euo pipefail
cgc="$1" build="$2" model="$3" out="$4" name="$5"
shift 5
configs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do configs+=("$1"); shift; done
[ $# -gt 0 ] && shift
here="$(cd "$(dirname "$0")" && pwd)"
runtime="$here/../../runtime/include"
mkdir -p "$out"
for config in "${configs[@]}"; do
  e="${config%x*}" t="${config#*x}"
  gen="$out/gen_${name}_$config"
  "$cgc" compile "$model" -q -o "$gen" --name "${name}_$config" --weights file \
      --executors "$e" --threads "$t" "$@"
  prefix="$(basename "$gen"/*.h .h)"
  class="$(grep -m1 -oP '^class \K\w+' "$gen/$prefix.h")"
  c++ -std=c++20 -O2 -march=x86-64-v4 -mtune=generic -I"$runtime" -I"$gen" \
      -DCGC_MODEL_HEADER="\"$prefix.h\"" -DCGC_MODEL_CLASS="cgc_models::$class" \
      "$gen/$prefix.cpp" "$here/timing_driver.cpp" "$build/runtime/libcgc_runtime.a" \
      -static-libstdc++ -static-libgcc -lxsmm -lxsmmnoblas -lpthread -ldl \
      -o "$out/${name}_$config"
  if [ -f "$out/$name.weights.bin" ]; then
    cmp -s "$gen/$prefix.weights.bin" "$out/$name.weights.bin" ||
      { echo "the weights of $config differ from the first configuration's" >&2; exit 1; }
  else
    cp "$gen/$prefix.weights.bin" "$out/$name.weights.bin"
  fi
  rm -rf "$gen"
  echo "built $out/${name}_$config"
done
