#!/usr/bin/env bash
# Builds a micro-benchmark of bench/micro/ against the native runtime of
# build/ (after ./build.sh), or against the runtime of target
# $CGC_MICRO_TARGET (cgc/targets.def, e.g. cascadelake), and runs it with
# the given arguments: conv_micro.cpp, or NAME_micro.cpp where the first
# argument is NAME (narrow, bandwidth), e.g.
#   bench/micro/run.sh float 1 64 64 56 3 1 winograd4
#   CGC_MICRO_TARGET=cascadelake bench/micro/run.sh int8 1 64 256 56 1 1 add
#   bench/micro/run.sh bandwidth
#   bench/micro/run.sh narrow 1 768 2304
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
program=conv
if [ $# -gt 0 ] && [ -f "$root/bench/micro/$1_micro.cpp" ]; then
  program=$1
  shift
fi
target=${CGC_MICRO_TARGET:-native}
library="$root/build/runtime/libcgc_runtime.a"
flags="-march=native"
if [ "$target" != native ]; then
  library="$root/build/runtime/libcgc_runtime_$target.a"
  flags=$(sed -nE "s/^CGC_TARGET\(\"$target\", *\"[^\"]*\", *\"([^\"]*)\".*/\1/p" \
          "$root/runtime/include/cgc/targets.def")
  [ -n "$flags" ] || { echo "run.sh: unknown target '$target' (cgc/targets.def)" >&2; exit 1; }
fi
binary="$root/build/bench-micro/${program}_micro_$target"
mkdir -p "$(dirname "$binary")"
if [ ! -x "$binary" ] || [ "$binary" -ot "$library" ] ||
   [ "$binary" -ot "$root/bench/micro/${program}_micro.cpp" ] ||
   [ "$binary" -ot "$root/tools/bandwidth_probe.h" ]; then
  # shellcheck disable=SC2086
  g++ -std=c++20 -O3 $flags -Wall -Wextra -I"$root/runtime/include" -I"$root" \
      "$root/bench/micro/${program}_micro.cpp" "$library" \
      -lxsmm -lxsmmnoblas -lpthread -ldl -o "$binary"
fi
exec "$binary" "$@"
