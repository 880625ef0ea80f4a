#!/usr/bin/env bash
# Builds bench/micro/conv_micro.cpp against the native runtime of build/
# (after ./build.sh) and runs it with the given arguments, e.g.
#   bench/micro/run.sh float 1 64 64 56 3 1 winograd4
#   bench/micro/run.sh int8 1 64 256 56 1 1 add
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
binary="$root/build/bench-micro/conv_micro"
mkdir -p "$(dirname "$binary")"
if [ ! -x "$binary" ] || [ "$binary" -ot "$root/build/runtime/libcgc_runtime.a" ] ||
   [ "$binary" -ot "$root/bench/micro/conv_micro.cpp" ]; then
  g++ -std=c++20 -O2 -march=native -Wall -Wextra -I"$root/runtime/include" \
      "$root/bench/micro/conv_micro.cpp" "$root/build/runtime/libcgc_runtime.a" \
      -lxsmm -lxsmmnoblas -lpthread -ldl -o "$binary"
fi
exec "$binary" "$@"
