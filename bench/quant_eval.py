"""Compares cgc's own int8 quantisation (issue 36) with the float model and
with PyTorch's int8, in agreement and in speed.

For one model (resnet50 or mobilenet_v2: the corpus' random-weight
torchvision models; resnet50_bnfit, mobilenet_v2_bnfit: the same weights
with BatchNorm statistics from the calibration images, whose logits depend
on the input, unlike the corpus ones: see bench/ptq_torch.py; ocr_rec:
PaddleOCR v4's text recogniser) and one calibration method:

  1. `cgc calibrate` on the calibration sets of bench/quant_data.py
     (cached: <data>/calib/<model>.calib.json, made again when missing or
     older than the model or a calibration set);
  2. compiles the float model and the int8 one with the cgc Python API
     (cgc.compile(..., quantize="int8", calibration=FILE, method=M); see
     compile_int8());
  3. runs every evaluation set through cgc float, cgc int8, ONNX Runtime
     float (bench/ort_eval.js, one session) and, for the torchvision
     models, ONNX Runtime on PyTorch's int8 QDQ model of the same network
     (bench/ptq_torch.py);
  4. agreement: for the image models the top-1 class of each against cgc
     float and ONNX Runtime float (and whether the float top-1 is in the
     top 5, and the logits' relative L2 error); for ocr_rec PaddleOCR's CTC
     greedy decoding (argmax per time step, repeats merged, blank 0 dropped,
     class i > 0 is line i - 1 of ppocr_keys_v1.txt, the last class a
     space) and character agreement 1 - sum(edit distance(x, float)) /
     sum(len(float)) over the lines, exact lines, and the same against the
     ground truth (leading and trailing spaces ignored there);
  5. speed: rounds that alternate cgc float, cgc int8, ORT float (and ORT
     torch-int8), each round `--runs` timed runs of one input after a
     warm-up, --threads threads everywhere; the median of each round, the
     median over rounds, and ratios with their min-max over rounds (to cgc
     float, and cgc int8's speed-up over each ONNX Runtime engine);
  6. writes bench/results/quant_<model>_<method>.md (the CPU and the
     command included) and prints it; cgc's own quantisation report
     (compile(..., report=)) goes beside it as .cgc.json.

Until cgc has the quantize options, --int8-as-float compiles the float model
in the int8 model's place to test everything else (the report then says so
and is written as quant_<model>_<method>_float-stand-in.md).

Usage (from the repository root; the cgc Python package and binary from a
build tree):
  PYTHONPATH=build/python /usr/bin/python3 bench/quant_eval.py \\
      --model resnet50|mobilenet_v2|ocr_rec|resnet50_bnfit|mobilenet_v2_bnfit \\
      [--method percentile|minmax|entropy] [--percentile 99.99] \\
      [--activations u8|s8] [--limit N] [--rounds 5 --runs 20] [--threads 2] \\
      [--max-error E [--check-sets 10] [--precision auto]] \\
      [--corpus bench/corpus] [--data bench/quant_data] [--cgc build/cgc] \\
      [--int8-as-float]
Data first: bench/quant_data.py, and bench/ptq_torch.py [--bnfit] for the
torch-int8 column (and the _bnfit models). --max-error compiles cgc int8
with its accuracy budget, the last --check-sets evaluation sets as its check
inputs (left out of the evaluation). ocr_rec at another input width
(at 320 most 10-40 character lines are squeezed, which costs the float model
itself a quarter of its lines): bench/quant_data.py --out bench/quant_data/w640
--only ocr --ocr-width 640, then --data bench/quant_data/w640 (the report is
then quant_ocr_rec_w640_<method>.md).
"""

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
OCR_ASSETS = os.path.join(BENCH_DIR, "node_modules", "@gutenye", "ocr-models", "assets")
METHODS = ("minmax", "percentile", "entropy")
MODELS = ("resnet50", "mobilenet_v2", "ocr_rec", "resnet50_bnfit", "mobilenet_v2_bnfit")


# ------------------------------------------------------------ the models

