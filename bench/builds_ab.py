"""Times two builds of cgc (a baseline, e.g. main's install, and a branch's)
against ONNX Runtime on corpus models, alternated within every round:
ONNX Runtime, the baseline, the branch (each the median of --runs
inferences after warm-up), and reports per model the median of the
rounds' medians and each build's speed ratio over ONNX Runtime with the
lowest and highest ratio of a single round. bench/bench.py times one
build; this one says what a change did, on the same machine in the same
minutes.

Usage: /usr/bin/python3 bench/builds_ab.py --base BASE_CGC [--cgc CGC]
           --only NAMES [--threads 1] [--rounds 7] [--runs 50]
(bench/check.sh or bench/models.py makes the corpus)
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import BENCH_DIR, ROOT, load_case  # noqa: E402


def median_ms(command):
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the baseline's cgc")
    parser.add_argument("--cgc", default=os.path.join(ROOT, "build", "cgc"))
    parser.add_argument("--corpus", default=os.path.join(BENCH_DIR, "corpus"))
    parser.add_argument("--only", required=True)
    parser.add_argument("--threads", default="1")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    builds = {"base": os.path.abspath(args.base), "cgc": os.path.abspath(args.cgc)}
    scratch = os.path.join(BENCH_DIR, "results", "builds_ab_ort")
    print("| model | threads | ONNX Runtime (ms) | base (ms) | base ratio (rounds) "
          "| branch (ms) | branch ratio (rounds) |\n|---|---:|---:|---:|---|---:|---|")
    for name in args.only.split(","):
        case, model, data, bindings = load_case(os.path.join(args.corpus, name))
        times = {"ort": [], "base": [], "cgc": []}
        for _ in range(args.rounds):
            times["ort"].append(median_ms(
                ["node", os.path.join(BENCH_DIR, "ort_run.js"), model, data, scratch,
                 "--runs", str(args.runs), "--threads", args.threads]))
            for key, cgc in builds.items():
                times[key].append(median_ms(
                    [cgc, "run", model, "-q", "--inputs", data, "--bench", str(args.runs),
                     "--threads", args.threads] + bindings))
        ort = statistics.median(times["ort"])
        cells = [name, args.threads, f"{ort:.4f}"]
        for key in ("base", "cgc"):
            ratios = [o / c for o, c in zip(times["ort"], times[key])]
            ms = statistics.median(times[key])
            cells += [f"{ms:.4f}", f"{ort / ms:.2f}x ({min(ratios):.2f}-{max(ratios):.2f}x)"]
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
