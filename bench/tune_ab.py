"""Does `cgc tune` ever make a model slower? For each corpus model and each
--budget, runs `cgc tune` (which keeps its profile only if the whole model,
alternated against the untuned build, is faster by more than the spread,
and writes the default configuration otherwise), then times the model
without and with the profile in an independent alternated A/B: rounds of
`cgc run --bench RUNS` (the untuned build, then the tuned one, both loaded
from the build cache), the median of each round's medians and the range of
the per-round ratios untuned / tuned (above 1: the tuned model is faster).

Usage: /usr/bin/python3 bench/tune_ab.py [--cgc CGC] [--only a,b,c]
           [--budgets 30,120,600] [--rounds 10] [--runs 20] [--name tune_ab]
(bench/check.sh makes the corpus)
Writes bench/results/NAME.{md,json}.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import BENCH_DIR, ROOT, load_case  # noqa: E402

DEFAULT_MODELS = "mobilenet_v2,squeezenet1_1,googlenet,stft_frontend,lstm_h256_b10"
FINAL = re.compile(r"^tune: final check: (.*)$")
BEST = re.compile(r"^tune: best (\d+)x(\d+) \((\d+) ops with their own thread count, (\d+) layers")


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise RuntimeError(f"{' '.join(command[:3])} failed: {lines[-1] if lines else '?'}")
    return result.stdout + result.stderr


def bench_ms(cgc, model, data, bindings, runs, profile):
    command = [cgc, "run", model, "--inputs", data, "--bench", str(runs), "-q"] + bindings
    command += ["--profile", profile] if profile else []
    for line in run(command).splitlines():
        if line.startswith("{") and "median_ms" in line:
            return json.loads(line)["median_ms"]
    raise RuntimeError(f"cgc run --bench printed no timing for {model}")


def tune_once(cgc, case_dir, budget, rounds, runs, out):
    _, model, data, bindings = load_case(case_dir)
    start = time.time()
    log = run([cgc, "tune", model, "--inputs", data, "-o", out, "--budget", str(budget)] +
              bindings).splitlines()
    seconds = time.time() - start
    profile = next(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".profile.json"))
    final = next((m[1] for m in map(FINAL.match, log) if m), "no final check")
    best = next((m for m in map(BEST.match, log) if m), None)
    choices = (f"{best[1]}x{best[2]}, {best[3]} op thread counts, {best[4]} variants"
               if best else "?")
    untuned, tuned = [], []
    bench_ms(cgc, model, data, bindings, 2, "")  # both builds in the cache before timing
    bench_ms(cgc, model, data, bindings, 2, profile)
    for _ in range(rounds):
        untuned.append(bench_ms(cgc, model, data, bindings, runs, ""))
        tuned.append(bench_ms(cgc, model, data, bindings, runs, profile))
    ratios = [u / t for u, t in zip(untuned, tuned)]
    return {"budget": budget, "tune_s": round(seconds), "final_check": final, "choices": choices,
            "untuned_ms": statistics.median(untuned), "tuned_ms": statistics.median(tuned),
            "ratio": statistics.median(ratios), "ratio_low": min(ratios),
            "ratio_high": max(ratios), "rounds": rounds}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgc", default=os.path.join(ROOT, "install", "bin", "cgc"))
    parser.add_argument("--corpus", default=os.path.join(BENCH_DIR, "corpus"))
    parser.add_argument("--only", default=DEFAULT_MODELS)
    parser.add_argument("--budgets", default="30,120,600")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--name", default="tune_ab")
    args = parser.parse_args()
    cgc = os.path.abspath(args.cgc)
    lines = [f"`bench/tune_ab.py --budgets {args.budgets} --rounds {args.rounds} "
             f"--runs {args.runs}`: untuned / tuned above 1 is the tuned model faster.", "",
             "| model | budget (s) | tune took (s) | profile | tune's final check | untuned ms | "
             "tuned ms | untuned / tuned (range) |",
             "|---|---:|---:|---|---|---:|---:|---|"]
    results = []
    for name in args.only.split(","):
        for budget in map(float, args.budgets.split(",")):
            print(f"tuning {name} --budget {budget:g} ...", flush=True)
            with tempfile.TemporaryDirectory() as out:
                r = tune_once(cgc, os.path.join(args.corpus, name), budget, args.rounds,
                              args.runs, out)
            r["model"] = name
            results.append(r)
            lines.append(f"| {name} | {budget:g} | {r['tune_s']} | {r['choices']} | "
                         f"{r['final_check']} | {r['untuned_ms']:.3f} | {r['tuned_ms']:.3f} | "
                         f"{r['ratio']:.3f} ({r['ratio_low']:.2f}-{r['ratio_high']:.2f}) |")
            print(lines[-1], flush=True)
    os.makedirs(os.path.join(BENCH_DIR, "results"), exist_ok=True)
    base = os.path.join(BENCH_DIR, "results", args.name)
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(base + ".json", "w") as f:
        json.dump(results, f, indent=1)
    print("\n".join(lines) + f"\nwrote {base}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
