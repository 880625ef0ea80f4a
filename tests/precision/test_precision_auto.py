#!/usr/bin/python3
"""End-to-end test of --precision auto (docs/PRECISION.md): each layer int8,
bf16 or fp32, the cheapest that keeps the accuracy budget, measured.

A small CNN from PyTorch (a 3-channel stem, which no bf16 kernel takes; 3x3
and 1x1 convolutions deep enough for the bf16 variant, two of them after an
outlier channel; a depthwise one, which has none; pooling and a Linear head
whose [1, 10, 1] output is not classifier-shaped, so the budget bounds its
relative error) is calibrated on 8 random inputs and checked on 4 others:

1. `cgc compile --precision auto --quantize int8 --calibration FILE
   --check-inputs DIR... --max-error E`, E a third of the all-int8 error:
   it succeeds and says how many layers run in each precision; the report
   gives every layer one of int8, bf16, float with why, at least one bf16
   layer (bf16 is enough here: its rounding is far below the budget), only
   layers that have a bf16 kernel in bf16, and the budget held.
2. The mix rebuilt from the report's lists (--keep-bf16, --keep-float)
   against PyTorch's float outputs on the check inputs: the relative error
   is within the budget (cgc's float model, the budget's reference, is
   within 1e-5 of PyTorch's); `cgc inspect` counts the same bf16 layers.
3. For a target without the bf16 tier (x86-64-v4), auto chooses between
   int8 and fp32 only and says so in one line (a budget that all-int8
   meets: its search is part 1's); --precision bf16 and --keep-bf16 there
   stay one-line errors naming avx512bf16.
4. Bad options: auto without --max-error or without --quantize int8, and
   --keep-bf16 without --quantize int8, are one-line errors naming the flag.

Parts 1 and 2 exit 77 (skipped) on a CPU without avx512bf16 after the
rest passed.

Usage: /usr/bin/python3 tests/precision/test_precision_auto.py PATH_TO_CGC WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

CGC, WORK = sys.argv[1], sys.argv[2]
SIDE = 8
failures = []


def check(cond, what):
    print(f"{'ok' if cond else 'FAIL'} {what}")
    sys.stdout.flush()
    if not cond:
        failures.append(what)


def cgc(*args):
    return subprocess.run([CGC, *args], capture_output=True, text=True, timeout=600)


def cpu_has_bf16():
    with open("/proc/cpuinfo") as f:
        return any(line.startswith("flags") and "avx512_bf16" in line.split() for line in f)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 32, 3, padding=1)
        self.body = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.dw = torch.nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.expand = torch.nn.Conv2d(32, 64, 3, padding=1)
        self.point = torch.nn.Conv2d(64, 64, 1)
        self.head = torch.nn.Linear(256, 10, bias=False)
        # One channel 60 times the others' scale at the inputs of expand and
        # point, its weights a sixtieth (as trained networks have): the
        # output is as without, but the int8 step of those inputs is coarse
        # for the other channels, so those two layers hold most of the
        # int8 error.
        self.outlier = torch.ones(1, 64, 1, 1)
        self.outlier[0, 0] = 60
        with torch.no_grad():
            self.expand.weight[:, 0] /= 60
            self.point.weight[:, 0] /= 60

    def forward(self, x):
        h = torch.relu(self.stem(x))
        h = torch.relu(self.body(h)) + h
        h = torch.relu(self.expand(torch.relu(self.dw(h)) * self.outlier[:, :32]))
        h = torch.relu(self.point(h * self.outlier))
        return self.head(torch.flatten(torch.nn.functional.avg_pool2d(h, 4), 1))[..., None]


def write_set(directory, array):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(array, "x").SerializeToString())


def relative_error(got, want):
    diff = sum(float(((g - w) ** 2).sum()) for g, w in zip(got, want))
    power = sum(float((w ** 2).sum()) for w in want)
    return (diff / power) ** 0.5


def outputs(model, dirs, *options):
    """The model's output on each input set, run by cgc with these options."""
    got = []
    for k, d in enumerate(dirs):
        out = os.path.join(WORK, f"out_{k}")
        r = cgc("run", model, "-q", "--inputs", d, "--outputs", out, *options)
        if r.returncode != 0:
            check(False, f"cgc run {options}: {r.stderr}")
            return None
        got.append(numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "output_0.pb"))))
    return got


def expect_error(what, args, *named):
    r = cgc(*args, "-q")
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1 and len(lines) == 1 and all(n in lines[0] for n in named),
          f"{what}: one line naming {named}, exit 1 (exit {r.returncode}: {r.stderr.strip()!r})")


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
torch.manual_seed(5)
net = Net().eval()
model = os.path.join(WORK, "cnn.onnx")
with torch.no_grad():
    torch.onnx.export(net, torch.randn(1, 3, SIDE, SIDE), model, opset_version=13,
                      input_names=["x"], output_names=["y"])
calib_dirs, check_dirs, expected = [], [], []
for k in range(12):
    x = torch.randn(1, 3, SIDE, SIDE)
    d = os.path.join(WORK, f"set_{k}")
    write_set(d, x.numpy())
    (calib_dirs if k < 8 else check_dirs).append(d)
    if k >= 8:
        with torch.no_grad():
            expected.append(net(x).numpy())
