#!/usr/bin/python3
"""`cgc compile --quantize int8`: calibration methods against numpy, a
quantised CNN against PyTorch's float outputs, the accuracy budget, and
bad input.

Usage: test_quantize.py CGC WORKDIR

1. Methods. An MLP (MatMul -> Relu -> MatMul -> MatMul -> Sigmoid) is
   calibrated;
   the quantisation report's range for each quantised activation (X, h1,
   h2; not Y, which only the Sigmoid before the output reads) must be
   numpy's: minmax from the activations numpy computes, percentile (99.9)
   within a histogram bin of np.quantile on them, entropy equal to reference.py's
   KL search (an independent numpy implementation) on the file's histogram.
2. A CNN from PyTorch (Conv, BatchNorm, Relu, a residual Add, MaxPool,
   HardSwish and an affine step between two Convs, Concat, global
   pooling, Linear), calibrated on 8 random inputs: on 4 other inputs its
   int8 outputs stay within 5% (relative error) of PyTorch's float ones,
   every Conv runs as QLinearConv, the HardSwish step as one table
   (QLinearLookup), and the report shows every layer int8, the head
   (whose output, through a Reshape, is the model's) with a float output.
   The same CNN's statistics from the profiler hook (cgc run
   --statistics-out) match cgc calibrate's on one set and quantise the
   same layers.
3. --max-error below the all-int8 error returns layers to float until it
   holds (the report names them and the metric), the most sensitive first
   by measurement (each layer alone in float); one no layer choice can meet fails with
   exit 1, naming the budget. The model run after the budget's trials is
   placed (executors x threads, pinned CPUs) as the plain int8 one.
4. Bad input: one line, exit 1, naming the file or flag.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402

CGC, WORK = sys.argv[1], sys.argv[2]
BINS = 512
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def cgc(*args):
    return subprocess.run([CGC, *args], capture_output=True, text=True, timeout=600)


def write_set(directory, name, array):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def inputs(flag, dirs):
    return [flag, *dirs]


def report_of(model, calib, *extra):
    path = os.path.join(WORK, "report.json")
    if os.path.exists(path):
        os.remove(path)
    r = cgc("compile", model, "-q", "-o", os.path.join(WORK, "out"), "--quantize", "int8",
            "--calibration", calib, "--quantize-report", path, *extra)
    if r.returncode != 0:
        sys.exit(f"FAIL: compile {extra} exits {r.returncode}: {r.stderr}")
    return json.load(open(path))


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(os.path.join(WORK, "out"))
rng = np.random.default_rng(11)

# --- 1. the methods against numpy
W1 = rng.normal(0, 0.5, (16, 32)).astype(np.float32)
W2 = rng.normal(0, 0.3, (32, 24)).astype(np.float32)
W3 = rng.normal(0, 0.3, (24, 8)).astype(np.float32)
mlp = os.path.join(WORK, "mlp.onnx")
node = helper.make_node
graph = helper.make_graph(
    [node("MatMul", ["X", "W1"], ["mm1"]), node("Relu", ["mm1"], ["h1"]),
     node("MatMul", ["h1", "W2"], ["h2"]), node("MatMul", ["h2", "W3"], ["Y"]),
     node("Sigmoid", ["Y"], ["Z"])], "mlp",  # no int8 op reads Y: it stays float
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [64, 16])],
    [helper.make_tensor_value_info("Z", TensorProto.FLOAT, [64, 8])],
    [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(W2, "W2"),
     numpy_helper.from_array(W3, "W3")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), mlp)


def forward(x):
    h1 = np.maximum(x @ W1, 0)
    h2 = h1 @ W2
    y = h2 @ W3
    return {"X": x, "h1": h1, "h2": h2, "Y": y, "Z": 1 / (1 + np.exp(-y))}


acts = {}
mlp_dirs = []
for k in range(3):
    x = rng.standard_t(3, (64, 16)).astype(np.float32)  # heavy tails: the methods differ
    mlp_dirs.append(os.path.join(WORK, f"mlp_set_{k}"))
    write_set(mlp_dirs[-1], "X", x)
    for name, v in forward(x).items():
        acts.setdefault(name, []).append(v.ravel().astype(np.float64))
acts = {name: np.concatenate(v) for name, v in acts.items()}
mlp_calib = os.path.join(WORK, "mlp.calib.json")
r = cgc("calibrate", mlp, *inputs("--inputs", mlp_dirs), "--bins", str(BINS), "-q", "-o", mlp_calib)
if r.returncode != 0:
    sys.exit(f"FAIL: calibrate exits {r.returncode}: {r.stderr}")
stats = json.load(open(mlp_calib))["tensors"]

clipped = []
for method in ("minmax", "percentile", "entropy"):
    report = report_of(mlp, mlp_calib, "--method", method, "--percentile", "99.9")
    ranges = {t["name"]: (t["min"], t["max"]) for t in report["tensors"]}
    check(sorted(ranges) == ["X", "h1", "h2"], f"{method}: quantised activations {sorted(ranges)}")
    for name, (lo, hi) in ranges.items():
        values, s = acts[name], stats[name]
        width = (s["max"] - s["min"]) / len(s["histogram"])
        if method == "minmax":
            want = (values.min(), values.max())
            ok = np.allclose((lo, hi), want, rtol=1e-6, atol=1e-6)
        elif method == "percentile":
            # The smallest value whose share at or below it reaches the tail.
            want = tuple(np.quantile(values, [0.0005, 0.9995], method="inverted_cdf"))
            ok = abs(lo - want[0]) <= width * 1.001 and abs(hi - want[1]) <= width * 1.001
            clipped.append(hi < values.max() - width or lo > values.min() + width)
        else:
            want = reference.entropy_range(s["min"], s["max"], s["histogram"])
            ok = np.allclose((lo, hi), want, rtol=1e-5, atol=1e-6)
        check(ok, f"{method}: {name}: cgc's range ({lo:.6g}, {hi:.6g}), numpy's "
                  f"({want[0]:.6g}, {want[1]:.6g}), a bin is {width:.3g}")
    scale = {t["name"]: (t["scale"], t["zero_point"]) for t in report["tensors"]}
    lo, hi = min(ranges["h2"][0], 0), max(ranges["h2"][1], 0)
    check(np.isclose(scale["h2"][0], (hi - lo) / 255, rtol=1e-6) and
          scale["h2"][1] == int(np.clip(np.rint(-lo / ((hi - lo) / 255)), 0, 255)),
          f"{method}: h2's scale and zero point {scale['h2']} from its range ({lo}, {hi})")

check(any(clipped), "percentile: some tail is clipped (else the test would not tell it from minmax)")

# --- 2. a CNN from PyTorch
import torch  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1, bias=False),
                                        torch.nn.BatchNorm2d(16), torch.nn.ReLU())
        self.body = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1),
                                        torch.nn.BatchNorm2d(16))
        self.pool = torch.nn.MaxPool2d(2)
        self.a = torch.nn.Conv2d(16, 8, 1)
        self.a2 = torch.nn.Conv2d(8, 8, 1)
        self.b = torch.nn.Conv2d(16, 8, 3, padding=1)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        s = self.stem(x)
        h = self.pool(torch.relu(self.body(s) + s))
        a = self.a2(torch.nn.functional.hardswish(self.a(h)) * 0.5 + 0.25)
        c = torch.cat([torch.relu(a), torch.relu(self.b(h))], 1)
        # [1, 10, 1]: not classifier-shaped, so --max-error bounds its
        # relative error (a classifier's bound is its top-1 agreement).
        return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(c, 1), 1))[..., None]


torch.manual_seed(3)
net = Net().eval()
for m in net.modules():
    if isinstance(m, torch.nn.BatchNorm2d):
        m.running_mean.uniform_(-0.2, 0.2)
        m.running_var.uniform_(0.5, 2.0)
cnn = os.path.join(WORK, "cnn.onnx")
with torch.no_grad():
    torch.onnx.export(net, torch.randn(1, 3, 32, 32), cnn, opset_version=13,
                      input_names=["x"], output_names=["logits"], do_constant_folding=False)
calib_dirs, check_dirs, expected = [], [], []
for k in range(12):
    x = torch.randn(1, 3, 32, 32)
    d = os.path.join(WORK, f"cnn_set_{k}")
    write_set(d, "x", x.numpy())
    (calib_dirs if k < 8 else check_dirs).append(d)
    if k >= 8:
        with torch.no_grad():
            expected.append(net(x).numpy())
cnn_calib = os.path.join(WORK, "cnn.calib.json")
r = cgc("calibrate", cnn, *inputs("--inputs", calib_dirs), "-q", "-o", cnn_calib)
check(r.returncode == 0, f"calibrate the CNN: {r.stderr}")
diff = power = 0.0
for d, want in zip(check_dirs, expected):
    out = os.path.join(d, "int8")
    r = cgc("run", cnn, "-q", "--inputs", d, "--outputs", out, "--quantize", "int8",
            "--calibration", cnn_calib)
    check(r.returncode == 0, f"run int8: {r.stderr}")
    got = numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "output_0.pb")))
    diff += float(((got - want) ** 2).sum())
    power += float((want ** 2).sum())
error = (diff / power) ** 0.5
check(0 < error < 0.05, f"int8 against PyTorch's float: relative error {error:.4f}")
r = cgc("inspect", cnn, "--json", "--quantize", "int8", "--calibration", cnn_calib)
kernels = json.loads(r.stdout).get("kernels", {}) if r.returncode == 0 else {}
check(kernels.get("QLinearConv") == 5 and "Conv" not in kernels and "BatchNormalization" not in kernels,
      f"inspect: every Conv is QLinearConv: {kernels}")
check(kernels.get("QLinearMatMul") == 1 and "Gemm" not in kernels,
      f"inspect: the head, whose output is the model's, is an int8 product: {kernels}")
check(kernels.get("QLinearLookup") == 1 and "HardSigmoid" not in kernels,
      f"inspect: HardSwish, * 0.5 + 0.25 between two int8 Convs is one table: {kernels}")

# The profiler hook (cgc run --statistics-out, an --observe build) on one
# input set, against cgc calibrate on the same set: the same count, min and
# max for every tensor both observe (calibrate alone has the Convs' outputs
# that the BatchNorms after them are folded into), and the same int8 layers.
traffic, one = os.path.join(WORK, "cnn.traffic.json"), os.path.join(WORK, "cnn.one.json")
r = cgc("run", cnn, "-q", "--inputs", calib_dirs[0], "--statistics-out", traffic)
check(r.returncode == 0, f"run --statistics-out: {r.stderr}")
r = cgc("calibrate", cnn, "--inputs", calib_dirs[0], "-q", "-o", one)
check(r.returncode == 0, f"calibrate one set: {r.stderr}")
if os.path.exists(traffic) and os.path.exists(one):
    ours, theirs = (json.load(open(f))["tensors"] for f in (traffic, one))
    graph = onnx.load(cnn).graph
    folded = {n.output[0] for n in graph.node if n.op_type == "Conv" and
              any(m.op_type == "BatchNormalization" and n.output[0] in m.input for m in graph.node)}
    check(set(theirs) - set(ours) <= folded and set(ours) <= set(theirs),
          f"observed tensors: calibrate's alone {set(theirs) - set(ours)}, "
          f"the hook's alone {set(ours) - set(theirs)}")
    for name in set(ours) & set(theirs):
        a, b = ours[name], theirs[name]
        check(a["count"] == b["count"] and np.isclose(a["min"], b["min"], rtol=1e-5, atol=1e-6)
              and np.isclose(a["max"], b["max"], rtol=1e-5, atol=1e-6),
              f"{name}: the hook's {a['count']} [{a['min']}, {a['max']}] vs calibrate's "
              f"{b['count']} [{b['min']}, {b['max']}]")
    layers = [json.loads(cgc("inspect", cnn, "--json", "--quantize", "int8", "--calibration",
                             f).stdout).get("int8_layers") for f in (traffic, one)]
    check(layers[0] == layers[1] and len(layers[0]) == 6,
          f"the hook's statistics quantise the layers calibrate's do: {layers}")
report = report_of(cnn, cnn_calib, *inputs("--check-inputs", check_dirs))
precisions = [layer["precision"] for layer in report["layers"]]
floats = [layer for layer in report["layers"] if layer["precision"] == "float"]
float_outputs = [layer["name"] for layer in report["layers"] if layer["output"] == "float"]
check(precisions.count("int8") == 6 and not floats and float_outputs == ["/head/Gemm"],
      f"report: every layer int8, the head (it writes the output) with a float output: "
      f"{report['layers']}")
all_int8 = report["outputs"][0]["relative_error"]
check(abs(all_int8 - error) < 0.25 * error,
      f"the report's error {all_int8:.4f} is what PyTorch's outputs give ({error:.4f})")
check(report["speed"]["float_ms"] > 0 and report["speed"]["int8_ms"] > 0, "report: speed")
check("top1_agreement" not in report["outputs"][0], f"[1, 10, 1] is no classifier: {report['outputs']}")
check(os.path.exists(os.path.join(WORK, "report.txt")), "report: the table beside the JSON")

# --- 3. the accuracy budget
budget = 0.8 * all_int8
r = cgc("compile", cnn, "-o", os.path.join(WORK, "out"), "--quantize", "int8",
        "--calibration", cnn_calib, *inputs("--check-inputs", check_dirs),
        "--max-error", str(budget), "--quantize-report", os.path.join(WORK, "budget.json"))
check(r.returncode == 0, f"--max-error {budget:.4g}: {r.stderr}")
if r.returncode == 0:
    report = json.load(open(os.path.join(WORK, "budget.json")))
    reverted = [layer for layer in report["layers"] if layer.get("why") == "--max-error"]
    check(len(reverted) >= 1 and report["outputs"][0]["relative_error"] <= budget,
          f"layers returned to float {reverted}, error {report['outputs'][0]} within {budget}")
    check(len(report["trials"]) >= 2 and report["trials"][0]["float_layers"] == 0,
          f"trials: {report['trials']}")
    # [1, 10, 1] is no classifier: the budget bounds its relative error, and
    # says so.
    check(report["metric"] == "relative error" and
          "quantize: all int8: relative error" in r.stderr and f"(budget {budget:g})" in r.stderr,
          f"the metric named: {report['metric']!r}, {r.stderr!r}")
    # The ranking is measured: the layer returned first is the one whose
    # float alone leaves the smallest error (here the head, whose input's
    # rounding reaches the logits undamped).
    alone = {layer["name"]: layer["error_float_alone"] for layer in report["layers"]}
    check(len(alone) == 6 and reverted and
          alone[reverted[0]["name"]] == min(alone.values()) and
          reverted[0]["name"] == "/head/Gemm",
          f"the measured ranking returns the most sensitive layer first: {alone}, {reverted}")


def placement(*extra):
    """The placement `cgc run --bench` reports, or its stderr."""
    r = cgc("run", cnn, "-q", "--fill-missing-inputs", "--bench", "1", "--quantize", "int8",
            "--calibration", cnn_calib, *extra)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1])["placement"] if r.returncode == 0 and lines else r.stderr


# The model built after the budget's trials (each library its own runtime)
# is placed as a plain one: its threads were not left to the trials.
if len(os.sched_getaffinity(0)) >= 2:
    plain = placement()
    budgeted = placement(*inputs("--check-inputs", check_dirs), "--max-error", str(budget))
    check(" x 1 thread(s)" not in plain and budgeted == plain,
          f"placement after --max-error {budgeted!r}, without it {plain!r}")
else:
    print("quantize: placement after --max-error skipped (1 CPU)")
r = cgc("compile", cnn, "-q", "-o", os.path.join(WORK, "out"), "--quantize", "int8",
        "--calibration", cnn_calib, *inputs("--check-inputs", check_dirs), "--max-error", "1e-9")
check(r.returncode == 1 and "--max-error 1e-09 cannot be met" in r.stderr and
      "with 5 of 6 int8 layers" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
      f"an impossible budget, tried up to all layers but one: {r.returncode} {r.stderr!r}")


# --- 4. bad input
def expect_error(what, args, *named):
    r = cgc(*args)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1 and len(lines) == 1 and all(n in lines[0] for n in named),
          f"{what}: exit 1 with one line naming {named}: {r.returncode} {r.stderr!r}")


compile_q = ["compile", cnn, "-q", "-o", os.path.join(WORK, "out"), "--quantize", "int8"]
expect_error("another model's calibration", [*compile_q, "--calibration", mlp_calib], mlp_calib,
             "no layer")
broken = os.path.join(WORK, "broken.calib.json")
with open(broken, "w") as f:
    f.write('{"tensors": {"x": {"count": 3')
expect_error("a malformed calibration file", [*compile_q, "--calibration", broken], broken)
expect_error("no --calibration", compile_q, "--calibration")
expect_error("an unknown method", [*compile_q, "--calibration", cnn_calib, "--method", "mode"],
             "--method", "mode")
expect_error("a percentile beyond 100",
             [*compile_q, "--calibration", cnn_calib, "--percentile", "101"], "--percentile")
expect_error("--max-error without --check-inputs",
             [*compile_q, "--calibration", cnn_calib, "--max-error", "0.1"], "--check-inputs")
expect_error("--calibration without --quantize",
             ["compile", cnn, "-q", "--calibration", cnn_calib], "--calibration", "--quantize")
write_set(os.path.join(WORK, "wrong_shape"), "x", np.zeros((1, 3, 8, 8), np.float32))
expect_error("check inputs of another shape",
             [*compile_q, "--calibration", cnn_calib, "--check-inputs",
              os.path.join(WORK, "wrong_shape")], os.path.join(WORK, "wrong_shape"))

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("quantize: all checks passed")
