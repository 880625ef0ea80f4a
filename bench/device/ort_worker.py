"""ONNX Runtime's side of bench/device/devbench.py: one model, one session,
kept alive across the rounds so that rounds of ONNX Runtime and of the cgc
driver alternate without paying the session's start each round.

Usage: python3 ort_worker.py MODEL.onnx INPUT_DIR THREADS

Pins itself to the first THREADS CPUs it may use (CPUs 0..THREADS-1 on an
unrestricted machine) before onnxruntime starts any thread, reads
INPUT_DIR/inputs.json ([{name, dtype, dims, file}], raw little-endian
files), creates an InferenceSession (intra_op_num_threads=THREADS,
inter_op_num_threads=1, sequential execution, default graph optimisations,
CPU provider), warms up (a first run, then at least 3 runs and 50 ms) and prints one JSON line
({"ready": true, ...} or {"error": ...}). Then answers commands on stdin,
one JSON line each:
  round N             time N runs: {"median_ms", "min_ms", "times"}
  compare DIR SPEC    compare its outputs with DIR/output_K.bin (the cgc
                      driver's, raw): SPEC is JSON {"rtol", "atol",
                      "output_steps", "float_steps"}
  quit
Exit status 4 when onnxruntime (or numpy) cannot be imported.
"""

import json
import os
import sys
import time


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model_path, input_dir, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    allowed = sorted(os.sched_getaffinity(0))
    if threads > len(allowed):
        emit({"error": f"THREADS {threads} > the {len(allowed)} CPUs this process may use"})
        return 2
    cpus = allowed[:threads]
    os.sched_setaffinity(0, cpus)
    try:
        import numpy as np
        import onnxruntime as ort
    except Exception as e:  # noqa: BLE001: any import failure means no ORT here
        emit({"error": f"import: {type(e).__name__}: {e}"})
        return 4

    with open(os.path.join(input_dir, "inputs.json")) as f:
        manifest = json.load(f)
    feeds = {}
    for item in manifest:
        data = np.fromfile(os.path.join(input_dir, item["file"]), dtype=np.dtype(item["dtype"]))
        feeds[item["name"]] = data.reshape(item["dims"])

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    start = time.perf_counter()
    try:
        session = ort.InferenceSession(model_path, sess_options=options,
                                       providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        emit({"error": f"InferenceSession: {type(e).__name__}: {e}"})
        return 2
    create_ms = (time.perf_counter() - start) * 1e3
    names = [o.name for o in session.get_outputs()]
    known = {i.name for i in session.get_inputs()}
    feeds = {k: v for k, v in feeds.items() if k in known}

    outputs = None
    w0 = time.perf_counter()
    try:
        outputs = session.run(names, feeds)
    except Exception as e:  # noqa: BLE001
        emit({"error": f"run: {type(e).__name__}: {e}"})
        return 2
    first_ms = (time.perf_counter() - w0) * 1e3
    # As the cgc driver: the first run, then at least 3 more and 50 ms.
    warmup, last = 1, []
    w0 = time.perf_counter()
    while warmup < 100 and (warmup < 4 or time.perf_counter() - w0 < 0.05):
        a = time.perf_counter()
        outputs = session.run(names, feeds)
        last.append((time.perf_counter() - a) * 1e3)
        warmup += 1
    last.sort()
    emit({"ready": True, "ort_version": ort.__version__, "threads": threads,
          "cpus": ",".join(map(str, cpus)), "create_ms": round(create_ms, 3),
          "first_run_ms": round(first_ms, 3), "warmup": warmup,
          "warm_ms": round(last[len(last) // 2], 4) if last else round(first_ms, 4),
          "providers": session.get_providers()})

    for line in sys.stdin:
        words = line.split(maxsplit=2)
        if not words:
            continue
        if words[0] == "quit":
            break
        if words[0] == "round":
            runs = int(words[1])
            times = []
            for _ in range(runs):
                a = time.perf_counter()
                outputs = session.run(names, feeds)
                times.append((time.perf_counter() - a) * 1e3)
            s = sorted(times)
            median = s[runs // 2] if runs % 2 else 0.5 * (s[runs // 2 - 1] + s[runs // 2])
            emit({"median_ms": median, "min_ms": s[0], "runs": runs,
                  "times": [round(t, 4) for t in times]})
        elif words[0] == "compare":
            emit(compare(np, outputs, names, words[1], json.loads(words[2])))
        else:
            emit({"error": f"unknown command {words[0]}"})
    return 0


def compare(np, outputs, names, directory, spec):
    """ONNX Runtime's last outputs against the cgc driver's raw ones: the
    largest absolute and relative difference, and whether every element is
    within atol + rtol * |ort| (a quantised output: within float_steps of
    its output step)."""
    rtol, atol = spec.get("rtol", 1e-3), spec.get("atol", 1e-4)
    steps = spec.get("output_steps")
    result = {"ok": True, "outputs": []}
    for i, (name, theirs) in enumerate(zip(names, outputs)):
        theirs = np.asarray(theirs)
        path = os.path.join(directory, f"output_{i}.bin")
        try:
            ours = np.fromfile(path, dtype=theirs.dtype)
        except OSError as e:
            return {"ok": False, "error": str(e)}
        if ours.size != theirs.size:
            result["ok"] = False
            result["outputs"].append({"name": name, "error": f"{ours.size} elements, ORT {theirs.size}"})
            continue
        a = ours.reshape(theirs.shape).astype(np.float64)
        b = theirs.astype(np.float64)
        diff = np.abs(a - b)
        max_abs = float(diff.max()) if diff.size else 0.0
        max_rel = float((diff / np.maximum(np.abs(b), atol)).max()) if diff.size else 0.0
        if steps and i < len(steps):
            limit = spec.get("float_steps", 1) * steps[i] * (1 + 1e-6)
            ok = max_abs <= limit
        else:
            ok = bool(np.all(diff <= atol + rtol * np.abs(b)))
        result["ok"] = result["ok"] and ok
        result["outputs"].append({"name": name, "max_abs": max_abs, "max_rel": max_rel, "ok": ok})
    return result


if __name__ == "__main__":
    sys.exit(main())
