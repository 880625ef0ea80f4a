"""Runs the ONNX backend conformance tests through cgc.

Every test directory (model.onnx + test_data_set_0/) under DATA/node, plus the
`simple` and `pytorch-converted` sets, is compiled, built and run with its
inputs, and its outputs are checked against ONNX's reference outputs with
`cgc run --check`. A test whose model uses an op cgc does not support must
fail with the "unsupported op" diagnostic; it is not counted as attempted.

The C++ compiler dominates the cost, so models are built in batches: each
test is compiled with `cgc compile --name T<n> --namespace ...` into its
batch's directory, each batch is built into one shared library by
`cgc build --verify` (one translation unit: the runtime headers are parsed
once per batch, not once per model), and each test runs from its batch's
library with `cgc run --library LIB --name T<n>`. The libraries are built
at -O0 by default (--opt-level; a third faster to build than -O1): the
kernels are prebuilt in the runtime library, only the glue between them is
compiled here, and the ctest runs on several nodes build it at -O2 as users
do. A batch that fails to
build is rebuilt model by model, so that the failure lands on the model that
causes it. `--shard I/N` runs every N-th test from the I-th (1-based), so that
N processes (ctest shards) share the suite.

Random ops (Bernoulli, RandomUniformLike, ...) cannot match the reference's
values: their tests check the outputs' type and shape against the
reference, that Bernoulli's values are 0 or 1, and, for a seeded node, that a second process gives the same
bytes.

Passes when every attempted failure is listed in the expected-failures file
and at least 90% of the attempted tests pass. Prints passed/attempted/total.

Usage: run_conformance.py --cgc CGC --data DATA --expected FILE --work DIR
       [--filter TEXT] [--min-nodes N] [--shard I/N] [--batch N]
       [--opt-level O] [--cgc-arg=ARG]...
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper


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

RANDOM_OPS = {"RandomUniform", "RandomUniformLike", "RandomNormal",
              "RandomNormalLike", "Bernoulli"}


def graph_input_names(model):
    initializers = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


class Test:
    """One test and what the phases found out about it."""

    def __init__(self, name, path, index):
        self.name, self.path, self.index = name, path, index
        self.data = os.path.join(path, "test_data_set_0")
        self.model = os.path.join(path, "model.onnx")
        self.class_name = f"T{index}"
        self.constants = []   # --constant NAME=FILE arguments
        self.status = None    # set once the test is decided
        self.detail = ""
        self.source = None    # the generated .cpp once compiled
        self.library = None
        loaded = onnx.load(self.model, load_external_data=False)
        self.nodes = len(loaded.graph.node)
        self.inputs = graph_input_names(loaded)
        integer = {onnx.TensorProto.INT32, onnx.TensorProto.INT64}
        self.integer_inputs = [
            i.name for i in loaded.graph.input if i.name in self.inputs
            and i.type.tensor_type.elem_type in integer]
        ops = {n.op_type for n in loaded.graph.node}
        self.random = bool(ops & RANDOM_OPS)
        # Bernoulli, or its expansion (RandomUniformLike, Less, Cast): 0 or 1.
        self.binary = "Bernoulli" in ops or "bernoulli" in name
        self.seeded = any(a.name == "seed" for n in loaded.graph.node
                          if n.op_type in RANDOM_OPS for a in n.attribute)


def classify(test, result):
    """Sets the test's status from a failed cgc command."""
    message = (result.stderr.strip() or result.stdout.strip()).splitlines()
    first = message[-1] if message else f"exit {result.returncode}"
    if result.returncode == 1 and "unsupported op" in result.stderr:
        test.status, test.detail = "unsupported", first
    elif result.returncode not in (0, 1):
        test.status, test.detail = "crash", f"exit {result.returncode}: {first}"
    else:
        test.status, test.detail = "fail", first


