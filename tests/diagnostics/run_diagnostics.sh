#!/usr/bin/env bash
# Bad input must give a clear one-line error naming file, node and op, and
# exit code 1: never a crash, a hang or a silent wrong answer. Hostile models
# (tests/fuzz/regressions: the inputs of issue 22 and every input the fuzz
# target crashed cgc with) each compile or fail that way.
# Usage: run_diagnostics.sh CGC SAMPLES_DIR WORK_DIR
set -u
cgc=$1 samples=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 "$(dirname "$0")/make_bad_models.py" "$work" || exit 1
failures=0

# expect NAME EXPECTED_SUBSTRINGS... -- COMMAND...
expect() {
  local name=$1; shift
  local wanted=()
  while [ "$1" != "--" ]; do wanted+=("$1"); shift; done
  shift
  timeout 120 "$@" >"$work/$name.out" 2>"$work/$name.err"
  local status=$?
  local message
  message=$(cat "$work/$name.err")
  local ok=1
  [ $status -eq 1 ] || ok=0
  [ "$(wc -l <"$work/$name.err")" -eq 1 ] || ok=0
  for w in "${wanted[@]}"; do
    grep -qF -- "$w" "$work/$name.err" || ok=0
  done
  if [ $ok -eq 1 ]; then
    echo "ok   $name: $message"
  else
    echo "FAIL $name: exit $status, stderr:"; sed 's/^/     /' "$work/$name.err"
    echo "     (wanted exit 1, one line containing: ${wanted[*]})"
    failures=$((failures + 1))
  fi
}

model=$samples/tiny_cnn/model.onnx
head -c 1000 "$model" >"$work/truncated.onnx"
echo "this is not an onnx model" >"$work/text.onnx"

expect truncated "$work/truncated.onnx" "not a valid ONNX model" -- "$cgc" compile "$work/truncated.onnx" -o "$work/out" --quiet
expect not_onnx "$work/text.onnx" "not a valid ONNX model" -- "$cgc" compile "$work/text.onnx" -o "$work/out" --quiet
expect missing_file "$work/missing.onnx" "cannot open" -- "$cgc" compile "$work/missing.onnx" --quiet
: >"$work/empty.onnx"
expect empty_file "$work/empty.onnx" "is empty" -- "$cgc" compile "$work/empty.onnx" -o "$work/out" --quiet
mkdir -p "$work/dir.onnx"
expect directory "$work/dir.onnx" "is a directory" -- "$cgc" compile "$work/dir.onnx" -o "$work/out" --quiet
expect unsupported "unsupported.onnx" "StringNormalizer (node 'strings_node')" "com.example.Frobnicate (node 'custom_node')" -- "$cgc" compile "$work/unsupported.onnx" -o "$work/out" --quiet
expect unknown_target "unknown target 'x86-64-v9'" "known: native, x86-64-v2, x86-64-v3, x86-64-v4, cascadelake, x86-64-v4-vnni, zen4, aarch64" -- "$cgc" compile "$model" --target x86-64-v9 -o "$work/out" --quiet
expect unknown_target_run "unknown target 'arm'" "known:" -- "$cgc" run "$model" --target arm --quiet
# Narrow weights (docs/PRECISION.md): bf16 where the target lacks avx512bf16,
# --weights-only without --quantize int8, a precision cgc does not know.
expect precision_bf16_target "--precision bf16" "avx512bf16" "x86-64-v4" -- "$cgc" compile "$model" --precision bf16 --target x86-64-v4 -o "$work/out" --quiet
expect weights_only_alone "--weights-only" "--quantize" -- "$cgc" compile "$model" --weights-only -o "$work/out" --quiet
expect precision_unknown "--precision" "fp16" -- "$cgc" compile "$model" --precision fp16 -o "$work/out" --quiet
expect run_other_arch "target aarch64 is for aarch64" "cgc compile --target aarch64" -- "$cgc" run "$model" --target aarch64 --quiet
expect shape_contradiction "model.onnx" "--shape" "contradicts" -- "$cgc" compile "$model" --shape input=1x3x32x32 -o "$work/out" --quiet
expect shape_rank "model.onnx" "rank" -- "$cgc" compile "$model" --shape input=3x32x32 -o "$work/out" --quiet
expect shape_unknown_input "model.onnx" "unknown input 'nope'" -- "$cgc" compile "$model" --shape nope=1x2 -o "$work/out" --quiet
expect symbolic_unbound "symbolic.onnx" "batch" "--shape" -- "$cgc" compile "$work/symbolic.onnx" -o "$work/out" --quiet
expect matmul_mismatch "matmul_mismatch.onnx" "node 'bad_matmul' (MatMul)" "inner dimensions" -- "$cgc" compile "$work/matmul_mismatch.onnx" -o "$work/out" --quiet
expect lstm_activation "lstm_activation.onnx" "node 'bad_lstm' (LSTM)" "activation function 'Gelu'" -- "$cgc" compile "$work/lstm_activation.onnx" -o "$work/out" --quiet
# Quantisation parameters a kernel cannot use.
expect q_zero_type "q_zero_type.onnx" "node 'bad_zero_type' (DequantizeLinear)" "x_zero_point is int8 but x is uint8" -- "$cgc" compile "$work/q_zero_type.onnx" -o "$work/out" --quiet
expect q_scale_zero "q_scale_zero.onnx" "node 'bad_scale_zero' (QuantizeLinear)" "y_scale is 0" -- "$cgc" compile "$work/q_scale_zero.onnx" -o "$work/out" --quiet
expect q_scale_nan "q_scale_nan.onnx" "node 'bad_scale_nan' (DequantizeLinear)" "x_scale is NaN" -- "$cgc" compile "$work/q_scale_nan.onnx" -o "$work/out" --quiet
expect q_axis_length "q_axis_length.onnx" "node 'bad_axis_scales' (DequantizeLinear)" "has 3 values; it needs 1 or 4" -- "$cgc" compile "$work/q_axis_length.onnx" -o "$work/out" --quiet
# cgc build and cgc run --library: a missing source, a file that is no library.
expect build_missing_source "missing.cpp" "no such generated source" -- "$cgc" build -o "$work/lib.so" "$work/missing.cpp" --quiet
echo "not a library" >"$work/not_a_library.so"
expect run_not_a_library "not_a_library.so" "cannot load" -- "$cgc" run "$model" --library "$work/not_a_library.so" --name TinyCnn --quiet

