#!/usr/bin/python3
"""End-to-end test of narrow weights: --precision bf16 and --quantize int8
--weights-only (docs/PRECISION.md), through the cgc Python package.

  * a transformer encoder layer (torch nn.TransformerEncoderLayer, d=64,
    exported by torch.onnx.export) and the GPT-2-shaped decoder step of
    tests/dims/dims_models.py (compiled once with --dim past=0..63) match
    PyTorch's float outputs within each format's tolerance, at cache lengths
    0, 1, 37 and 63; cgc inspect counts the products stored narrow and their
    bytes;
  * a small CNN (3x3, residual, strided 1x1, depthwise and a classifier
    head) matches PyTorch's float output within the same tolerance with
    --precision bf16, its group-1 convolutions on bf16 weights (cgc inspect
    counts them and their bytes; keep_float leaves one float);
  * the decoder's greedy tokens over 30 steps, its own cache fed back, agree
    with PyTorch's;
  * the accuracy report of --weights-only (--check-inputs, --max-error,
    --quantize-report) on the decoder: the logits' top-1 agreement (the
    greedy token) and the caches' error against cgc's float model, the
    product named by --keep-float left in float;
  * bad options are one-line errors with exit 1: bf16 for a target without
    avx512bf16, --weights-only without --quantize int8 or with a calibration
    file, both formats at once, a precision cgc does not know, --keep-float
    without a narrow format or --quantize int8.

The tolerances, from the formats (not from what passes): a product's error
against float is at most sum_k |a_k| |dw_k|.
  bf16: each weight rounded to 8 significant bits (and, by the kernel, each
    activation), a relative error of at most 2^-9 each, about 2^-8 = 0.4% of
    sum_k |a_k w_k| per product. Over the few products in a row of these
    models (normalised between them) the output's max error stays within
    1e-2 * max |output|.
  int8 per output column: a weight's error is at most half a step, step =
    max |w_col| / 127, so 0.4% of the column's largest weight; for weights
    spread as these (the largest about three times the RMS over 64 rows) that is about 1.2%
    of the RMS weight per product, and several in a row, with LayerNorms
    between them, keep the output within 5e-2 * max |output|.
  Greedy tokens: one flipped token makes every later one differ when each
  run feeds its own tokens back, so agreement is counted with the reference's
  token fed to both (the model's own cache fed back): >= 90% over 30 steps
  for both formats (an untrained model's logits are closer together than a
  real model's, where the issue asks 99%).
The bf16 part is skipped, saying so, where the CPU lacks avx512bf16.

Usage: /usr/bin/python3 tests/precision/test_precision.py PATH_TO_CGC WORKDIR
(the cgc package on PYTHONPATH: the build tree's python/ folder)
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
from onnx import numpy_helper

import cgc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dims"))
from dims_models import DEC_HEAD, DEC_HEADS, DEC_POS, VOCAB, Decoder  # noqa: E402

TOLERANCE = {"fp32": 1e-4, "bf16": 1e-2, "int8": 5e-2}
AGREEMENT = 0.9
STEPS = 30
PASTS = [0, 1, 37, DEC_POS - 1]

failures = []


def report_ok(ok, label):
    print(f"{'ok' if ok else 'FAIL'} {label}")
    sys.stdout.flush()
    if not ok:
        failures.append(label)


def cpu_has_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and "avx512_bf16" in line.split() for line in f)
    except OSError:
        return False


def modes(bf16):
    """Each mode's cgc.compile keywords."""
    out = {"fp32": {}, "int8": {"quantize": "int8", "weights_only": True}}
    if bf16:
        out["bf16"] = {"precision": "bf16"}
    return out


def relative_error(actual, expected):
    return float(np.max(np.abs(actual - expected)) / max(np.max(np.abs(expected)), 1e-30))


def make_encoder(work):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 256, dropout=0.0, batch_first=True).eval()
    x = torch.randn(2, 24, 64)
    path = os.path.join(work, "encoder.onnx")
    # With gradients enabled, so that the exporter takes the layer's plain
    # path (under no_grad it takes the fused one, which it cannot export).
    torch.onnx.export(layer, (x,), path, input_names=["x"], output_names=["y"],
                      opset_version=17)
    with torch.no_grad():
        return path, x.numpy(), layer(x).numpy()


