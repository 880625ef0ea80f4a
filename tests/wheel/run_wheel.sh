#!/usr/bin/env bash
# The wheel (README "Python"): cgc installed from the build tree, packed by
# python/make_wheel.py, pip-installed (no index) into a fresh virtual
# environment of Debian's Python; then, from a folder outside the tree and
# with an empty environment (no PYTHONPATH, LD_LIBRARY_PATH or CGC_*),
# `import cgc` is the venv's and finds the runtime inside it, compiles,
# builds and runs the sample model against its reference outputs
# (PyTorch's); the package's `cgc` command runs it from the venv's runtime
# too, and the package holds its CMake package.
# Usage: run_wheel.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -eu
source=$1 build=$2 work=$3
if ! /usr/bin/python3 -c "import ensurepip, wheel" 2>/dev/null; then
  echo "skipped: no python3-venv or python3-wheel (build.sh installs them)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work/home"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
wheel=$(/usr/bin/python3 "$source/python/make_wheel.py" "$work/prefix" "$work/dist")
rm -rf "$work/prefix"
echo "built $wheel ($(du -h "$wheel" | cut -f1))"
# numpy (Requires-Dist) comes from Debian's python3-numpy: docs/API.md, "Python".
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --no-index --quiet --disable-pip-version-check "$wheel"
cp -r "$source/samples/models/tiny_cnn" "$work/tiny_cnn"

cd "$work"
clean=(env -i PATH=/usr/bin:/bin HOME="$work/home")
"${clean[@]}" "$work/venv/bin/python" - <<'EOF'
import os
import numpy as np
import onnx
from onnx import numpy_helper

import cgc

venv = os.path.realpath("venv")
for path in (cgc.__file__, *cgc.runtime_paths(), *cgc.runtime_paths("x86-64-v3")):
    assert os.path.realpath(path).startswith(venv + "/"), path
m = cgc.compile("tiny_cnn/model.onnx")
read = lambda name: numpy_helper.to_array(onnx.load_tensor(f"tiny_cnn/test_data_set_0/{name}"))
y = m(read("input_0.pb"))
np.testing.assert_allclose(y, read("output_0.pb"), rtol=1e-4, atol=1e-5)
print("import cgc from", os.path.dirname(cgc.__file__), "- tiny_cnn matches its reference")
EOF
"${clean[@]}" "$work/venv/bin/cgc" run tiny_cnn/model.onnx -q --inputs tiny_cnn/test_data_set_0 \
  --check tiny_cnn/test_data_set_0
case "$("${clean[@]}" "$work/venv/bin/cgc" config --cflags)" in
  "-I$work/venv/"*) ;;
  *) echo "FAIL: the venv's cgc takes another runtime: $("$work/venv/bin/cgc" config --cflags)"; exit 1 ;;
esac
config=$(find "$work/venv" -path '*/site-packages/cgc/lib*/cmake/cgc/cgcConfig.cmake')
test -n "$config" || { echo "FAIL: no cgcConfig.cmake in the installed package"; exit 1; }
echo "wheel: OK"