# Hostile models (issue 22, tests/fuzz/regressions): sizes beyond the limits
# and importer crashes are one-line errors naming the tensor or node.
regressions=$(cd "$(dirname "$0")/../fuzz/regressions" && pwd)
expect split_on_scalar "split_on_scalar_segfault.onnx" "node '/Unsqueeze' (Split)" "out of range for rank 0" -- "$cgc" compile "$regressions/split_on_scalar_segfault.onnx" -o "$work/out" --quiet
expect huge_input_dim "huge_input_dim_overflows_arena.onnx" "input 'input'" "exceeds the limit of 2^40 bytes" -- "$cgc" compile "$regressions/huge_input_dim_overflows_arena.onnx" -o "$work/out" --quiet
expect initializer_dims "initializer_dims_bad_alloc.onnx" "tensor 'fc.bias' of shape [8589934592] holds 7 elements" -- "$cgc" compile "$regressions/initializer_dims_bad_alloc.onnx" -o "$work/out" --quiet
# External data in a file shorter than the tensor (the fuzz target, whose
# model has no folder, finds no such file: also a one-line error).
expect external_truncated "external_data_truncated.onnx" "tensor 'W'" "external_data_truncated.bin" "truncated" -- "$cgc" compile "$regressions/external_data_truncated.onnx" -o "$work/out" --quiet

hostile() {  # hostile NAME EXPECTED...
  local name=$1; shift
  expect "hostile_$name" "hostile_$name.onnx" "$@" -- "$cgc" compile "$work/hostile_$name.onnx" -o "$work/out" --quiet
}
hostile tile_overflow "node 'tile' (Tile)" "size arithmetic overflows"
hostile conv_pads_overflow "node 'conv' (Conv)" "size arithmetic overflows"
hostile fill_too_large "node 'fill' (ConstantOfShape)" "exceeds the limit of 2^40 bytes"
hostile range_too_long "node 'range' (Range)" "too many elements"
hostile arena_over_limit "arena of" "over the limit of 2^40 bytes"
# 16 GiB of ConstantOfShape compiles into a fill at run time, not a weight.
if "$cgc" compile "$work/hostile_fill_at_run_time.onnx" -o "$work/fill" --quiet \
     2>"$work/fill.err" && [ "$(stat -c %s "$work/fill/hostile_fill_at_run_time.weights.bin")" -lt 4096 ]; then
  echo "ok   hostile_fill_at_run_time: compiles, weights $(stat -c %s "$work/fill/hostile_fill_at_run_time.weights.bin") bytes"
else
  echo "FAIL hostile_fill_at_run_time:"; cat "$work/fill.err"; ls -la "$work/fill"
  failures=$((failures + 1))
fi
hostile name_with_newline "node name 'relu\\x0aint injected;' contains a control character"

# A Range over int64 values beyond 2^53 is computed exactly (through doubles
# it had no elements at all).
mkdir -p "$work/range_inputs"
/usr/bin/python3 - "$work/range_inputs/input_0.pb" <<'PY'
import sys
import numpy as np
from onnx import numpy_helper
tensor = numpy_helper.from_array(np.zeros(4, np.int64), "x")
open(sys.argv[1], "wb").write(tensor.SerializeToString())
PY
"$cgc" run "$work/range_int64.onnx" --inputs "$work/range_inputs" \
    --outputs "$work/range_outputs" --quiet >/dev/null 2>"$work/range.err"
if /usr/bin/python3 - "$work/range_outputs/output_0.pb" <<'PY'
import sys
from onnx import TensorProto, numpy_helper
tensor = TensorProto()
tensor.ParseFromString(open(sys.argv[1], "rb").read())
sys.exit(numpy_helper.to_array(tensor).tolist() != [2**62 + 1 + 3 * i for i in range(4)])
PY
then
  echo "ok   range_int64: exact"
else
  echo "FAIL range_int64: not [2^62+1, 2^62+4, 2^62+7, 2^62+10]:"; cat "$work/range.err"
  failures=$((failures + 1))
