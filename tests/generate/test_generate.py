#!/usr/bin/python3
"""The generation sample (samples/generate): greedy decoding from C++
(cgc_generate, built by cgc_add_graph with DIMS seq=1..16 past=0..48: the
prompt in one call, or two where it is longer than 16 tokens, then a token
per call) and from Python (generate.py, cgc.compile with dims) gives the
tokens PyTorch's own greedy decoding of the same model (one token at a
time) gives; a cache past the bound, caches of
different lengths and a token outside the vocabulary are errors naming the
dimension, the inputs or the node.

Usage: test_generate.py CGC_GENERATE   (PYTHONPATH holds the cgc package)
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "..", "samples", "generate")
sys.path.insert(0, SAMPLE)
import make_decoder  # noqa: E402

failures = []


def check(cond, what):
    print("ok  " if cond else "FAIL", what)
    if not cond:
        failures.append(what)


def tokens_of(output):
    line = next(l for l in output.splitlines() if l.startswith("tokens:"))
    return [int(t) for t in line.split()[1:]]


def main():
    app = sys.argv[1]
    expected = make_decoder.greedy(b"cgc ", 40)
    check(len(set(expected)) > 3, f"PyTorch's tokens vary ({expected[:8]}...)")
    out = subprocess.run([app, "cgc ", "40"], capture_output=True, text=True, timeout=120)
    check(out.returncode == 0, f"cgc_generate runs ({out.stderr.strip()})")
    if out.returncode == 0:
        check(tokens_of(out.stdout) == expected, "C++: the tokens PyTorch's greedy decoding gives")
        print(out.stdout.strip().splitlines()[-1])
    out = subprocess.run([sys.executable, os.path.join(SAMPLE, "generate.py"), "cgc ", "40"],
                         capture_output=True, text=True, timeout=300)
    check(out.returncode == 0, f"generate.py runs ({out.stderr.strip()[-300:]})")
    if out.returncode == 0:
        check(tokens_of(out.stdout) == expected, "Python: the tokens PyTorch's greedy decoding gives")
        print(out.stdout.strip().splitlines()[-1])
    # A prompt longer than seq's bound goes in two calls.
    long_prompt = b"the quick brown fox jumps"
    out = subprocess.run([app, long_prompt.decode(), "20"], capture_output=True, text=True,
                         timeout=120)
    check(out.returncode == 0 and tokens_of(out.stdout) == make_decoder.greedy(long_prompt, 20),
          f"C++: a prompt of {len(long_prompt)} tokens in two calls ({out.stderr.strip()})")
    out = subprocess.run([app, "cgc ", "70"], capture_output=True, text=True, timeout=120)
    check(out.returncode == 1 and "'past' is 49, outside its bounds 0..48" in out.stderr,
          f"C++: a cache past the bound is an error naming the dimension ({out.stderr.strip()})")

    import cgc
    model = cgc.compile(os.path.join(SAMPLE, "decoder.onnx"), dims={"past": (0, 63)})
    ids = np.array([[7]], np.int64)

    def cache(*lengths):
        return [np.zeros((1, 2, n, 32), np.float32) for n in lengths]

    for label, args, error, words in [
            ("a cache past the bound", [ids, *cache(64, 64, 64, 64)], ValueError,
             ["'past' is 64", "0..63"]),
            ("past_k and past_v of different lengths", [ids, *cache(3, 4, 3, 3)], ValueError,
             ["past_v0", "past_k0"]),
            ("a token outside the vocabulary", [np.array([[300]], np.int64), *cache(3, 3, 3, 3)],
             cgc.RunError, ["Gather", "out of range"])]:
        try:
            model(*args)
            check(False, f"Python: {label} is an error")
        except error as e:
            check(all(w in str(e) for w in words), f"Python: {label}: {e}")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
