#!/usr/bin/env bash
# Makes the corpus if needed (bench/models.py), then compares cgc with ONNX
# Runtime on every model (bench/check.py). Arguments go to check.py.
set -euo pipefail
here="$(dirname "$0")"
# Only the models --only names are made.
only=()
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
  [ "${args[i]}" = --only ] && only=(--only "${args[i + 1]}")
done
/usr/bin/python3 "$here/models.py" "${only[@]}"
exec /usr/bin/python3 "$here/check.py" "$@"