fi

# Every input the fuzzer ever crashed cgc with compiles, or fails with a
# one-line error and exit code 1.
for regression in "$regressions"/*.onnx; do
  name=fuzz_$(basename "$regression" .onnx)
  timeout 120 "$cgc" compile "$regression" -o "$work/fuzz_out" --quiet >"$work/$name.out" 2>"$work/$name.err"
  status=$?
  if [ $status -eq 0 ] || { [ $status -eq 1 ] && [ "$(wc -l <"$work/$name.err")" -eq 1 ] &&
                            grep -qF "$(basename "$regression"): error: " "$work/$name.err"; }; then
    echo "ok   $name: exit $status $(cat "$work/$name.err")"
  else
    echo "FAIL $name: exit $status, stderr:"; sed 's/^/     /' "$work/$name.err"
    failures=$((failures + 1))
  fi
done

# An input file of the wrong size at run time.
mkdir -p "$work/wrong_inputs"
/usr/bin/python3 - "$work/wrong_inputs/input_0.pb" <<'PY'
import sys
import numpy as np
from onnx import numpy_helper
tensor = numpy_helper.from_array(np.zeros((1, 3, 8, 8), np.float32), "input")
open(sys.argv[1], "wb").write(tensor.SerializeToString())
PY
expect wrong_input_size "input_0.pb" "float32[1,3,8,8]" -- "$cgc" run "$model" --inputs "$work/wrong_inputs" --quiet

# Hostile input files: truncated, empty, garbage, of the wrong type or
# rank, one too many; each one line naming the file (and the input).
/usr/bin/python3 - "$work/hostile_inputs" <<'PY'
import os, sys
import numpy as np
from onnx import numpy_helper
root = sys.argv[1]
def tensor(array):
    return numpy_helper.from_array(array, "input").SerializeToString()
good = tensor(np.full((1, 3, 16, 16), 0.5, np.float32))
special = np.full((1, 3, 16, 16), 0.5, np.float32)
special.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
files = {"truncated": good[:len(good) // 2], "empty": b"", "garbage": b"\xff\x07garbage" * 9,
         "int64": tensor(np.zeros((1, 3, 16, 16), np.int64)),
         "rank": tensor(np.zeros((3, 16, 16), np.float32)), "nonfinite": tensor(special)}
for name, data in files.items():
    os.makedirs(f"{root}/{name}")
    open(f"{root}/{name}/input_0.pb", "wb").write(data)
os.makedirs(f"{root}/extra")
open(f"{root}/extra/input_0.pb", "wb").write(good)
open(f"{root}/extra/input_1.pb", "wb").write(good)
PY
hi=$work/hostile_inputs
expect input_truncated "truncated/input_0.pb" "not a serialized ONNX TensorProto" -- "$cgc" run "$model" --inputs "$hi/truncated" --quiet
expect input_empty "empty/input_0.pb" "is empty" -- "$cgc" run "$model" --inputs "$hi/empty" --quiet
expect input_garbage "garbage/input_0.pb" "not a serialized ONNX TensorProto" -- "$cgc" run "$model" --inputs "$hi/garbage" --quiet
expect input_int64 "int64/input_0.pb" "int64[1,3,16,16]" "input 'input' of the model is float32[1,3,16,16]" -- "$cgc" run "$model" --inputs "$hi/int64" --quiet
expect input_rank "rank/input_0.pb" "float32[3,16,16]" "input 'input' of the model is float32[1,3,16,16]" -- "$cgc" run "$model" --inputs "$hi/rank" --quiet
expect input_extra "extra/input_1.pb" "no input reads this file (the model has 1 input(s): input" -- "$cgc" run "$model" --inputs "$hi/extra" --quiet
# NaN and infinities are data: the model runs on them.
if "$cgc" run "$model" --inputs "$hi/nonfinite" --quiet >"$work/nonfinite.out" 2>"$work/nonfinite.err" &&
   grep -q "^output " "$work/nonfinite.out"; then
  echo "ok   input_nonfinite: runs"
else
  echo "FAIL input_nonfinite: a NaN/Inf input does not run:"; cat "$work/nonfinite.err"
  failures=$((failures + 1))
fi

# Sizes decided by the data: a TopK k beyond its axis, and more nonzeros
# than --bound allows, are errors from run() naming the node, never an overrun.
dd="$work/data_dependent.onnx"
expect topk_k_beyond_axis "node 'topk' (TopK)" "a k beyond its axis" -- "$cgc" run "$dd" --inputs "$work/data_dependent_k9" --quiet
expect nonzero_beyond_bound "node 'nonzero'" "exceeds its bound" -- "$cgc" run "$dd" --inputs "$work/data_dependent_k2" --bound nonzero=3 --quiet

# A Loop whose run-time trip count (5) is beyond the --bound of its scan
# output: an error from run() naming the node; within the bound it runs.
lb="$work/loop_bound.onnx"
expect loop_beyond_bound "node 'count_loop' (Loop)" "exceeds its bound" -- "$cgc" run "$lb" --inputs "$work/loop_steps" --bound count_loop=3 --quiet
if "$cgc" run "$lb" --inputs "$work/loop_steps" --bound count_loop=8 --quiet >"$work/loop_ok.out" 2>&1 &&
   grep -q "history' float32\[5,2\]" "$work/loop_ok.out"; then
  echo "ok   loop_within_bound: 5 steps"
else
  echo "FAIL loop_within_bound:"; cat "$work/loop_ok.out"
  failures=$((failures + 1))
fi

# Indices beyond their axis at run time: errors from run() naming the node.
ir="$work/index_range.onnx"
expect gather_index_range "node 'lookup' (Gather)" "index is out of range" -- "$cgc" run "$ir" --inputs "$work/index_gather" --quiet
expect scatter_index_range "node 'scatter' (ScatterElements)" "index is out of range" -- "$cgc" run "$ir" --inputs "$work/index_scatter" --quiet

# --constant: a tensor of the wrong type, a file that is no tensor, a
# missing or empty file, a directory, an input the model lacks; a right one
# compiles.
ri="$work/reshape_input.onnx"
expect constant_type "shape_float.pb" "float32[2]" "input 'shape' is int64" -- "$cgc" compile "$ri" --constant shape="$work/shape_float.pb" -o "$work/out" --quiet
expect constant_not_tensor "not_a_tensor.pb" "not a serialized ONNX TensorProto" -- "$cgc" compile "$ri" --constant shape="$work/not_a_tensor.pb" -o "$work/out" --quiet
expect constant_missing "missing.pb" "cannot open" -- "$cgc" compile "$ri" --constant shape="$work/missing.pb" -o "$work/out" --quiet
: >"$work/empty.pb"
expect constant_empty "empty.pb" "is empty" -- "$cgc" compile "$ri" --constant shape="$work/empty.pb" -o "$work/out" --quiet
mkdir -p "$work/dir.pb"
expect constant_directory "dir.pb" "is a directory" -- "$cgc" compile "$ri" --constant shape="$work/dir.pb" -o "$work/out" --quiet
expect constant_unknown_input "reshape_input.onnx" "unknown input 'nope'" -- "$cgc" compile "$ri" --constant nope="$work/shape_ok.pb" -o "$work/out" --quiet
if "$cgc" compile "$ri" --constant shape="$work/shape_ok.pb" -o "$work/reshape_ok" --quiet 2>"$work/constant_ok.err"; then
  echo "ok   constant_ok: compiles"
else
  echo "FAIL constant_ok:"; cat "$work/constant_ok.err"
  failures=$((failures + 1))
fi

# A profile measured on another graph, and a file that is no profile.
"$cgc" run "$samples/mlp/model.onnx" --quiet --fill-missing-inputs --profile-out "$work/mlp.profile.json" >/dev/null
expect stale_profile "mlp.profile.json" "different graph" -- "$cgc" compile "$model" --profile "$work/mlp.profile.json" -o "$work/out" --quiet
echo '{"nodes": 3}' >"$work/not_a.profile.json"
expect not_a_profile "not_a.profile.json" "not a cgc profile" -- "$cgc" compile "$model" --profile "$work/not_a.profile.json" -o "$work/out" --quiet

# The inspect report of the unsupported model lists every unsupported node.
"$cgc" inspect "$work/unsupported.onnx" >"$work/inspect.txt" 2>&1
inspect_status=$?
if [ $inspect_status -eq 1 ] && grep -q "strings_node" "$work/inspect.txt" &&
   grep -q "custom_node" "$work/inspect.txt"; then
  echo "ok   inspect lists all unsupported nodes"
else
  echo "FAIL inspect does not list all unsupported nodes:"; cat "$work/inspect.txt"
  failures=$((failures + 1))
fi

# --- names (issue 34 items 1-2) ---
# --name and --namespace that cannot name generated code, named before any
# code is written.
expect name_dash "--name 'my-net'" "not a C++ identifier" "try --name MyNet" -- "$cgc" compile "$model" --name my-net -o "$work/names" --quiet
expect name_space "--name 'Net Work'" "not a C++ identifier" -- "$cgc" compile "$model" --name "Net Work" -o "$work/names" --quiet
expect name_digit "--name '3dNet'" "starts with a digit" -- "$cgc" compile "$model" --name 3dNet -o "$work/names" --quiet
expect name_keyword "--name 'class'" "keyword" -- "$cgc" compile "$model" --name class -o "$work/names" --quiet
expect name_reserved "--name '_Net'" "reserved" -- "$cgc" compile "$model" --name _Net -o "$work/names" --quiet
expect name_empty "--name: is empty" -- "$cgc" compile "$model" --name "" -o "$work/names" --quiet
expect library_name_empty "--name: is empty" -- "$cgc" run "$model" --library "$model" --name "" --quiet
# A wrong flag or value: one line naming it, exit 1 (CLI11's own second line
# left out).
expect flag_range "--executors" "not in range" -- "$cgc" compile "$model" --executors 0 --quiet
expect flag_unknown "--bogus" -- "$cgc" compile "$model" --bogus
expect name_double_underscore "--name 'a__b'" "reserved" -- "$cgc" compile "$model" --name a__b -o "$work/names" --quiet
expect name_used "--name 'std'" "generated code uses" -- "$cgc" compile "$model" --name std -o "$work/names" --quiet
expect name_prefix_keyword "--name 'Int'" "C prefix" "'int'" "keyword" -- "$cgc" compile "$model" --name Int -o "$work/names" --quiet
expect name_prefix_header "--name 'Math'" "math.h" -- "$cgc" compile "$model" --name Math -o "$work/names" --quiet
expect namespace_dash "--namespace 'my-ns'" "not a C++ identifier" -- "$cgc" compile "$model" --namespace my-ns -o "$work/names" --quiet
expect namespace_part "--namespace 'a::std'" "part 'std'" -- "$cgc" compile "$model" --namespace a::std -o "$work/names" --quiet
expect namespace_empty_part "--namespace 'a::'" "empty" -- "$cgc" compile "$model" --namespace a:: -o "$work/names" --quiet
expect namespace_is_prefix "--namespace 'tiny_cnn'" "C prefix" -- "$cgc" compile "$model" --name TinyCnn --namespace tiny_cnn -o "$work/names" --quiet
expect name_run_library "--name 'my-net'" -- "$cgc" run "$model" --library "$work/not_a_library.so" --name my-net --quiet
if [ -e "$work/names" ]; then
  echo "FAIL names: a refused name still wrote $(ls "$work/names")"; failures=$((failures + 1))
fi
# A default name that breaks a rule gets "Model" ("_model" in the C prefix).
for stem in time swin_t; do
  cp "$model" "$work/$stem.onnx"
  if "$cgc" compile "$work/$stem.onnx" -o "$work/default_$stem" --quiet 2>"$work/default_$stem.err" &&
     [ -e "$work/default_$stem/${stem}_model.h" ]; then
    echo "ok   default_name_$stem: ${stem}_model.h"
  else
    echo "FAIL default_name_$stem: no ${stem}_model.h in $(ls "$work/default_$stem" 2>&1)"
    sed 's/^/     /' "$work/default_$stem.err"; failures=$((failures + 1))
  fi
done

# cgc build: models that would clash in one translation unit, refused
# before compiling, naming both files and the flag that fixes it.
"$cgc" compile "$model" --name NetA -o "$work/clash_a" --quiet &&
"$cgc" compile "$samples/mlp/model.onnx" --name NetB -o "$work/clash_b" --quiet &&
"$cgc" compile "$samples/mlp/model.onnx" --name NetA --namespace other -o "$work/clash_c" --quiet ||
  { echo "FAIL names: cannot compile the models for cgc build"; failures=$((failures + 1)); }
expect build_same_namespace "clash_a/net_a.cpp" "clash_b/net_b.cpp" "namespace cgc_models" "--namespace cgc_models::net_b" -- "$cgc" build "$work/clash_a/net_a.cpp" "$work/clash_b/net_b.cpp" -o "$work/clash.so" --quiet
expect build_same_prefix "clash_a/net_a.cpp" "clash_c/net_a.cpp" "C prefix 'net_a'" "--name" -- "$cgc" build "$work/clash_a/net_a.cpp" "$work/clash_c/net_a.cpp" -o "$work/clash.so" --quiet
expect build_twice "net_a.cpp" "given twice" -- "$cgc" build "$work/clash_a/net_a.cpp" "$work/clash_a/../clash_a/net_a.cpp" -o "$work/clash.so" --quiet

# Default names keep the whole file stem; each input's and output's
# accessor is in the header's top comment and in cgc inspect.
/usr/bin/python3 - "$work/hey_jarvis_v0.1.onnx" <<'PY' || failures=$((failures + 1))
import sys
from onnx import TensorProto, helper, save
graph = helper.make_graph(
    [helper.make_node("Relu", ["x.1"], ["53"], name="relu")], "g",
    [helper.make_tensor_value_info("x.1", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("53", TensorProto.FLOAT, [2, 3])])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
names_ok=1
"$cgc" compile "$work/hey_jarvis_v0.1.onnx" -o "$work/dotted" --verify --quiet 2>"$work/dotted.err" || names_ok=0
h="$work/dotted/hey_jarvis_v0_1.h"
grep -q "Model HeyJarvisV0_1:" "$h" 2>/dev/null || names_ok=0
grep -q "Input  x.1: float32\[2,3\] -> x_1_data()" "$h" 2>/dev/null || names_ok=0
grep -q "Output 53: float32\[2,3\] -> t_53_data()" "$h" 2>/dev/null || names_ok=0
"$cgc" inspect "$work/hey_jarvis_v0.1.onnx" >"$work/dotted_inspect.txt" 2>&1 || names_ok=0
grep -q "class cgc_models::HeyJarvisV0_1, C prefix and files hey_jarvis_v0_1" "$work/dotted_inspect.txt" || names_ok=0
grep -qE "^  x\.1 .* x_1_data\(\)$" "$work/dotted_inspect.txt" || names_ok=0
grep -qE "^  53 .* t_53_data\(\)$" "$work/dotted_inspect.txt" || names_ok=0
if [ $names_ok -eq 1 ]; then
  echo "ok   default_names: hey_jarvis_v0.1.onnx -> HeyJarvisV0_1 in hey_jarvis_v0_1.h; x.1 -> x_1_data(), 53 -> t_53_data()"
else
  echo "FAIL default_names:"; cat "$work/dotted.err" "$work/dotted_inspect.txt"; ls "$work/dotted"
  failures=$((failures + 1))
fi

# --- build settings (issue 34 items 5-6) ---
# cgc config: nothing asked for, an unknown target, a target whose runtime
# this build lacks; and what it prints (tests/consumer builds with it).
expect config_nothing "cgc config" "--cflags, --cxxflags, --libs" -- "$cgc" config
expect config_unknown_target "unknown target 'znver9'" "known:" -- "$cgc" config --libs --target znver9
expect config_no_runtime "libcgc_runtime_aarch64.a" "runtime for target aarch64 is not installed" -- "$cgc" config --libs --target aarch64
if "$cgc" config --cflags --libs >"$work/config.out" 2>"$work/config.err" &&
   grep -qE -- "^-I[^ ]*/include [^ ]*/libcgc_runtime\.a .*-ldl" "$work/config.out" &&
   "$cgc" config --cxxflags --target x86-64-v3 | grep -q -- "-std=c++20 .*-march=x86-64-v3"; then
  echo "ok   config: $(cat "$work/config.out")"
