"""Times cgc's inter-op parallelism on graphs with parallel branches (Graphi's
benchmark graphs, bench/graphi_models.py, and googlenet from bench/models.py)
against ONNX Runtime, side by side in one run.

For every model, four variants in alternated rounds (A B C D A B C D ...),
each round the median of --runs inferences after warm-up, and the median of
the rounds reported:
  - ONNX Runtime sequential: executionMode sequential, nproc intra-op threads;
  - ONNX Runtime parallel: executionMode parallel, nproc intra- and inter-op
    threads (ort_run.js --parallel);
  - cgc 1xN: one executor of nproc threads (--executors 1 --threads nproc);
  - cgc tuned: the configuration and profile from `cgc tune` (cached in
    bench/results/tuned/<model>.profile.json; --retune remakes it).
Before timing, cgc's outputs in both configurations are compared with ONNX
Runtime's (bench/check.py's comparison and tolerance). Writes
bench/results/parallel.{md,json}.

Usage: /usr/bin/python3 bench/parallel.py [--cgc CGC] [--models NAMES]
           [--rounds 5] [--runs 20] [--quick] [--tune-budget 120] [--retune]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import (ATOL, BENCH_DIR, ROOT, RTOL, cgc_outputs, compare,  # noqa: E402
                   load_case, ort_outputs, run)

MODELS = ["googlenet", "pathnet", "lstm_unrolled_h128_s20",
          "lstm_unrolled_h512_s30", "matmul512"]
RESULTS = os.path.join(BENCH_DIR, "results")


def ort_median(model, data, runs, threads, parallel):
    command = ["node", os.path.join(BENCH_DIR, "ort_run.js"), model, data,
               os.path.join(RESULTS, "parallel_ort"), "--runs", str(runs),
               "--threads", str(threads)] + (["--parallel"] if parallel else [])
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def bench_line(cgc, model, data, args, runs):
    out = subprocess.run([cgc, "run", model, "-q", "--inputs", data, "--bench",
                          str(runs)] + args, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def tuned_profile(cgc, name, model, data, bindings, budget, retune):
    directory = os.path.join(RESULTS, "tuned")
    profile = os.path.join(directory, f"{name}.profile.json")
    if retune or not os.path.exists(profile):
        print(f"{name}: cgc tune (budget {budget} s)", flush=True)
        seconds, out = run([cgc, "tune", model, "-q", "-o", directory, "--inputs", data,
                            "--budget", str(budget)] + bindings, "cgc tune")
        print("\n".join("  " + line for line in out.strip().splitlines()
                        if line.startswith("tune: ")), flush=True)
        print(f"{name}: tuned in {seconds:.0f} s", flush=True)
    return profile


def check_outputs(cgc, name, model, data, bindings, configs, rtol, atol):
    """Largest relative error of cgc against ONNX Runtime over the configs;
    raises if any is outside the tolerance."""
    work = os.path.join(RESULTS, "parallel_check", name)
    run(["node", os.path.join(BENCH_DIR, "ort_run.js"), model, data,
         os.path.join(work, "ort")], "ONNX Runtime")
    theirs = ort_outputs(os.path.join(work, "ort"))
    worst = 0.0
    for label, args in configs.items():
        out = os.path.join(work, label)
        run([cgc, "run", model, "-q", "--inputs", data, "--outputs", out] + bindings + args,
            f"cgc run ({label})")
        ok, _, rel, _, detail = compare(cgc_outputs(out, len(theirs)), theirs, rtol, atol)
        if not ok:
            raise RuntimeError(f"cgc {label} differs from ONNX Runtime: max rel error "
                               f"{rel:.2e} {detail}")
        worst = max(worst, rel)
    return worst


def bench_model(args, name, cpus):
    case_dir = os.path.join(args.corpus, name)
    case, model, data, bindings = load_case(case_dir)
    profile = tuned_profile(args.cgc, name, model, data, bindings, args.tune_budget,
                            args.retune)
    with open(profile) as f:
        tuned = json.load(f)
    # Explicit, although the profile carries them: the table reports what ran.
    configs = {"1xN": ["--executors", "1", "--threads", str(cpus)],
               "tuned": ["--profile", profile, "--executors", str(tuned["executors"]),
                         "--threads", str(tuned["threads"])]}
    max_rel = check_outputs(args.cgc, name, model, data, bindings, configs,
                            case.get("rtol", RTOL), case.get("atol", ATOL))
    print(f"{name}: outputs match ONNX Runtime (max rel error {max_rel:.1e})", flush=True)

    times = {"ort_seq": [], "ort_par": [], "cgc_1xN": [], "cgc_tuned": []}
    tuned_config = ""
    for r in range(args.rounds):
        times["cgc_1xN"].append(bench_line(args.cgc, model, data, bindings + configs["1xN"],
                                           args.runs)["median_ms"])
        line = bench_line(args.cgc, model, data, bindings + configs["tuned"], args.runs)
        times["cgc_tuned"].append(line["median_ms"])
        tuned_config = f"{line['executors']}x{line['threads']}"
        times["ort_seq"].append(ort_median(model, data, args.runs, cpus, False))
        times["ort_par"].append(ort_median(model, data, args.runs, cpus, True))
        print(f"{name}: round {r + 1}/{args.rounds}: " +
              ", ".join(f"{k} {v[-1]:.3f} ms" for k, v in times.items()), flush=True)
    row = {"model": name, "max_rel_err": max_rel, "tuned_config": tuned_config,
           "rounds": {k: v for k, v in times.items()}}
    for key, values in times.items():
        row[f"{key}_ms"] = statistics.median(values)
    row["speedup_vs_best_ort"] = min(row["ort_seq_ms"], row["ort_par_ms"]) / row["cgc_tuned_ms"]
    return row


def table(rows, cpus, rounds, runs):
    lines = [f"{cpus} cores; medians of alternated rounds (this run: {rounds} rounds of "
             f"{runs} runs; rows kept from earlier runs say theirs in parallel.json); "
             "speedup = best ONNX Runtime time / cgc tuned time.", "",
             "| model | ORT seq (ms) | ORT par (ms) | cgc 1xN (ms) | cgc tuned (ms) | "
             "tuned config (ExT) | tuned speedup vs best ORT | max rel error |",
             "|---|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | FAIL: {r['error']} | | | | | | |")
            continue
        lines.append(f"| {r['model']} | {r['ort_seq_ms']:.3f} | {r['ort_par_ms']:.3f} | "
                     f"{r['cgc_1xN_ms']:.3f} | {r['cgc_tuned_ms']:.3f} | {r['tuned_config']} | "
                     f"{r['speedup_vs_best_ort']:.2f}x | {r['max_rel_err']:.1e} |")
    return "\n".join(lines)


def merged(rows):
    """This run's rows plus the previous parallel.json's rows for models not
    run now (a full run takes long: one model can be redone alone)."""
    path = os.path.join(RESULTS, "parallel.json")
    previous = []
    if os.path.exists(path):
        with open(path) as f:
            previous = json.load(f).get("rows", [])
    now = {r["model"] for r in rows}
    kept = [r for r in previous if r["model"] not in now]
    order = {name: i for i, name in enumerate(MODELS)}
    return sorted(kept + rows, key=lambda r: order.get(r["model"], len(order)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgc", default=os.path.join(ROOT, "install", "bin", "cgc"))
    parser.add_argument("--corpus", default=os.path.join(BENCH_DIR, "corpus"))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, help="default 5 (--quick: 2)")
    parser.add_argument("--runs", type=int, help="default 20 (--quick: 5)")
    parser.add_argument("--tune-budget", type=float, help="seconds; default 120 (--quick: 30)")
    parser.add_argument("--retune", action="store_true",
                        help="run cgc tune even where a tuned profile exists")
    parser.add_argument("--quick", action="store_true",
                        help="2 rounds of 5 runs, 30 s tuning budget, unless given")
    args = parser.parse_args()
    for key, full, quick in (("rounds", 5, 2), ("runs", 20, 5), ("tune_budget", 120, 30)):
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    args.cgc = os.path.abspath(args.cgc)
    cpus = len(os.sched_getaffinity(0))
    os.makedirs(RESULTS, exist_ok=True)
    start = time.time()
    rows = []
    for name in [n for n in args.models.split(",") if n]:
        try:
            rows.append(bench_model(args, name, cpus))
            rows[-1]["measured"] = time.strftime("%Y-%m-%d %H:%M")
            rows[-1].update(rounds_count=args.rounds, runs=args.runs)
            r = rows[-1]
            print(f"{name}: ORT seq {r['ort_seq_ms']:.3f} ms, ORT par {r['ort_par_ms']:.3f} ms, "
                  f"cgc 1x{cpus} {r['cgc_1xN_ms']:.3f} ms, cgc tuned {r['cgc_tuned_ms']:.3f} ms "
                  f"({r['tuned_config']}): {r['speedup_vs_best_ort']:.2f}x", flush=True)
        except (RuntimeError, subprocess.CalledProcessError, FileNotFoundError) as error:
            detail = getattr(error, "stderr", None) or str(error)
            rows.append({"model": name, "error": detail.strip().splitlines()[-1]})
            print(f"{name}: FAIL {rows[-1]['error']}", flush=True)
    rows = merged(rows)
    text = table(rows, cpus, args.rounds, args.runs)
    print(text)
    with open(os.path.join(RESULTS, "parallel.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(RESULTS, "parallel.json"), "w") as f:
        json.dump({"cpus": cpus, "rounds": args.rounds, "runs": args.runs,
                   "seconds": time.time() - start, "rows": rows}, f, indent=1)
    return 1 if any("error" in r for r in rows if r["model"] in args.models.split(",")) else 0


if __name__ == "__main__":
    sys.exit(main())
