"""Runs `cgc tune` on corpus models and collects, per model, the layers
whose measured variant (with its setting: Winograd's form, the packed GEMM's
depth step) differs from the default, and the model's time with the
defaults and with the choices, which tune itself times in alternated rounds
before it keeps them. Writes bench/results/NAME.md.

Usage: /usr/bin/python3 bench/tune.py [--cgc CGC] [--only a,b,c]
           [--budget 150] [--rounds 3] [--target T] [--name tune]
(bench/check.sh makes the corpus)
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import BENCH_DIR, ROOT, load_case  # noqa: E402

DEFAULT_MODELS = "resnet50,googlenet,inception_v3,squeezenet1_1,mobilenet_v2,stft_frontend"
LAYER = re.compile(r"^tune: layer (\S+): (\S+) ([\d.]+) us -> (\S+) ([\d.]+) us$")
CONFIRM = re.compile(r"^tune: variants: model ([\d.]+) ms with the defaults, ([\d.]+) ms with "
                     r"(\d+) layer\(s\) changed \((\d+) rounds alternated\): (\w+)$")


def tune(cgc, case_dir, budget, rounds, target):
    """tune's log lines for one corpus case."""
    _, model, data, bindings = load_case(case_dir)
    with tempfile.TemporaryDirectory() as out:
        command = [cgc, "tune", model, "--inputs", data, "-o", out, "--budget", str(budget),
                   "--rounds", str(rounds)] + bindings
        command += ["--target", target] if target else []
        result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"cgc tune {case_dir} failed: {result.stderr.strip()[-300:]}")
    return (result.stderr + result.stdout).splitlines()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgc", default=os.path.join(ROOT, "install", "bin", "cgc"))
    parser.add_argument("--corpus", default=os.path.join(BENCH_DIR, "corpus"))
    parser.add_argument("--only", default=DEFAULT_MODELS)
    parser.add_argument("--budget", type=float, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", default="")
    parser.add_argument("--name", default="tune")
    args = parser.parse_args()
    lines = [f"`bench/tune.py --budget {args.budget:g} --rounds {args.rounds}"
             f"{' --target ' + args.target if args.target else ''}`: the layers whose "
             "measured variant differs from the default, and the model with the defaults "
             "and with the choices, alternated by tune before it keeps them.", "",
             "| model | layers changed | defaults (ms) | tuned (ms) | rounds | kept |",
             "|---|---:|---:|---:|---:|---|"]
    layers = ["", "| model | layer | default | us | tuned | us |", "|---|---|---|---:|---|---:|"]
    for name in args.only.split(","):
        print(f"tuning {name} ...", flush=True)
        log = tune(os.path.abspath(args.cgc), os.path.join(args.corpus, name), args.budget,
                   args.rounds, args.target)
        confirmed = [m for m in map(CONFIRM.match, log) if m]
        if confirmed:
            before, after, changed, rounds, kept = confirmed[-1].groups()
            lines.append(f"| {name} | {changed} | {before} | {after} | {rounds} | {kept} |")
        else:
            verdict = next((l[len("tune: "):] for l in log if l.startswith("tune: variants")),
                           "no variant trial")
            lines.append(f"| {name} | 0 | - | - | - | {verdict} |")
        for m in filter(None, map(LAYER.match, log)):
            layers.append(f"| {name} | {m[1]} | {m[2]} | {m[3]} | {m[4]} | {m[5]} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines + layers) + "\n"
    path = os.path.join(BENCH_DIR, "results", args.name + ".md")
    with open(path, "w") as f:
        f.write(text)
    print(text + f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
