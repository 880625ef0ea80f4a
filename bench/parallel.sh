#!/usr/bin/env bash
# Makes the graphs if needed (bench/models.py googlenet, bench/graphi_models.py),
# then times cgc's parallel configurations against ONNX Runtime's
# (bench/parallel.py: bench/results/parallel.{md,json}). Arguments go to
# parallel.py.
set -euo pipefail
here="$(dirname "$0")"
/usr/bin/python3 "$here/models.py" --only googlenet
/usr/bin/python3 "$here/graphi_models.py"
if [ ! -d "$here/node_modules/onnxruntime-node" ]; then
  (cd "$here" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
exec /usr/bin/python3 "$here/parallel.py" "$@"
