#!/usr/bin/env bash
# Runs every test (after ./build.sh): unit, golden, kernels, samples, ONNX
# conformance, diagnostics, sanitizers, the consumer project and ResNet-50.
set -euo pipefail
cd "$(dirname "$0")"
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
