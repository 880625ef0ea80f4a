#!/usr/bin/env python3
"""Time from process start to the first result: a program that links a model
through cgc_add_graph (first_result.cpp, built against cgc installed from
--build) against ONNX Runtime in node (ort_first_result.js), alternated,
each a fresh process per round. Prints per side the median and range of:
process start to main(), to the constructed model / created session, to the
first result, and the second run's time.

Usage: startup.py [--build BUILD] [--model bench/corpus/resnet50/model.onnx]
                  [--dims 1x3x224x224] [--rounds 15] [--threads N] [--work DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def build(args):
    prefix = os.path.join(args.work, "prefix")
    subprocess.run(["cmake", "--install", args.build, "--prefix", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "-S", HERE, "-B", os.path.join(args.work, "build"),
                    "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}",
                    f"-DMODEL={os.path.abspath(args.model)}"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", os.path.join(args.work, "build"), "-j2"], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(args.work, "build", "first_result")


def launch(command, env):
    env = dict(env, CGC_LAUNCH_NS=str(time.time_ns()))
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def summary(rows, key):
    values = sorted(r[key] for r in rows)
    return f"{statistics.median(values):8.1f} ({values[0]:.1f}-{values[-1]:.1f})"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="cgc's build directory")
    p.add_argument("--model", default=os.path.join(ROOT, "bench", "corpus", "resnet50",
                                                    "model.onnx"))
    p.add_argument("--dims", default="1x3x224x224", help="the float input's shape (ORT side)")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--threads", type=int, default=0,
                   help="threads per side (0: every core, both sides' default)")
    p.add_argument("--work", default=os.path.join(ROOT, "build", "startup"))
    args = p.parse_args()
    program = build(args)
    env = dict(os.environ)
    ort = ["node", os.path.join(HERE, "ort_first_result.js"), args.model, args.dims]
    if args.threads:  # both on the first N cores; cgc's team is the cores it may use
        cores = ["taskset", "-c", f"0-{args.threads - 1}"]
        program, ort = cores + [program], cores + ort + [str(args.threads)]
    rows = {"cgc": [], "onnxruntime": []}
    for r in range(args.rounds):
        rows["cgc"].append(launch(program if isinstance(program, list) else [program], env))
        rows["onnxruntime"].append(launch(ort, env))
        print(f"round {r + 1}/{args.rounds}: cgc {rows['cgc'][-1]['first_result_ms']:.1f} ms, "
              f"onnxruntime {rows['onnxruntime'][-1]['first_result_ms']:.1f} ms",
              file=sys.stderr)
    print(f"{os.path.basename(os.path.dirname(args.model)) or args.model}: milliseconds from "
          f"process start, median (range) over {args.rounds} alternated rounds")
    print(f"{'':12} {'to main':>20} {'constructed':>20} {'first result':>20} {'second run':>20}")
    for side, r in rows.items():
        print(f"{side:12} " + " ".join(f"{summary(r, k):>20}" for k in
                                       ("main_ms", "constructed_ms", "first_result_ms",
                                        "second_run_ms")))


if __name__ == "__main__":
    main()
