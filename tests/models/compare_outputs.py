"""Compares a model's outputs with reference outputs, both in the ONNX
test-data layout (output_N.pb TensorProto files).

Every output_*.pb in EXPECTED_DIR is compared with the same-named file in
ACTUAL_DIR: shapes and dtypes must be equal; floats match where
|actual - expected| <= atol + rtol * |expected| (or both are the same
infinity, or both NaN); other dtypes must be equal exactly. Prints the max
absolute and relative error of each output, and the first mismatching
elements of an output that does not match.

Exit status: 0 when everything matches, 1 on a mismatch, 2 when a file is
missing or unreadable.

Usage: /usr/bin/python3 tests/models/compare_outputs.py EXPECTED_DIR ACTUAL_DIR
           [--rtol R] [--atol A]   (defaults as `cgc run --check`: 1e-3, 1e-4)
"""

import argparse
import glob
import os
import re
import sys

import numpy as np
from google.protobuf.message import DecodeError
from onnx import TensorProto, numpy_helper

MISMATCHES_SHOWN = 5


class UnreadableFile(Exception):
    pass


def output_index(path):
    return int(re.search(r"output_(\d+)\.pb$", path).group(1))


def expected_output_files(expected_dir):
    paths = glob.glob(os.path.join(expected_dir, "output_*.pb"))
    paths = [p for p in paths if re.search(r"output_\d+\.pb$", p)]
    if not paths:
        raise UnreadableFile(f"no output_N.pb files in {expected_dir}")
    return [os.path.basename(p) for p in sorted(paths, key=output_index)]


def read_tensor(path):
    tensor = TensorProto()
    try:
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
    except OSError as error:
        raise UnreadableFile(f"cannot read {path}: {error.strerror}") from error
    except DecodeError as error:
        raise UnreadableFile(f"cannot parse {path} as a TensorProto: {error}") from error
    return numpy_helper.to_array(tensor)


def matching_elements(expected, actual, rtol, atol):
    """A boolean array: where the actual value matches the expected one."""
    if not np.issubdtype(expected.dtype, np.floating):
        return expected == actual
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = np.abs(a - e) <= atol + rtol * np.abs(e)
    return close | (a == e) | (np.isnan(a) & np.isnan(e))


def error_summary(expected, actual):
    """Max absolute and max relative error over the finite elements."""
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    finite = np.isfinite(e) & np.isfinite(a)
    if not finite.any():
        return 0.0, 0.0
    absolute = np.abs(a[finite] - e[finite])
    relative = absolute / np.maximum(np.abs(e[finite]), np.finfo(np.float64).tiny)
    return float(absolute.max()), float(relative.max())


def compare_output(name, expected, actual, rtol, atol):
    """Prints how one output compares; returns whether it matches."""
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        print(f"{name}: expected {expected.dtype} {list(expected.shape)}, "
              f"got {actual.dtype} {list(actual.shape)}")
        return False
    max_abs, max_rel = error_summary(expected, actual)
    matches = matching_elements(expected, actual, rtol, atol)
    bad = np.argwhere(~matches)
    status = "ok" if len(bad) == 0 else f"MISMATCH in {len(bad)} of {expected.size} elements"
    print(f"{name}: {expected.dtype} {list(expected.shape)}, "
          f"max abs error {max_abs:.3g}, max rel error {max_rel:.3g}: {status}")
    for index in bad[:MISMATCHES_SHOWN]:
        index = tuple(int(i) for i in index)
        print(f"  at {list(index)}: expected {expected[index]}, got {actual[index]}")
    return len(bad) == 0


def compare_dirs(expected_dir, actual_dir, rtol, atol):
    all_match = True
    for file_name in expected_output_files(expected_dir):
        expected = read_tensor(os.path.join(expected_dir, file_name))
        actual = read_tensor(os.path.join(actual_dir, file_name))
        all_match = compare_output(file_name, expected, actual, rtol, atol) and all_match
    return all_match


def main():
    parser = argparse.ArgumentParser(description="Compares output_N.pb files.")
    parser.add_argument("expected_dir")
    parser.add_argument("actual_dir")
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-4)
    args = parser.parse_args()
    try:
        all_match = compare_dirs(args.expected_dir, args.actual_dir, args.rtol, args.atol)
    except UnreadableFile as error:
        print(f"compare_outputs: {error}", file=sys.stderr)
        return 2
    return 0 if all_match else 1


if __name__ == "__main__":
    sys.exit(main())
