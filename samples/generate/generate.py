"""cgc generation sample in Python: greedy decoding with the decoder step of
decoder.onnx compiled once for every cache length (dims={"past": (0, 63)})
with its key/value caches kept in place (cache_in_place=True): each step
sets the cache's length and feeds the last token; the present_* a step
writes are the next step's past_*, without a copy. Prints the tokens and
the steps per second.

Usage: python3 samples/generate/generate.py [PROMPT] [TOKENS]
"""

import os
import sys
import time

import numpy as np

import cgc


def main():
    prompt = (sys.argv[1] if len(sys.argv) > 1 else "cgc ").encode()
    tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    model = cgc.compile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "decoder.onnx"),
                        dims={"past": (0, 63)}, cache_in_place=True)
    ids, generated, seconds = list(prompt), [], 0.0
    for step in range(len(ids) - 1 + tokens):
        start = time.perf_counter()
        model.set_dim("past", step)  # the caches hold `step` positions
        logits = model.run({"ids": np.array([[ids[step]]], np.int64)}, copy=False)["logits"]
        seconds += time.perf_counter() - start
        if step + 1 >= len(ids):
            ids.append(int(np.argmax(logits)))
            generated.append(ids[-1])
    print("tokens:", " ".join(map(str, generated)))
    print("text:", "".join(chr(t) if 32 <= t < 127 else f"\\x{t:02x}" for t in generated))
    steps = len(ids) - 1
    print(f"{steps} steps in {seconds * 1e3:.3f} ms: {steps / seconds:.0f} steps/s "
          f"({model.placement})")


if __name__ == "__main__":
    sys.exit(main())
