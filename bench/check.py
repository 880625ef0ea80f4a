"""Runs every corpus model with cgc and with ONNX Runtime on the same inputs
and compares every output: |cgc - ort| <= atol + rtol * |ort| elementwise,
where the relative error is |cgc - ort| / max(|ort|, atol),
with rtol 1e-3 and atol 1e-4 unless the case's case.json gives its own
tolerance with a reason. Prints a Markdown table (model, the time of cgc
run: compile, build and one run; status, max abs and relative error,
largest output magnitude) and writes it with a JSON copy into
bench/results/.

Usage: /usr/bin/python3 bench/check.py [--cgc CGC] [--corpus DIR] [--only NAMES]
           [--results DIR] [--cgc-arg=ARG]...
(e.g. --cgc-arg=--disable-pass=fuse-matmuls checks the corpus without a pass)

A quantised case (case.json "quantized", bench/quantized_models.py) is
compared in quantisation steps instead: each float output within
float_steps of its DequantizeLinear's scale, and every QuantizeLinear
output of the model (made graph outputs in a copy of it) within int_steps;
the table gives the largest difference in steps and where.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
import onnx.utils
from onnx import numpy_helper

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH_DIR)
RTOL, ATOL = 1e-3, 1e-4


def cgc_arguments(case_dir, case):
    args = []
    for name, dims in case.get("shapes", {}).items():
        args += ["--shape", f"{name}={'x'.join(map(str, dims))}"]
    for name, file in case.get("constants", {}).items():
        args += ["--constant", f"{name}={os.path.join(case_dir, file)}"]
    for name, bound in case.get("bounds", {}).items():
        args += ["--bound", f"{name}={bound}"]
    return args


def load_case(case_dir):
    """A corpus case (bench/models.py's layout): its case.json, model, test
    data directory and cgc's --shape/--constant arguments."""
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    return (case, os.path.join(case_dir, "model.onnx"),
            os.path.join(case_dir, "test_data_set_0"), cgc_arguments(case_dir, case))


def run(command, what):
    start = time.time()
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise RuntimeError(f"{what} failed: {lines[-1] if lines else result.returncode}")
    return time.time() - start, result.stdout


def ort_outputs(directory):
    with open(os.path.join(directory, "outputs.json")) as f:
        manifest = json.load(f)
    dtypes = {"float32": np.float32, "float64": np.float64, "int64": np.int64,
              "int32": np.int32, "bool": np.uint8, "uint8": np.uint8, "int8": np.int8}
    return [np.fromfile(os.path.join(directory, o["file"]), dtype=dtypes[o["dtype"]])
            .reshape(o["dims"]) for o in manifest]


def cgc_outputs(directory, count):
    return [numpy_helper.to_array(onnx.load_tensor(os.path.join(directory, f"output_{i}.pb")))
            for i in range(count)]


def compare(ours, theirs, rtol, atol):
    worst_abs, worst_rel, scale, ok = 0.0, 0.0, 0.0, True
    if len(ours) != len(theirs):
        return False, float("inf"), float("inf"), 0.0, f"{len(ours)} outputs, ONNX Runtime has {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a.shape != b.shape:
            return False, float("inf"), float("inf"), 0.0, f"output {i} is {a.shape}, ONNX Runtime's {b.shape}"
        a, b = a.astype(np.float64), b.astype(np.float64)
        # Equal infinities (a top-p filter's -inf) and NaNs in the same
        # places are equal, not inf - inf.
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        diff = np.where(same, 0.0, np.abs(np.where(same, 0.0, a - b)))
        if diff.size:
            worst_abs = max(worst_abs, float(diff.max()))
            scale = max(scale, float(np.abs(b).max()))
            worst_rel = max(worst_rel, float((diff / np.maximum(np.abs(b), atol)).max()))
            ok = ok and bool(np.all(diff <= atol + rtol * np.abs(b)))
    return ok, worst_abs, worst_rel, scale, ""


def with_quantized_outputs(model_path, out_path):
    """A copy of the model whose QuantizeLinear outputs are graph outputs
    too (after its own outputs); returns their names."""
    model = onnx.load(model_path)
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    outputs = {o.name for o in model.graph.output}
    names = [n.output[0] for n in model.graph.node
             if n.op_type == "QuantizeLinear" and n.domain in ("", "ai.onnx")
             and n.output[0] not in outputs and n.output[0] in inferred]
    model.graph.output.extend(inferred[name] for name in names)
    onnx.save(model, out_path)
    return names


def upstream_quantized(model, name, quantized):
    """The tensors the sub-graph that computes `name` starts from: the
    nearest quantised tensors (and graph inputs) above it."""
    producer = {o: n for n in model.graph.node for o in n.output}
    constants = {i.name for i in model.graph.initializer}
    starts, stack, seen = [], [name], set()
    while stack:
        tensor = stack.pop()
        if tensor in seen or not tensor or tensor in constants:
            continue
        seen.add(tensor)
        if tensor != name and (tensor in quantized or tensor not in producer):
            starts.append(tensor)
            continue
        stack.extend(producer[tensor].input)
    return starts


def local_steps(model_path, name, quantized, values, work):
    """cgc's quantised tensor `name` against ONNX Runtime's computation of
    it from cgc's own quantised tensors upstream (ONNX Runtime on the
    sub-graph between them): the steps this op differs by, without those
    that the ops above carried in. A tie that two correct roundings break
    differently (ONNX Runtime's AVX-512 QLinearAdd fuses a multiply-add, so
    83.49999 there is 83.5 in float32) grows by a step or two each layer
    below it, so an end-to-end comparison alone cannot hold every tensor to
    one step."""
    model = onnx.shape_inference.infer_shapes(onnx.load(model_path))
    starts = upstream_quantized(model, name, quantized)
    sub = onnx.utils.Extractor(model).extract_model(starts, [name])
    directory = os.path.join(work, "local")
    os.makedirs(directory, exist_ok=True)
    sub_path = os.path.join(directory, "model.onnx")
    onnx.save(sub, sub_path)
    inputs = []
    for i, start in enumerate(starts):
        array = np.ascontiguousarray(values[start])
        array.tofile(os.path.join(directory, f"input_{i}.bin"))
        inputs.append({"name": start, "dtype": str(array.dtype), "dims": list(array.shape),
                       "file": f"input_{i}.bin"})
    with open(os.path.join(directory, "inputs.json"), "w") as f:
        json.dump(inputs, f)
    run(["node", os.path.join(BENCH_DIR, "ort_run.js"), sub_path, directory,
         os.path.join(directory, "ort")], f"ONNX Runtime (the sub-graph to {name})")
    theirs = ort_outputs(os.path.join(directory, "ort"))[0]
    return int(np.abs(values[name].astype(np.int64) - theirs.reshape(values[name].shape)).max())


def check_quantized(cgc, case, model, data, bindings, work, row):
    """The quantised comparison: float outputs in steps of their scale, and
    every quantised tensor, end to end and (where end to end is beyond
    int_steps) from cgc's own inputs (local_steps); sets the row's step
    columns and returns whether it passes."""
    spec = case["quantized"]
    copy = os.path.join(work, "model_quantized_outputs.onnx")
    names = with_quantized_outputs(model, copy)
    run(["node", os.path.join(BENCH_DIR, "ort_run.js"), copy, data, os.path.join(work, "ort_q")],
        "ONNX Runtime (quantised tensors)")
    run([cgc, "run", copy, "-q", "--inputs", data, "--outputs", os.path.join(work, "cgc_q")]
        + bindings, "cgc run (quantised tensors)")
    theirs = ort_outputs(os.path.join(work, "ort_q"))
    ours = cgc_outputs(os.path.join(work, "cgc_q"), len(theirs))
    steps = spec["output_steps"]
    float_steps = max(float(np.abs(ours[i].astype(np.float64) - theirs[i]).max()) / steps[i]
                      for i in range(len(steps)))
    int_steps, where, local, local_where = 0, "", 0, ""
    values = dict(zip(names, ours[len(steps):]))
    values.update({i.name: v for i, v in zip(onnx.load(model).graph.input, load_inputs(data))})
    for i, name in enumerate(names):
        diff = int(np.abs(ours[len(steps) + i].astype(np.int64) - theirs[len(steps) + i]).max())
        if diff > int_steps:
            int_steps, where = diff, name
        if diff > spec["int_steps"]:
            steps_here = local_steps(model, name, set(names), values, work)
            if steps_here >= local:
                local, local_where = steps_here, name
    row["float_steps"], row["int_steps"], row["int_steps_at"] = float_steps, int_steps, where
    row["local_steps"], row["local_steps_at"] = local, local_where
    row["quantized_tensors"] = len(names)
    return float_steps <= spec["float_steps"] and local <= spec["int_steps"]


def load_inputs(data):
    """The case's inputs (bench/models.py's inputs.json), in order."""
    with open(os.path.join(data, "inputs.json")) as f:
        manifest = json.load(f)
    return [np.fromfile(os.path.join(data, i["file"]), dtype=np.dtype(i["dtype"])).reshape(i["dims"])
            for i in manifest]


def check_case(cgc, name, case_dir, work, extra_args):
    case, model, data, bindings = load_case(case_dir)
    bindings = bindings + extra_args
    rtol, atol = case.get("rtol", RTOL), case.get("atol", ATOL)
    reason = case.get("tolerance_reason", "")
    if "quantized" in case:  # int8 outputs: a few quantisation steps
        spec = case["quantized"]
        rtol, atol = 0.0, spec["float_steps"] * max(spec["output_steps"])
        reason = f"{spec['float_steps']} steps of the output's scale"
    row = {"model": name, "rtol": rtol, "atol": atol, "tolerance_reason": reason}
    try:
        run(["node", os.path.join(BENCH_DIR, "ort_run.js"), model, data,
             os.path.join(work, "ort")], "ONNX Runtime")
        row["run_s"], _ = run([cgc, "run", model, "-q", "--inputs", data, "--outputs",
                               os.path.join(work, "cgc")] + bindings, "cgc run")
        theirs = ort_outputs(os.path.join(work, "ort"))
        ours = cgc_outputs(os.path.join(work, "cgc"), len(theirs))
        ok, row["max_abs_err"], row["max_rel_err"], row["output_scale"], detail = compare(ours, theirs, rtol, atol)
        if "quantized" in case:
            ok = not detail and check_quantized(cgc, case, model, data, bindings, work, row)
        row["status"] = "pass" if ok else "FAIL"
        row["detail"] = detail or ("" if ok else "outside tolerance")
    except (RuntimeError, FileNotFoundError) as error:
        row["status"], row["detail"] = "FAIL", str(error)
    return row


def table(rows):
    lines = ["| model | cgc run (s) | status | max abs error | max rel error | largest output | tolerance (rtol / atol) | int8: largest difference in steps |",
             "|---|---:|---|---:|---:|---:|---|---|"]
    for r in rows:
        fmt = lambda key: f"{r[key]:.1e}" if key in r else "-"
        run_s = f"{r['run_s']:.1f}" if "run_s" in r else "-"
        status = r["status"] if not r.get("detail") or r["status"] == "pass" else f"{r['status']}: {r['detail']}"
        tolerance = f"{r['rtol']:g} / {r['atol']:g}" + (f" ({r['tolerance_reason']})" if r["tolerance_reason"] else "")
        steps = "-"
        if "int_steps" in r:
            steps = (f"outputs {r['float_steps']:.2g}, {r['quantized_tensors']} quantised tensors "
                     f"{r['int_steps']}" + (f" ({r['int_steps_at']})" if r["int_steps_at"] else ""))
            if r.get("local_steps_at"):
                steps += f"; from cgc's own inputs {r['local_steps']} ({r['local_steps_at']})"
        lines.append(f"| {r['model']} | {run_s} | {status} | {fmt('max_abs_err')} | {fmt('max_rel_err')} | {fmt('output_scale')} | {tolerance} | {steps} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgc", default=os.path.join(ROOT, "install", "bin", "cgc"))
    parser.add_argument("--corpus", default=os.path.join(BENCH_DIR, "corpus"))
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--results", default=os.path.join(BENCH_DIR, "results"),
                        help="where the table and the outputs go")
    parser.add_argument("--cgc-arg", action="append", default=[],
                        help="extra argument for cgc run")
    args = parser.parse_args()
    args.cgc = os.path.abspath(args.cgc)
    if not os.path.isdir(args.corpus):
        sys.exit(f"check.py: no corpus at {args.corpus}; make it with bench/models.py")
    names = [n for n in args.only.split(",") if n] or sorted(os.listdir(args.corpus))
    results_dir = args.results
    os.makedirs(results_dir, exist_ok=True)
    rows = []
    for name in names:
        row = check_case(args.cgc, name, os.path.join(args.corpus, name),
                         os.path.join(results_dir, "check", name), args.cgc_arg)
        rows.append(row)
        print(f"{name}: {row['status']} {row.get('detail', '')}".rstrip(), flush=True)
    text = table(rows)
    print(text)
    with open(os.path.join(results_dir, "check.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(results_dir, "check.json"), "w") as f:
        json.dump(rows, f, indent=1)
    failed = [r["model"] for r in rows if r["status"] != "pass"]
    if failed:
        print(f"{len(failed)} of {len(rows)} models fail: {', '.join(failed)}")
        return 1
    print(f"all {len(rows)} models match ONNX Runtime")
    return 0


if __name__ == "__main__":
    sys.exit(main())