calib = os.path.join(WORK, "cnn.calib.json")
r = cgc("calibrate", model, "--inputs", *calib_dirs, "-q", "-o", calib)
check(r.returncode == 0, f"calibrate: {r.stderr}")
quantize = ["--quantize", "int8", "--calibration", calib]
int8 = outputs(model, check_dirs, *quantize)
all_int8 = relative_error(int8, expected) if int8 else 1.0
budget = all_int8 / 3
check(all_int8 > 1e-3, f"all-int8 error {all_int8:.4g} leaves room for a budget below it")
auto = ["--precision", "auto", *quantize, "--check-inputs", *check_dirs]

# --- 3. a target without the bf16 tier: int8 or fp32, said in one line (a
# budget all-int8 meets: no search, which part 1 tests)
report_path = os.path.join(WORK, "v4.json")
r = cgc("compile", model, "-o", os.path.join(WORK, "v4"), "--target", "x86-64-v4", *auto,
        "--max-error", f"{2 * all_int8:.6g}", "--quantize-report", report_path)
notes = [line for line in r.stderr.splitlines() if "lacks avx512bf16" in line]
check(r.returncode == 0 and len(notes) == 1 and "int8 or fp32" in notes[0],
      f"auto for x86-64-v4: int8 or fp32, said once: {r.stderr!r}")
if r.returncode == 0:
    precisions = {layer["precision"] for layer in json.load(open(report_path))["layers"]}
    check(precisions == {"int8"}, f"x86-64-v4: all int8 within twice its error: {precisions}")
expect_error("--precision bf16 for x86-64-v4",
             ["compile", model, "--precision", "bf16", "--target", "x86-64-v4"], "avx512bf16")
expect_error("--keep-bf16 for x86-64-v4",
             ["compile", model, *quantize, "--keep-bf16", "/point/Conv", "--target", "x86-64-v4"],
             "--keep-bf16", "avx512bf16")

# --- 4. bad options
expect_error("auto without --max-error", ["compile", model, *auto], "--max-error")
expect_error("auto without --quantize", ["compile", model, "--precision", "auto"], "--quantize int8")
expect_error("--keep-bf16 without --quantize", ["compile", model, "--keep-bf16", "/point/Conv"],
             "--keep-bf16", "--quantize int8")

if not cpu_has_bf16():
    print("skipped: the bf16 parts (1, 2): this CPU lacks avx512bf16")
    sys.exit(1 if failures else 77)

# --- 1. the mix auto chooses
report_path = os.path.join(WORK, "auto.json")
r = cgc("compile", model, "-o", os.path.join(WORK, "auto"), *auto, "--max-error", f"{budget:.6g}",
        "--quantize-report", report_path)
check(r.returncode == 0 and "precision auto:" in r.stderr, f"--precision auto: {r.stderr}")
if r.returncode != 0:
    sys.exit(1)
report = json.load(open(report_path))
layers = {layer["name"]: layer for layer in report["layers"]}
by = {p: sorted(n for n, layer in layers.items() if layer["precision"] == p)
      for p in ("int8", "bf16", "float")}
check(sum(map(len, by.values())) == len(layers) == 6, f"every layer int8, bf16 or float: {by}")
check(len(by["bf16"]) >= 1 and all(layers[n]["why"] == "--max-error (bf16 enough)"
                                  for n in by["bf16"]), f"bf16 is enough for some layers: {by}")
no_bf16 = {"/stem/Conv", "/dw/Conv"}  # a 3-channel stem, a depthwise layer
check(not no_bf16 & set(by["bf16"]), f"only layers with a bf16 kernel in bf16: {by}")
check(report["outputs"][0]["relative_error"] <= budget,
      f"the budget holds: {report['outputs'][0]} within {budget:.4g}")
check(report["layers_per_precision"] == {p: len(n) for p, n in by.items() if n},
      f"the report counts layers per precision: {report['layers_per_precision']}")
check(f"{len(by['bf16'])} bf16" in r.stderr, f"the summary line counts the bf16 layers: {r.stderr}")

# --- 2. the mix against PyTorch
mix = [*quantize, *(a for n in by["bf16"] for a in ("--keep-bf16", n)),
       *(a for n in by["float"] for a in ("--keep-float", n))]
got = outputs(model, check_dirs, *mix)
fp32 = outputs(model, check_dirs)
if got and fp32:
    error = relative_error(got, expected)
    check(relative_error(fp32, expected) < 1e-5 and error <= budget * 1.01,
          f"the mix against PyTorch: relative error {error:.4g} within {budget:.4g} "
          f"(all int8 {all_int8:.4g})")
r = cgc("inspect", model, "--json", *mix)
inspected = json.loads(r.stdout) if r.returncode == 0 else {}
check(sorted(inspected.get("bf16_layers", [])) == by["bf16"],
      f"inspect: the bf16 layers {inspected.get('bf16_layers')} are {by['bf16']}")
sys.exit(1 if failures else 0)