def model_spec(name, corpus, data):
    """Where the model, its data and its PyTorch int8 twin are."""
    if name in ("resnet50", "mobilenet_v2"):
        return {"name": name, "kind": "image", "float": os.path.join(corpus, name, "model.onnx"),
                "data": os.path.join(data, "images"), "shapes": None,
                "torch_int8": os.path.join(data, "torch_int8", f"{name}.onnx")}
    if name in ("resnet50_bnfit", "mobilenet_v2_bnfit"):
        return {"name": name, "kind": "image", "float": os.path.join(data, "float", f"{name}.onnx"),
                "data": os.path.join(data, "images"), "shapes": None,
                "torch_int8": os.path.join(data, "torch_int8", f"{name}.onnx")}
    if name == "ocr_rec":
        with open(os.path.join(data, "ocr", "labels.json")) as f:
            labels = json.load(f)
        width = labels["shape"][-1]
        return {"name": name, "kind": "ocr", "tag": name if width == 320 else f"{name}_w{width}",
                "float": os.path.join(OCR_ASSETS, "ch_PP-OCRv4_rec_infer.onnx"),
                "data": os.path.join(data, "ocr"), "shapes": {labels["input"]: labels["shape"]},
                "labels": labels["eval"], "torch_int8": None,
                "squeezed": [line["resized_width"] >= labels["shape"][-1]
                             for line in labels["lines"] if line["set"].startswith("eval/")]}
    raise SystemExit(f"quant_eval.py: unknown model {name} ({', '.join(MODELS)})")


def set_dirs(directory, limit=None):
    """test_data_set_0, 1, ... of a directory, in index order."""
    names = [n for n in os.listdir(directory) if n.startswith("test_data_set_")]
    names.sort(key=lambda n: int(n.rsplit("_", 1)[1]))
    names = names[:limit] if limit else names
    return [os.path.join(directory, n) for n in names]


def load_sets(dirs):
    """The input_0.pb of each set, stacked: (N, *shape), and the name."""
    tensors = [onnx.load_tensor(os.path.join(d, "input_0.pb")) for d in dirs]
    return np.stack([numpy_helper.to_array(t) for t in tensors]), tensors[0].name


# ------------------------------------------------------- ONNX Runtime

