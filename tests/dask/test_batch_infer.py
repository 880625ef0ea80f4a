"""samples/dask/batch_infer.py on a LocalCluster (a scheduler and worker
processes, no network beyond this machine): the outputs gathered from the
workers equal one process's, each worker loads the library once (not per
task), with 1 and with 2 workers, both with the library shipped to the
workers (client.upload_file) and read from a shared path. Skips (exit 77)
without Dask's distributed.
Usage: test_batch_infer.py WORK_DIR (PYTHONPATH at the cgc package)"""

import json
import pathlib
import subprocess
import sys

try:
    import distributed  # noqa: F401
except ImportError:
    print("skipped: Dask's distributed is not installed (python3-distributed)")
    sys.exit(77)

SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "samples" / "dask" / "batch_infer.py"


def run(work, *flags):
    report = work / ("report" + "".join(flags).replace("-", "_") + ".json")
    subprocess.run([sys.executable, str(SAMPLE), "--json", str(report), *flags], check=True,
                   timeout=240)
    return json.loads(report.read_text())


def main():
    work = pathlib.Path(sys.argv[1])
    work.mkdir(parents=True, exist_ok=True)
    failures = []
    for flags in [(), ("--shared", "--workers", "2")]:
        report = run(work, *flags)
        expected = [1, 2] if not flags else [2]
        if report["inputs"] != 64 or report["batches"] != 8:
            failures.append(f"{flags}: {report['inputs']} inputs in {report['batches']} batches")
        if [c["workers"] for c in report["clusters"]] != expected:
            failures.append(f"{flags}: clusters of {[c['workers'] for c in report['clusters']]}")
        for cluster in report["clusters"]:
            workers = cluster["workers"]
            if not cluster["equal"]:
                failures.append(f"{flags}, {workers} worker(s): outputs differ from one process's")
            if cluster["loads"] != [1] * workers:
                failures.append(f"{flags}, {workers} worker(s): loads per worker "
                                f"{cluster['loads']}, not one each")
            if not cluster["per_second"] > 0:
                failures.append(f"{flags}, {workers} worker(s): no throughput")
    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
