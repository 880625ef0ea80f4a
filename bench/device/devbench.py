"""cgc against ONNX Runtime on a machine that has neither cgc nor (maybe) a
C++ compiler: the device kit's orchestrator (bench/device/build_kit.sh
makes the kit, run.sh calls this). Python standard library only; ONNX
Runtime runs in ort_worker.py, under the same Python, and is skipped, with
the reason, where it cannot be imported.

For every model of the kit's manifest.json at --main-threads threads, then
for the scaling models at each of --scaling threads: rounds of ONNX Runtime
(one session per model and thread count, kept across the rounds) and of the
cgc driver (bin/drive: one process a round, warmed up inside), A B A B,
each pinned to the first T CPUs; each round the median of RUNS inferences,
RUNS chosen so that a round takes about --round-s seconds. Reports the
median of the rounds, ONNX Runtime's time over cgc's and its lowest and
highest value in a single round; for the models that carry their real ONNX
file, whether the two give the same outputs. Writes OUT/device_bench.json
and OUT/device_bench.md after every row, so that a run cut short still
leaves its rows (run.sh prints the Markdown last).

Usage: python3 devbench.py --kit KIT --work DIR --out DIR [--deadline EPOCH]
           [--main-threads 16] [--scaling 1,2,4,8] [--rounds 5]
           [--round-s 0.3] [--only a,b] [--peak FILE] [--machine FILE]
"""

import argparse
import array
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import zlib

STARTED = time.time()


def log(message):
    print(f"[{time.time() - STARTED:6.1f}s] {message}", flush=True)


def median(values):
    return statistics.median(values) if values else None


# ---------------------------------------------------------------- unpacking

def unpack_library(kit, work, entry):
    """The model's .so, put back together from its code (zlib) and its
    weights blob (zlib, shared between targets), checked by sha256."""
    path = os.path.join(work, "so", entry["key"] + ".so")
    if os.path.exists(path):
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() == entry["sha256"]:
                return path
    with open(os.path.join(kit, entry["code"]), "rb") as f:
        code = zlib.decompress(f.read())
    blob = b""
    if entry.get("blob"):
        with open(os.path.join(kit, entry["blob"]), "rb") as f:
            blob = zlib.decompress(f.read())
    offset = entry["blob_offset"]
    data = code[:offset] + blob + code[offset:]
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise RuntimeError(f"{entry['key']}: sha256 mismatch after unpacking")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.chmod(path + ".tmp", 0o755)
    os.replace(path + ".tmp", path)
    return path


def prepare_inputs(kit, work, case):
    """WORK/inputs/<case>/: the kit's small input files as they are, the
    large ones generated (normal(0, 1) float32 from a seed: the corpus's
    large inputs are torch.randn draws) so that the kit need not carry
    them. Both engines read the same files."""
    directory = os.path.join(work, "inputs", case["name"])
    os.makedirs(directory, exist_ok=True)
    source = os.path.join(kit, case["inputs"])
    shutil.copyfile(os.path.join(source, "inputs.json"), os.path.join(directory, "inputs.json"))
    for item in case["input_files"]:
        target = os.path.join(directory, item["file"])
        if "generate" not in item:
            shutil.copyfile(os.path.join(source, item["file"]), target)
            continue
        spec = item["generate"]
        if os.path.exists(target) and os.path.getsize(target) == spec["count"] * 4:
            continue
        rng = random.Random(spec["seed"])
        gauss, mean, std = rng.gauss, spec.get("mean", 0.0), spec.get("std", 1.0)
        values = array.array("f", (gauss(mean, std) for _ in range(spec["count"])))
        if sys.byteorder != "little":
            values.byteswap()
        with open(target, "wb") as f:
            values.tofile(f)
    return directory