else
  echo "FAIL config:"; cat "$work/config.out" "$work/config.err"
  failures=$((failures + 1))
fi

# --- threads and cgc run (issue 34 items 7-8) ---
# pass NAME DESCRIPTION COMMAND...: a check that is no one-line error.
pass() {
  local name=$1 what=$2; shift 2
  if "$@"; then
    echo "ok   $name: $what"
  else
    echo "FAIL $name: $what"; sed 's/^/     /' "$work/$name".{out,err} 2>/dev/null
    failures=$((failures + 1))
  fi
}
# More threads than the CPUs this process may use: capped to them, with a
# one-line warning naming the CPUs and the override; the --bench JSON says
# the threads that ran. --oversubscribe (or CGC_OVERSUBSCRIBE=1) runs them all.
cpus=$(nproc) mlp=$samples/mlp
over=$((cpus + 1))
"$cgc" run "$mlp/model.onnx" --inputs "$mlp/test_data_set_0" --threads $over --bench 1 --quiet \
    >"$work/threads_capped.out" 2>"$work/threads_capped.err"
pass threads_capped "1 x $over capped to 1 x $cpus, with a warning" bash -c '
  [ "$(wc -l <"$1.err")" -eq 1 ] &&
  grep -qF "cgc: warning: model Model: 1 executor(s) x $2 thread(s) are more threads than the $3 CPU(s)" "$1.err" &&
  grep -qF "running 1 x $3 (CGC_OVERSUBSCRIBE=1 or cgc run --oversubscribe runs 1 x $2)" "$1.err" &&
  grep -qE "\"threads\":$3[,}]" "$1.out" && grep -qF "capped: 1 x $2 asked, $3 CPUs" "$1.out"' \
  _ "$work/threads_capped" $over $cpus
