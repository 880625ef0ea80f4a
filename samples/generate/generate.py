"""cgc generation sample in Python: greedy decoding with the decoder of
prefill.onnx compiled once for every number of new tokens and every cache
length (dims={"seq": (1, 16), "past": (0, 48)}) with its key/value caches
kept in place (cache_in_place=True): the prompt goes in one call (in calls
of up to 16 tokens where it is longer), then one token per call; each call
sets the two lengths and feeds the new tokens, and the present_* a call
writes are the next call's past_*, without a copy. Prints the tokens and
the calls per second.

Usage: python3 samples/generate/generate.py [PROMPT] [TOKENS]
"""

import os
import sys
import time

import numpy as np

import cgc

SEQ, PAST = (1, 16), (0, 48)  # seq + past within the model's 64 positions


def main():
    prompt = (sys.argv[1] if len(sys.argv) > 1 else "cgc ").encode()
    tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    model = cgc.compile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "prefill.onnx"),
                        dims={"seq": SEQ, "past": PAST}, cache_in_place=True)
    ids, generated, seconds, calls, past = list(prompt), [], 0.0, 0, 0
    while len(generated) < tokens:
        seq = min(SEQ[1], len(prompt) - past) if past < len(prompt) else 1
        start = time.perf_counter()
        model.set_dim("past", past)  # the caches hold `past` positions
        model.set_dim("seq", seq)
        logits = model.run({"ids": np.array([ids[past:past + seq]], np.int64)},
                           copy=False)["logits"]
        seconds += time.perf_counter() - start
        calls, past = calls + 1, past + seq
        if past >= len(prompt):
            ids.append(int(np.argmax(logits[0, -1])))
            generated.append(ids[-1])
    print("tokens:", " ".join(map(str, generated)))
    print("text:", "".join(chr(t) if 32 <= t < 127 else f"\\x{t:02x}" for t in generated))
    rate = calls / seconds if seconds else 0.0
    print(f"{calls} calls in {seconds * 1e3:.3f} ms: {rate:.0f} calls/s "
          f"({model.placement})")


if __name__ == "__main__":
    sys.exit(main())
