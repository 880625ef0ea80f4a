"""Times the programs bench/portable/build.sh made against ONNX Runtime's
Python package on a machine without cgc (a many-core machine lent for a
session), in alternated rounds: every program and both ONNX Runtime modes
once per round, the median of --runs inferences each, the median of the
rounds reported. ONNX Runtime runs with as many intra-op (and, in parallel
mode, inter-op) threads as the process has cores.

Usage: python3 run.py PROGRAM_DIR MODEL_DIR [--rounds 5] [--runs 20]
  PROGRAM_DIR holds NAME_ExT programs; MODEL_DIR/NAME.onnx the models.
Prints a Markdown table and writes PROGRAM_DIR/portable.json.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import time

import numpy as np
import onnxruntime as ort


def ort_session(model, parallel, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if parallel:
        options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
        options.inter_op_num_threads = threads
    else:
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feeds = {}
    for i, graph_input in enumerate(session.get_inputs()):
        shape = [d if isinstance(d, int) else 1 for d in graph_input.shape]
        count = int(np.prod(shape))
        values = ((np.arange(count) * 7 + i) % 13) / 13.0 - 0.5
        feeds[graph_input.name] = values.astype(np.float32).reshape(shape)
    return session, feeds


def ort_median(session, feeds, runs):
    for _ in range(3):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def program_median(path, weights, runs):
    out = subprocess.run([path, str(runs), weights], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["median_ms"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("programs")
    parser.add_argument("models")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    threads = len(os.sched_getaffinity(0))
    programs = {}
    for entry in sorted(os.listdir(args.programs)):
        path = os.path.join(args.programs, entry)
        if os.access(path, os.X_OK) and os.path.isfile(path) and re.search(r"_\d+x\d+$", entry):
            name, config = entry.rsplit("_", 1)
            programs.setdefault(name, {})[config] = path
    results = {}
    for name, configs in programs.items():
        model = os.path.join(args.models, f"{name}.onnx")
        sessions = {mode: ort_session(model, mode == "ort_parallel", threads)
                    for mode in ("ort_sequential", "ort_parallel")}
        samples = {key: [] for key in list(sessions) + list(configs)}
        for _ in range(args.rounds):
            for mode, (session, feeds) in sessions.items():
                samples[mode].append(ort_median(session, feeds, args.runs))
            for config, path in configs.items():
                samples[config].append(program_median(
                    path, os.path.join(args.programs, f"{name}.weights.bin"), args.runs))
        results[name] = {key: statistics.median(v) for key, v in samples.items()}
        print(name, json.dumps(results[name]), flush=True)
    with open(os.path.join(args.programs, "portable.json"), "w") as f:
        json.dump({"threads": threads, "rounds": args.rounds, "runs": args.runs,
                   "results": results}, f, indent=1)
    print(f"\n{threads} cores; medians of {args.rounds} rounds of {args.runs} runs (ms)\n")
    print("| model | ORT sequential | ORT parallel | cgc 1xN | cgc best | best config |")
    print("|---|---:|---:|---:|---:|---|")
    for name, r in results.items():
        cgc = {k: v for k, v in r.items() if not k.startswith("ort_")}
        one = next((v for k, v in cgc.items() if k.startswith("1x")), float("nan"))
        best = min(cgc, key=cgc.get)
        print(f"| {name} | {r['ort_sequential']:.3f} | {r['ort_parallel']:.3f} | "
              f"{one:.3f} | {cgc[best]:.3f} | {best} |")


if __name__ == "__main__":
    main()