def prepare_onnx(kit, work, case, python):
    """The ONNX file for ONNX Runtime: the kit's own, or its skeleton filled
    with random weights of the same statistics (onnx_skeleton.py fill)."""
    onnx = case["onnx"]
    if "file" in onnx:
        return os.path.join(kit, onnx["file"])
    path = os.path.join(work, "onnx", case["name"] + ".onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path):
        result = subprocess.run(
            [python, os.path.join(kit, "onnx_skeleton.py"), "fill",
             os.path.join(kit, onnx["skeleton"]), os.path.join(kit, onnx["fill"]), path + ".tmp"],
            capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError("onnx_skeleton.py fill: " + (result.stderr or result.stdout)[-400:])
        os.replace(path + ".tmp", path)
    return path


# ------------------------------------------------------------------ engines

def drive(args, library, inputs, runs, rounds, threads, outputs=None):
    """One bin/drive process: its JSON line, or {"error": ...}."""
    command = [os.path.join(args.kit, "bin", "drive"), library, "model", inputs,
               str(runs), str(rounds), str(threads)]
    if outputs:
        os.makedirs(outputs, exist_ok=True)
        command.append(outputs)
    timeout = max(10.0, min(120.0, args.deadline - time.time() + 5))
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"drive timed out after {timeout:.0f} s"}
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    parsed = None
    if lines:
        try:
            parsed = json.loads(lines[-1])
        except ValueError:
            parsed = None
    if result.returncode != 0 or parsed is None or "error" in parsed:
        why = (parsed or {}).get("error") or f"exit {result.returncode}"
        if result.returncode < 0:
            why = f"killed by signal {-result.returncode}"
        tail = result.stderr.strip()[-300:]
        return {"error": why + (f" (stderr: {tail})" if tail else ""),
                "exit": result.returncode}
    return parsed


class OrtWorker:
    def __init__(self, args, model, inputs, threads):
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen(
            [args.python, os.path.join(args.kit, "ort_worker.py"), model, inputs, str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env)
        self.ready = self.read()

    def read(self):
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            err = self.process.stderr.read().strip()[-400:]
            return {"error": f"ort_worker exited {self.process.returncode}: {err}"}
        try:
            return json.loads(line)
        except ValueError:
            return {"error": "ort_worker: " + line.strip()[-300:]}

    def ask(self, command):
        try:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        except OSError as e:
            return {"error": f"ort_worker: {e}"}
        return self.read()

    def close(self):
        try:
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


# --------------------------------------------------------------- one config

def run_config(args, state, case, threads):
    """One table row: the model at `threads` threads."""
    name = case["name"]
    row = {"model": name, "threads": threads, "errors": [], "notes": []}
    inputs = state["inputs"].get(name)
    if inputs is None:
        row["errors"].append(state["input_errors"].get(name, "no inputs"))
        return row
    main = threads == args.main_threads
    # cgc engines: the main target, and the fallback target at the main
    # thread count or wherever the main one cannot run.
    engines = {}
    for role, target in (("cgc", case["target"]), ("cgc_fallback", case.get("fallback"))):
        if not target:
            continue
        if role == "cgc_fallback" and not main and name not in state["main_target_failed"]:
            continue
        library = state["libraries"].get((name, target))
        if library is None:
            row["errors"].append(f"{target}: {state['library_errors'].get((name, target))}")
            if role == "cgc":
                state["main_target_failed"].add(name)
            continue
        outputs = os.path.join(args.work, "outputs", f"{name}-{target}-{threads}")
        calibration = drive(args, library, inputs, 3, 1, threads, outputs)
        if "error" in calibration:
            row["errors"].append(f"cgc {target}: {calibration['error']}")
            if role == "cgc":
                state["main_target_failed"].add(name)
            continue
        engines[role] = {"target": target, "library": library, "outputs": outputs,
                         "estimate_ms": calibration["median_ms"], "calibration": calibration,
                         "rounds": [], "lines": []}
        row[role + "_target"] = target

    ort = None
    if state["ort_error"]:
        row["notes"].append("ONNX Runtime skipped: " + state["ort_error"])
    elif name in state["onnx_errors"]:
        row["errors"].append("ONNX Runtime: " + state["onnx_errors"][name])
    else:
        ort = OrtWorker(args, state["onnx"][name], inputs, threads)
        if "error" in ort.ready:
            row["errors"].append("ONNX Runtime: " + ort.ready["error"])
            ort.close()
            ort = None
        else:
            row["ort_version"] = ort.ready.get("ort_version")
            row["ort_start"] = {k: ort.ready.get(k) for k in ("create_ms", "first_run_ms", "warm_ms")}
    try:
        if not engines and ort is None:
            return row
        estimates = [e["estimate_ms"] for e in engines.values()]
        if ort:
            estimates.append(ort.ready["warm_ms"])
        estimate = max(max(estimates), 1e-3)
        runs = int(min(args.max_runs, max(args.min_runs, args.round_s * 1e3 / estimate)))
        row["runs"] = runs

        # Same outputs? Only where the kit carries the real model.
        if ort and case.get("compare") is not None and "cgc" in engines:
            check = ort.ask("compare " + engines["cgc"]["outputs"] + " " +
                            json.dumps(case["compare"]))
            row["check"] = check
            if not check.get("ok"):
                row["errors"].append("outputs differ: " + json.dumps(check)[:300])
        elif case.get("compare") is None:
            row["check"] = {"skipped": "ONNX Runtime runs the model with regenerated weights"}

        ort_rounds, done = [], 0
        for r in range(args.rounds):
            if time.time() > args.deadline:
                row["notes"].append(f"time budget: stopped after {done} of {args.rounds} rounds")
                break
            if ort:
                answer = ort.ask(f"round {runs}")
                if "error" in answer:
                    row["errors"].append("ONNX Runtime: " + answer["error"])
                    ort.close()
                    ort = None
                else:
                    ort_rounds.append(answer["median_ms"])
            for role, engine in list(engines.items()):
                line = drive(args, engine["library"], inputs, runs, 1, threads)
                if "error" in line:
                    row["errors"].append(f"cgc {engine['target']} round {r}: {line['error']}")
                    del engines[role]
                    continue
                engine["rounds"].append(line["median_ms"])
                engine["lines"].append(line)
            done += 1
        row["rounds"] = done
    finally:
        if ort:
            ort.close()

    if ort_rounds:
        row["ort_ms"] = median(ort_rounds)
        row["ort_round_ms"] = ort_rounds
    for role, engine in engines.items():
        if not engine["rounds"]:
            continue
        row[role + "_ms"] = median(engine["rounds"])
        row[role + "_round_ms"] = engine["rounds"]
        first = engine["lines"][0]
        row[role + "_info"] = {k: first.get(k) for k in ("target", "cpus", "placement", "create_ms",
                                                          "first_run_ms", "warmup")}
        if ort_rounds and len(ort_rounds) == len(engine["rounds"]):
            ratios = [o / c for o, c in zip(ort_rounds, engine["rounds"])]
            row[role + "_ratio"] = row["ort_ms"] / row[role + "_ms"]
            row[role + "_ratio_min"] = min(ratios)
            row[role + "_ratio_max"] = max(ratios)
    return row


# ------------------------------------------------------------------ report

def fmt(value, digits=3):
    if value is None:
        return "–"
    if value >= 100:
        return f"{value:.1f}"
    if value >= 10:
        return f"{value:.2f}"
    return f"{value:.{digits}f}"


def markdown(args, machine, rows, pending):
    lines = [f"# cgc vs ONNX Runtime on {machine.get('cpu', '?')}", ""]
    lines.append(
        f"{machine.get('cpus', '?')} CPUs usable; ISA: {machine.get('isa', '?')}; "
        f"per-core peak: {machine.get('peak', 'not measured')}; ONNX Runtime "
        f"{machine.get('ort_version') or '(not available: ' + str(machine.get('ort_error')) + ')'}; "
        f"ORT/cgc: ONNX Runtime's time over cgc's (above 1: cgc is faster); single rounds: the "
        f"lowest and highest ratio of one round; "
        f"{args.rounds} rounds (A B A B), each the median of RUNS runs; both pinned to the first "
        f"T CPUs; ONNX Runtime: intra_op_num_threads=T, sequential, default graph optimisations; "
        f"cgc: 1 executor, T threads, the model's target as named (fallback: x86-64-v3).")
    lines.append("")
    lines.append("| model | T | ONNX Runtime (ms) | cgc (ms) | ORT/cgc | single rounds | "
                 "cgc fallback (ms) | ORT/fallback | runs x rounds | same outputs | notes |")
    lines.append("|---|---:|---:|---:|---:|---|---:|---:|---|---|---|")
    for row in rows:
        check = row.get("check") or {}
        if "ok" in check:
            worst = max((o.get("max_abs", 0) for o in check.get("outputs", [])), default=0)
            same = ("yes" if check["ok"] else "NO") + f" (max abs {worst:.2g})"
        elif "skipped" in check:
            same = "n/a (random weights)"
        else:
            same = "–"
        rr = ""
        if "cgc_ratio_min" in row:
            rr = f"{row['cgc_ratio_min']:.2f}–{row['cgc_ratio_max']:.2f}"
        ratio = f"{row['cgc_ratio']:.2f}x" if "cgc_ratio" in row else "–"
        fb = ""
        if "cgc_fallback_ms" in row:
            fb = f"{fmt(row['cgc_fallback_ms'])} ({row.get('cgc_fallback_target')})"
        fbr = f"{row['cgc_fallback_ratio']:.2f}x" if "cgc_fallback_ratio" in row else ""
        notes = "; ".join(row["errors"] + [n for n in row["notes"]
                                            if not n.startswith("ONNX Runtime skipped")])
        notes = notes.replace("|", "/").replace("\n", " ")[:400]
        lines.append(f"| {row['model']} | {row['threads']} | {fmt(row.get('ort_ms'))} | "
                     f"{fmt(row.get('cgc_ms'))} | {ratio} | {rr} | {fb} | {fbr} | "
                     f"{row.get('runs', '–')} x {row.get('rounds', '–')} | {same} | {notes} |")
    for item in pending:
        lines.append(f"| {item[0]} | {item[1]} | | | | | | | | | not run: {item[2]} |")

    scaling = {}
    for row in rows:
        scaling.setdefault(row["model"], {})[row["threads"]] = row
    multi = {m: r for m, r in scaling.items() if len(r) > 1}
    if multi:
        lines += ["", "Thread scaling (speed-up over T=1 of the same engine; ms in brackets):", "",
                  "| model | engine | " + " | ".join(f"T={t}" for t in sorted(
                      {t for r in multi.values() for t in r})) + " |"]
        all_threads = sorted({t for r in multi.values() for t in r})
        lines.append("|---|---|" + "---:|" * len(all_threads))
        for model, by_threads in multi.items():
            engines = [("ONNX Runtime", "ort_ms"), ("cgc", "cgc_ms")]
            if sum("cgc_fallback_ms" in r for r in by_threads.values()) > 1:
                engines.append(("cgc fallback", "cgc_fallback_ms"))
            for engine, key in engines:
                base = (by_threads.get(1) or {}).get(key)
                cells = []
                for t in all_threads:
                    value = (by_threads.get(t) or {}).get(key)
                    if value is None:
                        cells.append("–")
                    elif base:
                        cells.append(f"{base / value:.2f}x ({fmt(value)})")
                    else:
                        cells.append(fmt(value))
                lines.append(f"| {model} | {engine} | " + " | ".join(cells) + " |")
    lines += ["", f"Wall time of the benchmark: {time.time() - STARTED:.0f} s.", ""]
    return "\n".join(lines)


def machine_facts(args):
    facts = {"cpus": len(os.sched_getaffinity(0))}
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        for line in info.splitlines():
            if line.startswith("model name") and "cpu" not in facts:
                facts["cpu"] = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                isa = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                                   "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_int8",
                                   "amx_bf16") if f in flags]
                facts["isa"] = " ".join(isa)
                break
    except OSError:
        pass
    if args.peak and os.path.exists(args.peak):
        with open(args.peak) as f:
            facts["peak"] = f.read().strip()
    return facts


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kit", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--deadline", type=float, default=time.time() + 270)
    parser.add_argument("--main-threads", type=int, default=16)
    parser.add_argument("--scaling", default="1,2,4,8")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--round-s", type=float, default=0.3)
    parser.add_argument("--min-runs", type=int, default=10)
    parser.add_argument("--max-runs", type=int, default=200)
    parser.add_argument("--min-config-s", type=float, default=8.0,
                        help="start no configuration with less time than this left")
    parser.add_argument("--only", default="")
    parser.add_argument("--peak", default="")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    args.kit, args.work, args.out = (os.path.abspath(p) for p in (args.kit, args.work, args.out))
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)

    with open(os.path.join(args.kit, "manifest.json")) as f:
        manifest = json.load(f)
    cases = manifest["cases"]
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c["name"] in wanted]

    machine = machine_facts(args)
    available = machine["cpus"]
    if args.main_threads > available:
        log(f"only {available} CPUs here: the main thread count is {available}, not {args.main_threads}")
        args.main_threads = available
    scaling = sorted({int(t) for t in args.scaling.split(",") if t} - {args.main_threads})

    state = {"libraries": {}, "library_errors": {}, "inputs": {}, "input_errors": {},
             "onnx": {}, "onnx_errors": {}, "ort_error": None, "main_target_failed": set()}
    log("unpacking the models' libraries")
    for entry in manifest["libraries"]:
        try:
            state["libraries"][(entry["case"], entry["target"])] = unpack_library(args.kit, args.work, entry)
        except Exception as e:  # noqa: BLE001
            state["library_errors"][(entry["case"], entry["target"])] = str(e)
            log(f"  {entry['key']}: {e}")
    log("preparing the inputs")
    for case in cases:
        try:
            state["inputs"][case["name"]] = prepare_inputs(args.kit, args.work, case)
        except Exception as e:  # noqa: BLE001
            state["input_errors"][case["name"]] = f"inputs: {e}"
            log(f"  {case['name']}: inputs: {e}")

    check = subprocess.run([args.python, "-c", "import numpy, onnxruntime; print(onnxruntime.__version__)"],
                           capture_output=True, text=True)
    if check.returncode != 0:
        state["ort_error"] = (check.stderr.strip().splitlines() or ["import failed"])[-1]
        log(f"ONNX Runtime not available: {state['ort_error']}; timing cgc only")
    else:
        machine["ort_version"] = check.stdout.strip()
        log(f"ONNX Runtime {machine['ort_version']}; preparing the ONNX files")
        for case in cases:
            try:
                state["onnx"][case["name"]] = prepare_onnx(args.kit, args.work, case, args.python)
            except Exception as e:  # noqa: BLE001
                state["onnx_errors"][case["name"]] = str(e)[-300:]
                log(f"  {case['name']}: {e}")
    machine["ort_error"] = state["ort_error"]

    configs = [(case, args.main_threads) for case in cases]
    configs += [(case, t) for t in scaling for case in cases
                if case.get("scaling") and t <= available]
    rows, result_path = [], os.path.join(args.out, "device_bench.json")

    def save(pending):
        with open(result_path, "w") as f:
            json.dump({"machine": machine, "rounds": args.rounds, "main_threads": args.main_threads,
                       "rows": rows, "not_run": pending, "wall_s": time.time() - STARTED}, f, indent=1)
        with open(os.path.join(args.out, "device_bench.md"), "w") as f:
            f.write(markdown(args, machine, rows, pending))

    save([])
    for index, (case, threads) in enumerate(configs):
        left = args.deadline - time.time()
        if left < args.min_config_s:
            pending = [(c["name"], t, f"time budget ({left:.0f} s left)") for c, t in configs[index:]]
            log(f"time budget: {len(pending)} configurations not run")
            save(pending)
            break
        log(f"{case['name']} at {threads} threads")
        try:
            row = run_config(args, state, case, threads)
        except Exception as e:  # noqa: BLE001: one model's failure must not stop the rest
            row = {"model": case["name"], "threads": threads, "errors": [f"{type(e).__name__}: {e}"],
                   "notes": []}
        rows.append(row)
        summary = ", ".join(f"{k} {row[k]:.3f}" for k in ("ort_ms", "cgc_ms", "cgc_fallback_ms")
                            if k in row)
        ratio = f", ORT/cgc {row['cgc_ratio']:.2f}x" if "cgc_ratio" in row else ""
        log(f"  {summary}{ratio}" + (f"; errors: {row['errors']}" if row["errors"] else ""))
        save([])
    log(f"wrote {result_path} and device_bench.md")


if __name__ == "__main__":
    sys.exit(main())
