#!/usr/bin/env bash
# `cgc tune` on a sample with a small budget: it must write the profile with
# the chosen configuration and its final check against the untuned build
# (stated in the report), name the inputs it fills once, and the profile must
# drive `cgc run --profile` to the same outputs; with --quantize, the same for the int8 model.
# Usage: run_tune.sh CGC SAMPLES_DIR WORK_DIR
set -euo pipefail
cgc="$1" samples="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
model="$samples/tiny_cnn/model.onnx"
"$cgc" tune "$model" -q --budget 5 --rounds 2 -o "$work" 2>"$work/tune.err" | tee "$work/tune.log"
cat "$work/tune.err" >&2
# The inputs it fills with deterministic data are named once, not per trial.
[ "$(grep -c "filled input(s)" "$work/tune.err")" -eq 1 ] ||
  { echo "the filled-inputs note is not printed once"; exit 1; }
profile="$work/tiny_cnn.profile.json"
test -f "$profile" || { echo "no profile at $profile"; exit 1; }
/usr/bin/python3 - "$profile" <<'PY'
import json, os, sys
p = json.load(open(sys.argv[1]))
cpus = len(os.sched_getaffinity(0))
e, t = p["executors"], p["threads"]
assert isinstance(e, int) and isinstance(t, int) and e >= 1 and t >= 1, p
assert e * t <= cpus, f"{e}x{t} on {cpus} cores"
assert isinstance(p["node_threads"], dict), p
assert p["tuned_ms"] > 0, p
assert p["nodes"] and all("median_us" in n and "name" in n for n in p["nodes"]), p
# The final check: the tuned build against the untuned one, alternated; a
# profile it drops is the default configuration.
check = p["final_check"]
assert check["rounds"] >= 10 and check["spread_ms"] >= 0 and isinstance(check["kept"], bool), check
assert check["kept"] == (check["default_ms"] - check["tuned_ms"] > check["spread_ms"]), check
if not check["kept"]:
    assert e == 1 and not p["node_threads"] and not p.get("variants"), p
# The machine description: the read bandwidth on one thread and on every core,
# within what any memory system gives.
gbps = p["cpu"]["read_gbps"]
assert set(gbps) == {"1", str(cpus)} and all(0.5 < v < 5000 for v in gbps.values()), gbps
print(f"profile: {e}x{t}, {len(p['node_threads'])} per-op thread counts, {p['tuned_ms']:.3f} ms")
PY
grep -q "^tune: best " "$work/tune.log" || { echo "no summary line"; exit 1; }
grep -Eq "^tune: memory: reads [0-9.]+ GB/s on 1 thread, [0-9.]+ GB/s on [0-9]+$" "$work/tune.log" ||
  { echo "no memory line"; exit 1; }
grep -Eq "^tune: its weights \([0-9.]+ MB\) read once at [0-9.]+ GB/s take [0-9.]+ ms" \
    "$work/tune.log" || { echo "no weights floor line"; exit 1; }
grep -Eq "^tune: final check: tuned .* ms, untuned .* ms, spread .* rounds alternated\): (kept the tuned profile|not faster by more than the spread; dropped it)$" \
    "$work/tune.log" || { echo "no final check line"; exit 1; }
"$cgc" run "$model" -q --profile "$profile" \
    --inputs "$samples/tiny_cnn/test_data_set_0" --check "$samples/tiny_cnn/test_data_set_0"

# --quantize: tune measures the int8 model (the profile's nodes are its int8
# kernels) and its int8 convolution variants, and its profile drives the
# int8 compile to the test data's outputs within int8's tolerance; a layer
# forced to another int8 variant through the profile runs it; the float
# model refuses the profile (another graph).
calib="$samples/tiny_cnn/model.calib.json"
# A budget that reaches the variants under a loaded ctest (alone: about 10 s).
"$cgc" tune "$model" -q --budget 60 --rounds 2 -o "$work/int8" --quantize int8 \
    --calibration "$calib" >"$work/tune_int8.log"
