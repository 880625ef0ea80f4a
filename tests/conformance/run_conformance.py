"""Runs the ONNX backend conformance tests through `cgc run`.

Every test directory (model.onnx + test_data_set_0/) under DATA/node, plus the
`simple` and `pytorch-converted` sets, is compiled, built and run with its
inputs, and its outputs are checked against ONNX's reference outputs with
`cgc run --check`. A test whose model uses an op cgc does not support must
fail with the "unsupported op" diagnostic; it is not counted as attempted.

Passes when every attempted failure is listed in the expected-failures file
and at least 90% of the attempted tests pass. Prints passed/attempted/total.

Usage: run_conformance.py --cgc CGC --data DATA --expected FILE --work DIR
       [--filter TEXT] [--min-nodes N] [--cgc-arg=ARG]...
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import time

import onnx


def find_tests(data_dir):
    tests = []
    for suite in ("node", "simple", "pytorch-converted"):
        root = os.path.join(data_dir, suite)
        if not os.path.isdir(root):
            continue
        for name in sorted(os.listdir(root)):
            path = os.path.join(root, name)
            if os.path.isfile(os.path.join(path, "model.onnx")):
                tests.append((f"{suite}/{name}", path))
    return tests


def read_expected_failures(path):
    expected = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, reason = line.partition(" ")
            expected[name] = reason.strip()
    return expected


CONSTANT_NEEDED = re.compile(
    r"input '([^']+)' \([^)]*\) must be a compile-time constant")
SHAPE_NEEDED = re.compile(r"symbolic dimension \S+ not bound")


def graph_input_names(model_path):
    model = onnx.load(model_path)
    initializers = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


def shape_bindings(model_path, data):
    """--shape NAME=DxD... for every tensor input with a symbolic dimension,
    from its test-data file (what a user who knows the input does)."""
    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    bindings = []
    for index, value in enumerate(inputs):
        if not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            continue
        tensor = onnx.TensorProto()
        with open(os.path.join(data, f"input_{index}.pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        if tensor.dims:
            shape = "x".join(str(d) for d in tensor.dims)
            bindings += ["--shape", f"{value.name}={shape}"]
    return bindings


def run_test(cgc, name, path, extra_args=()):
    """Runs one test. Inputs that determine shapes (Reshape's shape, Slice's
    starts, ...) are graph inputs in these tests; when cgc asks for one to be
    a compile-time constant, it is bound to its test-data file with
    --constant, as a user would do; inputs of symbolic dimensions (when cgc
    asks) get --shape from their files."""
    data = os.path.join(path, "test_data_set_0")
    model = os.path.join(path, "model.onnx")
    constants = []
    for _ in range(8):
        command = [cgc, "run", model, "--quiet", "--verify", "--inputs", data,
                   "--check", data] + constants + list(extra_args)
        try:
            result = subprocess.run(command, capture_output=True, text=True,
                                    timeout=300)
        except subprocess.TimeoutExpired:
            return name, "fail", "timed out (hang?)"
        if result.returncode == 1 and SHAPE_NEEDED.search(result.stderr) and \
                "--shape" not in constants:
            shapes = shape_bindings(model, data)
            if not shapes:
                break
            constants += shapes
            continue
        needed = CONSTANT_NEEDED.search(result.stderr)
        if result.returncode != 1 or not needed:
            break
        names = graph_input_names(model)
        if needed.group(1) not in names:
            break
        index = names.index(needed.group(1))
        constants += ["--constant",
                      f"{needed.group(1)}={data}/input_{index}.pb"]
    if result.returncode == 0:
        return name, "pass", ""
    message = (result.stderr.strip() or result.stdout.strip()).splitlines()
    first = message[-1] if message else f"exit {result.returncode}"
    if result.returncode == 1 and "unsupported op" in result.stderr:
        return name, "unsupported", first
    if result.returncode not in (0, 1):
        return name, "crash", f"exit {result.returncode}: {first}"
    return name, "fail", first


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgc", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--expected", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--filter", default="", help="substring of test names")
    parser.add_argument("--min-nodes", type=int, default=1,
                        help="only models with at least this many nodes (a "
                             "schedule over several executors needs several)")
    parser.add_argument("--cgc-arg", action="append", default=[],
                        help="extra argument for cgc run, e.g. --cgc-arg=--executors=2")
    args = parser.parse_args()

    os.makedirs(args.work, exist_ok=True)
    tests = [t for t in find_tests(args.data) if args.filter in t[0]]
    if args.min_nodes > 1:
        tests = [t for t in tests if len(onnx.load(os.path.join(t[1], "model.onnx"),
                                                   load_external_data=False).graph.node)
                 >= args.min_nodes]
    expected = read_expected_failures(args.expected)
    start = time.time()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_test, args.cgc, n, p, args.cgc_arg) for n, p in tests]
        for i, future in enumerate(concurrent.futures.as_completed(futures), 1):
            name, status, detail = future.result()
            results[name] = (status, detail)
            if i % 100 == 0:
                print(f"... {i}/{len(tests)} done ({time.time() - start:.0f} s)",
                      flush=True)

    passed = [n for n, (s, _) in results.items() if s == "pass"]
    attempted = [n for n, (s, _) in results.items() if s != "unsupported"]
    unexpected = []
    for name in sorted(attempted):
        status, detail = results[name]
        if status == "pass":
            if name in expected:
                print(f"NOW PASSES (remove from the list): {name}")
            continue
        known = name in expected
        print(f"{'expected ' if known else ''}{status.upper()}: {name}: {detail}")
        if not known or status == "crash":
            unexpected.append(name)

    rate = len(passed) / len(attempted) if attempted else 0.0
    print(f"conformance: {len(passed)} passed / {len(attempted)} attempted / "
          f"{len(tests)} total ({100 * rate:.1f}% of attempted) "
          f"in {time.time() - start:.0f} s")
    if unexpected:
        print(f"{len(unexpected)} unexpected failures: {' '.join(unexpected)}")
        return 1
    if rate < 0.9:
        print("fewer than 90% of the attempted tests pass")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
