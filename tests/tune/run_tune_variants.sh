#!/usr/bin/env bash
# `cgc tune` chooses each convolution layer's variant by measurement: on the
# inception sample (a small budget, few rounds) it must write "variants" and
# "cpu" into the profile; `cgc run --profile` must still match the test
# data and `cgc inspect --profile` list the variants; a layer forced to
# Im2col through the profile must run it, and one forced to the packed GEMM
# with a depth step of its own (a setting) must run that; a profile of
# another CPU (for native) or of another graph must be refused with one
# line, exit 1.
# Usage: run_tune_variants.sh CGC SAMPLES_DIR WORK_DIR
set -euo pipefail
cgc="$1" samples="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
name=inception
model="$samples/$name/model.onnx"
data="$samples/$name/test_data_set_0"
"$cgc" tune "$model" -q --budget 250 --rounds 2 -o "$work" | tee "$work/tune.log"
profile="$work/$name.profile.json"
test -f "$profile" || { echo "FAIL no profile at $profile"; exit 1; }
grep -Eq "^tune: .* variant (Winograd|Packed|Pointwise|Im2col|FewChannels|Depthwise)" \
    "$work/tune.log" || { echo "FAIL tune tried no variant"; exit 1; }

# The profile's new fields, and copies to refuse: another CPU family, and a
# layer forced to Im2col (the first Conv the profile measured).
/usr/bin/python3 - "$profile" "$work" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
work = sys.argv[2]
known = {"Winograd", "Packed", "DepthwiseRows", "DepthwiseVectors", "DepthwisePlanes",
         "FewChannels", "Pointwise", "Im2col"}
assert isinstance(p["variants"], dict), p.get("variants")
# "Name" or "Name:setting" (Winograd's form, Packed's depth step).
assert all(v.split(":")[0] in known for v in p["variants"].values()), p["variants"]
cpu = p["cpu"]
assert isinstance(cpu["vendor"], str) and cpu["vendor"], cpu
assert isinstance(cpu["family"], int) and isinstance(cpu["model"], int), cpu
assert isinstance(cpu["tier"], str) and cpu["tier"], cpu
print(f"profile: {len(p['variants'])} measured variant(s), cpu {cpu}")
other = dict(p, cpu=dict(cpu, family=cpu["family"] + 1))
json.dump(other, open(f"{work}/other_cpu.json", "w"), indent=2)
conv = next(n["name"] for n in p["nodes"] if n["op"] == "Conv")
forced = dict(p, variants={conv: "Im2col"})
json.dump(forced, open(f"{work}/forced.json", "w"), indent=2)
depth = dict(p, variants={conv: "Packed:96"})
json.dump(depth, open(f"{work}/forced_depth.json", "w"), indent=2)
open(f"{work}/forced_layer.txt", "w").write(conv)
PY

"$cgc" run "$model" -q --profile "$profile" --inputs "$data" --check "$data"
"$cgc" inspect "$model" --profile "$profile" >"$work/inspect.txt"
grep -q "^convolution variants (" "$work/inspect.txt" &&
    grep -q "^variants from the profile" "$work/inspect.txt" ||
    { echo "FAIL inspect lists no variants:"; cat "$work/inspect.txt"; exit 1; }
# The counts hold every convolution layer, with a profile or without.
count() { "$cgc" inspect "$model" --json "$@" |
    /usr/bin/python3 -c "import json, sys; print(sum(json.load(sys.stdin)['conv_variants'].values()))"; }
layers=$(count) with_profile=$(count --profile "$work/forced.json")
[ "$layers" -gt 0 ] && [ "$layers" = "$with_profile" ] ||
    { echo "FAIL conv layers counted: $layers without a profile, $with_profile with one"; exit 1; }

# A layer forced to Im2col: inspect names it, and the model still checks.
layer=$(cat "$work/forced_layer.txt")
"$cgc" inspect "$model" --profile "$work/forced.json" >"$work/inspect_forced.txt"
grep -Eq "^  $layer +Im2col$" "$work/inspect_forced.txt" ||
    { echo "FAIL inspect does not show $layer on Im2col:"; cat "$work/inspect_forced.txt"; exit 1; }
"$cgc" run "$model" -q --profile "$work/forced.json" --inputs "$data" --check "$data"

# The same layer on the packed GEMM with a depth step of 96 (a setting):
# inspect shows it, the compiled IR carries it, the model still checks.
"$cgc" inspect "$model" --profile "$work/forced_depth.json" >"$work/inspect_depth.txt"
grep -Eq "^  $layer +Packed:96$" "$work/inspect_depth.txt" ||
    { echo "FAIL inspect does not show $layer on Packed:96:"; cat "$work/inspect_depth.txt"; exit 1; }
"$cgc" compile "$model" -q --profile "$work/forced_depth.json" -o "$work/depth" \
    --print-ir-after pack-conv-weights >"$work/depth_ir.txt" 2>&1
grep -Eq "^ *$layer = Conv\(.*cgc_conv_variant = \"Packed\", cgc_depth_step = 96" \
    "$work/depth_ir.txt" ||
    { echo "FAIL the IR has no depth step 96 on $layer:"; grep "$layer" "$work/depth_ir.txt"; exit 1; }
"$cgc" run "$model" -q --profile "$work/forced_depth.json" --inputs "$data" --check "$data"

# refused PROFILE MESSAGE MODEL: exit 1 and one line with MESSAGE.
refused() {
  local status=0
  "$cgc" compile "$3" -q --profile "$1" -o "$work/refused" 2>"$work/refused.txt" || status=$?
  if [ "$status" -ne 1 ] || ! grep -q "$2" "$work/refused.txt" ||
      [ "$(wc -l <"$work/refused.txt")" -ne 1 ]; then
    echo "FAIL $1 not refused with '$2' (exit $status):"; cat "$work/refused.txt"; exit 1
  fi
  echo "ok   refused: $(cat "$work/refused.txt")"
}
refused "$work/other_cpu.json" "was measured on a different CPU" "$model"
refused "$profile" "was measured on a different graph" "$samples/tiny_cnn/model.onnx"
# A named target takes the profile of another CPU (its tier decides).
"$cgc" compile "$model" -q --profile "$work/other_cpu.json" --target x86-64-v3 -o "$work/named"
echo "ok   tune variants"
