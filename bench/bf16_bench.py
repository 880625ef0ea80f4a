"""cgc --precision bf16 against cgc fp32, ONNX Runtime fp32 and (with
--torch) PyTorch fp32 and bf16 (oneDNN), and bf16's agreement with fp32.

Models (torchvision, random weights from a fixed seed, BatchNorm statistics
randomised as bench/models.py does; exported with a variable batch):
resnet50, mobilenet_v2, efficientnet_b0, vit_b_32 (the classifiers), and
speech_encoder, a wav2vec2-style encoder (seven strided Conv1d layers of 512
channels with GELU, then 4 transformer layers of width 512) on one second of
16 kHz audio.

Timing: batch 1, rounds alternated ONNX Runtime fp32, cgc fp32, cgc bf16
(then PyTorch fp32 and bf16 with --torch), each round the median of --runs
inferences after warm-up (cgc run --bench, ort_run.js --runs); the median
of the rounds and the spread (lowest and highest round) are reported.

Agreement: --inputs inputs (batches of --batch), torchvision-style
normalised images ((U[0,1) - ImageNet mean) / std, torch.manual_seed(1)) or
for the speech encoder Gaussian noise of 0.1 standard deviation; cgc fp32
and cgc bf16 each compute all of them (cgc run --outputs). Reported: the
top-1 agreement of the classifiers, and for the encoder the largest
|bf16 - fp32| over the largest |fp32| of each input, the worst input's.

Writes bench/results/bf16/<model>/ (model, inputs) and
bench/results/bf16.{md,json}.

Usage: /usr/bin/python3 bench/bf16_bench.py [--cgc CGC] [--only NAMES]
           [--rounds 5] [--runs 10] [--inputs 500] [--batch 50] [--threads N]
           [--torch]
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
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import BENCH_DIR, ROOT  # noqa: E402
import models  # noqa: E402
from bench import ort_median  # noqa: E402

CLASSIFIERS = ("resnet50", "mobilenet_v2", "efficientnet_b0", "vit_b_32")
MODELS = CLASSIFIERS + ("speech_encoder",)


def speech_encoder():
    """A wav2vec2-base-like encoder: its convolutional feature extractor and
    4 (of its 12) transformer layers, at width 512."""
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layers, channels = [], 1
            for kernel, stride in [(10, 5)] + [(3, 2)] * 4 + [(2, 2)] * 2:
                layers += [torch.nn.Conv1d(channels, 512, kernel, stride), torch.nn.GELU()]
                channels = 512
            self.features = torch.nn.Sequential(*layers)
            self.norm = torch.nn.LayerNorm(512)
            layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0,
                                                     activation="gelu", batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, 4)

        def forward(self, audio):
            x = self.features(audio.unsqueeze(1)).transpose(1, 2)
            return self.encoder(self.norm(x))

    return Encoder()


def make_model(name, path):
    """Exports `name` with a variable batch; returns the torch module and
    one input's shape."""
    import torch
    import torchvision

    torch.manual_seed(0)
    if name == "speech_encoder":
        model, shape = speech_encoder(), (16000,)
    else:
        model, shape = getattr(torchvision.models, name)(weights=None), (3, 224, 224)
        models.randomize_batch_norms(model)
    model.eval()
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # With gradients on: under no_grad, PyTorch's transformer layers
        # take a fused path that the exporter cannot write.
        torch.onnx.export(model, (torch.zeros((1,) + shape),), path, opset_version=models.OPSET,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          do_constant_folding=True)
    return model, shape


def make_inputs(name, shape, count):
    import torch

    torch.manual_seed(1)
    if name == "speech_encoder":
        return (torch.randn((count,) + shape) * 0.1).numpy()
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    return ((torch.rand((count,) + shape) - mean) / std).numpy()


def write_set(model_path, array, directory):
    models.write_inputs(model_path, {"input": array}, directory)
    return directory


