#!/usr/bin/python3
"""`cgc calibrate`: its statistics against numpy's, and its errors.

Usage: test_calibrate.py CGC WORKDIR

The model (MatMul -> Add -> Relu -> Abs -> Neg -> Relu -> Add -> MatMul)
computes on multiples of 1/4 and 1/2 small enough that every float32 result
is exact in any order of summation: cgc's values equal numpy's bit for bit,
so min, max, count and every histogram bin must match exactly. The bins are
computed as cgc documents them: bin = floor((x - min) / (max - min) * bins)
in float64, max in the last bin, one bin when min == max.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CGC, WORK = sys.argv[1], sys.argv[2]
BINS = 64
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def save_model(path, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, os.path.basename(path)[:-5], inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write_set(directory, *arrays):
    os.makedirs(directory, exist_ok=True)
    for i, a in enumerate(arrays):
        with open(os.path.join(directory, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, "X").SerializeToString())


def cgc(*args):
    return subprocess.run([CGC, "calibrate", *args], capture_output=True, text=True, timeout=300)


rng = np.random.default_rng(7)
W1 = (rng.integers(-3, 4, (8, 16)) / 2).astype(np.float32)
B1 = (rng.integers(-4, 5, (16,)) / 4).astype(np.float32)
W2 = rng.integers(-3, 4, (16, 4)).astype(np.float32)
HALF = np.array(0.5, np.float32)


def forward(x):
    """Every observed tensor, as numpy computes it."""
    t = {"X": x}
    t["mm1"] = x @ W1
    t["add1"] = t["mm1"] + B1
    t["relu1"] = np.maximum(t["add1"], 0)
    t["abs1"] = np.abs(t["relu1"])
    t["neg1"] = -t["abs1"]
    t["zero"] = np.maximum(t["neg1"], 0)  # min == max: one bin
    t["h"] = t["relu1"] + t["zero"]
    t["Y"] = t["h"] @ (W2 * HALF)
    return t


def histogram(values, lo, hi, bins):
    if lo == hi:
        return [values.size]
    b = np.floor((values.astype(np.float64) - lo) / (hi - lo) * bins)
    return np.bincount(np.clip(b, 0, bins - 1).astype(np.int64), minlength=bins).tolist()


os.makedirs(WORK, exist_ok=True)
shutil.rmtree(WORK)
os.makedirs(WORK)
model = os.path.join(WORK, "mlp.onnx")
node = helper.make_node
save_model(
    model,
    [node("Mul", ["W2raw", "half"], ["w2"]),  # of constants only: not observed
     node("MatMul", ["X", "W1"], ["mm1"]), node("Add", ["mm1", "B1"], ["add1"]),
     node("Relu", ["add1"], ["relu1"]), node("Abs", ["relu1"], ["abs1"]),
     node("Neg", ["abs1"], ["neg1"]), node("Relu", ["neg1"], ["zero"]),
     node("Add", ["relu1", "zero"], ["h"]), node("MatMul", ["h", "w2"], ["Y"])],
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 8])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 4])],
    [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(B1, "B1"),
     numpy_helper.from_array(W2, "W2raw"), numpy_helper.from_array(HALF, "half")])

sets = []
for k in range(4):
    x = (rng.integers(-8, 9, (4, 8)) / 4).astype(np.float32)
    write_set(os.path.join(WORK, f"set_{k}"), x)
    sets.append(forward(x))
dirs = [a for k in range(4) for a in ("--inputs", os.path.join(WORK, f"set_{k}"))]

# --- statistics against numpy's (the default output: next to the model)
r = cgc(model, *dirs, "--bins", str(BINS))
if r.returncode != 0:
    sys.exit(f"FAIL: calibrate exits {r.returncode}: {r.stderr}")
progress = [line for line in r.stderr.splitlines() if "calibrate: pass" in line]
check(len(progress) == 8 and progress[2].startswith("cgc: calibrate: pass 1/2, input set 3/4 ("),
      f"a progress line per set and pass: {progress}")
out = os.path.join(WORK, "mlp.calib.json")
report = json.load(open(out))
check(report["model"] == "mlp.onnx" and report["input_sets"] == 4 and report["bins"] == BINS,
      f"header: {dict((k, v) for k, v in report.items() if k != 'tensors')}")
check(report["cgc_version"] != "", "cgc_version")
tensors = report["tensors"]
check(sorted(tensors) == sorted(sets[0]), f"observed tensors: {sorted(tensors)}")
for name in sets[0]:
    if name not in tensors:
        continue
    values = np.concatenate([s[name].ravel() for s in sets])
    lo, hi = float(values.min()), float(values.max())
    t = tensors[name]
    check(t["dtype"] == "float32" and t["shape"] == list(sets[0][name].shape),
          f"{name}: dtype, shape {t['dtype']} {t['shape']}")
    check(t["count"] == values.size, f"{name}: count {t['count']} vs {values.size}")
    check(t["min"] == lo and t["max"] == hi, f"{name}: min, max {t['min']} {t['max']} vs {lo} {hi}")
    check(t["histogram"] == histogram(values, lo, hi, BINS), f"{name}: histogram")
    check(sum(t["histogram"]) == t["count"], f"{name}: the histogram counts every value")
check(len(tensors["zero"]["histogram"]) == 1, "min == max: one bin")

# -q: nothing on stderr; -o
quiet_out = os.path.join(WORK, "quiet.json")
r = cgc(model, *dirs[:2], "-q", "-o", quiet_out)
check(r.returncode == 0 and r.stderr == "" and os.path.exists(quiet_out),
      f"-q -o: {r.returncode} {r.stderr!r}")
check(json.load(open(quiet_out))["bins"] == 2048, "--bins defaults to 2048")


# --- errors: exit 1, one line naming the file or tensor, nothing written
def expect_error(what, args, *named):
    target = os.path.join(WORK, "errors", "out.json")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w") as f:
        f.write("before")
    r = cgc(*args, "-q", "-o", target)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1, f"{what}: exit code {r.returncode}: {r.stderr}")
    check(len(lines) == 1 and all(n in lines[0] for n in named),
          f"{what}: one line naming {named}: {r.stderr!r}")
    check(open(target).read() == "before" and os.listdir(os.path.dirname(target)) == ["out.json"],
          f"{what}: the output file is left as it was, no temporary file")


expect_error("no --inputs", [model], "--inputs")
expect_error("a missing directory", [model, "--inputs", os.path.join(WORK, "nowhere")], "nowhere")
os.makedirs(os.path.join(WORK, "empty"), exist_ok=True)
expect_error("an empty directory", [model, "--inputs", os.path.join(WORK, "empty")],
             os.path.join(WORK, "empty", "input_0.pb"))
write_set(os.path.join(WORK, "wrong_shape"), np.zeros((4, 7), np.float32))
expect_error("a wrong-shaped input", [model, *dirs[:2], "--inputs",
                                      os.path.join(WORK, "wrong_shape")],
             os.path.join(WORK, "wrong_shape", "input_0.pb"))
nan_input = np.zeros((4, 8), np.float32)
nan_input[1, 2] = np.nan
write_set(os.path.join(WORK, "nan_input"), nan_input)
expect_error("a NaN input", [model, *dirs[:2], "--inputs", os.path.join(WORK, "nan_input")],
             "'X'", os.path.join(WORK, "nan_input"))

log_model = os.path.join(WORK, "logs.onnx")
save_model(log_model, [node("Log", ["X"], ["logx"]), node("Neg", ["logx"], ["out"])],
           [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
           [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3])], [])
write_set(os.path.join(WORK, "negative"), np.array([[1, 2, 3], [4, -5, 6]], np.float32))
expect_error("a NaN computed (Log of a negative)",
             [log_model, "--inputs", os.path.join(WORK, "negative")], "'logx'",
             os.path.join(WORK, "negative"))

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("calibrate: all checks passed")