"$cgc" run "$mlp/model.onnx" --inputs "$mlp/test_data_set_0" --threads $over --bench 1 --quiet \
    --oversubscribe >"$work/threads_oversubscribed.out" 2>"$work/threads_oversubscribed.err"
pass threads_oversubscribed "--oversubscribe runs 1 x $over, without a warning" bash -c '
  [ ! -s "$1.err" ] && grep -qE "\"threads\":$2[,}]" "$1.out" && ! grep -qF "capped" "$1.out"' \
  _ "$work/threads_oversubscribed" $over
CGC_OVERSUBSCRIBE=1 "$cgc" run "$mlp/model.onnx" --inputs "$mlp/test_data_set_0" --threads $over \
    --bench 1 --quiet >"$work/threads_env.out" 2>"$work/threads_env.err"
pass threads_env "CGC_OVERSUBSCRIBE=1 runs 1 x $over" bash -c '
  [ ! -s "$1.err" ] && grep -qE "\"threads\":$2[,}]" "$1.out"' _ "$work/threads_env" $over
# Threads decided at creation: the JSON says how many, not 0.
"$cgc" run "$mlp/model.onnx" --inputs "$mlp/test_data_set_0" --bench 1 --quiet \
    >"$work/threads_auto.out" 2>"$work/threads_auto.err"
