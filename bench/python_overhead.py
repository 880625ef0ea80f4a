#!/usr/bin/env python3
"""What a call through the Python API costs on top of the model's run():
the tiny CNN sample (samples/models/tiny_cnn) timed per call as

  python m(x)          cgc.Model.__call__: input checks, copy in, run, copy out
  python run(copy=F)   input written into m.input_buffer(), run(copy=False)
  C++ loop (_bench_run) the C ABI's run() looped in C++ inside the module
  cgc run --bench      the cgc command's --bench loop (its own process)
  ORT (node)           ONNX Runtime through onnxruntime-node, bench/ort_run.js
                       --runs N (session.run per call, from JavaScript)

Each round times N calls of every row, the rows alternated; the table gives
the median over rounds of each round's median, in microseconds. All on one
thread (--threads 1 for cgc and ORT). Run from the repository root with the
package importable:

  PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile
import time

import numpy as np
import onnx
import onnx.numpy_helper

import cgc

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "models" / "tiny_cnn"


def read_input():
    proto = onnx.TensorProto()
    proto.ParseFromString((SAMPLE / "test_data_set_0" / "input_0.pb").read_bytes())
    return onnx.numpy_helper.to_array(proto)


def time_calls(call, n):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def write_ort_case(directory, name, x):
    (directory / "input_0.bin").write_bytes(x.tobytes())
    (directory / "inputs.json").write_text(json.dumps(
        [{"name": name, "dtype": str(x.dtype), "dims": list(x.shape), "file": "input_0.bin"}]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per row and round")
    parser.add_argument("--cgc", default=str(ROOT / "build" / "cgc"))
    args = parser.parse_args()

    x = read_input()
    model = cgc.compile(SAMPLE / "model.onnx", executors=1, threads=1)
    name = model.inputs[0].name
    buffer = model.input_buffer(name)
    buffer[...] = x
    for _ in range(200):
        model(x)
    work = pathlib.Path(tempfile.mkdtemp(prefix="cgc-overhead-"))
    write_ort_case(work, name, x)
    env = dict(os.environ, CGC_CACHE_DIR=cgc.cache_directory())

    def cgc_run():
        out = subprocess.run([args.cgc, "run", str(SAMPLE / "model.onnx"), "--quiet",
                              "--executors", "1", "--threads", "1",
                              "--inputs", str(SAMPLE / "test_data_set_0"),
                              "--bench", str(args.calls)],
                             check=True, capture_output=True, text=True, env=env).stdout
        return json.loads(out.strip().splitlines()[-1])["median_ms"] * 1e3

    def ort():
        out = subprocess.run(["node", str(ROOT / "bench" / "ort_run.js"),
                              str(SAMPLE / "model.onnx"), str(work), str(work / "out"),
                              "--threads", "1", "--runs", str(args.calls)],
                             check=True, capture_output=True, text=True,
                             cwd=ROOT / "bench").stdout
        return json.loads(out.strip().splitlines()[-1])["median_ms"] * 1e3

    rows = {
        "python m(x)": lambda: time_calls(lambda: model(x), args.calls),
        "python run(copy=False)": lambda: time_calls(lambda: model.run(copy=False), args.calls),
        "C++ loop (_bench_run)": lambda: statistics.median(model._bench_run(args.calls)) * 1e3,
        "cgc run --bench": cgc_run,
        "ORT (node, --runs)": ort,
    }
    results = {row: [] for row in rows}
    for _ in range(args.rounds):
        for row, measure in rows.items():
            results[row].append(measure())
    base = statistics.median(results["C++ loop (_bench_run)"])
    print(f"tiny_cnn, 1 thread, {args.rounds} rounds x {args.calls} calls "
          "(median of round medians, us per call)")
    print(f"{'':26} {'median':>9} {'min':>9} {'vs C++ loop':>12}")
    for row, values in results.items():
        median = statistics.median(values)
        print(f"{row:26} {median:9.2f} {min(values):9.2f} {median - base:+11.2f}")


if __name__ == "__main__":
    main()
