#!/usr/bin/python3
"""End-to-end test of runtime-variable dimensions (cgc --dim NAME=LO..HI[:STEP]).

It shows that one compiled model, with symbolic dimensions bound to ranges
instead of fixed sizes, runs correctly at every size in the range:
  * a BERT-style encoder (dynamic batch and seq; position embedding sliced by
    seq, hand-written multi-head attention with a padding mask) matches PyTorch
    at (batch, seq) from (1, 1) to (8, 512), also with seq restricted to
    multiples of 8;
  * a small residual CNN with a dynamic batch and image side matches PyTorch
    at batch 1..16 and sides 16..64 (multiples of 8), and at sides 1, 7 and
    33 of 1..64 (its pool's positions the square of a derived side);
  * a GPT-2-shaped decoder step (torch.onnx.export, its positions and
    causal mask computed from the cache's length) compiled once with
    --dim past=0..63 matches PyTorch at an empty cache, 1, 37 and the bound;
    exported for prefill (several new tokens at once), compiled once with
    --dim seq=1..32 --dim past=0..200, it matches PyTorch from one token
    on an empty cache to 32 on 200, also with its caches kept in place;
  * a [seq, seq] mask filled at run time (ConstantOfShape, Trilu) matches
    numpy's running sums at four sizes;
  * a ResNet-style CNN (a 7x7 stride-2 stem, a max pool, stride-2 blocks)
    with variable batch, height and width and no multiple matches PyTorch
    at odd sides (1x33x47, 3x61x95, ...) and at an empty batch;
  * a CNN of 32-channel 3x3 layers with variable batch and side, whose
    layers run Packed on small planes and Winograd on large ones, matches
    PyTorch at sizes that take each (the general code picks per call);
  * a 3-channel 1x1 layer and a 7x7 stride-2 stem with a fused 3x3
    stride-2 max pool, whose variant at large images (FewChannels) is not
    the GEMMs' of small ones, match PyTorch from 1x1 images to the bounds;
  * the encoder again with seq as a range in --shape (input_ids=1x1..256);
  * data-dependent sizes (NonZero, Compress, TopK with a run-time k,
    Unique) of a [batch, seq] input match numpy at five sizes, in the
    general code and in specialised paths; so do If, Loop (its trip count
    the variable seq) and Scan, an If on seq > 32 (its condition computed
    at run time), and the CNN in int8 (--quantize), calibrated
    with cgc calibrate --dim on input sets of three sizes; --observe's
    statistics at the run's sizes;
  * --specialize: the encoder with static code for seq=128 (its profile
    shows that 1x128 ran it and the other sizes the general code), also
    built for two targets; the CNN with a wholly static path for batch 1
    and 3 at side 32; a recompile with a profile of runs at 1x128, or with
    the profile of cgc tune --dim at 1x128, specialising that size; cgc
    tune --specialize tuning the path on its own, and a compile with its
    profile reading that tuning;
and that bad sizes and bad --dim flags fail with exit code 1 and one stderr line naming the
dimension (out of range, off the step, inputs that disagree, an unbound
dimension or one the graph fixes at compile time, malformed or unknown
--dim, a --specialize size beyond the bounds or off the multiple), and that
cgc run --bench --sweep times each combination of sizes.

Usage: /usr/bin/python3 tests/dims/test_dims.py PATH_TO_CGC WORKDIR [--only-data]
  --only-data: write the models and test data into WORKDIR and stop.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from dims_models import (CF_SIZES, CNN_ODD_SIZES, CNN_SIZES, DD_SIZES, DEC_LAYERS, DEC_PASTS,
                         DEC_POS, ENC_SIZES, FILLED_SEQS, PREFILL_POS, PREFILL_SIZES, RES_NARROW,
                         RES_SIZES, STEM_SIZES, WIDE_SIZES, make_data)


class Checks:
    """Runs cgc and collects the failures."""

    def __init__(self, cgc, work):
        self.cgc, self.work, self.failures = cgc, work, []
        self.enc, self.cnn = os.path.join(work, "encoder.onnx"), os.path.join(work, "cnn.onnx")
        self.full = ["--dim", "batch=1..8", "--dim", "seq=1..512"]
        self.step8 = ["--dim", "batch=1..8", "--dim", "seq=8..512:8"]

    def run(self, label, argv, want_rc=0, must=(), any_of=()):
        """Run cgc; expect want_rc, and for errors one stderr line holding every
        string of `must` and (if given) one of `any_of`."""
        try:
            p = subprocess.run([self.cgc] + argv, capture_output=True, text=True,
                               timeout=600, env=os.environ)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired as e:
            err = e.stderr or ""
            rc, err = "timeout", err.decode(errors="replace") if isinstance(err, bytes) else err
        ok = rc == want_rc
        if ok and want_rc != 0:  # a cgc that does not know --dim must not pass by accident
            ok = "not expected" not in err and any(
                all(m in line for m in must) and (not any_of or any(a in line for a in any_of))
                for line in err.splitlines())
        if ok:
            print(f"ok {label}")
        else:
            tail = " | ".join(err.strip().splitlines()[-5:])
            print(f"FAIL {label} (exit {rc}, want {want_rc}): {tail}")
            self.failures.append(label)
        sys.stdout.flush()

    def check(self, d):
        d = os.path.join(self.work, d)
        return ["--inputs", d, "--check", d, "--rtol", "1e-3", "--atol", "1e-4"]


def check_decoders(c):
    """A decoder step, plain and with its caches in place; prefill."""
    cgc, work, run, check, failures = c.cgc, c.work, c.run, c.check, c.failures
    # A decoder step compiled once for every cache length, the empty one
    # too: its positions and mask computed from the cache's length at run time.
    dec = ["--dim", f"past=0..{DEC_POS - 1}"]
    for p in DEC_PASTS:
        run(f"decoder past={p}", ["run", os.path.join(work, "decoder.onnx"), "--quiet"] + dec
            + check(f"decoder_{p}"))
    # The same with its caches kept in place (fed and read densely through
    # set_input and get_output): every past_k/past_v pairs with its present.
    for p in DEC_PASTS:
        run(f"decoder --cache-in-place past={p}",
            ["run", os.path.join(work, "decoder.onnx"), "--quiet", "--cache-in-place"] + dec
            + check(f"decoder_{p}"))
    def inspect_pairs(name, dims, room):
        """cgc inspect lists every past_* -> present_* pair with its room."""
        inspected = subprocess.run([cgc, "inspect", os.path.join(work, f"{name}.onnx"),
                                    "--cache-in-place"] + dims, capture_output=True, text=True)
        pairs = inspected.stdout.count(f"(axis 2, room for {room})")
        if inspected.returncode == 0 and pairs == 2 * DEC_LAYERS and "past_k0 -> present_k0" in \
                inspected.stdout:
            print(f"ok {name} inspect --cache-in-place")
        else:
            print(f"FAIL {name} inspect --cache-in-place: {pairs} pairs\n{inspected.stdout}")
            failures.append(f"{name} inspect")

    inspect_pairs("decoder", dec, DEC_POS)
    # A prompt in one call (prefill): the number of new tokens varies too,
    # and the causal mask is a Slice of a constant at rows and columns that
    # follow both dimensions; kept in place, each call appends seq positions.
    prefill_dims = ["--dim", "seq=1..32", "--dim", "past=0..200"]
    for s, p in PREFILL_SIZES:
        for extra in ([], ["--cache-in-place"]):
            run(" ".join(["prefill"] + extra + [f"seq={s}", f"past={p}"]),
                ["run", os.path.join(work, "prefill.onnx"), "--quiet"] + prefill_dims + extra
                + check(f"prefill_{s}x{p}"))
    inspect_pairs("prefill", prefill_dims, PREFILL_POS)
    run("--cache-in-place without --dim", ["compile", os.path.join(work, "decoder.onnx"),
                                           "--cache-in-place", "--shape", "past_k0=1x2x3x8"],
        want_rc=1, must=["--cache-in-place needs --dim"])
    run("--cache-in-place with --specialize",
        ["compile", os.path.join(work, "decoder.onnx"), "--cache-in-place", "--specialize",
         "past=5", "-o", work] + dec, want_rc=1, must=["--cache-in-place", "--specialize"])


def check_sized_shapes(c):
    """Shapes that follow the sizes: a mask filled at run time, strided
    convolutions at any side, kernels chosen per call, stems, a narrow range."""
    cgc, work, run, check, failures = c.cgc, c.work, c.run, c.check, c.failures
    # A mask filled at run time to a shape that follows seq in two axes.
    for s in FILLED_SEQS:
        run(f"filled mask seq={s}", ["run", os.path.join(work, "filled_mask.onnx"), "--quiet",
                                     "--dim", "seq=1..64"] + check(f"filled_mask_{s}"))
    # Strided convolutions and pools at any side, no multiple: each side
    # divided at run time; and an empty batch.
    for b, h, w in RES_SIZES:
        run(f"resnet {b}x{h}x{w}", ["run", os.path.join(work, "resnet.onnx"), "--quiet", "--dim",
                                    "batch=0..4", "--dim", "height=32..96", "--dim",
                                    "width=32..96"] + check(f"resnet_{b}x{h}x{w}"))
    # Kernels chosen per call: the general code holds each 3x3 layer's
    # variants for small and large planes (ConvParams::alternatives) and
    # matches PyTorch at sizes that take each.
    wide = ["--dim", "batch=1..4", "--dim", "side=4..48"]
    for b, side in WIDE_SIZES:
        run(f"wide {b}x{side}", ["run", os.path.join(work, "wide.onnx"), "--quiet"] + wide
            + check(f"wide_{b}x{side}"))
    out = os.path.join(work, "compile_out", "wide")
    os.makedirs(out, exist_ok=True)
    run("wide compile", ["compile", os.path.join(work, "wide.onnx"), "--quiet", "-o", out] + wide)
    with open(os.path.join(out, "wide.cpp")) as f:
        alternatives = f.read().count(".alternatives = ")
    if alternatives == 2:
        print("ok wide: both 3x3 layers hold alternatives")
    else:
        print(f"FAIL wide: {alternatives} layers hold alternatives, not 2")
        failures.append("wide alternatives")
    # A stem's variant at the bounds takes every smaller image; the GEMM
    # variants that small images prefer are alternatives on its weights.
    stem_dims = ["--dim", "batch=1..2", "--dim", "height=1..64", "--dim", "width=1..64"]
    for b, h, w in STEM_SIZES:
        run(f"stems {b}x{h}x{w}", ["run", os.path.join(work, "stems.onnx"), "--quiet"]
            + stem_dims + check(f"stems_{b}x{h}x{w}"))
    inspected = subprocess.run([cgc, "inspect", os.path.join(work, "stems.onnx")] + stem_dims,
                               capture_output=True, text=True)
    if inspected.returncode == 0 and "FewChannels or Pointwise" in inspected.stdout:
        print("ok stems: the 1x1 layer holds Pointwise beside FewChannels, on its weights")
    else:
        print(f"FAIL stems inspect: no 'FewChannels or Pointwise'\n{inspected.stdout}")
        failures.append("stems alternatives")
    # A narrow range, whose samples two floor divisions fit alike
    # (floor((h + 3) / 4) and floor((h + 4) / 5) + 2 of the stem's output):
    # cgc compiles it where they differ and keeps the one that holds.
    b, h, w = RES_NARROW
    run(f"resnet narrow {b}x{h}x{w}",
        ["run", os.path.join(work, "resnet.onnx"), "--quiet", "--dim", "batch=0..2", "--dim",
         "height=32..48", "--dim", "width=32..48"] + check(f"resnet_{b}x{h}x{w}"))


def check_encoder_and_cnn(c):
    """The encoder and the CNN at every size of their ranges."""
    run, check, enc, cnn, full, step8 = c.run, c.check, c.enc, c.cnn, c.full, c.step8
    for b, s in ENC_SIZES:
        run(f"encoder {b}x{s}", ["run", enc, "--quiet"] + full + check(f"encoder_{b}x{s}"))
    for b, s in ENC_SIZES:
        if s % 8 == 0:
            run(f"encoder seq=8..512:8 {b}x{s}",
                ["run", enc, "--quiet"] + step8 + check(f"encoder_{b}x{s}"))
    for b, side in CNN_SIZES:  # the image side too: a stride-2 layer halves it
        run(f"cnn {b}x{side}", ["run", cnn, "--quiet", "--dim", "batch=1..16",
                                "--dim", "side=16..64:8"] + check(f"cnn_{b}x{side}"))
    # Any side, no multiple: the stride-2 layer's output side is derived at
    # run time, and the pool's positions are that side squared.
    for b, side in CNN_ODD_SIZES + [(5, 56)]:
        run(f"cnn side=1..64 {b}x{side}", ["run", cnn, "--quiet", "--dim", "batch=1..16",
                                           "--dim", "side=1..64"] + check(f"cnn_{b}x{side}"))


def check_data_dependent(c):
    """Data-dependent sizes within variable dimensions."""
    work, run, check = c.work, c.run, c.check
    # Data-dependent sizes within variable dimensions: their bounds follow
    # the dimensions, and outputs are dense at their actual shape, in the
    # general code and in a partly and a wholly specialised path.
    dd = os.path.join(work, "datadep.onnx")
    dd_dims = ["--dim", "batch=1..4", "--dim", "seq=1..64"]
    for spec in ([], ["--specialize", "seq=7,30"], ["--specialize", "batch=2", "--specialize",
                                                     "seq=30"]):
        for b, s, _ in DD_SIZES:
            run(f"data-dependent {' '.join(spec)} {b}x{s}",
                ["run", dd, "--quiet"] + dd_dims + spec + check(f"datadep_{b}x{s}"))
    run("error data-dependent: k beyond seq",
        ["run", dd, "--quiet"] + dd_dims + ["--inputs", os.path.join(work, "datadep_k_beyond")],
        1, must=("topk",))
    run("error data-dependent output read by a node",
        ["compile", os.path.join(work, "datadep_read.onnx"), "--quiet"] + dd_dims +
        ["-o", os.path.join(work, "compile_out")], 1, must=("reads_top", "toprelu", "--shape"))


def check_int8_and_observe(c):
    """int8 and --observe within variable dimensions."""
    work, run, failures, cnn = c.work, c.run, c.failures, c.cnn
    # int8 within variable dimensions: calibrated on input sets of three
    # sizes (the input's statistics against numpy's), then quantised the
    # same at every size (within int8's error of PyTorch's float).
    calib = os.path.join(work, "cnn.calib.json")
    sets = [os.path.join(work, f"cnn_{size}") for size in ("3x32", "1x32", "5x56")]
    run("cgc calibrate --dim on sets of three sizes",
        ["calibrate", cnn, "--quiet", "--dim", "batch=1..16", "--dim", "side=16..64:8", "-o",
         calib] + [a for d in sets for a in ("--inputs", d)])
    with open(calib) as f:
        image = json.load(f)["tensors"]["image"]
    xs = [numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "input_0.pb"))).astype(np.float64)
          for d in sets]
    lo, hi, bins = image["min"], image["max"], len(image["histogram"])
    histogram = np.zeros(bins, np.int64)
    for x in xs:
        np.add.at(histogram, np.minimum(np.floor((x - lo) / (hi - lo) * bins), bins - 1)
                  .astype(np.int64).ravel(), 1)
    if image["count"] != sum(x.size for x in xs) or lo != min(x.min() for x in xs) or \
            hi != max(x.max() for x in xs) or histogram.tolist() != image["histogram"]:
        print(f"FAIL cgc calibrate --dim: count {image['count']}, min {lo}, max {hi}")
        failures.append("cgc calibrate --dim")
    else:
        print("ok cgc calibrate --dim: the input's statistics over three sizes match numpy")
    for b, side in CNN_SIZES:
        d = os.path.join(work, f"cnn_{b}x{side}")
        run(f"cnn --quantize int8 {b}x{side}",
            ["run", cnn, "--quiet", "--dim", "batch=1..16", "--dim", "side=16..64:8", "--quantize",
             "int8", "--calibration", calib, "--inputs", d, "--check", d, "--rtol", "0.1",
             "--atol", "0.02"])
    # --observe within variable dimensions (cgc run --statistics-out): the
    # statistics of the tensors at the run's sizes, the input's as numpy's,
    # every tensor's count, min and max as a static build's.
    stats = {}
    for label, dims in (("dim", ["--dim", "batch=1..16", "--dim", "side=16..64:8"]),
                        ("static", [])):
        stats[label] = os.path.join(work, f"statistics_{label}.json")
        run(f"--statistics-out ({label}) at 5x56",
            ["run", cnn, "--quiet", "--inputs", os.path.join(work, "cnn_5x56"),
             "--statistics-out", stats[label]] + dims)
    with open(stats["dim"]) as f:
        observed = json.load(f)["tensors"]
    with open(stats["static"]) as f:
        static = json.load(f)["tensors"]
    x = numpy_helper.to_array(onnx.load_tensor(os.path.join(work, "cnn_5x56", "input_0.pb")))
    summary = {k: (t["count"], t["min"], t["max"]) for k, t in observed.items()}
    if summary["image"] != (x.size, float(x.min()), float(x.max())) or \
            summary != {k: (t["count"], t["min"], t["max"]) for k, t in static.items()}:
        print(f"FAIL --observe with --dim: {summary.get('image')}")
        failures.append("--observe with --dim")
    else:
        print(f"ok --observe with --dim: {len(summary)} tensors as at 5x56")
    run("error --observe with --specialize",
        ["compile", cnn, "--quiet", "--dim", "batch=1..16", "--dim", "side=16..64:8", "--observe",
         "--specialize", "batch=1", "-o", os.path.join(work, "compile_out")], 1,
        must=("--observe", "--specialize"))


def check_control_flow(c):
    """If, Loop and Scan within variable dimensions."""
    work, run, check = c.work, c.run, c.check
    # If, Loop (its trip count the variable seq) and Scan within variable
    # dimensions, also in a specialised path.
    for spec in ([], ["--specialize", "seq=7"]):
        for b, s in CF_SIZES:
            run(f"control flow {' '.join(spec)} {b}x{s}",
                ["run", os.path.join(work, "control.onnx"), "--quiet", "--dim", "batch=1..4",
                 "--dim", "seq=1..64"] + spec + check(f"control_{b}x{s}"))
    for b, s in [(2, 7), (3, 40)]:
        run(f"an If whose condition the sizes decide {b}x{s}",
            ["run", os.path.join(work, "sized_if.onnx"), "--quiet", "--dim", "batch=1..4",
             "--dim", "seq=1..64"] + check(f"sized_if_{b}x{s}"))


def check_specialize(c):
    """--specialize: static paths beside the general code."""
    work, run, check, failures = c.work, c.run, c.check, c.failures
    enc, cnn, full, step8 = c.enc, c.cnn, c.full, c.step8
    # --specialize: static code for seq=128 (batch still variable) beside the
    # general code; a profile names the nodes that ran, so it shows which
    # path each size took.
    spec = full + ["--specialize", "seq=128"]
    for b, s in ENC_SIZES:
        profile = os.path.join(work, f"spec_{b}x{s}.json")
        label = f"encoder --specialize seq=128 {b}x{s}"
        run(label, ["run", enc, "--quiet"] + spec + check(f"encoder_{b}x{s}") +
            ["--profile-out", profile])
        with open(profile) as f:
            names = [n["name"] for n in json.load(f)["nodes"]]
        took = all(n.endswith("@seq=128") for n in names)
        if not names or took != (s == 128) or (not took and any("@" in n for n in names)):
            print(f"FAIL {label}: ran the {'specialised' if took else 'general'} code: {names[:3]}")
            failures.append(label + " path")
    for b, side in CNN_SIZES:  # both dimensions fixed: a wholly static path
        run(f"cnn --specialize batch=1,3 side=32 {b}x{side}",
            ["run", cnn, "--quiet", "--dim", "batch=1..16", "--dim", "side=16..64:8",
             "--specialize", "batch=1,3", "--specialize", "side=32"] + check(f"cnn_{b}x{side}"))
    for b, s in [(1, 128), (3, 200)]:  # a library of two builds, each with the paths
        run(f"encoder --specialize seq=128 for two targets {b}x{s}",
            ["run", enc, "--quiet", "--target", "x86-64-v3,x86-64-v2"] + spec +
            check(f"encoder_{b}x{s}"))
    for bad, what in [("seq=600", "600"), ("seq=12", "multiple"), ("nosuchdim=4", "nosuchdim"),
                      ("seq=", "of the form"), ("seq=8,8", "twice")]:
        run(f"error --specialize {bad}",
            ["compile", enc, "--quiet"] + step8 + ["--specialize", bad, "-o",
                                                   os.path.join(work, "compile_out")],
            1, must=("--specialize", what))
    run("error --specialize without --dim",
        ["compile", cnn, "--quiet", "--shape", "image=1x3x32x32", "--specialize", "side=32",
         "-o", os.path.join(work, "compile_out")], 1, must=("--specialize", "--dim"))


def check_profiles(c):
    """A profile of run sizes, --sweep, and a range in --shape."""
    cgc, work, run, check = c.cgc, c.work, c.run, c.check
    failures, enc, full = c.failures, c.enc, c.full
    # A profile counts the runs at each size; a recompile with it
    # specialises the size that had them.
    profile = os.path.join(work, "sizes_profile.json")
    run("profile of runs at 1x128", ["run", enc, "--quiet"] + full + check("encoder_1x128") +
        ["--bench", "3", "--profile-out", profile])
    with open(profile) as f:
        sizes = json.load(f).get("sizes")
    out = os.path.join(work, "profiled_out")
    p = subprocess.run([cgc, "compile", enc, "-o", out, "--profile", profile] + full,
                       capture_output=True, text=True, timeout=600)
    with open(os.path.join(out, "encoder.cpp")) as f:
        specialised = "spec_batch1_seq128_executor0(" in f.read()
    if sizes != [{"dims": {"batch": 1, "seq": 128}, "runs": 6}] or p.returncode != 0 or \
            "specialising batch=1, seq=128" not in p.stderr or not specialised:
        print(f"FAIL --profile specialises: sizes {sizes}, exit {p.returncode}, "
              f"specialised {specialised}: {p.stderr.strip()[-300:]}")
        failures.append("--profile specialises")
    else:
        print("ok --profile specialises the size it ran")

    # cgc run --bench --sweep: one JSON line per combination of sizes.
    p = subprocess.run([cgc, "run", enc, "--quiet"] + full +
                       ["--inputs", os.path.join(work, "encoder_1x7"), "--bench", "2",
                        "--sweep", "seq=1,64", "--sweep", "batch=1,3"],
                       capture_output=True, text=True, timeout=600)
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    swept = [(line["dims"]["batch"], line["dims"]["seq"]) for line in lines]
    if p.returncode != 0 or sorted(swept) != [(1, 1), (1, 64), (3, 1), (3, 64)] or \
            not all(line["median_ms"] > 0 for line in lines):
        print(f"FAIL --sweep: exit {p.returncode}, {swept}: {p.stderr.strip()[-300:]}")
        failures.append("--sweep")
    else:
        print("ok --sweep")
    run("error --sweep beyond the bounds",
        ["run", enc, "--quiet"] + full + ["--inputs", os.path.join(work, "encoder_1x7"),
                                          "--bench", "1", "--sweep", "seq=513"],
        1, must=("--sweep", "513"))

    # A range in --shape: batch fixed at 1 by name, seq variable.
    for s in (7, 128):
        run(f"encoder --shape input_ids=1x1..256 1x{s}",
            ["run", enc, "--quiet", "--shape", "input_ids=1x1..256"] + check(f"encoder_1x{s}"))
    run("error --shape range, batch fixed at 1, given 3",
        ["run", enc, "--quiet", "--shape", "input_ids=1x1..256"] + check("encoder_3x200"), 1,
        must=("axis 0",))


def check_tune(c):
    """cgc tune --dim and cgc tune --specialize."""
    cgc, work, run, check = c.cgc, c.work, c.run, c.check
    failures, enc, full = c.failures, c.enc, c.full
    # cgc tune --dim: tunes the general code at the inputs' sizes and records
    # them; a compile with its profile specialises them.
    tuned = os.path.join(work, "tuned")
    run("cgc tune --dim at 1x128", ["tune", enc, "--quiet"] + full +
        ["--inputs", os.path.join(work, "encoder_1x128"), "--budget", "0", "--rounds", "1",
         "-o", tuned])
    with open(os.path.join(tuned, "encoder.profile.json")) as f:
        tuned_profile = json.load(f)
    p = subprocess.run([cgc, "compile", enc, "-o", os.path.join(work, "tuned_out"), "--profile",
                        os.path.join(tuned, "encoder.profile.json")] + full,
                       capture_output=True, text=True, timeout=600)
    sizes = [s["dims"] for s in tuned_profile.get("sizes", [])]
    if sizes != [{"batch": 1, "seq": 128}] or "executors" not in tuned_profile or \
            p.returncode != 0 or "specialising batch=1, seq=128" not in p.stderr:
        print(f"FAIL cgc tune --dim: sizes {sizes}, compile exit {p.returncode}: "
              f"{p.stderr.strip()[-300:]}")
        failures.append("cgc tune --dim")
    else:
        print("ok cgc tune --dim records the size; its profile specialises it")

    # cgc tune --specialize: the path is tuned on its own (a section of the
    # profile, keyed by its sizes); a compile with the profile specialises
    # it and reads that section (a section of another graph is refused).
    tuned = os.path.join(work, "tuned_spec")
    run("cgc tune --dim --specialize", ["tune", enc, "--quiet"] + full +
        ["--specialize", "seq=128", "--specialize", "batch=1", "--budget", "0", "--rounds", "1",
         "-o", tuned])
    tuned_path = os.path.join(tuned, "encoder.profile.json")
    with open(tuned_path) as f:
        tuned_profile = json.load(f)
    paths = tuned_profile.get("specializations", [])
    if [p["dims"] for p in paths] != [{"batch": 1, "seq": 128}] or \
            paths[0]["profile"].get("executors") != tuned_profile.get("executors") or \
            not paths[0]["profile"].get("nodes"):
        print(f"FAIL cgc tune --specialize: {[p.get('dims') for p in paths]}")
        failures.append("cgc tune --specialize")
    else:
        print("ok cgc tune --specialize tunes the path on its own")
    spec_profile = os.path.join(work, "spec_profile")
    for b, s in [(1, 128), (3, 200)]:
        run(f"encoder with the tuned path {b}x{s}",
            ["run", enc, "--quiet"] + full + ["--profile", tuned_path,
                                              "--profile-out", spec_profile] +
            check(f"encoder_{b}x{s}"))
        with open(spec_profile) as f:
            names = [n["name"] for n in json.load(f)["nodes"]]
        if all(n.endswith("@batch=1,seq=128") for n in names) != (s == 128):
            print(f"FAIL the tuned path at {b}x{s}: {names[:2]}")
            failures.append(f"tuned path {b}x{s}")
    paths[0]["profile"]["graph_hash"] = "0" * 16
    stale = os.path.join(work, "stale_section.json")
    with open(stale, "w") as f:
        json.dump(tuned_profile, f)
    run("error a tuned path measured on another graph",
        ["compile", enc, "--quiet"] + full + ["--profile", stale, "-o",
                                              os.path.join(work, "compile_out")],
        1, must=("stale_section.json", "different graph"))


def check_errors(c):
    """Bad sizes and bad --dim flags: exit 1, one line naming the dimension."""
    work, run, check, enc, full, step8 = c.work, c.run, c.check, c.enc, c.full, c.step8
    # Bad sizes: exit 1, one stderr line naming the dimension.
    run("error seq 200 beyond 1..128",
        ["run", enc, "--quiet", "--dim", "batch=1..8", "--dim", "seq=1..128"] + check("encoder_3x200"),
        1, must=("seq", "128"))
    run("error seq 7 off step 8",
        ["run", enc, "--quiet"] + step8 + check("encoder_1x7"), 1, must=("seq", "8"))
    run("error inputs disagree",
        ["run", enc, "--quiet"] + full + ["--inputs", os.path.join(work, "encoder_mismatch")],
        1, any_of=("batch", "seq"))
    run("error a graph that fixes a variable dimension",
        ["compile", os.path.join(work, "pinned.onnx"), "--quiet", "--dim", "seq=1..64", "-o",
         os.path.join(work, "compile_out")], 1, must=("pin_seq", "seq=", "--dim"))
    run("error batch unbound at compile time",
        ["compile", enc, "--quiet", "--dim", "seq=1..512", "-o", os.path.join(work, "compile_out")],
        1, must=("batch", "--dim"))
    # Malformed or unknown --dim.
    for bad in ["seq=5..2", "seq=1..512:0", "nosuchdim=1..4", "seq=abc"]:
        dims = ["batch=1..8"] + (["seq=1..512"] if bad.startswith("nosuchdim") else []) + [bad]
        argv = ["run", enc, "--quiet"] + [a for d in dims for a in ("--dim", d)] + check("encoder_1x7")
        run(f"error --dim {bad}", argv, 1, must=("--dim",) + (("nosuchdim",) if "nosuchdim" in bad else ()))


def main():
    args = [a for a in sys.argv[1:] if a != "--only-data"]
    if len(args) != 2:
        sys.exit(__doc__)
    cgc, work = os.path.abspath(args[0]), os.path.abspath(args[1])
    make_data(work)
    if "--only-data" in sys.argv:
        print(f"wrote models and data into {work}")
        return
    c = Checks(cgc, work)
    sections = (check_decoders, check_sized_shapes, check_encoder_and_cnn,
                check_data_dependent, check_int8_and_observe, check_control_flow,
                check_specialize, check_profiles, check_tune,
                check_errors)
    for section in sections:
        section(c)
    if c.failures:
        print(f"{len(c.failures)} failed: {', '.join(c.failures)}")
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
