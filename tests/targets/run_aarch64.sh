#!/usr/bin/env bash
# aarch64 end to end under qemu-user, the way the README tells users to
# cross-compile: installs the host's cgc, cross-builds the runtime with
# cmake -S runtime and cmake/toolchains/aarch64-linux-gnu.cmake (no
# LIBXSMM: the portable GEMM) into the same prefix, configures a project
# with the same toolchain file whose cgc_add_graph(... TARGET aarch64)
# compiles sample models, links each with the driver statically, runs it
# under qemu-aarch64 and compares its outputs with the sample's reference
# outputs. The runtime's objects must be AArch64 code.
# Usage: run_aarch64.sh SOURCE_DIR CGC_BUILD_DIR SAMPLES WORK [TARGET]
set -eu
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) samples=$(cd "$3" && pwd) work=$4
target=${5:-aarch64}
here=$(cd "$(dirname "$0")" && pwd)
toolchain="$src/cmake/toolchains/aarch64-linux-gnu.cmake"
models=(tiny_cnn inception mlp)
rm -rf "$work" && mkdir -p "$work"
for tool in aarch64-linux-gnu-g++ qemu-aarch64; do
  command -v $tool >/dev/null || { echo "FAIL: $tool is missing (build.sh installs it)"; exit 1; }
done
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/runtime" -B "$work/runtime" -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
      -DCGC_RUNTIME_TARGET="$target" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/runtime" -j2
cmake --install "$work/runtime" --prefix "$work/prefix" >/dev/null
library="$work/prefix/lib/libcgc_runtime_$target.a"
[ -f "$library" ] || library="$work/prefix/lib64/libcgc_runtime_$target.a"
aarch64-linux-gnu-objdump -f "$library" | grep -q 'elf64-littleaarch64' ||
  { echo "FAIL: $library is not AArch64 code"; exit 1; }
/usr/bin/python3 "$here/make_raw.py" "$samples" "$work/raw" "${models[@]}"
IFS=';' eval 'list="${models[*]}"'
cmake -S "$here/cross" -B "$work/app" -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
      -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
      -DSAMPLES_DIR="$samples" -DSAMPLES="$list" -DDRIVER="$here/driver.cpp" \
      -DCGC_TEST_TARGET="$target" >/dev/null
cmake --build "$work/app" -j2
status=0
for model in "${models[@]}"; do
  aarch64-linux-gnu-objdump -f "$work/app/driver_$model" | grep -q 'elf64-littleaarch64' ||
    { echo "FAIL: driver_$model is not AArch64 code"; exit 1; }
  # -cpu max: a CPU with the dot-product extension (Armv8.2-A) and more.
  qemu-aarch64 -cpu max "$work/app/driver_$model" "$work/raw/$model" || status=1
done
exit $status
