#!/bin/bash
# Builds the device benchmark kit (run there as: bash .devkit/run.sh from
# the checkout root) into KIT (default /work/main/.devkit):
#   1. compile_models.sh: the kit's corpus models with cgc run --target
#      cascadelake (and x86-64-v3 for squeezenet1_1 and lstm_h256_b1), each
#      into its own cache dir under $CACHE, with cgc's outputs;
#   2. bin/drive (drive.cpp) and bin/peak-{cascadelake,x86-64-v3}
#      (../peak.cpp, the fallback where the device has no g++): generic
#      x86-64 code, C library only, glibc 2.34;
#   3. checks every library with the driver here: its outputs must be
#      cgc run's, byte for byte (needs a CPU that runs cascadelake code);
#   4. make_kit.py: the kit (libraries split into code and a weights blob
#      shared across targets, zlib'ed; ONNX files or skeletons; inputs);
#   5. unpacks the kit's libraries as the device will and checks them.
# Usage: bench/device/build_kit.sh [KIT]   (from anywhere; CACHE, CGC, PY)
set -eu
export PYTHONDONTWRITEBYTECODE=1
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
KIT=${1:-/work/main/.devkit}
export CACHE=${CACHE:-/tmp/devkit-cache}
export PY=${PY:-/usr/bin/python3}   # with onnx and numpy
BIN=${BIN:-/tmp/devkit-bin}
CORPUS=${CORPUS:-$ROOT/bench/corpus}
ISA_H=$ROOT/build/runtime/generated/core/isa.h

echo "== 1. models"
"$HERE/compile_models.sh"

echo "== 2. binaries"
mkdir -p "$BIN"
CXXFLAGS="-O2 -mtune=generic -fno-exceptions -fno-rtti -static-libstdc++ -static-libgcc"
nice g++ $CXXFLAGS -march=x86-64 -Wall -Wextra -I "$ROOT/runtime/include" -o "$BIN/drive" "$HERE/drive.cpp" -ldl
for target in cascadelake x86-64-v3; do
  nice g++ -O2 -march=$target -static-libstdc++ -static-libgcc -I "$(dirname "$(dirname "$ISA_H")")" \
    -o "$BIN/peak-$target" "$ROOT/bench/peak.cpp"
done
for b in drive peak-cascadelake peak-x86-64-v3; do
  need=$(objdump -T "$BIN/$b" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1)
  echo "$b: needs $need; $(ldd "$BIN/$b" | awk '{print $1}' | tr '\n' ' ')"
done

echo "== 3. the driver against cgc run's outputs"
CHECK=/tmp/devkit-check
rm -rf "$CHECK"
for dir in "$CACHE"/*-*/; do
  key=$(basename "$dir")
  case_name=${key%-cascadelake}; case_name=${case_name%-x86-64-v3}
  mkdir -p "$CHECK/$key"
  nice "$BIN/drive" "$(ls "$dir"*/model.so)" model "$CORPUS/$case_name/test_data_set_0" 3 1 \
    "$(nproc)" "$CHECK/$key" > "$CHECK/$key.json"
done
"$PY" - "$CACHE" "$CHECK" <<'EOF'
import glob, os, sys
import numpy as np, onnx
from onnx import numpy_helper
cache, check = sys.argv[1:]
bad = 0
for outputs in sorted(glob.glob(os.path.join(cache, "*", "outputs"))):
    key = os.path.basename(os.path.dirname(outputs))
    for pb in sorted(glob.glob(os.path.join(outputs, "output_*.pb"))):
        ref = numpy_helper.to_array(onnx.load_tensor(pb))
        got = np.fromfile(os.path.join(check, key, os.path.basename(pb)[:-3] + ".bin"), dtype=ref.dtype)
        same = got.size == ref.size and np.array_equal(got.reshape(ref.shape), ref)
        bad += not same
        print(f"  {key} {os.path.basename(pb)} {ref.dtype}{list(ref.shape)}: {'identical' if same else 'DIFFERENT'}")
sys.exit(1 if bad else 0)
EOF

echo "== 4. kit"
"$PY" "$HERE/make_kit.py" --cache "$CACHE" --corpus "$CORPUS" --kit "$KIT" --bin "$BIN" --isa-header "$ISA_H"

echo "== 5. unpacking check"
"$PY" - "$KIT" <<'EOF'
import json, os, sys, tempfile
sys.path.insert(0, sys.argv[1])
import devbench
kit = sys.argv[1]
manifest = json.load(open(os.path.join(kit, "manifest.json")))
with tempfile.TemporaryDirectory() as work:
    for entry in manifest["libraries"]:
        devbench.unpack_library(kit, work, entry)  # raises on a sha256 mismatch
print(f"  {len(manifest['libraries'])} libraries unpack to their sha256")
EOF
du -sh "$KIT"
du -sh --apparent-size "$KIT"
