#!/usr/bin/env bash
# The int8 corpus models built for TARGET (its runtime's int8 kernels) and
# checked against ONNX Runtime by bench/check.sh. Exit 77 (skipped) where
# this CPU cannot run TARGET, or where the native build has TARGET's
# instruction-set tier: the corpus test ran the same kernels.
# Usage: corpus_int8.sh CGC TARGET CHECK_SH RESULTS_DIR
set -euo pipefail
cgc=$1 target=$2 check=$3 results=$4
"$cgc" targets --runnable | grep -qx "$target" || exit 77
tier_of() { "$cgc" targets | awk -v name="$1" '$1 == name { print $2 }'; }
if [ "$(tier_of native)" = "$(tier_of "$target")" ]; then
  echo "skipped: the native build has $target's tier ($(tier_of native))"
  exit 77
fi
exec bash "$check" --cgc "$cgc" --only resnet18_int8,mobilenet_v2_int8,qdq_block,qdq_small_cnn,qdq_depthwise_block \
  --results "$results" --cgc-arg=--target="$target"