pass threads_auto "--bench JSON: \"threads\":$cpus" grep -qE "\"threads\":$cpus[,}]" "$work/threads_auto.out"

# --check says which tolerance passed each output.
"$cgc" run "$mlp/model.onnx" --inputs "$mlp/test_data_set_0" --check "$mlp/test_data_set_0" \
    --atol 1 --quiet >"$work/check_atol.out" 2>"$work/check_atol.err"
pass check_atol "--check names the tolerance that passed" \
  grep -qF "check: output 'logits': max abs error" "$work/check_atol.out"
pass check_atol_named "... atol 1" grep -qF ": ok, every error within atol 1" "$work/check_atol.out"
"$cgc" run "$mlp/model.onnx" --inputs "$mlp/test_data_set_0" --check "$mlp/test_data_set_0" \
    --atol 0 --rtol 0.5 --quiet >"$work/check_rtol.out" 2>"$work/check_rtol.err"
pass check_rtol "... rtol 0.5 alone" grep -qF ": ok, every error within rtol 0.5 x |expected|" "$work/check_rtol.out"
"$cgc" run "$mlp/model.onnx" --inputs "$mlp/test_data_set_0" --check "$mlp/test_data_set_0" \
    --atol 0 --rtol 0 --quiet >"$work/check_fails.out" 2>"$work/check_fails.err"