def cgc_run(cgc, model, data, extra):
    out = subprocess.run([cgc, "run", model, "-q", "--inputs", data] + extra,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bf16_bench.py: cgc run {model} {' '.join(extra)} failed:\n{out.stderr}")
    return out.stdout


def cgc_median(cgc, model, data, runs, threads, precision):
    out = cgc_run(cgc, model, data, ["--bench", str(runs), "--threads", str(threads),
                                     "--precision", precision])
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def torch_median(model, x, runs, bf16):
    import torch

    x = torch.from_numpy(x)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        for _ in range(2):
            model(x)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def outputs(cgc, model, sets, precision, threads, work):
    result = []
    for i, data in enumerate(sets):
        out_dir = os.path.join(work, f"out_{precision}_{i}")
        cgc_run(cgc, model, data, ["--outputs", out_dir, "--precision", precision,
                                   "--threads", str(threads)])
        tensor = onnx.TensorProto()
        with open(os.path.join(out_dir, "output_0.pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        result.append(numpy_helper.to_array(tensor))
    return np.concatenate(result)


def agreement(name, fp32, bf16):
    if name in CLASSIFIERS:
        return {"top1_agreement": float(np.mean(fp32.argmax(1) == bf16.argmax(1)))}
    flat32, flat16 = fp32.reshape(len(fp32), -1), bf16.reshape(len(bf16), -1)
    rel = np.abs(flat16 - flat32).max(1) / np.abs(flat32).max(1)
    return {"max_rel_error": float(rel.max()), "median_rel_error": float(np.median(rel))}


def spread(times):
    return [statistics.median(times), min(times), max(times)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgc", default=os.path.join(ROOT, "build", "cgc"))
    parser.add_argument("--only", default="")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--inputs", type=int, default=500)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--threads", type=int, default=0, help="0: every core")
    parser.add_argument("--torch", action="store_true", help="also time PyTorch fp32 and bf16")
    args = parser.parse_args()
    args.cgc = os.path.abspath(args.cgc)
    threads = args.threads or len(os.sched_getaffinity(0))
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    rows = []
    for name in names:
        work = os.path.join(BENCH_DIR, "results", "bf16", name)
        path = os.path.join(work, "model.onnx")
        module, shape = make_model(name, path)
        one = make_inputs(name, shape, 1)
        timing = write_set(path, one, os.path.join(work, "timing"))
        all_inputs = make_inputs(name, shape, args.inputs)
        sets = [write_set(path, all_inputs[i:i + args.batch], os.path.join(work, f"set_{i}"))
                for i in range(0, args.inputs, args.batch)]
        times = {k: [] for k in ("ort", "fp32", "bf16", "torch_fp32", "torch_bf16")}
        for _ in range(args.rounds):
            times["ort"].append(ort_median(path, timing, args.runs, threads))
            times["fp32"].append(cgc_median(args.cgc, path, timing, args.runs, threads, "fp32"))
            times["bf16"].append(cgc_median(args.cgc, path, timing, args.runs, threads, "bf16"))
            if args.torch:
                import torch

                torch.set_num_threads(threads)
                times["torch_fp32"].append(torch_median(module, one, args.runs, False))
                times["torch_bf16"].append(torch_median(module, one, args.runs, True))
        row = {"model": name, "inputs": args.inputs, "threads": threads,
               **{k: spread(v) for k, v in times.items() if v}}
        row.update(agreement(name, outputs(args.cgc, path, sets, "fp32", threads, work),
                             outputs(args.cgc, path, sets, "bf16", threads, work)))
        rows.append(row)
        print(json.dumps(row), flush=True)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), "unknown CPU")
    lines = [f"{cpu}, {threads} threads; batch 1; medians of {args.rounds} alternated rounds "
             f"of {args.runs} runs (lowest-highest round); agreement over {args.inputs} inputs.",
             "", "| model | ONNX Runtime fp32 (ms) | cgc fp32 (ms) | cgc bf16 (ms) | bf16 speed-up "
             "over cgc fp32 | over ONNX Runtime |"
             + (" PyTorch fp32 (ms) | PyTorch bf16 (ms) |" if args.torch else "")
             + " bf16 vs fp32 |",
             "|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.torch else "") + "---|"]
    for r in rows:
        cell = lambda k: f"{r[k][0]:.2f} ({r[k][1]:.2f}-{r[k][2]:.2f})"
        agree = (f"top-1 {100 * r['top1_agreement']:.1f}%" if "top1_agreement" in r else
                 f"max rel. error {r['max_rel_error']:.2e}")
        lines.append(f"| {r['model']} | {cell('ort')} | {cell('fp32')} | {cell('bf16')} | "
                     f"{r['fp32'][0] / r['bf16'][0]:.2f}x | {r['ort'][0] / r['bf16'][0]:.2f}x |"
                     + (f" {cell('torch_fp32')} | {cell('torch_bf16')} |" if args.torch else "")
                     + f" {agree} |")
    text = "\n".join(lines)
    print(text)
    results = os.path.join(BENCH_DIR, "results")
    with open(os.path.join(results, "bf16.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(results, "bf16.json"), "w") as f:
        json.dump({"cpu": cpu, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