class OrtModel:
    """bench/ort_eval.js: one ONNX Runtime session, driven over pipes."""

    def __init__(self, model_path, threads):
        self.process = subprocess.Popen(
            ["node", os.path.join(BENCH_DIR, "ort_eval.js"), model_path, "--threads",
             str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready = self._read()
        self.scratch = tempfile.TemporaryDirectory(prefix="quant-eval-ort-")
        self.staged = {}

    def _read(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"ort_eval.js exited ({self.process.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"ort_eval.js: {reply['error']}")
        return reply

    def _request(self, **request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._read()

    def _stage(self, xs, name):
        """xs as one raw file, written once per array (kept referenced, so
        that its id stays its own)."""
        key = id(xs)
        if key not in self.staged:
            path = os.path.join(self.scratch.name, f"inputs_{len(self.staged)}.bin")
            np.ascontiguousarray(xs).tofile(path)
            self.staged[key] = (xs, {"name": name, "dtype": str(xs.dtype),
                                     "dims": list(xs.shape[1:]), "file": path})
        return self.staged[key][1]

    def run_all(self, xs, name):
        """The first output of each xs[i]: an array (N, *output shape)."""
        out_dir = os.path.join(self.scratch.name, "out")
        reply = self._request(cmd="eval", input=self._stage(xs, name), count=len(xs),
                              output_dir=out_dir)
        first = reply["outputs"][0]
        ys = np.fromfile(first["file"], np.dtype(first["dtype"]))
        return ys.reshape([len(xs)] + first["dims"])

    def times_ms(self, xs, name, runs, warmup=1):
        return self._request(cmd="time", input=self._stage(xs, name), index=0, runs=runs,
                             warmup=warmup)["times_ms"]

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.write('{"cmd": "quit"}\n')
            self.process.stdin.close()
            self.process.wait()
        self.scratch.cleanup()


# ----------------------------------------------------------------- cgc

def find_cgc_binary(cgc_module, given):
    if given:
        return given
    candidates = [os.path.join(os.path.dirname(cgc_module.__file__), "..", "..", "cgc"),
                  os.path.join(REPO_DIR, "build", "cgc")]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    return "cgc"


def calibrate(cgc_binary, spec, calib_dirs, data_dir):
    """`cgc calibrate` on the calibration sets, cached by file."""
    path = os.path.join(data_dir, "calib", f"{spec['name']}.calib.json")
    newest = max(os.path.getmtime(f) for f in
                 [spec["float"]] + [os.path.join(d, "input_0.pb") for d in calib_dirs])
    if os.path.exists(path) and os.path.getmtime(path) >= newest:
        return path, None
    os.makedirs(os.path.dirname(path), exist_ok=True)
    command = [cgc_binary, "calibrate", "-q", spec["float"], "-o", path, "--inputs", *calib_dirs]
    for name, shape in (spec["shapes"] or {}).items():
        command += ["--shape", f"{name}={'x'.join(map(str, shape))}"]
    print("== " + " ".join(shlex.quote(c) for c in command[:7]) + f" ... ({len(calib_dirs)} sets)",
          flush=True)
    start = time.time()
    subprocess.run(command, check=True)
    print(f"== wrote {path} in {time.time() - start:.0f} s", flush=True)
    return path, time.time() - start


def compile_float(cgc, spec, threads):
    return cgc.compile(spec["float"], shapes=spec["shapes"], threads=threads)


def compile_int8(cgc, spec, threads, calibration, method, activations, percentile, report,
                 stand_in, max_error=0.0, check_dirs=(), precision="fp32"):
    if stand_in:
        # PLUMBING TEST ONLY (--int8-as-float): the float model in the int8
        # model's place; every int8 number of the report is then float's.
        return cgc.compile(spec["float"], shapes=spec["shapes"], threads=threads)
    # ===== The int8 compile (issue 36): cgc quantises the float model itself,
    # with the activation scales chosen by `method` from `calibration`. =====
    # `report`: cgc's quantisation report (each layer's precision, the
    # outputs' errors on the calibration sets), kept beside the table.
    options = {"quantize": "int8", "calibration": calibration, "method": method,
               "report": report}
    if activations:
        options["activations"] = activations
    if percentile is not None:
        options["percentile"] = percentile
    if max_error:
        options.update(max_error=max_error, check_inputs=list(check_dirs))
    if precision != "fp32":
        options["precision"] = precision
    try:
        return cgc.compile(spec["float"], shapes=spec["shapes"], threads=threads, **options)
    except TypeError as error:
        if any(word in str(error) for word in options):
            sys.exit(f"quant_eval.py: this cgc cannot quantise yet ({error}); "
                     "--int8-as-float tests the rest with the float model in its place")
        raise


def cgc_run_all(model, xs):
    name = model.inputs[0].name
    return np.stack([model.run({name: x})[model.outputs[0].name] for x in xs])


def cgc_times_ms(model, x, runs, warmup=1):
    """Runs on the model's own input buffer, outputs read in place: the
    model's time and the call's, no copies."""
    model.input_buffer(model.inputs[0].name)[...] = x
    for _ in range(warmup):
        model.run(copy=False)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        model.run(copy=False)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def float_layers_line(report_path):
    """The int8 compile's layers by precision, from cgc's report."""
    try:
        with open(report_path) as f:
            layers = json.load(f)["layers"]
    except (OSError, ValueError, KeyError):
        return "- layers: no cgc report"
    counts = {}
    for layer in layers:
        counts[layer["precision"]] = counts.get(layer["precision"], 0) + 1
    budget = sum(layer.get("why", "").startswith("--max-error") for layer in layers)
    return (f"- layers: {', '.join(f'{n} {p}' for p, n in counts.items())} ({budget} taken out "
            "of int8 by --max-error)")


# ------------------------------------------------------------- metrics

def top1_agreement(a, b):
    return float(np.mean(a.reshape(len(a), -1).argmax(1) == b.reshape(len(b), -1).argmax(1)))


def top5_hit(x, reference):
    """How often the reference's top-1 class is in x's top 5."""
    x, reference = x.reshape(len(x), -1), reference.reshape(len(reference), -1)
    top5 = np.argsort(-x, axis=1)[:, :5]
    return float(np.mean([r in t for r, t in zip(reference.argmax(1), top5)]))


def relative_error(x, reference):
    """Median over inputs of ||x - ref|| / ||ref|| (logits, L2)."""
    x, reference = x.reshape(len(x), -1), reference.reshape(len(reference), -1)
    return float(np.median(np.linalg.norm(x - reference, axis=1) /
                           np.maximum(np.linalg.norm(reference, axis=1), 1e-30)))


def ocr_charset():
    with open(os.path.join(OCR_ASSETS, "ppocr_keys_v1.txt"), encoding="utf-8") as f:
        return [""] + [line.rstrip("\r\n") for line in f] + [" "]


def ctc_greedy(probabilities, charset):
    """PaddleOCR's CTCLabelDecode: argmax per time step, repeats merged,
    blank (0) dropped."""
    if len(charset) != probabilities.shape[-1]:
        raise SystemExit(f"quant_eval.py: {probabilities.shape[-1]} classes, "
                         f"{len(charset)} in the dictionary with blank and space")
    texts = []
    for steps in probabilities.reshape(len(probabilities), -1, probabilities.shape[-1]):
        best, previous, text = steps.argmax(1), 0, []
        for k in best:
            if k != previous and k != 0:
                text.append(charset[k])
            previous = k
        texts.append("".join(text))
    return texts


def edit_distance(a, b):
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def char_agreement(texts, references):
    errors = sum(edit_distance(t, r) for t, r in zip(texts, references))
    return 1 - errors / max(1, sum(len(r) for r in references))


def exact(texts, references):
    return float(np.mean([t == r for t, r in zip(texts, references)]))


# -------------------------------------------------------------- report

def cpu_name():
    fields = {}
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    except OSError:
        pass
    flags = set(fields.get("Flags", "").split())
    vnni = [f for f in ("avx512_vnni", "avx_vnni", "amx_int8") if f in flags]
    return (f"{fields.get('Model name', platform.processor())} (family {fields.get('CPU family', '?')}, "
            f"model {fields.get('Model', '?')}; {fields.get('CPU(s)', '?')} CPUs; "
            f"int8 dot products: {', '.join(vnni) or 'no VNNI'})")


def command_line():
    words = [sys.executable, os.path.relpath(os.path.abspath(__file__), os.getcwd()), *sys.argv[1:]]
    path = os.environ.get("PYTHONPATH")
    return (f"PYTHONPATH={shlex.quote(path)} " if path else "") + " ".join(map(shlex.quote, words))


def percent(x):
    return f"{100 * x:.1f} %"


def timing_rows(rounds_ms, order):
    """Median per engine over the rounds' medians, and ratios to cgc float
    with their min-max over rounds."""
    medians = {e: [statistics.median(r) for r in rounds_ms[e]] for e in order}
    rows = []
    for e in order:
        base = medians[order[0]]
        ratios = [m / b for m, b in zip(medians[e], base)]
        rows.append(f"| {e} | {statistics.median(medians[e]):.2f} | "
                    f"{min(medians[e]):.2f}-{max(medians[e]):.2f} | "
                    f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")
    return rows, medians


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=MODELS)
    parser.add_argument("--method", default="percentile", choices=METHODS,
                        help="how cgc chooses activation ranges (default: cgc's, percentile)")
    parser.add_argument("--percentile", type=float,
                        help="the percentile of --method percentile (default: cgc's, 99.99)")
    parser.add_argument("--activations", choices=("u8", "s8"),
                        help="the int8 activations' type (default: cgc's)")
    parser.add_argument("--limit", type=int, default=0, help="the first N evaluation sets only")
    parser.add_argument("--max-error", type=float, default=0.0,
                        help="cgc's accuracy budget (--max-error) on the check sets")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "auto"),
                        help="auto (with --max-error): each layer int8, bf16 or fp32 as cgc's "
                        "budget chooses")
    parser.add_argument("--check-sets", type=int, default=10,
                        help="with --max-error: the last N evaluation sets are the check inputs "
                        "(never among those evaluated)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20, help="timed runs per engine and round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--corpus", default=os.environ.get("CGC_CORPUS",
                                                           os.path.join(BENCH_DIR, "corpus")))
    parser.add_argument("--data", default=os.path.join(BENCH_DIR, "quant_data"))
    parser.add_argument("--cgc", default="", help="the cgc binary (default: the Python package's build)")
    parser.add_argument("--out", default="", help="the report (default: bench/results/quant_<model>_<method>.md)")
    parser.add_argument("--int8-as-float", action="store_true",
                        help="plumbing test: the float model stands in for the int8 one")
    args = parser.parse_args()

    import cgc

    spec = model_spec(args.model, args.corpus, args.data)
    for what in ("float",):
        if not os.path.exists(spec[what]):
            sys.exit(f"quant_eval.py: no {spec[what]} (bench/models.py makes the corpus, --corpus "
                     "names another; bench/ptq_torch.py --bnfit the _bnfit models)")
    if not os.path.isdir(os.path.join(spec["data"], "eval")):
        sys.exit(f"quant_eval.py: no {spec['data']}/eval (run bench/quant_data.py)")
    torch_int8 = spec["torch_int8"]
    if torch_int8 and not os.path.exists(torch_int8):
        print(f"quant_eval.py: no {torch_int8} (bench/ptq_torch.py): no torch-int8 column",
              file=sys.stderr)
        torch_int8 = None
    cgc_binary = find_cgc_binary(cgc, args.cgc)
    suffix = "_float-stand-in" if args.int8_as_float else ""
    activations = f"_{args.activations}" if args.activations else ""
    percentile = f"{args.percentile:g}" if args.percentile is not None else ""
    out = args.out or os.path.join(
        BENCH_DIR, "results",
        f"quant_{spec.get('tag', args.model)}_{args.method}{percentile}{activations}"
        f"{f'_budget{args.max_error:g}' if args.max_error else ''}"
        f"{'_auto' if args.precision == 'auto' else ''}{suffix}.md")
    quantize_report = os.path.splitext(out)[0] + ".cgc.json"
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    load_before = os.getloadavg()

    calib_dirs = set_dirs(os.path.join(spec["data"], "calib"))
    all_eval = set_dirs(os.path.join(spec["data"], "eval"))
    check_dirs = all_eval[-args.check_sets:] if args.max_error else []
    eval_dirs = all_eval[:min(args.limit or len(all_eval), len(all_eval) - len(check_dirs))]
    xs, input_name = load_sets(eval_dirs)
    calibration, calibrate_s = calibrate(cgc_binary, spec, calib_dirs, args.data)

    start = time.time()
    models = {"cgc float": compile_float(cgc, spec, args.threads)}
    compile_s = {"cgc float": time.time() - start}
    start = time.time()
    models["cgc int8"] = compile_int8(cgc, spec, args.threads, calibration, args.method,
                                      args.activations, args.percentile, quantize_report,
                                      args.int8_as_float, args.max_error, check_dirs,
                                      args.precision)
    compile_s["cgc int8"] = time.time() - start
    ort = {"ORT float": OrtModel(spec["float"], args.threads)}
    if torch_int8:
        ort["ORT torch-int8"] = OrtModel(torch_int8, args.threads)
    order = list(models) + list(ort)

    outputs, run_s = {}, {}
    try:
        for name, model in models.items():
            start = time.time()
            outputs[name] = cgc_run_all(model, xs)
            run_s[name] = time.time() - start
            print(f"{name}: {len(xs)} inputs in {run_s[name]:.1f} s", flush=True)
        for name, session in ort.items():
            start = time.time()
            outputs[name] = session.run_all(xs, input_name)
            run_s[name] = time.time() - start
            print(f"{name}: {len(xs)} inputs in {run_s[name]:.1f} s", flush=True)

        rounds_ms = {e: [] for e in order}
        for r in range(args.rounds):
            for name in order:
                if name in models:
                    rounds_ms[name].append(cgc_times_ms(models[name], xs[0], args.runs))
                else:
                    rounds_ms[name].append(ort[name].times_ms(xs[:1], input_name, args.runs))
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{e} {statistics.median(rounds_ms[e][-1]):.2f} ms" for e in order), flush=True)
    finally:
        for session in ort.values():
            session.close()
    load_after = os.getloadavg()

    # ---------------------------------------------------------- the table
    stand_in = " (FLOAT STAND-IN: --int8-as-float, no quantisation)" if args.int8_as_float else ""
    method = args.method + (f" {args.percentile}" if args.percentile is not None else "")
    if args.max_error:
        method += f", --max-error {args.max_error:g} on {len(check_dirs)} check sets"
    lines = [f"# int8 evaluation: {args.model}, method {method}"
             f"{', activations ' + args.activations if args.activations else ''}{stand_in}", ""]
    if args.int8_as_float:
        lines += ["**Plumbing test: `cgc int8` below is the float model compiled again "
                  "(cgc had no quantize options); its numbers say nothing about int8.**", ""]
    lines += [f"- model: `{os.path.relpath(spec['float'], REPO_DIR)}`"
              + (f"; PyTorch int8 (QDQ): `{os.path.relpath(torch_int8, REPO_DIR)}`" if torch_int8 else ""),
              f"- data: {len(xs)} evaluation sets of `{os.path.relpath(spec['data'], REPO_DIR)}/eval`, "
              f"calibration: {len(calib_dirs)} sets (`{os.path.relpath(calibration, REPO_DIR)}`"
              + (f", made in {calibrate_s:.0f} s)" if calibrate_s else ", cached)"),
              f"- CPU: {cpu_name()}; {args.threads} threads for every engine; "
              f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after",
              f"- command: `{command_line()}`",
              f"- cgc: `{cgc_binary}`, Python package `{os.path.dirname(cgc.__file__)}`; "
              f"compile (or cache load): float {compile_s['cgc float']:.1f} s, "
              f"int8 {compile_s['cgc int8']:.1f} s"
              + ("" if args.int8_as_float else f"; cgc's quantisation report: `{os.path.relpath(quantize_report, REPO_DIR)}`"),
              *([float_layers_line(quantize_report)] if not args.int8_as_float else []),
              f"- date: {time.strftime('%Y-%m-%d %H:%M')}", ""]

    if spec["kind"] == "image":
        reference = outputs["ORT float"].reshape(len(xs), -1)
        classes = len(set(reference.argmax(1).tolist()))
        across_inputs, across_classes = reference.std(0).mean(), reference.std(1).mean()
        lines += ["## Agreement", "",
                  "| engine | top-1 = cgc float | top-1 = ORT float | ORT float top-1 in top-5 | "
                  "logits rel. L2 error vs ORT float (median) |",
                  "| --- | --- | --- | --- | --- |"]
        for name in order:
            y = outputs[name]
            lines.append(f"| {name} | {percent(top1_agreement(y, outputs['cgc float']))} | "
                         f"{percent(top1_agreement(y, outputs['ORT float']))} | "
                         f"{percent(top5_hit(y, outputs['ORT float']))} | "
                         f"{relative_error(y, outputs['ORT float']):.2e} |")
        lines += ["", f"ORT float predicts {classes} distinct classes over the {len(xs)} inputs; "
                  f"a logit varies by {across_inputs:.2g} across the inputs (standard deviation, "
                  f"mean over classes) and by {across_classes:.2g} across the classes (mean over "
                  "inputs)."
                  + (" **These logits hardly depend on the input (random weights): top-1 "
                     "agreement is 100 % whatever the int8 model does; the _bnfit models "
                     "(bench/ptq_torch.py --bnfit) are the meaningful ones.**"
                     if classes <= 2 or across_inputs < 0.05 * across_classes else ""), ""]
    else:
        charset = ocr_charset()
        texts = {name: ctc_greedy(y, charset) for name, y in outputs.items()}
        truth = spec["labels"][:len(xs)]
        lines += ["## Agreement", "",
                  "| engine | chars = cgc float | chars = ORT float | lines = cgc float | "
                  "chars = ground truth | lines = ground truth |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for name in order:
            t = texts[name]
            stripped = [s.strip() for s in t]
            lines.append(f"| {name} | {percent(char_agreement(t, texts['cgc float']))} | "
                         f"{percent(char_agreement(t, texts['ORT float']))} | "
                         f"{percent(exact(t, texts['cgc float']))} | "
                         f"{percent(char_agreement(stripped, truth))} | "
                         f"{percent(exact(stripped, truth))} |")
        fit = [i for i in range(len(xs)) if not spec["squeezed"][i]]
        if fit:
            lines += ["", f"The {len(fit)} lines that fit the width (not squeezed):", "",
                      "| engine | chars = cgc float | lines = cgc float | chars = ground truth | "
                      "lines = ground truth |", "| --- | --- | --- | --- | --- |"]
            for name in order:
                t = [texts[name][i] for i in fit]
                reference = [texts["cgc float"][i] for i in fit]
                stripped, true = [s.strip() for s in t], [truth[i] for i in fit]
                lines.append(f"| {name} | {percent(char_agreement(t, reference))} | "
                             f"{percent(exact(t, reference))} | "
                             f"{percent(char_agreement(stripped, true))} | "
                             f"{percent(exact(stripped, true))} |")
        differ = [i for i in range(len(xs)) if texts["cgc int8"][i] != texts["cgc float"][i]]
        width = spec["shapes"][input_name][-1]
        lines += ["", "chars: 1 - sum of edit distances / sum of the reference's lengths; lines: "
                  "identical lines; against the ground truth leading and trailing spaces are "
                  f"ignored. {sum(spec['squeezed'][:len(xs)])} of the {len(xs)} lines are wider "
                  f"than {width} pixels at height 48 and squeezed to {width} (one input shape for "
                  "all; PaddleOCR would widen the input instead).", ""]
        if differ:
            lines += [f"First lines where cgc int8 and cgc float differ ({len(differ)} in all):", ""]
            lines += [f"- {i}: float `{texts['cgc float'][i]}`, int8 `{texts['cgc int8'][i]}`, "
                      f"truth `{truth[i]}`" for i in differ[:5]]
            lines.append("")

    rows, medians = timing_rows(rounds_ms, order)
    # The claim itself: how much faster cgc int8 is than each ONNX Runtime
    # engine, the ratio within each round (its median and range).
    speedups = []
    for e in (e for e in order if e.startswith("ORT")):
        r = [o / c for o, c in zip(medians[e], medians["cgc int8"])]
        speedups.append(f"cgc int8 is {statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f}x) "
                        f"as fast as {e}")
    lines += ["## Latency", "",
              f"One input, {args.rounds} rounds of {args.runs} timed runs (after one warm-up) of "
              f"each engine in turn ({', '.join(order)}); cgc through the Python API "
              "(input buffer, outputs in place), ONNX Runtime through onnxruntime-node.", "",
              "| engine | median ms | round medians min-max | ratio to cgc float (min-max over rounds) |",
              "| --- | --- | --- | --- |", *rows, "",
              "Within each round: " + "; ".join(speedups) + ".", "",
              *([f"The load average ({max(load_before[0], load_after[0]):.1f}, this script's "
                 f"runs included) was above the {os.cpu_count()} CPUs: other processes shared "
                 "the cores, and the ratios within rounds say more than the times.", ""]
                if max(load_before[0], load_after[0]) > os.cpu_count() else []),
              f"Whole evaluation ({len(xs)} inputs, with copies and I/O): "
              + ", ".join(f"{e} {run_s[e]:.1f} s" for e in order), ""]

    report = "\n".join(lines)
    with open(out, "w") as f:
        f.write(report)
    print(report)
    print(f"written: {out}")


if __name__ == "__main__":
    main()
