#!/bin/bash
# Compiles the device kit's corpus models with cgc run, one at a time, each
# (case, target) into its own cache dir under $CACHE so that its .so is the
# only one there. Also writes cgc's own outputs (--outputs) next to it, for
# checking the driver against. Usage: compile_models.sh [CASE:TARGET ...]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CGC=${CGC:-$ROOT/build/cgc}
CORPUS=${CORPUS:-$ROOT/bench/corpus}
CACHE=${CACHE:-/tmp/devkit-cache}
PY=${PY:-/usr/bin/python3}
JOBS=("$@")
if [ ${#JOBS[@]} -eq 0 ]; then
  JOBS=(squeezenet1_1:cascadelake mobilenet_v2:cascadelake lstm_h256_b1:cascadelake
        lstm_h256_b10:cascadelake silero_vad:cascadelake mobilenet_v2_int8:cascadelake
        qdq_block:cascadelake pathnet_conv:cascadelake
        squeezenet1_1:x86-64-v3 lstm_h256_b1:x86-64-v3)
fi
status=0
for job in "${JOBS[@]}"; do
  case=${job%%:*}; target=${job#*:}
  dir=$CORPUS/$case
  cache=$CACHE/$case-$target
  mapfile -t bind < <($PY - "$dir" <<'PYEOF'
import json, os, sys
d = sys.argv[1]
c = json.load(open(os.path.join(d, "case.json")))
for n, dims in c.get("shapes", {}).items():
    print("--shape"); print(f"{n}={'x'.join(map(str, dims))}")
consts = c.get("constants", {})
if isinstance(consts, list):  # silero_vad_sr_bound lists names; not used by the kit
    consts = {n: f"{n}.pb" for n in consts}
for n, f in consts.items():
    print("--constant"); print(f"{n}={os.path.join(d, f)}")
for n, b in c.get("bounds", {}).items():
    print("--bound"); print(f"{n}={b}")
PYEOF
)
  if ls "$cache"/*/model.so >/dev/null 2>&1 && [ -d "$cache/outputs" ]; then
    echo "== $case $target: cached"; continue
  fi
  rm -rf "$cache"; mkdir -p "$cache"
  echo "== $case $target: cgc run ${bind[*]}"
  start=$(date +%s.%N)
  if CGC_CACHE_DIR=$cache nice -n 10 "$CGC" run "$dir/model.onnx" --target "$target" "${bind[@]}" \
       --inputs "$dir/test_data_set_0" --outputs "$cache/outputs" > "$cache/cgc.log" 2>&1; then
    echo "   ok in $(echo "$(date +%s.%N) - $start" | bc) s: $(ls "$cache"/*/model.so)"
  else
    echo "   FAILED:"; tail -5 "$cache/cgc.log"; status=1
  fi
done
exit $status
