#!/usr/bin/env bash
# Installs cgc from the build tree into a prefix, builds the consumer project
# against it with find_package(cgc), and runs it (as C++20 and as C++17);
# then the C-only project (c/), the same C program built without CMake from
# `cgc config` and from pkg-config, and cgc_add_graph's refusal of unknown
# keywords.
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
# relu(x) + 1 on x[batch, seq]: cgc_add_graph(... DIMS ...).
from onnx import helper
one = numpy_helper.from_array(np.ones((1,), np.float32), "one")
graph = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "one"], ["y"])],
    "ramp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq"])], [one])
with open(os.path.join(out, "ramp.onnx"), "wb") as f:
    f.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
            .SerializeToString())
PY
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DSAMPLES_DIR="$samples" -DDIMS_MODEL="$work/raw/ramp.onnx" \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" -j2
"$work/build/consumer" "$work/raw"
# The statistics the observed build recorded through its profiler quantise
# the model as cgc calibrate's do (the same layers int8).
int8_layers() {
  "$build/cgc" inspect "$samples/tiny_cnn/model.onnx" --quantize int8 --calibration "$1" |
    grep "layers int8"
}
[ "$(int8_layers "$work/raw/tiny_cnn.traffic.calib.json")" = \
  "$(int8_layers "$samples/tiny_cnn/model.calib.json")" ]
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
# The generated headers as C++17 (the -std CMake gave it, not C++20 from a
# dependency).
grep -q -- "-std=c++17" "$work/build/CMakeFiles/consumer17.dir/flags.make"
"$work/build/consumer17" "$work/raw"
! CGC_TARGET=znver9 "$work/build/consumer" "$work/raw" > "$work/refused.txt"
grep "CGC_TARGET=znver9: the library was built for cascadelake, x86-64-v3, x86-64-v2 only" \
  "$work/refused.txt"

# --- build settings (issue 34 items 5-6) ---
# cgc_add_graph refuses an unknown keyword at configure time, after a
# multi-value keyword (SHAPES) and elsewhere, naming it. These configures
# fail early and leave the compiler checks cached for the real one.
cfg=(-S "$here/c" -B "$work/c" -DCMAKE_PREFIX_PATH="$work/prefix" -DSAMPLES_DIR="$samples"
     -DCMAKE_BUILD_TYPE=Release)
for case in "CONSTANTZ|CONSTANTZ;shape=shape.pb" "BOGUS|VERIFY;BOGUS;1"; do
  unknown=${case%%|*}
  ! cmake "${cfg[@]}" -DCGC_EXTRA="${case#*|}" >"$work/keyword.txt" 2>&1
  # CMake wraps the message: one line again.
  tr '\n' ' ' <"$work/keyword.txt" | tr -s ' ' >"$work/keyword_line.txt"
  grep -q "unknown keyword or stray value '$unknown'" "$work/keyword_line.txt"
  grep -q "the keywords are ACTIVATIONS, BOUNDS, CACHE_IN_PLACE, CALIBRATION, CHECK_INPUTS," "$work/keyword_line.txt"
done
# A C-only project (project(x C)); DISABLE_PASS reaches cgc compile.
cmake "${cfg[@]}" -UCGC_EXTRA >/dev/null
cmake --build "$work/c" -j2
grep -rq -- "--disable-pass fuse-conv-maxpool" "$work/c/CMakeFiles"
"$work/c/consumer_c" "$work/raw/tiny_cnn"
# Without CMake: the C project's generated files built with `cgc config`'s
# flags, linked by the C compiler; then linked again from pkg-config's.
cgc=$work/prefix/bin/cgc gen=$work/c/tiny_cnn_model_cgc plain=$work/plain
mkdir -p "$plain"
# shellcheck disable=SC2046  # the flags are words
c++ $("$cgc" config --cxxflags) -I"$gen" -Wa,-I"$gen" -c "$gen/tiny_cnn.cpp" -o "$plain/model.o"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror $("$cgc" config --cflags) -I"$gen" -c "$here/c/main.c" \
   -o "$plain/main.o"
# shellcheck disable=SC2046
cc "$plain/main.o" "$plain/model.o" $("$cgc" config --libs) -lm -o "$plain/app"
"$plain/app" "$work/raw/tiny_cnn"
# shellcheck disable=SC2046
cc "$plain/main.o" "$plain/model.o" $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" \
   pkg-config --libs cgc) -lm -o "$plain/app_pc"
"$plain/app_pc" "$work/raw/tiny_cnn"
# The build tree's cgc names the build tree's runtime.
"$build/cgc" config --cflags --libs | tee "$work/config.txt"
grep -q -- "-I$(cd "$here/../.." && pwd)/runtime/include $build/runtime/libcgc_runtime.a " \
  "$work/config.txt"
echo "consumer: C project, C++17 and builds without CMake work"