qprofile="$work/int8/tiny_cnn.profile.json"
grep -Eq "variant (DepthwiseVnni|Depthwise|DirectChannels|Direct|GemmSplit|Gemm|GemmWide) on" \
    "$work/tune_int8.log" || { echo "FAIL tune timed no int8 variant"; exit 1; }
grep -Eq "^tune: [0-9]+x[0-9]+ [0-9]+ narrow layer\(s\) in float: [0-9.]+ ms$" "$work/tune_int8.log" ||
  { echo "FAIL tune did not time the int8 layers in float"; exit 1; }
/usr/bin/python3 - "$qprofile" "$work/int8" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
ops = [n["op"] for n in p["nodes"]]
assert "QLinearConv" in ops and "Conv" not in ops, ops
conv = next(n["name"] for n in p["nodes"] if n["op"] == "QLinearConv")
json.dump(dict(p, variants={conv: "GemmWide"}), open(f"{sys.argv[2]}/forced.json", "w"))
open(f"{sys.argv[2]}/forced_layer.txt", "w").write(conv)
PY
for qp in "$qprofile" "$work/int8/forced.json"; do
  "$cgc" run "$model" -q --profile "$qp" --quantize int8 --calibration "$calib" \
      --inputs "$samples/tiny_cnn/test_data_set_0" --check "$samples/tiny_cnn/test_data_set_0" \
      --rtol 1e-2 --atol 1e-3
done
layer=$(cat "$work/int8/forced_layer.txt")
"$cgc" inspect "$model" --profile "$work/int8/forced.json" --quantize int8 --calibration "$calib" \
    >"$work/int8/inspect_forced.txt"
grep -Eq "^  $layer +GemmWide$" "$work/int8/inspect_forced.txt" ||
    { echo "FAIL inspect does not show $layer on GemmWide:"; cat "$work/int8/inspect_forced.txt"; exit 1; }
if "$cgc" run "$model" -q --profile "$qprofile" --inputs "$samples/tiny_cnn/test_data_set_0" \
    2>"$work/refused.txt"; then
  echo "FAIL the float model took the int8 model's profile"; exit 1
fi
grep -q "measured on a different graph" "$work/refused.txt"

# --quantize int8 --weights-only: the precision stage times the products
# whose weights are int8 in float (one build), keeps in float those it
# measured faster, and the profile's "float_layers" drive the compile: its
# graph matches the one measured (else the profile is refused), the products
# left narrow are the others, and the outputs match the test data.
mlp="$samples/mlp"
"$cgc" tune "$mlp/model.onnx" -q --budget 60 --rounds 2 -o "$work/narrow" --quantize int8 \
    --weights-only >"$work/tune_narrow.log"
grep -Eq "^tune: [0-9]+x[0-9]+ 2 narrow layer\(s\) in float: [0-9.]+ ms$" "$work/tune_narrow.log" ||
  { echo "FAIL tune did not time the narrow layers in float"; cat "$work/tune_narrow.log"; exit 1; }
nprofile="$work/narrow/mlp.profile.json"
"$cgc" inspect "$mlp/model.onnx" --profile "$nprofile" --quantize int8 --weights-only --json \
    >"$work/narrow/inspect.json"
/usr/bin/python3 - "$nprofile" "$work/narrow/inspect.json" <<'PY'
import json, sys
p, report = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
floats = p["float_layers"]
assert isinstance(floats, list) and set(floats) <= {"/MatMul", "/MatMul_1"}, floats
narrow = report.get("narrow_weights", {}).get("products", 0)
assert narrow == 2 - len(floats), (narrow, floats)
assert report.get("profile_float_layers", []) == sorted(floats), report.get("profile_float_layers")
print(f"precision stage: {len(floats)} of 2 int8-weight products in float: {floats}")
PY
"$cgc" run "$mlp/model.onnx" -q --profile "$nprofile" --quantize int8 --weights-only \
    --inputs "$mlp/test_data_set_0" --check "$mlp/test_data_set_0" --rtol 1e-2 --atol 1e-2
