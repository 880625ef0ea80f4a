#!/usr/bin/python3
"""The cache of compiled models (compiler/build_cache.h), in a cache
directory of its own.

1. A --dim model run twice: the second run compiles nothing (no "planned"
   line, "compiled before with these options"), gives the same outputs,
   and its build holds the weights once (in the library);
   other options (another --dim range) compile again, and so do new
   weights in an external data file beside an unchanged model.
2. CGC_CACHE_MAX_SIZE: three builds of one model (other schedules)
   under a limit of about two and a half of them: after the third build
   the least recently used one is gone (the first build was used again,
   so the second goes), and `cgc cache` lists what is left.
3. `cgc cache --clear` empties it; a malformed limit is one line, exit 1.
4. `cgc tune` leaves no build in the cache (its trials are built apart).

Usage: test_cache.py CGC SAMPLES_DIR WORKDIR
"""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CGC, SAMPLES, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
CACHE = os.path.join(WORK, "cache")
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def cgc(*args, limit=None):
    env = dict(os.environ, CGC_CACHE_DIR=CACHE)
    env.pop("CGC_CACHE_MAX_SIZE", None)
    if limit is not None:
        env["CGC_CACHE_MAX_SIZE"] = str(limit)
    return subprocess.run([CGC, *args], capture_output=True, text=True, timeout=300, env=env)


def builds():
    """The cache's build directories (16 hex digits), by name."""
    if not os.path.isdir(CACHE):
        return []
    return sorted(d for d in os.listdir(CACHE) if len(d) == 16 and
                  os.path.isdir(os.path.join(CACHE, d)))


def size_of(build):
    path = os.path.join(CACHE, build)
    return sum(os.path.getsize(os.path.join(root, f))
               for root, _, files in os.walk(path) for f in files)


# --- 1. a --dim model compiled once
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32), "w")
graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]),
                           helper.make_node("Relu", ["m"], ["y"])], "dyn", [x], [y], [w])
dyn = os.path.join(WORK, "dyn.onnx")
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), dyn)
run_dyn = ["run", dyn, "--dim", "batch=1..8", "--fill-missing-inputs"]
first, second = cgc(*run_dyn), cgc(*run_dyn)
check(first.returncode == 0 and "planned" in first.stderr, f"first --dim run compiles: {first.stderr}")
check(second.returncode == 0 and "planned" not in second.stderr and
      "compiled before with these options" in second.stderr,
      f"second --dim run only loads: {second.stderr}")
check(first.stdout == second.stdout, f"the same outputs: {first.stdout!r} vs {second.stdout!r}")
kept = [f for b in builds() for f in os.listdir(os.path.join(CACHE, b))]
check(any(f.endswith(".so") for f in kept) and not any(f.endswith(".weights.bin") for f in kept),
      f"a build keeps its library, not a second copy of the weights it embeds: {kept}")
other = cgc("run", dyn, "--dim", "batch=1..4", "--fill-missing-inputs")
check(other.returncode == 0 and "planned" in other.stderr,
      f"another --dim range compiles again: {other.stderr}")

# A model whose weights lie in a file beside it: new weights there (the
# model file unchanged) compile again and change the outputs.
ext = os.path.join(WORK, "ext.onnx")
onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), ext,
                save_as_external_data=True, location="ext.bin", size_threshold=0)
run_ext = ["run", ext, "--dim", "batch=1..8", "--fill-missing-inputs"]
before = cgc(*run_ext)
with open(os.path.join(WORK, "ext.bin"), "r+b") as f:
    f.write(np.full(16 * 8, 0.5, np.float32).tobytes())
after = cgc(*run_ext)
check(before.returncode == 0 and after.returncode == 0 and "planned" in after.stderr and
      before.stdout != after.stdout,
      f"new external weights compile again: {after.stderr} {before.stdout!r} {after.stdout!r}")

# --- 2. least recently used builds go first
r = cgc("cache", "--clear")
check(r.returncode == 0 and not builds(), f"cleared: {r.stdout} {r.stderr} {builds()}")
cnn = os.path.join(SAMPLES, "tiny_cnn", "model.onnx")


def run_cnn(*config, limit=None):
    r = cgc("run", cnn, "-q", "--fill-missing-inputs", *config, limit=limit)
    check(r.returncode == 0, f"run {config}: {r.stderr}")
    time.sleep(0.05)  # a distinct time of use


ONE, TWO, THIRD = ["--threads", "1"], ["--threads", "2"], ["--executors", "2", "--threads", "1"]
run_cnn(*ONE)
(a,) = builds()
run_cnn(*TWO)
(b,) = set(builds()) - {a}
run_cnn(*ONE)  # a is used again: b is now the least recently used
limit = int(2.5 * max(size_of(a), size_of(b)))
run_cnn(*THIRD, limit=limit)
left = builds()
check(len(left) == 2 and a in left and b not in left,
      f"limit {limit}: the least recently used build {b} removed, {a} kept: {left}")
r = cgc("cache", limit=limit)
check(r.returncode == 0 and CACHE in r.stdout and "2 build(s)" in r.stdout and
      all(d in r.stdout for d in left), f"cgc cache lists the builds: {r.stdout} {r.stderr}")
r = cgc("run", cnn, "-q", "--fill-missing-inputs", *TWO, limit=1)
check(r.returncode == 0 and len(builds()) == 1, f"a limit below one build keeps the last: {builds()}")

# --- 3. clear, and a malformed limit
r = cgc("cache", "--clear")
check(r.returncode == 0 and "removed 1 build(s)" in r.stdout and not builds(),
      f"cgc cache --clear: {r.stdout} {r.stderr} {builds()}")
r = cgc("run", cnn, "-q", "--fill-missing-inputs", limit="lots")
lines = r.stderr.strip().splitlines()
check(r.returncode == 1 and len(lines) == 1 and "CGC_CACHE_MAX_SIZE" in lines[0],
      f"a malformed limit: {r.returncode} {r.stderr!r}")

# --- 4. tune's trials are not left in the cache
shutil.rmtree(CACHE, ignore_errors=True)
r = cgc("tune", cnn, "-q", "--budget", "1", "--rounds", "1", "-o", os.path.join(WORK, "tune"))
check(r.returncode == 0 and not builds(), f"tune leaves no build: {r.stderr} {builds()}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("cache: all checks passed")
