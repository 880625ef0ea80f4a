#!/usr/bin/env bash
# Installs cgc from the build tree into a prefix, builds the consumer project
# against it with find_package(cgc), and runs it.
# Usage: run_consumer.sh CGC_BUILD_DIR SAMPLES_DIR WORK_DIR
set -eu
build=$(cd "$1" && pwd) samples=$(cd "$2" && pwd) work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
/usr/bin/python3 - "$samples" "$work/raw" <<'PY'
import os, sys
import numpy as np
from onnx import TensorProto, numpy_helper
samples, out = sys.argv[1:]
for model in ("tiny_cnn", "mlp"):
    src = os.path.join(samples, model, "test_data_set_0")
    os.makedirs(os.path.join(out, model), exist_ok=True)
    for name in sorted(os.listdir(src)):
        tensor = TensorProto()
        tensor.ParseFromString(open(os.path.join(src, name), "rb").read())
        array = np.ascontiguousarray(numpy_helper.to_array(tensor))
        array.tofile(os.path.join(out, model, name.replace(".pb", ".raw")))
PY
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DSAMPLES_DIR="$samples" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" -j2
"$work/build/consumer" "$work/raw"
# The three-target model: each build this CPU can run, forced, matches too;
# a build it cannot run, or one the library lacks, is refused with the reason.
for target in x86-64-v2 x86-64-v3 cascadelake; do
  if "$build/cgc" targets --runnable | grep -qx "$target"; then
    CGC_TARGET=$target "$work/build/consumer" "$work/raw" | tee "$work/forced.txt"
    grep -qx "TinyCnnFleet runs the $target build" "$work/forced.txt"
  else
    ! CGC_TARGET=$target "$work/build/consumer" "$work/raw" > "$work/refused.txt"
    grep "CGC_TARGET=$target: this CPU lacks" "$work/refused.txt"
  fi
done
! CGC_TARGET=znver9 "$work/build/consumer" "$work/raw" > "$work/refused.txt"
grep "CGC_TARGET=znver9: the library was built for cascadelake, x86-64-v3, x86-64-v2 only" \
  "$work/refused.txt"
