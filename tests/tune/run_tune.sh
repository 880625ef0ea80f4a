#!/usr/bin/env bash
# `cgc tune` on a sample with a small budget: it must write the profile with
# the chosen configuration, and the profile must drive `cgc run --profile`
# to the same outputs.
# Usage: run_tune.sh CGC SAMPLES_DIR WORK_DIR
set -euo pipefail
cgc="$1" samples="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
model="$samples/tiny_cnn/model.onnx"
"$cgc" tune "$model" -q --budget 5 --rounds 2 -o "$work" | tee "$work/tune.log"
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
print(f"profile: {e}x{t}, {len(p['node_threads'])} per-op thread counts, {p['tuned_ms']:.3f} ms")
PY
grep -q "^tune: best " "$work/tune.log" || { echo "no summary line"; exit 1; }
"$cgc" run "$model" -q --profile "$profile" \
    --inputs "$samples/tiny_cnn/test_data_set_0" --check "$samples/tiny_cnn/test_data_set_0"
