"""Compares cgc and ONNX Runtime layer by layer on one corpus model: both
profile the same runs (cgc's --profile-out, ONNX Runtime's own profiler) and
each layer's median time is matched by the ONNX node it comes from. This is
the evidence behind the benchmark's ratios: which layers lose, by how much.

ONNX Runtime names a node after fusion by the last tensor it writes (a Conv
fused with its Clip is "<Clip output>_nchwc"; a QDQ group fused into a
QLinearConv is "<Conv name>_token_<n>"); cgc keeps the name of the
node that absorbed the others. Both are mapped back to the ONNX node that
heads the chain: from a tensor's producer, up through the single-input
activations and the residual Add that fusion folds into a convolution or
matrix product. ONNX Runtime's nodes with no cgc node of their own (its layout changes,
ReorderInput/ReorderOutput, or a max pool cgc fused into a convolution) are
listed by op.

Each product's GFLOP/s (its multiply-adds as written, bench.py's count) is
given for both, and cgc's as a share of the threads' FMA peak (bench.py
measures one core's); --kinds adds a table by kind of layer (op, kernel,
stride), the per-layer view of docs/PERFORMANCE.md.

Usage: /usr/bin/python3 bench/layers.py MODEL [--cgc CGC] [--runs 50]
           [--threads N] [--target T] [--top 25] [--kinds]
(MODEL is a corpus name, e.g. resnet50; bench/check.sh makes the corpus)
"""

import argparse
import collections
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import measure_peak, node_flops  # noqa: E402
from check import BENCH_DIR, ROOT, load_case  # noqa: E402

# Ops that fusion folds into the node producing their (first) input.
FOLDED = {"Relu", "Clip", "BatchNormalization", "Add", "Sum", "HardSigmoid",
          "Sigmoid", "LeakyRelu"}
HEADS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "FusedConv", "FusedGemm",
         "FusedMatMul"}


class Graph:
    """Which ONNX node writes each tensor, and the chain heads."""

    def __init__(self, path):
        model = onnx.load(path, load_external_data=False)
        self.nodes = {n.name: n for n in model.graph.node}
        self.producer = {}
        for node in model.graph.node:
            for out in node.output:
                self.producer[out] = node

    def head(self, node):
        """The convolution or product a chain of folded ops starts from."""
        seen = 0
        while node.op_type in FOLDED and seen < 4:
            parent = None
            for tensor in node.input:
                candidate = self.producer.get(tensor)
                if candidate is not None and (candidate.op_type in HEADS or
                                              candidate.op_type in FOLDED):
                    parent = candidate
                    break
            if parent is None:
                break
            node, seen = parent, seen + 1
        return node

    def key(self, ort_name):
        """ONNX Runtime's event name -> the ONNX node heading it, or None."""
        name = ort_name[:-len("_kernel_time")]
        # A QDQ group fused into QLinearConv is "<the Conv's name>_token_<n>".
        name = re.sub(r"_token_\d+$", "", name)
        for base in (name[:-len("_nchwc")] if name.endswith("_nchwc") else name, name):
            node = self.nodes.get(base)
            if node is None:
                node = self.producer.get(base)
            if node is not None:
                return self.head(node)
        return None


def ort_profile(model, data, runs, threads):
    with tempfile.TemporaryDirectory() as tmp:
        command = ["node", os.path.join(BENCH_DIR, "ort_run.js"), model, data,
                   os.path.join(tmp, "out"), "--runs", str(runs),
                   "--profile", os.path.join(tmp, "ort"), "--threads", str(threads)]
        subprocess.run(command, check=True, capture_output=True)
        with open(glob.glob(os.path.join(tmp, "ort_*.json"))[0]) as f:
            events = json.load(f)
    times = collections.defaultdict(list)
    ops, shapes = {}, {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        times[e["name"]].append(e["dur"])
        ops[e["name"]] = e["args"].get("op_name", "?")
        shapes[e["name"]] = e["args"].get("input_type_shape", [])
    return {name: (statistics.median(t), ops[name], shapes[name]) for name, t in times.items()}


def cgc_profile(cgc, model, data, bindings, runs, threads, target):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "profile.json")
        schedule = ["--threads", str(threads)] + (["--target", target] if target else [])
        subprocess.run([cgc, "run", model, "-q", "--inputs", data, "--bench", str(runs),
                        "--profile-out", path] + bindings + schedule,
                       check=True, capture_output=True)
        with open(path) as f:
            return json.load(f)["nodes"]


def shape_text(shapes):
    parts = []
    for s in shapes[:2]:
        for dims in s.values():
            parts.append("x".join(str(d) for d in dims))
    return " ".join(parts)