pass check_fails "... or the tolerance it failed" \
  grep -qF "differ by more than atol 0 + rtol 0 x |expected|" "$work/check_fails.out"

# cgc run --library with a --name the library lacks: the models it holds.
"$cgc" compile "$mlp/model.onnx" --name Mlp --namespace diag_a -o "$work/lib_mlp" --quiet &&
  "$cgc" compile "$model" --name TinyCnn --namespace diag_b -o "$work/lib_tiny" --quiet &&
  "$cgc" build "$work/lib_mlp/mlp.cpp" "$work/lib_tiny/tiny_cnn.cpp" -O 0 -o "$work/two_models.so" --quiet
pass build_no_unity "cgc build leaves only the library beside it" \
  test ! -e "$work/two_models.so.unity.cpp"
expect library_unknown_name "two_models.so" "holds no model of C prefix 'nope'" "the models it holds (--name): Mlp, TinyCnn" -- "$cgc" run "$model" --library "$work/two_models.so" --name Nope --quiet

# A .pb whose tensor is named for another input: --inputs and --constant.
# (Unnamed tensors are accepted: data_dependent_k9's above have no names.)
mkdir -p "$work/misnamed_inputs"
/usr/bin/python3 - "$work/misnamed_inputs/input_0.pb" "$work/shape_misnamed.pb" <<'PY'
import sys
import numpy as np
from onnx import numpy_helper
open(sys.argv[1], "wb").write(numpy_helper.from_array(np.zeros((1, 3, 16, 16), np.float32), "image").SerializeToString())
open(sys.argv[2], "wb").write(numpy_helper.from_array(np.array([2, -1], np.int64), "dims").SerializeToString())
PY
expect input_misnamed "misnamed_inputs/input_0.pb" "holds tensor 'image', but is read for input 'input'" -- "$cgc" run "$model" --inputs "$work/misnamed_inputs" --quiet
expect constant_misnamed "shape_misnamed.pb" "holds tensor 'dims', but is read for input 'shape'" -- "$cgc" compile "$ri" --constant shape="$work/shape_misnamed.pb" -o "$work/out" --quiet

