#!/usr/bin/env bash
# Makes the corpus if needed (bench/models.py), then compares cgc with ONNX
# Runtime on every model (bench/check.py). Arguments go to check.py.
set -euo pipefail
here="$(dirname "$0")"
/usr/bin/python3 "$here/models.py"
exec /usr/bin/python3 "$here/check.py" "$@"
