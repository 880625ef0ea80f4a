"""The generation sample's model: a small byte-level decoder step (2 layers,
2 heads of 32, 64 positions, a vocabulary of the 256 byte values; seeded
random weights), exported by PyTorch with a key/value cache whose length
`past` is symbolic, as every decoder export writes it: inputs `ids` [1, 1]
and per layer `past_k<i>`, `past_v<i>` [1, 2, past, 32]; outputs `logits`
[1, 1, 256] and `present_*` of length past + 1.

`greedy(prompt, steps)` is PyTorch's own greedy decoding of the same model,
which tests/generate compares the samples' tokens with.

With --prefill, the number of new tokens `seq` is symbolic too (`ids`
[1, seq], `logits` [1, seq, 256], `present_*` of length past + seq): a
prompt fed in one call, then one token per call. The samples run that
export (prefill.onnx); decoder.onnx, the default, is the one-token step.

Usage: /usr/bin/python3 samples/generate/make_decoder.py [OUT.onnx] [--prefill]
"""

import math
import os
import sys

import torch
from torch import nn

LAYERS, HEADS, HEAD, POSITIONS, VOCAB = 2, 2, 32, 64, 256


class Block(nn.Module):
    """GPT-2's block for new tokens over a cache: the causal mask sliced from
    a registered [1, 1, P, P] buffer."""

    def __init__(self, heads, head, positions):
        super().__init__()
        self.heads, self.head = heads, head
        hid = heads * head
        self.ln1, self.ln2 = nn.LayerNorm(hid), nn.LayerNorm(hid)
        self.qkv, self.proj = nn.Linear(hid, 3 * hid), nn.Linear(hid, hid)
        self.fc, self.out = nn.Linear(hid, 4 * hid), nn.Linear(4 * hid, hid)
        self.register_buffer("mask", torch.tril(torch.ones(positions, positions)).view(
            1, 1, positions, positions))

    def forward(self, x, past_k, past_v):
        b, t, hid = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(hid, dim=2)
        q, k, v = (z.view(b, t, self.heads, self.head).transpose(1, 2) for z in (q, k, v))
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        att = q @ k.transpose(-1, -2) / math.sqrt(self.head)
        n = k.shape[2]
        att = att.masked_fill(self.mask[:, :, n - t:n, :n] == 0, -1e30)
        y = (torch.softmax(att, -1) @ v).transpose(1, 2).reshape(b, t, hid)
        x = x + self.proj(y)
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x)))), k, v


class Decoder(nn.Module):
    """A GPT-2-shaped decoder step: token ids [1, t] and each layer's cache
    [1, heads, past, head]; its positions Range(past, past + t) from the
    cache's Shape, as the exporter writes them. bench/decoder_bench.py and
    tests/dims build theirs from it too."""

    def __init__(self, layers=LAYERS, heads=HEADS, head=HEAD, positions=POSITIONS, vocab=VOCAB):
        super().__init__()
        hid = heads * head
        self.wte, self.wpe = nn.Embedding(vocab, hid), nn.Embedding(positions, hid)
        self.blocks = nn.ModuleList(Block(heads, head, positions) for _ in range(layers))
        self.lnf = nn.LayerNorm(hid)

    def forward(self, ids, *past):
        p = past[0].shape[2]
        x = self.wte(ids) + self.wpe(torch.arange(p, p + ids.shape[1]).unsqueeze(0))
        present = []
        for i, block in enumerate(self.blocks):
            x, k, v = block(x, past[2 * i], past[2 * i + 1])
            present += [k, v]
        return (self.lnf(x) @ self.wte.weight.t(), *present)


def model():
    torch.manual_seed(2026)
    dec = Decoder().eval()
    with torch.no_grad():  # GPT-2's embedding scale, so the blocks shape the logits
        dec.wte.weight.mul_(0.02)
        dec.wpe.weight.mul_(0.02)
    return dec


def greedy(prompt, steps):
    """The tokens PyTorch's greedy decoding appends to `prompt` (bytes)."""
    dec, out = model(), []
    past = [torch.zeros(1, HEADS, 0, HEAD) for _ in range(2 * LAYERS)]
    ids = list(prompt)
    with torch.no_grad():
        for step in range(len(ids) - 1 + steps):
            logits, *past = dec(torch.tensor([[ids[step]]]), *past)
            if step + 1 >= len(ids):
                ids.append(int(logits.argmax()))
                out.append(ids[-1])
    return out


def export(dec, path, prefill=False):
    """Export `dec` with its cache length `past` symbolic; with `prefill`,
    the number of new tokens too (`ids` [1, seq], `logits` [1, seq, vocab],
    `present_*` of length past + seq): a prompt in one call."""
    heads, head = dec.blocks[0].heads, dec.blocks[0].head
    caches = [f"past_{kv}{i}" for i in range(len(dec.blocks)) for kv in "kv"]
    presents = ["logits"] + [c.replace("past", "present") for c in caches]
    dyn = {c: {2: "past"} for c in caches}
    dyn.update({c: {2: "past_plus_seq" if prefill else "past_plus_1"} for c in presents[1:]})
    if prefill:
        dyn.update({"ids": {1: "seq"}, "logits": {1: "seq"}})
    ids = torch.tensor([[3, 4]] if prefill else [[3]])
    with torch.no_grad():
        torch.onnx.export(dec, (ids, *[torch.zeros(1, heads, 5, head)] * len(caches)), path,
                          input_names=["ids"] + caches, output_names=presents,
                          dynamic_axes=dyn, opset_version=17)


def main():
    args = [a for a in sys.argv[1:] if a != "--prefill"]
    out = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                            "decoder.onnx")
    export(model(), out, prefill="--prefill" in sys.argv)
    print(out)


if __name__ == "__main__":
    main()
