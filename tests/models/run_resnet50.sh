#!/usr/bin/env bash
# torchvision ResNet-50 (random weights, batch 1, opset 13): compile, build
# (timed: must be under 2 minutes) and compare with PyTorch within 1e-3
# relative.
# Usage: run_resnet50.sh CGC WORK_DIR
set -eu
cgc=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
/usr/bin/python3 "$here/make_resnet50.py" "$work"
start=$(date +%s)
"$cgc" run "$work/model.onnx" --verify --inputs "$work/test_data_set_0" \
       --check "$work/test_data_set_0" --rtol 1e-3 --atol 1e-4 --bench 3
seconds=$(( $(date +%s) - start ))
echo "resnet50: compile, build and run took ${seconds} s"
if [ "$seconds" -ge 120 ]; then
  echo "resnet50: over the 2-minute budget"
  exit 1
fi
