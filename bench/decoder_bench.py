"""A GPT-2-small-shaped decoder step (12 layers, 12 heads of 64, 1024
positions, a vocabulary of 50257; random weights, seeded), exported by
PyTorch with a symbolic cache length `past` and saved with ONNX external
data, compiled once with --dim past=0..1023, against ONNX Runtime 1.x (npm
onnxruntime-node) in one run:

  1. outputs (logits and every present_*) at past = 0, 1, 37, 128, 512,
     1023: the largest absolute difference from ONNX Runtime's;
  2. step latency at past = 1, 128, 512, 1023: rounds alternate ONNX
     Runtime and each cgc build (--runs steps each, after warm-up), the
     medians of the rounds and the ratios' range over the rounds, beside the
     bytes a step reads (the weights, every key and value of the cache)
     over the machine's read bandwidth given as --bandwidth: GB/s (which
     `bench/micro/run.sh bandwidth` measures), or a profile `cgc tune`
     wrote (its cpu.read_gbps on the most threads);
  3. greedy generation: --tokens tokens after each of --prompts prompts,
     cgc (Python API, the cache fed back) against ONNX Runtime
     (bench/ort_generate.js): tokens that agree, and tokens per second;
  4. the peak resident memory of `cgc compile` for the model.

The cgc builds: fp32, and where this cgc has them, --precision bf16 and
--quantize int8 --weights-only, each also with --cache-in-place as
"<variant>+inplace" and without the fused attention as "<variant>+unfused"
(--disable-pass fuse-attention; "fp32+inplace+unfused"), --variants picks.

Usage: /usr/bin/python3 bench/decoder_bench.py [--cgc CGC] [--rounds 5]
           [--runs 20] [--layers 12] [--tokens 200] [--prompts 5]
           [--variants fp32,fp32+inplace,bf16,int8w] [--threads N]
           [--skip-generation]
Writes bench/results/decoder.{md,json}.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import torch
from onnx import numpy_helper

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(ROOT, "samples", "generate"))
from make_decoder import Decoder  # noqa: E402
WORK = os.path.join(BENCH, "results", "decoder")
HEADS, HEAD, POSITIONS, VOCAB = 12, 64, 1024, 50257
PASTS_CHECKED = [0, 1, 37, 128, 512, 1023]
PASTS_TIMED = [1, 128, 512, 1023]
VARIANTS = {"fp32": [], "bf16": ["--precision", "bf16"],
            "int8w": ["--quantize", "int8", "--weights-only"]}
PYTHON_VARIANTS = {"fp32": {}, "bf16": {"precision": "bf16"},
                   "int8w": {"quantize": "int8", "weights_only": True}}
# "<variant>+inplace": the same build with --cache-in-place (the caches
# stay in the model's buffers between steps).
for _v in list(VARIANTS):
    VARIANTS[_v + "+inplace"] = VARIANTS[_v] + ["--cache-in-place"]
    PYTHON_VARIANTS[_v + "+inplace"] = {**PYTHON_VARIANTS[_v], "cache_in_place": True}
# "<variant>+unfused": the same build with attention left unfused (what cgc
# compiled before fuse-attention), timed beside it in the same rounds; not
# in the generation (the Python API has no --disable-pass).
for _v in list(VARIANTS):
    VARIANTS[_v + "+unfused"] = VARIANTS[_v] + ["--disable-pass", "fuse-attention"]


def export(layers):
    """The decoder step with external data (one file); its path."""
    folder = os.path.join(WORK, f"gpt2_{layers}l")
    path = os.path.join(folder, "decoder.onnx")
    if os.path.exists(path):
        return path
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(0)
    dec = Decoder(layers, HEADS, HEAD, POSITIONS, VOCAB).eval()
    caches = [f"past_{kv}{i}" for i in range(layers) for kv in "kv"]
    presents = ["logits"] + [c.replace("past", "present") for c in caches]
    dyn = {c: {2: "past"} for c in caches}
    dyn.update({c: {2: "past_plus_1"} for c in presents[1:]})
    inline = os.path.join(folder, "inline.onnx")
    with torch.no_grad():
        torch.onnx.export(dec, (torch.tensor([[3]]), *[torch.zeros(1, HEADS, 5, HEAD)] * len(caches)),
                          inline, input_names=["ids"] + caches, output_names=presents,
                          dynamic_axes=dyn, opset_version=17)
    model = onnx.load(inline)
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="decoder.data", size_threshold=1024)
    os.remove(inline)
    return path


def write_case(past, layers, seed):
    """A test-data directory (cgc) that is also an ONNX Runtime case."""
    rng = np.random.default_rng(seed)
    d = os.path.join(WORK, f"case_{layers}l_{past}")
    os.makedirs(d, exist_ok=True)
    arrays = [("ids", rng.integers(0, VOCAB, (1, 1), dtype=np.int64))]
    for i in range(layers):
        for kv in "kv":
            arrays.append((f"past_{kv}{i}",
                           rng.standard_normal((1, HEADS, past, HEAD)).astype(np.float32)))
    listed = []
    for i, (name, a) in enumerate(arrays):
        with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())
        a.tofile(os.path.join(d, f"input_{i}.bin"))
        listed.append({"name": name, "dtype": str(a.dtype), "dims": list(a.shape),
                       "file": f"input_{i}.bin"})
    with open(os.path.join(d, "inputs.json"), "w") as f:
        json.dump(listed, f)
    return d


def run(command):
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def largest_difference(cgc, model, data, flags, threads):
    ort_out, cgc_out = os.path.join(WORK, "ort_out"), os.path.join(WORK, "cgc_out")
    run(["node", os.path.join(BENCH, "ort_run.js"), model, data, ort_out, "--threads",
         str(threads)])
    run([cgc, "run", model, "-q", "--inputs", data, "--outputs", cgc_out, "--threads",
         str(threads)] + flags)
    worst = 0.0
    with open(os.path.join(ort_out, "outputs.json")) as f:
        for i, out in enumerate(json.load(f)):
            expected = np.fromfile(os.path.join(ort_out, out["file"]), out["dtype"])
            with open(os.path.join(cgc_out, f"output_{i}.pb"), "rb") as g:
                actual = numpy_helper.to_array(onnx.load_tensor_from_string(g.read()))
            if list(actual.shape) != out["dims"]:
                raise SystemExit(f"output {i} is {actual.shape}, ONNX Runtime's {out['dims']}")
            if expected.size:
                worst = max(worst, float(np.abs(actual.ravel() - expected).max()))
    return worst


def ort_ms(model, data, runs, threads):
    out = run(["node", os.path.join(BENCH, "ort_run.js"), model, data,
               os.path.join(WORK, "ort_out"), "--runs", str(runs), "--threads", str(threads)])
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def cgc_ms(cgc, model, data, flags, runs, threads):
    out = run([cgc, "run", model, "-q", "--inputs", data, "--bench", str(runs), "--threads",
               str(threads)] + flags)
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def spread(ratios):
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def compile_peak(cgc, model, flags):
    """Peak resident MB of `cgc compile`, from a fresh process."""
    probe = ("import resource, subprocess, sys; "
             "subprocess.run(sys.argv[1:], check=True, capture_output=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = run([sys.executable, "-c", probe, cgc, "compile", model, "-q", "-o",
               os.path.join(WORK, "compiled"), "--weights", "file", "--dim",
               f"past=0..{POSITIONS - 1}"] + flags)
    return int(out) / 1024


def generate_cgc(cgc_binary, model, kwargs, prompts, tokens, layers, threads):
    # The Python package beside the cgc binary (build/python).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(cgc_binary)), "python"))
    import cgc  # noqa: E402
    m = cgc.compile(model, dims={"past": (0, POSITIONS - 1)}, threads=threads, **kwargs)
    results, seconds, steps = [], 0.0, 0
    for prompt in prompts:
        past = [np.zeros((1, HEADS, 0, HEAD), np.float32) for _ in range(2 * layers)]
        out, next_id = [], prompt[0]
        for step in range(len(prompt) - 1 + tokens):
            start = time.perf_counter()
            ids = np.array([[next_id]], np.int64)
            if kwargs.get("cache_in_place"):  # the caches stay where the last step left them
                m.set_dim("past", step)
                logits = m.run({"ids": ids}, copy=False)["logits"]
            else:
                logits, *past = m(ids, *past)
            seconds += time.perf_counter() - start
            steps += 1
            if step + 1 < len(prompt):
                next_id = prompt[step + 1]
            else:
                next_id = int(np.argmax(logits.ravel()))
                out.append(next_id)
        results.append(out)
    return results, steps / seconds


def generate_ort(model, prompts, tokens, threads):
    results, ms = [], []
    for prompt in prompts:
        out = json.loads(run(["node", os.path.join(BENCH, "ort_generate.js"), model,
                              ",".join(map(str, prompt)), str(tokens), str(HEADS), str(HEAD),
                              "--threads", str(threads)]).strip().splitlines()[-1])
        results.append(out["tokens"])
        ms += out["step_ms"]
    return results, 1000.0 * len(ms) / sum(ms)


def available(cgc, variants):
    text = run([cgc, "compile", "--help"])
    have = {"fp32": True, "bf16": "--precision" in text, "int8w": "--weights-only" in text}
    return [v for v in variants
            if have[v.split("+")[0]] and ("+inplace" not in v or "--cache-in-place" in text)
            and ("+unfused" not in v or "fuse-attention" in text)]


def read_bandwidth(text):
    """--bandwidth: a number of GB/s, or a cgc tune profile's measurement on
    the most threads it probed."""
    if not text.endswith(".json"):
        return float(text)
    gbps = json.load(open(text))["cpu"]["read_gbps"]
    return gbps[max(gbps, key=int)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgc", default=os.path.join(ROOT, "build", "cgc"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--prompts", type=int, default=5)
    parser.add_argument("--variants", default="fp32,bf16,int8w")
    parser.add_argument("--threads", type=int, default=0, help="0: every core")
    parser.add_argument("--bandwidth", type=read_bandwidth, default=0.0,
                        help="GB/s, or a cgc tune profile that measured it")
    parser.add_argument("--skip-generation", action="store_true")
    args = parser.parse_args()
    threads = args.threads or len(os.sched_getaffinity(0))
    # Each build embeds the 656 MB of weights: several variants overflow the
    # build cache's default 2 GiB, and every `cgc run` would rebuild.
    os.environ.setdefault("CGC_CACHE_MAX_SIZE", "8G")
    os.makedirs(WORK, exist_ok=True)
    model = export(args.layers)
    weights = os.path.getsize(os.path.join(os.path.dirname(model), "decoder.data"))
    variants = available(args.cgc, args.variants.split(","))
    dim = ["--dim", f"past=0..{POSITIONS - 1}"]
    report = {"threads": threads, "rounds": args.rounds, "runs": args.runs,
              "layers": args.layers, "weight_bytes": weights, "variants": variants}
    lines = [f"GPT-2-small-shaped decoder step, {args.layers} layers, {weights / 1e6:.0f} MB "
             f"of fp32 weights (external data), {threads} threads", ""]
    report["compile_peak_mb"] = {v: compile_peak(args.cgc, model, VARIANTS[v]) for v in variants}
    lines.append("Peak resident memory of cgc compile: " + ", ".join(
        f"{v} {mb:.0f} MB" for v, mb in report["compile_peak_mb"].items()))
    lines += ["", "| past | " + " | ".join(f"max abs diff {v} vs ORT" for v in variants) + " |",
              "|---:|" + "---:|" * len(variants)]
    report["diff"] = {}
    for past in PASTS_CHECKED:
        data = write_case(past, args.layers, past)
        diffs = [largest_difference(args.cgc, model, data, dim + VARIANTS[v], threads)
                 for v in variants]
        report["diff"][past] = dict(zip(variants, diffs))
        lines.append(f"| {past} | " + " | ".join(f"{d:.2g}" for d in diffs) + " |")
        print(lines[-1], flush=True)
    lines += ["", "| past | ORT ms | " + " | ".join(f"cgc {v} ms | ORT / cgc {v}" for v in variants)
              + " | (weights + K, V) / bandwidth ms |",
              "|---:|---:|" + "---:|---|" * len(variants) + "---:|"]
    report["timing"] = {}
    for past in PASTS_TIMED:
        data = write_case(past, args.layers, past)
        t = {"ort": [], **{v: [] for v in variants}}
        for _ in range(args.rounds):
            t["ort"].append(ort_ms(model, data, args.runs, threads))
            for v in variants:
                t[v].append(cgc_ms(args.cgc, model, data, dim + VARIANTS[v], args.runs, threads))
        ratios = {v: [o / c for o, c in zip(t["ort"], t[v])] for v in variants}
        # A step reads every weight and every key and value of the cache once.
        cache = 2 * args.layers * HEADS * (past + 1) * HEAD * 4
        wall = f"{(weights + cache) / args.bandwidth / 1e6:.2f}" if args.bandwidth else "-"
        report["timing"][past] = {"ms": t, "ort_over_cgc": ratios}
        lines.append(f"| {past} | {statistics.median(t['ort']):.2f} | " + " | ".join(
            f"{statistics.median(t[v]):.2f} | {spread(ratios[v])}" for v in variants)
            + f" | {wall} |")
        print(lines[-1], flush=True)
    if not args.skip_generation:
        rng = np.random.default_rng(7)
        prompts = [list(rng.integers(0, VOCAB, 4)) for _ in range(args.prompts)]
        prompts = [[int(x) for x in p] for p in prompts]
        ort_tokens, ort_rate = generate_ort(model, prompts, args.tokens, threads)
        lines += ["", f"Greedy generation, {args.prompts} prompts x {args.tokens} tokens: "
                  f"ONNX Runtime {ort_rate:.1f} steps/s"]
        report["generation"] = {"ort_steps_per_s": ort_rate}
        reference = None
        for v in [v for v in variants if v in PYTHON_VARIANTS]:
            tokens, rate = generate_cgc(args.cgc, model, PYTHON_VARIANTS[v], prompts,
                                        args.tokens, args.layers, threads)
            reference = reference or tokens
            same_ort = np.mean([a == b for p, q in zip(tokens, ort_tokens) for a, b in zip(p, q)])
            same_fp32 = np.mean([a == b for p, q in zip(tokens, reference) for a, b in zip(p, q)])
            report["generation"][v] = {"steps_per_s": rate, "agree_ort": same_ort,
                                       "agree_cgc_fp32": same_fp32}
            lines.append(f"- cgc {v}: {rate:.1f} steps/s (Python API); tokens agreeing with ONNX "
                         f"Runtime {100 * same_ort:.1f}%, with cgc fp32 {100 * same_fp32:.1f}%")
            print(lines[-1], flush=True)
    with open(os.path.join(BENCH, "results", "decoder.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(BENCH, "results", "decoder.json"), "w") as f:
        json.dump(report, f, indent=1, default=float)
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
