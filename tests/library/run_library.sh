#!/usr/bin/env bash
# The generated model as a library (issue: run() keeps its inputs, reports
# errors, runs on the caller's memory, the C interface is C):
#  1. a C11 program against the generated header (c_program.c);
#  2. the same generated files from two checkouts at different paths and
#     from processes that see different numbers of cores.
# Usage: run_library.sh CGC RUNTIME_INCLUDE RUNTIME_LIBRARY SAMPLES WORK
set -eu
cgc=$1 include=$2 library=$3 samples=$4 work=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"

# 1. A Gather model: table [4, 2] with rows {10 r, 10 r + 1}, indices [3].
/usr/bin/python3 - "$work/embed.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
table = np.array([[10 * r, 10 * r + 1] for r in range(4)], dtype=np.float32)
graph = helper.make_graph(
    [helper.make_node("Gather", ["table", "indices"], ["rows"], name="lookup", axis=0)],
    "embed",
    [helper.make_tensor_value_info("indices", TensorProto.INT64, [3])],
    [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [3, 2])],
    [numpy_helper.from_array(table, "table")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
PY
"$cgc" compile "$work/embed.onnx" -o "$work/embed" --name Embed --weights file --quiet
flags="-O2 -Wall -Wextra -Werror"
gcc -std=c11 -pedantic $flags -I"$include" -I"$work/embed" -c "$here/c_program.c" \
    -o "$work/c_program.o"
g++ -std=c++20 $flags -I"$include" -I"$work/embed" -c "$work/embed/embed.cpp" -o "$work/embed.o"
g++ "$work/c_program.o" "$work/embed.o" "$library" -lxsmm -lxsmmnoblas -lpthread -ldl \
    -o "$work/c_program"
"$work/c_program" "$work/embed/embed.weights.bin"

# 2. Reproducible output: two paths, one core against all.
for copy in a b/deeper; do
  mkdir -p "$work/$copy"
  cp "$samples/inception/model.onnx" "$work/$copy/model.onnx"
done
(cd "$work/a" && taskset -c 0 "$cgc" compile model.onnx -o out --quiet)
(cd "$work/b/deeper" && "$cgc" compile "$work/b/deeper/model.onnx" -o "$work/b/out" --quiet)
for file in model.h model.cpp model.weights.bin; do
  cmp "$work/a/out/$file" "$work/b/out/$file"
done
if grep -n "$work" "$work/a/out/model.h" "$work/a/out/model.cpp"; then
  echo "generated code holds a path of the machine that compiled it" >&2
  exit 1
fi
# 3. File weights are mapped and shared: a 64 MB table, two instances.
/usr/bin/python3 - "$work/big_embed.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rows, columns = 16384, 1024
table = (np.arange(rows, dtype=np.float32)[:, None] * 4 + np.arange(columns) % 4).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("Gather", ["table", "indices"], ["rows"], name="lookup", axis=0)],
    "big_embed",
    [helper.make_tensor_value_info("indices", TensorProto.INT64, [3])],
    [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [3, columns])],
    [numpy_helper.from_array(table, "table")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
"$cgc" compile "$work/big_embed.onnx" -o "$work/big_embed" --name BigEmbed --weights file --quiet
gcc -std=c11 $flags -D_POSIX_C_SOURCE=200809L -I"$include" -I"$work/big_embed" \
    -c "$here/mapped_weights.c" -o "$work/mapped_weights.o"
g++ -std=c++20 $flags -I"$include" -I"$work/big_embed" -c "$work/big_embed/big_embed.cpp" \
    -o "$work/big_embed.o"
g++ "$work/mapped_weights.o" "$work/big_embed.o" "$library" -lxsmm -lxsmmnoblas -lpthread -ldl \
    -o "$work/mapped_weights"
"$work/mapped_weights" "$work/big_embed/big_embed.weights.bin" 16384 1024

echo "library: the C interface works from C11; generated files are reproducible; file weights are mapped"
