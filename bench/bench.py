"""Times cgc against ONNX Runtime on the corpus (bench/models.py), side by
side in one run: for every model, rounds of ONNX Runtime then cgc (A B A B),
each round the median of --runs inferences after warm-up, and the median of
the rounds reported. Measures the machine's FMA and int8 (VNNI) peaks itself
(bench/peak.cpp) and prints a table (model, ONNX Runtime ms, cgc ms, speed
ratio, the lowest and highest ratio of a single round, cgc GFLOP/s, the %
of the peak of the cores used that cgc and ONNX Runtime each reach, and the
ratio cgc would have at 100% of it: the round ratios show how much the
machine moved, the last column how far a row's ratio can go without doing
fewer multiply-adds; the FLOPs are those of the products as the model
writes them, so Winograd convolutions, which do fewer, can pass 100%; a
quantised model's are held against the int8 peak); writes it as
bench/results/bench.{md,json} and draws the speed ratios as
bench/results/bench.svg.

With --target T (default x86-64-v3; "" for none), every round also times
cgc's code compiled for target T (cgc run --target T) right after the
native one, and the table gains its time, its speed ratio against ONNX
Runtime and its time over native's: how much a portable build of the model
gives up on this machine.

A quantised case (case.json "quantized": bench/quantized_models.py) is also
timed as its float twin in every round (cgc on the same network with the
quantisation taken out, quantized_models.float_twin, written next to the
model as model_float.onnx): the table's "cgc float" column and int8's
speed-up over it.

ONNX Runtime runs sequentially (executionMode sequential) with --threads
intra-op threads and cgc with one executor of --threads threads (default:
every core the process may use, passed to both: ONNX Runtime's own default
can be fewer).

Usage: /usr/bin/python3 bench/bench.py [--cgc CGC] [--only NAMES]
           [--rounds 5] [--runs 20] [--threads N] [--target T] [--name bench]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import BENCH_DIR, ROOT, load_case  # noqa: E402
import models  # noqa: E402
import quantized_models  # noqa: E402


def measure_peak():
    """One core's FMA peak (GFLOP/s) and int8 multiply-add peak (GOP/s, 0
    without AVX-512 VNNI)."""
    binary = os.path.join(BENCH_DIR, "results", "peak")
    subprocess.run(["g++", "-O2", "-march=native", "-I",
                    os.path.join(ROOT, "build", "runtime", "generated"), "-o", binary,
                    os.path.join(BENCH_DIR, "peak.cpp")], check=True)
    out = subprocess.run([binary], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def node_flops(path, shapes):
    """Multiply-add FLOPs of each Conv, ConvTranspose, Gemm, MatMul and
    recurrent node, as (name, FLOPs) in graph order, from ONNX shape
    inference with the case's bindings. An If counts its then-branch, under
    the If's name."""
    model = onnx.load(path)
    for value in model.graph.input:
        if value.name in shapes:
            dims = value.type.tensor_type.shape.dim
            for dim, size in zip(dims, shapes[value.name]):
                dim.Clear()
                dim.dim_value = size
    model = onnx.shape_inference.infer_shapes(model)
    known = {}

    def collect(graph):
        for v in list(graph.value_info) + list(graph.input) + list(graph.output):
            dims = [d.dim_value if d.HasField("dim_value") else 0
                    for d in v.type.tensor_type.shape.dim]
            known[v.name] = dims
        for init in graph.initializer:
            known[init.name] = list(init.dims)

    def product(values):
        result = 1
        for v in values:
            result *= v
        return result

    def flops(node):
        attrs = {a.name: a for a in node.attribute}
        shape = lambda i: known.get(node.input[i], []) if i < len(node.input) else []
        out = known.get(node.output[0], [])
        if node.op_type == "If":
            return sum(f for _, f in count(attrs["then_branch"].g))
        if node.op_type == "Conv" and out and shape(1):
            return 2 * product(out) * product(shape(1)[1:])
        if node.op_type == "ConvTranspose" and shape(0) and shape(1):
            return 2 * product(shape(0)) * product(shape(1)[1:])
        if node.op_type in ("Gemm", "MatMul") and out and shape(0):
            return 2 * product(out) * shape(0)[-1]
        if node.op_type in ("LSTM", "GRU", "RNN") and shape(0) and shape(1) and shape(2):
            seq, batch = shape(0)[0], shape(0)[1]
            w, r = shape(1), shape(2)
            return 2 * seq * batch * w[0] * w[1] * (w[2] + r[2])
        return 0

    def count(graph):
        collect(graph)
        return [(node.name, flops(node)) for node in graph.node]

    return [(name, f) for name, f in count(model.graph) if f]