# --- inspect and hints (issue 34 items 3-4) ---
/usr/bin/python3 "$(dirname "$0")/make_inspect_models.py" "$work" || exit 1
# check NAME CONDITION_COMMAND...: a test that is not a one-line error.
inspect_check() {
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
# Ops, kernels and weights inside If branches, two deep (352 bytes of Conv
# weights, all in the branches; the main graph holds one If).
"$cgc" inspect "$work/nested_branches.onnx" --json >"$work/nested.json" 2>"$work/nested.err"
inspect_check inspect_counts_bodies /usr/bin/python3 - "$work/nested.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
want = {"ops": {"Conv": 3, "If": 2, "Relu": 1}, "nodes": 6, "subgraph_nodes": 5,
        "subgraphs": 4, "weight_bytes": 352}
got = {k: r.get(k) for k in want}
ok = got == want and r["kernels"].get("Conv") == 3 and r["kernels"].get("If") == 2
print(json.dumps({"got": got, "kernels": r.get("kernels")}) if not ok else "", end="")
sys.exit(0 if ok else 1)
PY
"$cgc" inspect "$work/nested_branches.onnx" >"$work/nested.txt" 2>&1
inspect_check inspect_text_bodies grep -q "kernels after passes (with the 4 If/Loop/Scan bodies)" "$work/nested.txt"
# ONNX Runtime's internal ops: the error and inspect say so, and what to do.
expect ort_internal "com.microsoft.nchwc.Conv (node 'nchwc_conv')" "com.microsoft.FusedMatMul" "ONNX Runtime's internal ops" "compile the original model" -- "$cgc" compile "$work/ort_internal.onnx" -o "$work/out" --quiet
"$cgc" inspect "$work/ort_internal.onnx" >"$work/ort_inspect.txt" 2>&1
inspect_check inspect_ort_internal grep -q "nchwc_conv  (ONNX Runtime's internal op)" "$work/ort_inspect.txt"
inspect_check inspect_ort_hint grep -q "^try: .*ONNX Runtime's internal ops.*compile the original model" "$work/ort_inspect.txt"
# Other unsupported ops point to the list of supported ops, which exists.
expect unsupported_ops_list "docs/OPS.md" "cgc inspect --ops" -- "$cgc" compile "$work/unsupported.onnx" -o "$work/out" --quiet
inspect_check ops_list_exists test -s "$(dirname "$0")/../../docs/OPS.md"
# The --shape example has the input's rank and known dimensions; batch bound
# in pcm binds it in state too. Under cgc_add_graph it says SHAPES.
expect shape_hint_rank "e.g. --shape pcm=1x16 (a dimension" -- "$cgc" compile "$work/pcm.onnx" -o "$work/out" --quiet
"$cgc" inspect "$work/pcm.onnx" >"$work/pcm_inspect.txt" 2>&1
inspect_check inspect_shape_hint_rank grep -q "^try: .*e.g. --shape pcm=1x16 (" "$work/pcm_inspect.txt"
expect shape_hint_cmake "cgc_add_graph(... SHAPES pcm=1x16)" -- env CGC_CALLER=cmake "$cgc" compile "$work/pcm.onnx" -o "$work/out" --quiet
inspect_check cmake_passes_caller grep -q "CGC_CALLER=cmake" "$(dirname "$0")/../../cmake/cgc.cmake"
# cgc run --inputs DIR binds the symbolic dimensions from the files' shapes,
# saying so; files that disagree on one are an error naming the file.
"$cgc" run "$work/pcm.onnx" --inputs "$work/pcm_inputs" >"$work/pcm_run.out" 2>"$work/pcm_run.err"
inspect_check run_inputs_bind_shapes grep -q "input shapes from .*pcm_inputs: pcm=1x16, state=2x1x4" "$work/pcm_run.err"
inspect_check run_inputs_bound_output grep -q "output 's' float32\[2,1,4\]: -1 -1" "$work/pcm_run.out"
# A symbolic model's hint names --dim too (its dimensions kept variable).
inspect_check inspect_dim_hint grep -q "^try: .*--shape pcm=1x16 .*or keep them variable .*--dim batch=1\.\." "$work/pcm_inspect.txt"
# --sweep fills the inputs itself (no --fill-missing-inputs), and a size it
# cannot take fails before anything is built.
"$cgc" run "$work/pcm.onnx" --dim batch=1..4 --bench 1 --sweep batch=1,3 --quiet \
    >"$work/sweep.out" 2>"$work/sweep.err"
inspect_check sweep_fills_inputs test "$(grep -c '"median_ms"' "$work/sweep.out")" -eq 2
expect sweep_before_build "--sweep 'batch=9'" "outside --dim batch=1..4" -- env CGC_CACHE_DIR="$work/sweep_cache" "$cgc" run "$work/pcm.onnx" --dim batch=1..4 --bench 1 --sweep batch=9 --quiet
inspect_check sweep_nothing_built test ! -e "$work/sweep_cache"
expect run_inputs_conflict "pcm_conflict/input_1.pb" "dimension 'batch' of input 'state' 3" "input_0.pb makes it 1" -- "$cgc" run "$work/pcm.onnx" --inputs "$work/pcm_conflict" --quiet

# --specialize buckets (NAME=MIN..MAX) that cannot be: each a line naming
# --specialize and the range.
pcm_dim=(--dim batch=2..16:2)
expect bucket_overlap "--specialize 'batch=2..8,6..12'" "batch=6..12 and batch=2..8, which overlap" -- "$cgc" compile "$work/pcm.onnx" "${pcm_dim[@]}" --specialize batch=2..8,6..12 -o "$work/out" --quiet
expect bucket_size_inside "--specialize 'batch=2..8,4'" "batch=4 and batch=2..8, which overlap" -- "$cgc" compile "$work/pcm.onnx" "${pcm_dim[@]}" --specialize batch=2..8,4 -o "$work/out" --quiet
expect bucket_outside "--specialize 'batch=10..32'" "outside --dim batch=2..16:2" -- "$cgc" compile "$work/pcm.onnx" "${pcm_dim[@]}" --specialize batch=10..32 -o "$work/out" --quiet
expect bucket_min_above_max "--specialize 'batch=8..4'" "an empty range" -- "$cgc" compile "$work/pcm.onnx" "${pcm_dim[@]}" --specialize batch=8..4 -o "$work/out" --quiet
expect bucket_one_size_off_multiple "--specialize 'batch=5'" "not a multiple of 2" -- "$cgc" compile "$work/pcm.onnx" "${pcm_dim[@]}" --specialize batch=5..5 -o "$work/out" --quiet
expect bucket_holds_none "--dim batch=4..16:4" "holds no multiple of 4" -- "$cgc" compile "$work/pcm.onnx" --dim batch=4..16:4 --specialize batch=5..7 -o "$work/out" --quiet
expect bucket_malformed "--specialize 'batch=2..'" "NAME=SIZE|MIN..MAX" -- "$cgc" compile "$work/pcm.onnx" "${pcm_dim[@]}" --specialize batch=2.. -o "$work/out" --quiet
expect bucket_in_sweep "--sweep batch=2..4" "takes sizes, not ranges" -- "$cgc" run "$work/pcm.onnx" "${pcm_dim[@]}" --bench 1 --sweep batch=2..4 --quiet

# A --dim bound the model cannot take (past + seq beyond the decoder's
# position table) names the bounds.
prefill="$(dirname "$0")/../../samples/generate/prefill.onnx"
expect dim_bounds_refused "prefill.onnx" "'/wpe/Gather'" "at the bounds of --dim, seq=32, past=200" -- "$cgc" compile "$prefill" --dim seq=1..32 --dim past=0..200 -o "$work/out" --quiet

if [ $failures -ne 0 ]; then
  echo "$failures diagnostics tests failed"
  exit 1
fi
echo "all diagnostics tests passed"