def kind(node):
    """A product's kind of layer: op, kernel and stride, depthwise/grouped."""
    if node is None or node.op_type not in ("Conv", "ConvTranspose"):
        return node.op_type if node is not None else "?"
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    text = node.op_type + " " + "x".join(str(k) for k in attrs.get("kernel_shape", []))
    strides = attrs.get("strides", [])
    if any(st > 1 for st in strides):
        text += " stride " + "x".join(str(st) for st in strides)
    if attrs.get("group", 1) > 1:
        text += " grouped"
    return text


def gflops(flops, us):
    return f"{flops / us / 1e3:.1f}" if flops and us else "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a corpus model, e.g. resnet50")
    parser.add_argument("--cgc", default=os.path.join(ROOT, "install", "bin", "cgc"))
    parser.add_argument("--corpus", default=os.path.join(BENCH_DIR, "corpus"))
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--target", default="", help="cgc's --target (default: native)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--kinds", action="store_true",
                        help="also a table by kind of layer (op, kernel, stride)")
    args = parser.parse_args()
    case, model, data, bindings = load_case(os.path.join(args.corpus, args.model))
    graph = Graph(model)
    flops = dict(node_flops(model, case.get("shapes", {})))
    # Both told the count: ONNX Runtime's own default can be fewer (bench.py).
    threads = args.threads or len(os.sched_getaffinity(0))
    peak = measure_peak()[0] * threads
    ort = ort_profile(model, data, args.runs, threads)
    cgc = cgc_profile(os.path.abspath(args.cgc), model, data, bindings, args.runs, threads,
                      args.target)

    rows = collections.OrderedDict()  # ONNX head node -> [op, cgc us, ort us, shapes]
    unmatched = collections.Counter()
    for node in cgc:
        onnx_node = graph.nodes.get(node["name"])
        name = graph.head(onnx_node).name if onnx_node is not None else node["name"]
        row = rows.setdefault(name, [node["op"], 0.0, 0.0, ""])
        row[1] += node["median_us"]
    for event, (us, op, shapes) in ort.items():
        head = graph.key(event)
        if head is None or head.name not in rows:
            unmatched[op] += us
            continue
        rows[head.name][2] += us
        rows[head.name][3] = rows[head.name][3] or shape_text(shapes)

    total_cgc = sum(r[1] for r in rows.values())
    total_ort = sum(r[2] for r in rows.values()) + sum(unmatched.values())
    print(f"{args.model}: node times summed, cgc {total_cgc / 1000:.3f} ms, "
          f"ONNX Runtime {total_ort / 1000:.3f} ms ({args.runs} profiled runs each); "
          f"FMA peak {peak:.0f} GFLOP/s on {threads} threads")
    by_op = collections.defaultdict(lambda: [0.0, 0.0])
    for op, c, o, _ in rows.values():
        by_op[op][0] += c
        by_op[op][1] += o
    print("\n| op | cgc (us) | ONNX Runtime (us) |\n|---|---:|---:|")
    for op, (c, o) in sorted(by_op.items(), key=lambda kv: -kv[1][0]):
        print(f"| {op} | {c:.0f} | {o:.0f} |")
    for op, us in sorted(unmatched.items(), key=lambda kv: -kv[1]):
        print(f"| {op} (no cgc node of its own: fused, or a layout change) | - | {us:.0f} |")
    if args.kinds:
        kinds = collections.OrderedDict()  # kind -> [layers, flops, cgc us, ort us]
        for name, (_, c, o, _) in rows.items():
            if flops.get(name):
                k = kinds.setdefault(kind(graph.nodes.get(name)), [0, 0, 0.0, 0.0])
                k[0], k[1], k[2], k[3] = k[0] + 1, k[1] + flops[name], k[2] + c, k[3] + o
        print("\n| layer kind | layers | GFLOP | cgc (us) | cgc GFLOP/s | cgc % of peak "
              "| ONNX Runtime (us) | ONNX Runtime GFLOP/s |\n|---|---:|---:|---:|---:|---:|---:|---:|")
        for k, (n, f, c, o) in sorted(kinds.items(), key=lambda kv: -kv[1][2]):
            print(f"| {k} | {n} | {f / 1e9:.2f} | {c:.0f} | {gflops(f, c)} | "
                  f"{100 * f / c / 1e3 / peak:.0f}% | {o:.0f} | {gflops(f, o)} |")
    print(f"\nThe {args.top} layers where cgc loses the most time:\n")
    print("| node | op | input shapes | cgc (us) | ONNX Runtime (us) | cgc - ORT (us) "
          "| cgc GFLOP/s | ONNX Runtime GFLOP/s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    ranked = sorted(rows.items(), key=lambda kv: kv[1][2] - kv[1][1])
    for name, (op, c, o, shapes) in ranked[:args.top]:
        f = flops.get(name, 0)
        print(f"| {name} | {op} | {shapes} | {c:.1f} | {o:.1f} | {c - o:+.1f} "
              f"| {gflops(f, c)} | {gflops(f, o)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