def model_flops(path, shapes):
    """The model's multiply-add FLOPs (node_flops summed)."""
    return sum(f for _, f in node_flops(path, shapes))


def ort_median(model, data, runs, threads):
    command = ["node", os.path.join(BENCH_DIR, "ort_run.js"), model, data,
               os.path.join(BENCH_DIR, "results", "bench_ort"), "--runs", str(runs),
               "--threads", str(threads)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def cgc_median(cgc, model, data, bindings, runs, threads, target=""):
    schedule = ["--threads", str(threads)] + (["--target", target] if target else [])
    out = subprocess.run([cgc, "run", model, "-q", "--inputs", data, "--bench",
                          str(runs)] + bindings + schedule, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def bar_chart(rows, path):
    """Speed ratios (ONNX Runtime time / cgc time) as horizontal bars, with
    the parity line at 1."""
    width, left, bar, gap = 640, 170, 18, 8
    top = 40
    height = top + len(rows) * (bar + gap) + 30
    largest = max([2.0] + [r["ratio"] for r in rows])
    scale = (width - left - 60) / largest
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="20" font-size="14">Speed vs ONNX Runtime (higher is faster; 1 = parity)</text>']
    for i, r in enumerate(rows):
        y = top + i * (bar + gap)
        color = "#2a9d55" if r["ratio"] >= 1 else "#d0483b"
        parts.append(f'<text x="{left - 8}" y="{y + 13}" text-anchor="end">{r["model"]}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{r["ratio"] * scale:.1f}" height="{bar}" fill="{color}"/>')
        parts.append(f'<text x="{left + r["ratio"] * scale + 4:.1f}" y="{y + 13}">{r["ratio"]:.2f}x</text>')
    x1 = left + scale
    parts.append(f'<line x1="{x1:.1f}" y1="{top - 6}" x2="{x1:.1f}" y2="{height - 24}" '
                 f'stroke="black" stroke-dasharray="4 3"/>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgc", default=os.path.join(ROOT, "install", "bin", "cgc"))
    parser.add_argument("--corpus", default=os.path.join(BENCH_DIR, "corpus"))
    parser.add_argument("--only", default="")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0,
                        help="threads for both (0: every core)")
    parser.add_argument("--name", default="bench",
                        help="results file names: bench/results/NAME.{md,json,svg}")
    parser.add_argument("--target", default="x86-64-v3",
                        help="also time cgc --target TARGET in every round (\"\": none)")
    args = parser.parse_args()
    args.cgc = os.path.abspath(args.cgc)
    results = os.path.join(BENCH_DIR, "results")
    os.makedirs(results, exist_ok=True)
    float_peak, int8_peak = measure_peak()
    print(f"measured peaks: FMA {float_peak:.1f} GFLOP/s, int8 {int8_peak:.1f} GOP/s per core",
          flush=True)
    names = [n for n in args.only.split(",") if n] or sorted(
        n for n in models.corpus() if os.path.isdir(os.path.join(args.corpus, n)))
    # Both run on every core the process may use unless --threads says
    # otherwise, each told the count: ONNX Runtime's own default is its count
    # of physical cores, which on a 2-vCPU VM was one (its rows then ran
    # single-threaded against cgc on two).
    cores = args.threads or len(os.sched_getaffinity(0))
    rows = []
    for name in names:
        case_dir = os.path.join(args.corpus, name)
        case, model, data, bindings = load_case(case_dir)
        ort_times, cgc_times, target_times, float_times = [], [], [], []
        twin = None
        if "quantized" in case:
            twin = os.path.join(case_dir, "model_float.onnx")
            if not os.path.exists(twin):
                quantized_models.float_twin(model, twin)
        for _ in range(args.rounds):
            ort_times.append(ort_median(model, data, args.runs, cores))
            cgc_times.append(cgc_median(args.cgc, model, data, bindings, args.runs, cores))
            if args.target:
                target_times.append(cgc_median(args.cgc, model, data, bindings, args.runs,
                                               cores, args.target))
            if twin:
                float_times.append(cgc_median(args.cgc, twin, data, bindings, args.runs, cores))
        ort_ms, cgc_ms = statistics.median(ort_times), statistics.median(cgc_times)
        flops = model_flops(model, case.get("shapes", {}))
        gflops = flops / (cgc_ms * 1e6)
        # A quantised model's products run as int8 on both sides.
        peak = (int8_peak or float_peak) if twin else float_peak
        at_peak_ms = flops / (peak * cores * 1e6)
        round_ratios = [o / c for o, c in zip(ort_times, cgc_times)]
        row = {"model": name, "ort_ms": ort_ms, "cgc_ms": cgc_ms,
               "ratio": ort_ms / cgc_ms, "round_ratios": [min(round_ratios), max(round_ratios)],
               "cgc_gflops": gflops,
               "peak_percent": 100 * at_peak_ms / cgc_ms,
               "ort_peak_percent": 100 * at_peak_ms / ort_ms,
               "ratio_at_peak": ort_ms / at_peak_ms if flops else 0, "gflop": flops / 1e9}
        if args.target:
            target_ms = statistics.median(target_times)
            row.update({"target": args.target, "target_ms": target_ms,
                        "target_ratio": ort_ms / target_ms, "target_over_native": target_ms / cgc_ms})
        if twin:
            float_ms = statistics.median(float_times)
            float_ratios = [f / c for f, c in zip(float_times, cgc_times)]
            row.update({"cgc_float_ms": float_ms, "int8_over_float": float_ms / cgc_ms,
                        "int8_over_float_rounds": [min(float_ratios), max(float_ratios)]})
        rows.append(row)
        print(f"{name}: ONNX Runtime {ort_ms:.3f} ms, cgc {cgc_ms:.3f} ms, "
              f"{row['ratio']:.2f}x" + (f", cgc float twin {row['cgc_float_ms']:.3f} ms"
                                        if twin else ""), flush=True)
    lines = [f"Peaks measured: FMA {float_peak:.1f} GFLOP/s, int8 multiply-add "
             f"{int8_peak:.1f} GOP/s per core, {cores} cores; medians "
             f"of {args.rounds} alternated rounds of {args.runs} runs. GFLOP/s count the "
             "multiply-adds of the model's products as written; Winograd convolutions do "
             "fewer, so a CNN can pass 100% of the peak. \"% of peak\" is the share of "
             "the peak (int8 for the quantised rows) that each side reaches; \"ratio at "
             "peak\" is the speed ratio cgc would have at 100%: ONNX Runtime's time "
             "over the products' time at the peak.", "",
             "| model | ONNX Runtime (ms) | cgc (ms) | speed ratio | single rounds | cgc GFLOP/s"
             " | cgc % of peak | ONNX Runtime % of peak | ratio at peak |"
             + (f" cgc {args.target} (ms) | {args.target} speed ratio | {args.target} / native time |"
                if args.target else ""),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
             + ("---:|---:|---:|" if args.target else "")]
    quantized = any("cgc_float_ms" in r for r in rows)
    if quantized:
        lines[2] += " cgc float twin (ms) | int8 speed-up over float (single rounds) |"
        lines[3] += "---:|---:|"
    for r in rows:
        lines.append(f"| {r['model']} | {r['ort_ms']:.3f} | {r['cgc_ms']:.3f} | "
                     f"{r['ratio']:.2f}x | {r['round_ratios'][0]:.2f}-{r['round_ratios'][1]:.2f}x | "
                     f"{r['cgc_gflops']:.1f} | {r['peak_percent']:.0f}% | "
                     f"{r['ort_peak_percent']:.0f}% | "
                     + (f"{r['ratio_at_peak']:.2f}x |" if r["gflop"] else "- |")
                     + (f" {r['target_ms']:.3f} | {r['target_ratio']:.2f}x | "
                        f"{r['target_over_native']:.2f} |" if args.target else "")
                     + ((f" {r['cgc_float_ms']:.3f} | {r['int8_over_float']:.2f}x "
                         f"({r['int8_over_float_rounds'][0]:.2f}-"
                         f"{r['int8_over_float_rounds'][1]:.2f}x) |" if "cgc_float_ms" in r
                         else " - | - |") if quantized else ""))
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(results, args.name + ".md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(results, args.name + ".json"), "w") as f:
        json.dump({"peak_gflops_per_core": float_peak, "int8_peak_gops_per_core": int8_peak,
                   "cores": cores, "rounds": args.rounds,
                   "runs": args.runs, "rows": rows}, f, indent=1)
    bar_chart(rows, os.path.join(results, args.name + ".svg"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
