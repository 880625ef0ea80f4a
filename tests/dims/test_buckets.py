#!/usr/bin/python3
"""End-to-end test of --specialize buckets (cgc --specialize NAME=MIN..MAX).

A bucket runs static code at its largest size on inputs padded to it where
padding is neutral along the dimension, and general code over its range
elsewhere. This test shows, against PyTorch's outputs:
  * a CNN with variable batch and side (test_dims.py's), compiled with
    --specialize batch=1..4,5..8: the compile log says both buckets are
    static code, padded; at batch 1, 3, 4 (the first bucket's ends and
    inside), 5, 8 and 11 (outside every bucket), at several sides, the
    outputs match, and the profile's node names show the path each size
    took (the bucket's, or the general code's), and cgc inspect lists the
    buckets;
  * the same with --dim batch=0..16 and a bucket 0..4 at an empty batch;
  * a compile with a profile that ran five sizes specialises the sizes run
    most (and matches), and cgc tune --runs keeps the sizes in its profile
    and proposes power-of-two buckets that cover them;
  * the BERT-style encoder (test_dims.py's) with --specialize
    seq=1..16,17..32: the log names the node that mixes positions along
    seq and says each bucket is general code; at seq 1, 16, 17, 32 and 40
    the outputs match and the profile shows the path; with --specialize
    batch=1..2 (padding the batch is neutral there, seq stays variable)
    they match too.

Usage: /usr/bin/python3 tests/dims/test_buckets.py PATH_TO_CGC WORKDIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dims_models import write_encoder_and_cnn  # noqa: E402

CNN_SIZES = [(1, 16), (3, 24), (4, 16), (5, 32), (8, 16), (11, 24)]  # (batch, side)
ENC_SIZES = [(2, 1), (1, 16), (3, 17), (2, 32), (2, 40), (1, 7)]  # (batch, seq)


def make_data(work):
    torch.manual_seed(0)
    write_encoder_and_cnn(work, np.random.default_rng(0), ENC_SIZES,
                          CNN_SIZES + [(0, 16), (2, 16)])


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cgc, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)
    make_data(work)
    enc, cnn = os.path.join(work, "encoder.onnx"), os.path.join(work, "cnn.onnx")
    failures = []

    def run(label, argv, must=()):
        p = subprocess.run([cgc] + argv, capture_output=True, text=True, timeout=900)
        missing = [m for m in must if m not in p.stderr]
        if p.returncode == 0 and not missing:
            print(f"ok {label}")
        else:
            tail = " | ".join(p.stderr.strip().splitlines()[-5:])
            print(f"FAIL {label} (exit {p.returncode}, missing {missing}): {tail}")
            failures.append(label)
        sys.stdout.flush()
        return p

    def check(d):
        d = os.path.join(work, d)
        return ["--inputs", d, "--check", d, "--rtol", "1e-3", "--atol", "1e-4"]

    def took(label, profile, path):
        """The profile's nodes are all the path's ("@batch=1..4"), or none
        is (the general code) where `path` is None."""
        with open(profile) as f:
            names = [n["name"] for n in json.load(f)["nodes"]]
        ok = bool(names) and (all(n.endswith("@" + path) for n in names) if path
                              else not any("@" in n for n in names))
        if not ok:
            print(f"FAIL {label}: ran {names[:3]}, wanted {path or 'the general code'}")
            failures.append(label + " path")

    # The CNN: padding the batch is neutral (each image on its own).
    cnn_dims = ["--dim", "batch=1..16", "--dim", "side=16..64:8"]
    buckets = ["--specialize", "batch=1..4,5..8"]
    run("cnn compile with batch buckets",
        ["compile", cnn] + cnn_dims + buckets + ["-o", os.path.join(work, "cnn_out")],
        must=("batch: bucket 1..4 is static code at 4, its inputs padded",
              "batch: bucket 5..8 is static code at 8, its inputs padded"))
    inspected = subprocess.run([cgc, "inspect", cnn] + cnn_dims + buckets, capture_output=True,
                               text=True)
    if inspected.returncode != 0 or "batch=1..4 padded" not in inspected.stdout:
        print(f"FAIL cnn inspect lists the buckets:\n{inspected.stdout}{inspected.stderr}")
        failures.append("cnn inspect")
    for b, side in CNN_SIZES:
        label = f"cnn --specialize batch=1..4,5..8 {b}x{side}"
        profile = os.path.join(work, f"cnn_{b}x{side}.json")
        run(label, ["run", cnn, "--quiet"] + cnn_dims + buckets + check(f"cnn_{b}x{side}") +
            ["--profile-out", profile])
        took(label, profile, "batch=1..4" if b <= 4 else "batch=5..8" if b <= 8 else None)
    for b in (0, 2):  # an empty batch in a bucket
        run(f"cnn --dim batch=0..16 --specialize batch=0..4 {b}x16",
            ["run", cnn, "--quiet", "--dim", "batch=0..16", "--dim", "side=16..64:8",
             "--specialize", "batch=0..4"] + check(f"cnn_{b}x16"))

    # A profile that ran more sizes than a compile specialises one by one
    # (cgc run's counts, more sizes written in): the compile specialises the
    # sizes run most, exactly (a padded bucket could be slower than the
    # general code); cgc tune --runs keeps the sizes and proposes
    # power-of-two buckets that cover them, for --specialize.
    runs = os.path.join(work, "runs.json")
    run("cnn profile of runs", ["run", cnn, "--quiet"] + cnn_dims + check("cnn_3x24") +
        ["--bench", "2", "--profile-out", runs])
    with open(runs) as f:
        profile = json.load(f)
    profile["sizes"] = [{"dims": {"batch": b, "side": s}, "runs": r} for b, s, r in
                        [(3, 24, 40), (4, 24, 30), (1, 16, 20), (6, 32, 10), (7, 32, 5)]]
    with open(runs, "w") as f:
        json.dump(profile, f)
    proposed = "batch=3..4, side=17..32; batch=1, side=16; batch=5..8, side=17..32"
    run("cnn compile with a profile of many sizes",
        ["compile", cnn] + cnn_dims + ["--profile", runs, "-o", os.path.join(work, "prof_out")],
        must=("--profile: specialising batch=3, side=24 (38% of its 105 runs)",))
    for b, side in [(3, 24), (1, 16), (5, 32)]:
        run(f"cnn with the profile's sizes {b}x{side}",
            ["run", cnn, "--quiet"] + cnn_dims + ["--profile", runs] + check(f"cnn_{b}x{side}"))
    tuned = os.path.join(work, "tuned")
    p = run("cgc tune --dim --runs", ["tune", cnn, "--quiet"] + cnn_dims +
            ["--runs", runs, "--budget", "0", "--rounds", "1", "-o", tuned])
    with open(os.path.join(tuned, "cnn.profile.json")) as f:
        kept = json.load(f).get("sizes", [])
    if len(kept) != 5 or f"buckets that cover them (--specialize): {proposed}" not in p.stdout:
        print(f"FAIL cgc tune --runs: kept {kept}\n{p.stdout[-800:]}")
        failures.append("cgc tune --runs")

    # The encoder: its attention's Softmax mixes positions along seq.
    enc_dims = ["--dim", "batch=1..4", "--dim", "seq=1..64"]
    seq_buckets = ["--specialize", "seq=1..16,17..32"]
    p = run("encoder compile with seq buckets",
            ["compile", enc] + enc_dims + seq_buckets + ["-o", os.path.join(work, "enc_out")],
            must=("; bucket 1..16 is general code", "; bucket 17..32 is general code"))
    if not any(line.startswith("cgc: seq: '") and "along it" in line
               for line in p.stderr.splitlines()):
        print(f"FAIL encoder buckets: no line names the node that mixes seq:\n{p.stderr}")
        failures.append("encoder bucket log")
    for b, s in ENC_SIZES:
        label = f"encoder --specialize seq=1..16,17..32 {b}x{s}"
        profile = os.path.join(work, f"encoder_{b}x{s}.json")
        run(label, ["run", enc, "--quiet"] + enc_dims + seq_buckets + check(f"encoder_{b}x{s}") +
            ["--profile-out", profile])
        took(label, profile, "seq=1..16" if s <= 16 else "seq=17..32" if s <= 32 else None)
    for b, s in [(1, 16), (2, 32), (3, 17)]:  # padded batch, variable seq
        label = f"encoder --specialize batch=1..2 {b}x{s}"
        profile = os.path.join(work, f"encoder_batch_{b}x{s}.json")
        run(label, ["run", enc, "--quiet"] + enc_dims + ["--specialize", "batch=1..2"] +
            check(f"encoder_{b}x{s}") + ["--profile-out", profile])
        took(label, profile, "batch=1..2" if b <= 2 else None)

    if failures:
        sys.exit(f"{len(failures)} failure(s): {failures}")
    print("all bucket tests passed")


if __name__ == "__main__":
    main()