def make_decoder(work):
    torch.manual_seed(1)
    dec = Decoder().eval()
    caches = [f"past_{kv}{i}" for i in range(len(dec.blocks)) for kv in "kv"]
    outputs = ["logits"] + [c.replace("past", "present") for c in caches]
    dyn = {c: {2: "past"} for c in caches}
    dyn.update({c: {2: "past_plus_1"} for c in outputs[1:]})
    path = os.path.join(work, "decoder.onnx")
    with torch.no_grad():
        past = [torch.zeros(1, DEC_HEADS, 5, DEC_HEAD) for _ in caches]
        torch.onnx.export(dec, (torch.tensor([[3]]), *past), path, input_names=["ids"] + caches,
                          output_names=outputs, dynamic_axes=dyn, opset_version=17)
    return path, dec, caches, outputs


def check_encoder(work, bf16):
    path, x, ref = make_encoder(work)
    for mode, options in modes(bf16).items():
        model = cgc.compile(path, **options)
        error = relative_error(model.run({"x": x})["y"], ref)
        report_ok(error <= TOLERANCE[mode], f"encoder {mode}: max error {error:.2e} of max |y| "
                  f"(tolerance {TOLERANCE[mode]})")
        if mode == "fp32":
            continue
        narrow = cgc.inspect(path, **options).get("narrow_weights", {})
        # Four products (q/k/v in one, out, the two feed-forward layers):
        # bf16 half the float bytes; int8 a quarter plus a float scale a
        # column, over at least 64 rows (every n here a multiple of the
        # packing's 32 columns).
        ratio = narrow.get("bytes", 0) / max(narrow.get("float_bytes", 1), 1)
        limit = 0.5 if mode == "bf16" else 0.25 + 1 / 64
        products = narrow.get("products", 0)
        report_ok(narrow.get("format") == mode and products >= 4 and ratio <= limit,
                  f"encoder {mode}: inspect says {narrow.get('products')} products, "
                  f"{narrow.get('float_bytes')} -> {narrow.get('bytes')} bytes")
        kept = cgc.inspect(path, keep_float=["/linear1/MatMul"], **options)["narrow_weights"]
        report_ok(kept["products"] == products - 1,
                  f"encoder {mode} keep_float=['/linear1/MatMul']: {kept['products']} products")


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(16, 64, 3, padding=1)
        self.conv2 = nn.Conv2d(64, 64, 3, padding=1)
        self.down = nn.Conv2d(64, 64, 1, stride=2)
        self.dw = nn.Conv2d(64, 64, 3, padding=1, groups=64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        a = torch.relu(self.conv1(x))
        b = torch.relu(self.conv2(a) + a)
        c = torch.relu(self.dw(self.down(b)))
        return self.head(c.mean((2, 3)))


def check_cnn(cgc_path, work, bf16):
    """--precision bf16 on convolutions: the two 3x3 ones on bf16 weights
    (not the strided 1x1 one, 13 products per value it moves where
    PackedBf16 asks for two vectors' lanes, 32, nor the depthwise one), the
    output within bf16's tolerance."""
    if not bf16:
        return
    torch.manual_seed(3)
    net = SmallCnn().eval()
    x = torch.randn(2, 16, 20, 20)
    path = os.path.join(work, "cnn.onnx")
    torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["y"], opset_version=17)
    with torch.no_grad():
        ref = net(x).numpy()
    model = cgc.compile(path, precision="bf16")
    error = relative_error(model.run({"x": x.numpy()})["y"], ref)
    report_ok(error <= TOLERANCE["bf16"],
              f"cnn bf16: max error {error:.2e} of max |y| (tolerance {TOLERANCE['bf16']})")
    narrow = cgc.inspect(path, precision="bf16").get("narrow_weights", {})
    convs, ratio = narrow.get("convolutions", 0), (narrow.get("conv_bytes", 0) /
                                                   max(narrow.get("conv_float_bytes", 1), 1))
    report_ok(convs == 2 and ratio <= 0.5 + 1 / 32,
              f"cnn bf16: inspect says {convs} convolutions, {narrow.get('conv_float_bytes')} "
              f"-> {narrow.get('conv_bytes')} bytes")
    # The compile log names only the kinds of layer stored narrow.
    p = subprocess.run([cgc_path, "compile", path, "--precision", "bf16", "-o",
                        os.path.join(work, "cnn_out")], capture_output=True, text=True)
    line = next((l for l in p.stderr.splitlines() if "bf16 weights:" in l), "")
    report_ok(p.returncode == 0 and "2 convolutions" in line and "products" not in line,
              f"cnn bf16: the compile log's line: {line!r}")
    kept = cgc.inspect(path, precision="bf16", keep_float=["/conv2/Conv"])["narrow_weights"]
    report_ok(kept.get("convolutions") == 1,
              f"cnn bf16 keep_float=['/conv2/Conv']: {kept.get('convolutions')} convolutions")


