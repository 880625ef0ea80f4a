#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: installs the Debian packages cgc
# needs, builds and installs cgc, packs the Python package as a wheel
# (install/dist), compiles the bundled sample model with it, runs it, and runs
# the sample application built with cgc_add_graph.
set -euo pipefail
cd "$(dirname "$0")"

packages=(build-essential cmake libonnx-dev libprotobuf-dev protobuf-compiler
          libfmt-dev libxsmm-dev libomp-dev libclang-dev llvm-dev clang-14
          libclang-rt-14-dev clang-format-14
          catch2 nlohmann-json3-dev libcli11-dev libonnx-testdata
          python3-torch python3-torchvision python3-onnx python3-numpy
          g++-aarch64-linux-gnu qemu-user binutils pkg-config
          pybind11-dev python3-dev python3-pytest python3-distributed
          python3-venv python3-pip python3-wheel)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

echo "== building cgc"
# CGC_NATIVE_MARCH=cascadelake ./build.sh: build and test as on that CPU.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${CGC_NATIVE_MARCH:+-DCGC_NATIVE_MARCH=$CGC_NATIVE_MARCH}
cmake --build build -j"$(nproc)"
cmake --install build --prefix install >/dev/null
wheel=$(/usr/bin/python3 python/make_wheel.py install install/dist)
echo "== the Python wheel: $wheel (docs/API.md, \"Python\")"

echo "== cgc run on the bundled sample model (samples/models/tiny_cnn)"
sample=samples/models/tiny_cnn
CGC_CACHE_DIR=build/cgc-cache install/bin/cgc run "$sample/model.onnx" \
  --inputs "$sample/test_data_set_0" --check "$sample/test_data_set_0" --bench 200

echo "== the sample application (samples/app, built with cgc_add_graph)"
build/samples/app/cgc_sample_app