def run(command, timeout=300):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def shape_bindings(test):
    """--shape NAME=DxD... for every tensor input with a symbolic dimension,
    from its test-data file (what a user who knows the input does)."""
    model = onnx.load(test.model, load_external_data=False)
    bindings = []
    for value in model.graph.input:
        if value.name not in test.inputs or not value.type.HasField("tensor_type"):
            continue
        if all(d.HasField("dim_value") for d in value.type.tensor_type.shape.dim):
            continue
        tensor = onnx.TensorProto()
        index = test.inputs.index(value.name)
        with open(os.path.join(test.data, f"input_{index}.pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        if tensor.dims:
            bindings += ["--shape", f"{value.name}={'x'.join(str(d) for d in tensor.dims)}"]
    return bindings


def compile_test(cgc, test, out_dir, extra_args):
    """cgc compile into the batch directory. Inputs that determine shapes
    (Reshape's shape, Slice's starts, ...) are graph inputs in these tests;
    when cgc asks for one to be a compile-time constant, it is bound to its
    test-data file with --constant, as a user would do; inputs of symbolic
    dimensions (when cgc asks) get --shape from their files."""
    for _ in range(8):
        result = run([cgc, "compile", test.model, "-o", out_dir, "--name",
                      test.class_name, "--namespace", f"cgc_conformance_{test.index}",
                      "--quiet"] + test.constants + list(extra_args))
        if result is None:
            test.status, test.detail = "fail", "cgc compile timed out (hang?)"
            return
        if result.returncode == 1 and SHAPE_NEEDED.search(result.stderr) and \
                "--shape" not in test.constants:
            shapes = shape_bindings(test)
            if not shapes:
                break
            test.constants += shapes
            continue
        needed = CONSTANT_NEEDED.search(result.stderr)
        if result.returncode != 1 or not needed:
            break
        bound = test.constants[1::2]
        if needed.group(1) in test.inputs:
            names = [needed.group(1)]
        else:
            # A value computed from graph inputs (a window's length from its
            # size input): bind the integer inputs not bound yet.
            names = [n for n in test.integer_inputs
                     if not any(b.startswith(n + "=") for b in bound)]
        if not names:
            break
        for name in names:
            index = test.inputs.index(name)
            test.constants += ["--constant", f"{name}={test.data}/input_{index}.pb"]
    if result.returncode != 0:
        classify(test, result)
        return
    test.source = os.path.join(out_dir, f"t{test.index}.cpp")


def build_batch(cgc, tests, library, opt_level):
    """One library for the batch; on failure, one per model."""
    build = [cgc, "build", "--verify", "--quiet", f"-O{opt_level}"]
    result = run(build + ["-o", library] + [t.source for t in tests], timeout=900)
    if result is not None and result.returncode == 0:
        for t in tests:
            t.library = library
        return
    for t in tests:
        own = os.path.splitext(t.source)[0] + ".so"
        alone = run(build + ["-o", own, t.source])
        if alone is None:
            t.status, t.detail = "fail", "cgc build timed out"
        elif alone.returncode != 0:
            classify(t, alone)
        else:
            t.library = own


def check_random(test, outputs_dir):
    """A random op's outputs: the reference's type and shape, and 0 or 1
    for Bernoulli. Returns an error message or None."""
    index = 0
    while os.path.exists(os.path.join(test.data, f"output_{index}.pb")):
        expected = numpy_helper.to_array(onnx.load_tensor(
            os.path.join(test.data, f"output_{index}.pb")))
        actual = numpy_helper.to_array(onnx.load_tensor(
            os.path.join(outputs_dir, f"output_{index}.pb")))
        if actual.dtype != expected.dtype or actual.shape != expected.shape:
            return (f"output {index} is {actual.dtype}{list(actual.shape)}, the reference "
                    f"{expected.dtype}{list(expected.shape)}")
        if test.binary and not np.all((actual == 0) | (actual == 1)):
            return f"output {index} has values other than 0 and 1"
        index += 1
    return None


def run_test(cgc, test, work, extra_args):
    command = [cgc, "run", test.model, "--quiet", "--library", test.library,
               "--name", test.class_name, "--inputs", test.data] + test.constants
    if test.random:
        outputs = [os.path.join(work, f"outputs_{test.index}_{i}") for i in (0, 1)]
        result = run(command + ["--outputs", outputs[0]] + list(extra_args))
    else:
        result = run(command + ["--check", test.data] + list(extra_args))
    if result is None:
        test.status, test.detail = "fail", "timed out (hang?)"
        return
    if result.returncode != 0:
        classify(test, result)
        return
    test.status = "pass"
    if not test.random:
        return
    try:
        problem = check_random(test, outputs[0])
    except Exception as e:  # a missing or unreadable output file
        problem = f"cannot check the outputs: {e}"
    if not problem and test.seeded:
        again = run(command + ["--outputs", outputs[1]] + list(extra_args))
        if again is None or again.returncode != 0:
            problem = "the second run failed"
        else:
            for name in sorted(os.listdir(outputs[0])):
                with open(os.path.join(outputs[0], name), "rb") as a, \
                        open(os.path.join(outputs[1], name), "rb") as b:
                    if a.read() != b.read():
                        problem = f"{name} differs between two runs with one seed"
    if problem:
        test.status, test.detail = "fail", problem


def parse_shard(text):
    index, _, count = text.partition("/")
    index, count = int(index), int(count)
    if not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"--shard {text}: not I/N with 1 <= I <= N")
    return index, count


def run_phases(args, tests):
    """Compiles, builds and runs the tests; sets each one's status."""
    extra = args.cgc_arg
    pool = concurrent.futures.ThreadPoolExecutor(args.jobs)
    start = time.time()
    batches = [tests[i:i + args.batch] for i in range(0, len(tests), args.batch)]
    for b, batch in enumerate(batches):
        os.makedirs(os.path.join(args.work, f"batch{b}"), exist_ok=True)
    list(pool.map(lambda bt: compile_test(args.cgc, bt[0], os.path.join(
        args.work, f"batch{bt[1]}"), extra),
        [(t, b) for b, batch in enumerate(batches) for t in batch]))
    print(f"... compiled {len(tests)} tests ({time.time() - start:.0f} s)", flush=True)
    built = [[t for t in batch if t.status is None] for batch in batches]
    list(pool.map(lambda b: build_batch(args.cgc, built[b], os.path.join(
        args.work, f"batch{b}", "batch.so"), args.opt_level),
        [b for b in range(len(built)) if built[b]]))
    print(f"... built {sum(1 for b in built if b)} libraries ({time.time() - start:.0f} s)",
          flush=True)
    list(pool.map(lambda t: run_test(args.cgc, t, args.work, extra),
                  [t for t in tests if t.status is None]))
    pool.shutdown()


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
    parser.add_argument("--shard", type=parse_shard, default=(1, 1),
                        help="I/N: every N-th test, from the I-th")
    parser.add_argument("--batch", type=int, default=40,
                        help="models per built library")
    parser.add_argument("--opt-level", type=int, default=0,
                        help="cgc build -O: the generated glue's optimisation level "
                             "(the kernels are prebuilt in the runtime either way)")
    parser.add_argument("--cgc-arg", action="append", default=[],
                        help="extra argument for cgc compile and run, e.g. "
                             "--cgc-arg=--executors=2")
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work, exist_ok=True)
    found = [t for t in find_tests(args.data) if args.filter in t[0]]
    shard, shards = args.shard
    found = found[shard - 1::shards]
    tests = [Test(name, path, i) for i, (name, path) in enumerate(found)]
    tests = [t for t in tests if t.nodes >= args.min_nodes]
    expected = read_expected_failures(args.expected)
    start = time.time()
    run_phases(args, tests)

    results = {t.name: (t.status, t.detail) for t in tests}
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
    if attempted and rate < 0.9:
        print("fewer than 90% of the attempted tests pass")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
