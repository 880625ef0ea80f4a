"""Batch inference of a cgc model on Dask distributed (README.md).

The client compiles the model once into a library; a LocalCluster of a
scheduler and worker processes (1 thread each) gets the library and the
worker module (cgc_tasks.py) with client.upload_file, as a cluster of
several machines would; each worker loads the model once and runs batches
of the dataset; the results are checked equal to a run in this process.
Prints the throughput with 1 and with 2 workers.

    PYTHONPATH=build/python /usr/bin/python3 samples/dask/batch_infer.py
"""

import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

import numpy as np

import cgc
import cgc_tasks

HERE = pathlib.Path(__file__).resolve().parent
MODELS = HERE.parent / "models"


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=str(MODELS / "tiny_cnn" / "model.onnx"),
                        help="an ONNX model of fixed shapes (default: the tiny_cnn sample)")
    parser.add_argument("--inputs", type=int, default=64, help="inputs in the dataset")
    parser.add_argument("--batch", type=int, default=8, help="inputs per task")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed passes over the dataset per cluster (the fastest counts)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                        help="the cluster sizes to run (worker processes)")
    parser.add_argument("--shared", action="store_true",
                        help="workers load the library from its path (a path every machine "
                             "shares) instead of a copy shipped with client.upload_file")
    parser.add_argument("--json", help="also write the results here")
    return parser.parse_args()


def dataset(model, count):
    """`count` random inputs of the model, each a list of arrays (one per
    model input, in order)."""
    rng = np.random.default_rng(0)
    return [[rng.standard_normal(t.shape).astype(t.dtype) for t in model.inputs]
            for _ in range(count)]


def as_tuple(outputs):
    return outputs if isinstance(outputs, tuple) else (outputs,)


def shipped_copy(library, scratch):
    """The library under a name of its own build (its cache directory's):
    workers keep what client.upload_file ships by file name, and every
    model compiled from a model.onnx builds a model.so."""
    path = pathlib.Path(library)
    copy = pathlib.Path(scratch) / f"{path.parent.name}-{path.name}"
    shutil.copyfile(path, copy)
    return str(copy)


def run_cluster(workers, library, name, batches, shared, repeat):
    """Maps `batches` over a LocalCluster of `workers` processes, `repeat`
    times; returns (the outputs in dataset order, the seconds of the fastest
    pass, loads per worker)."""
    from dask.distributed import Client, LocalCluster
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.upload_file(cgc_tasks.__file__)
        target = library
        if not shared:
            with tempfile.TemporaryDirectory() as scratch:
                copy = shipped_copy(library, scratch)
                client.upload_file(copy)  # read now, sent to every worker
            target = os.path.basename(copy)
        client.run(cgc_tasks.warm, target, name)
        seconds = []
        for _ in range(repeat):
            start = time.perf_counter()
            # The batches go to the workers first (spread over them), not
            # inside the task graph through the scheduler.
            data = client.scatter(batches, hash=False)
            futures = client.map(cgc_tasks.infer_batch, [target] * len(batches),
                                 [name] * len(batches), data, pure=False)
            results = client.gather(futures)
            seconds.append(time.perf_counter() - start)
            del data, futures
        loads = client.run(cgc_tasks.loads)
    return [y for batch in results for y in batch], min(seconds), loads


def main():
    args = arguments()
    # 1 executor x 1 thread: each worker process uses one core.
    model = cgc.compile(args.model, executors=1, threads=1)
    library, name = model.library, model.name
    data = dataset(model, args.inputs)
    local_seconds = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        expected = [as_tuple(model(*x)) for x in data]
        local_seconds.append(time.perf_counter() - start)
    local_seconds = min(local_seconds)
    batches = [data[i:i + args.batch] for i in range(0, len(data), args.batch)]
    print(f"{name}: {len(data)} inputs in {len(batches)} batches; library {library}")
    print(f"  1 process, no Dask: {len(data) / local_seconds:.0f} inferences/s")
    report = {"model": name, "library": library, "inputs": len(data), "batches": len(batches),
              "local_per_second": len(data) / local_seconds, "clusters": []}
    failed = False
    for workers in args.workers:
        outputs, seconds, loads = run_cluster(workers, library, name, batches, args.shared,
                                              args.repeat)
        equal = len(outputs) == len(expected) and all(
            len(as_tuple(y)) == len(e) and all(np.array_equal(a, b) for a, b in zip(as_tuple(y), e))
            for y, e in zip(outputs, expected))
        counts = sorted(count for per_worker in loads.values() for count in per_worker.values())
        once = len(loads) == workers and counts == [1] * workers
        failed |= not (equal and once)
        print(f"  {workers} worker(s): {len(data) / seconds:.0f} inferences/s; outputs "
              f"{'equal to' if equal else 'DIFFER from'} one process's; loads per worker "
              f"{counts}")
        report["clusters"].append({"workers": workers, "per_second": len(data) / seconds,
                                   "equal": equal, "loads": counts})
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