def check_decoder(work, bf16):
    path, dec, caches, outputs = make_decoder(work)
    rng = np.random.default_rng(2)
    sets = []
    for p in PASTS:
        ids = rng.integers(0, VOCAB, size=(1, 1), dtype=np.int64)
        past = [rng.standard_normal((1, DEC_HEADS, p, DEC_HEAD)).astype(np.float32)
                for _ in caches]
        with torch.no_grad():
            ref = [o.numpy() for o in dec(torch.from_numpy(ids), *map(torch.from_numpy, past))]
        sets.append((p, dict(zip(["ids"] + caches, [ids] + past)), ref))
    for p, inputs, _ in sets:
        d = os.path.join(work, f"decoder_check_{p}")
        os.makedirs(d, exist_ok=True)
        for j, name in enumerate(["ids"] + caches):
            with open(os.path.join(d, f"input_{j}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(inputs[name]).SerializeToString())
    tokens = reference_tokens(dec, len(caches))
    for mode, options in modes(bf16).items():
        model = cgc.compile(path, dims={"past": (0, DEC_POS - 1)}, **options)
        for p, inputs, ref in sets:
            got = model.run(inputs)
            worst = max(relative_error(got[name], r) for name, r in zip(outputs, ref))
            report_ok(worst <= TOLERANCE[mode],
                      f"decoder {mode} past={p}: max error {worst:.2e} of max |output| "
                      f"(tolerance {TOLERANCE[mode]})")
        agreement, first = greedy_agreement(model, caches, tokens)
        report_ok(agreement >= AGREEMENT,
                  f"decoder {mode}: greedy tokens agree at {agreement:.0%} of {STEPS} steps "
                  f"(first difference fed its own tokens: {first}; at least {AGREEMENT:.0%})")


def check_budget(cgc_path, work):
    """--weights-only's accuracy report on the decoder's check sets: within
    a budget of 0.1 nothing returns to float, the logits' top-1 (the greedy
    token) agrees with cgc's float model and the caches' error is within
    int8's tolerance; the --keep-float product stays float, saying why."""
    report = os.path.join(work, "decoder_budget.json")
    kept = "/blocks.0/fc/MatMul"
    dirs = [os.path.join(work, f"decoder_check_{p}") for p in PASTS]
    p = subprocess.run([cgc_path, "compile", os.path.join(work, "decoder.onnx"), "--quiet",
                        "--dim", f"past=0..{DEC_POS - 1}", "--quantize", "int8", "--weights-only",
                        "--keep-float", kept, "--max-error", "0.1", "--quantize-report", report,
                        "-o", os.path.join(work, "budget_out"), "--check-inputs"] + dirs,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        report_ok(False, f"--weights-only --max-error: exit {p.returncode}: {p.stderr.strip()}")
        return
    with open(report) as f:
        r = json.load(f)
    layers = {layer["name"]: layer for layer in r["layers"]}
    narrow = [n for n, layer in layers.items() if layer["precision"] == "int8 weights"]
    outputs = {o["name"]: o for o in r["outputs"]}
    logits = outputs.get("logits", {})
    caches = max((o["relative_error"] for n, o in outputs.items() if n != "logits"), default=1)
    report_ok(len(narrow) >= 8 and layers.get(kept, {}).get("why") == "--keep-float" and
              logits.get("top1_agreement", 0) >= AGREEMENT and caches <= TOLERANCE["int8"],
              f"--weights-only --max-error 0.1: {len(narrow)} products int8, {kept} "
              f"{layers.get(kept, {}).get('why')}; logits top-1 agreement "
              f"{logits.get('top1_agreement')}, caches' relative error {caches:.2e}")


def reference_tokens(dec, layers2):
    """PyTorch's greedy tokens from token 3 and an empty cache: STEPS + 1."""
    tokens = [3]
    past = [torch.zeros(1, DEC_HEADS, 0, DEC_HEAD) for _ in range(layers2)]
    with torch.no_grad():
        for _ in range(STEPS):
            logits, *past = dec(torch.tensor([[tokens[-1]]]), *past)
            tokens.append(int(logits[0, -1].argmax()))
    return tokens


def greedy_agreement(model, caches, tokens):
    """The share of steps whose argmax is the reference's next token, the
    reference's tokens fed in and the model's own cache fed back; and the
    first step where the model fed its own tokens differs (None: never)."""
    def step(token, past):
        out = model.run(dict(zip(["ids"] + caches, [np.array([[token]], np.int64)] + past)))
        return int(out["logits"][0, -1].argmax()), [out[c.replace("past", "present")]
                                                    for c in caches]
    empty = [np.zeros((1, DEC_HEADS, 0, DEC_HEAD), np.float32) for _ in caches]
    past, same = empty, 0
    for i in range(STEPS):
        predicted, past = step(tokens[i], past)
        same += predicted == tokens[i + 1]
    past, token, first = empty, tokens[0], None
    for i in range(STEPS):
        token, past = step(token, past)
        if token != tokens[i + 1]:
            first = i
            break
    return same / STEPS, first


def check_errors(cgc_path, work, model, bf16):
    """Bad options: exit 1 and one stderr line holding every `must` string."""
    calib = os.path.join(work, "empty.calib.json")
    with open(calib, "w") as f:
        f.write('{"tensors": {}}')
    out = ["-o", os.path.join(work, "out"), "--quiet"]
    cases = [
        ("bf16 for x86-64-v4", ["--precision", "bf16", "--target", "x86-64-v4"],
         ("avx512bf16", "x86-64-v4")),
        ("--weights-only alone", ["--weights-only"], ("--weights-only", "--quantize")),
        ("--weights-only with --calibration",
         ["--quantize", "int8", "--weights-only", "--calibration", calib], ("--calibration",)),
        ("bf16 and --weights-only", ["--precision", "bf16", "--quantize", "int8",
                                     "--weights-only"], ("--precision bf16", "--weights-only")),
        ("unknown precision", ["--precision", "fp16"], ("--precision", "fp16")),
        ("--keep-float alone", ["--keep-float", "/linear1/MatMul"],
         ("--keep-float", "--precision bf16")),
    ]
    if not bf16:
        cases.append(("bf16 on this CPU", ["--precision", "bf16"], ("avx512bf16", "native")))
    for label, flags, must in cases:
        p = subprocess.run([cgc_path, "compile", model] + flags + out, capture_output=True,
                           text=True, timeout=300)
        lines = p.stderr.strip().splitlines()
        ok = p.returncode == 1 and len(lines) == 1 and all(m in lines[0] for m in must)
        report_ok(ok, f"error {label}: exit {p.returncode}: {p.stderr.strip()}")
    try:
        cgc.compile(model, precision="bf16", target="x86-64-v4")
        report_ok(False, "cgc.compile(precision='bf16', target='x86-64-v4') raised nothing")
    except cgc.CompileError as e:
        report_ok("avx512bf16" in str(e),
                  f"cgc.compile(precision='bf16', target='x86-64-v4'): {e}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cgc_path, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)
    bf16 = cpu_has_bf16()
    if not bf16:
        print("skipped: CPU lacks avx512bf16 (the bf16 parts; the rest runs)")
    check_encoder(work, bf16)
    check_cnn(cgc_path, work, bf16)
    check_decoder(work, bf16)
    check_budget(cgc_path, work)
    check_errors(cgc_path, work, os.path.join(work, "encoder.onnx"), bf16)
    if failures:
        print(f"{len(failures)} failed: {', '.join(failures)}")
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
