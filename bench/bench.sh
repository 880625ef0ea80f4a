#!/usr/bin/env bash
# Makes the corpus if needed (bench/models.py), then times cgc against ONNX
# Runtime on it (bench/bench.py: table, JSON and SVG chart in bench/results/).
# Arguments go to bench.py.
set -euo pipefail
here="$(dirname "$0")"
/usr/bin/python3 "$here/models.py"
exec /usr/bin/python3 "$here/bench.py" "$@"
