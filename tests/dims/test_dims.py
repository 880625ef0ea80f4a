#!/usr/bin/python3
"""End-to-end test of runtime-variable dimensions (cgc --dim NAME=LO..HI[:STEP]).

It shows that one compiled model, with symbolic dimensions bound to ranges
instead of fixed sizes, runs correctly at every size in the range:
  * a BERT-style encoder (dynamic batch and seq; position embedding sliced by
    seq, hand-written multi-head attention with a padding mask) matches PyTorch
    at (batch, seq) from (1, 1) to (8, 512), also with seq restricted to
    multiples of 8;
  * a small residual CNN with a dynamic batch and image side matches PyTorch
    at batch 1..16 and sides 16..64 (multiples of 8), and at sides 1, 7 and
    33 of 1..64 (its pool's positions the square of a derived side);
  * a GPT-2-shaped decoder step (torch.onnx.export, its positions and
    causal mask computed from the cache's length) compiled once with
    --dim past=0..63 matches PyTorch at an empty cache, 1, 37 and the bound;
    exported for prefill (several new tokens at once), compiled once with
    --dim seq=1..32 --dim past=0..200, it matches PyTorch from one token
    on an empty cache to 32 on 200, also with its caches kept in place;
  * a [seq, seq] mask filled at run time (ConstantOfShape, Trilu) matches
    numpy's running sums at four sizes;
  * a ResNet-style CNN (a 7x7 stride-2 stem, a max pool, stride-2 blocks)
    with variable batch, height and width and no multiple matches PyTorch
    at odd sides (1x33x47, 3x61x95, ...) and at an empty batch;
  * a CNN of 32-channel 3x3 layers with variable batch and side, whose
    layers run Packed on small planes and Winograd on large ones, matches
    PyTorch at sizes that take each (the general code picks per call);
  * a 3-channel 1x1 layer and a 7x7 stride-2 stem with a fused 3x3
    stride-2 max pool, whose variant at large images (FewChannels) is not
    the GEMMs' of small ones, match PyTorch from 1x1 images to the bounds;
  * the encoder again with seq as a range in --shape (input_ids=1x1..256);
  * data-dependent sizes (NonZero, Compress, TopK with a run-time k,
    Unique) of a [batch, seq] input match numpy at five sizes, in the
    general code and in specialised paths; so do If, Loop (its trip count
    the variable seq) and Scan, an If on seq > 32 (its condition computed
    at run time), and the CNN in int8 (--quantize), calibrated
    with cgc calibrate --dim on input sets of three sizes; --observe's
    statistics at the run's sizes;
  * --specialize: the encoder with static code for seq=128 (its profile
    shows that 1x128 ran it and the other sizes the general code), also
    built for two targets; the CNN with a wholly static path for batch 1
    and 3 at side 32; a recompile with a profile of runs at 1x128, or with
    the profile of cgc tune --dim at 1x128, specialising that size; cgc
    tune --specialize tuning the path on its own, and a compile with its
    profile reading that tuning;
and that bad sizes and bad --dim flags fail with exit code 1 and one stderr line naming the
dimension (out of range, off the step, inputs that disagree, an unbound
dimension or one the graph fixes at compile time, malformed or unknown
--dim, a --specialize size beyond the bounds or off the multiple), and that
cgc run --bench --sweep times each combination of sizes.

Usage: /usr/bin/python3 tests/dims/test_dims.py PATH_TO_CGC WORKDIR [--only-data]
  --only-data: write the models and test data into WORKDIR and stop.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples",
                                "generate"))
import make_decoder as decoder_sample  # noqa: E402

HID, HEADS, VOCAB = 32, 4, 100
ENC_SIZES = [(1, 1), (1, 7), (2, 64), (1, 128), (3, 200), (8, 512)]
CNN_SIZES = [(1, 32), (3, 32), (16, 32), (2, 16), (5, 56)]  # (batch, side)
CNN_ODD_SIZES = [(1, 1), (3, 7), (1, 33)]  # --dim side=1..64: odd sides halved, squared
CF_SIZES = [(1, 1), (1, 7), (2, 30), (4, 64), (3, 5)]  # (batch, seq)
DD_SIZES = [(1, 1, 1), (1, 7, 3), (2, 30, 30), (4, 64, 5), (3, 5, 2)]  # (batch, seq, k)
RES_SIZES = [(1, 33, 47), (3, 61, 95), (2, 96, 96), (4, 32, 77), (0, 45, 50)]  # (batch, h, w)
# (batch, side): a 32-channel 3x3 layer runs Packed on small planes and
# Winograd, F(2x2) or F(4x4), on large ones; compiled once, it picks per call.
WIDE_SIZES = [(1, 5), (2, 9), (1, 16), (3, 27), (2, 48)]
# (batch, height, width): a stem's FewChannels takes 256 output positions
# or more; the general code runs every size down to a 1x1 image.
STEM_SIZES = [(1, 1, 1), (2, 1, 6), (1, 3, 3), (2, 15, 17), (2, 64, 64)]
RES_NARROW = (1, 41, 33)  # within --dim height=32..48, width=32..48 and none of its samples
DEC_LAYERS, DEC_HEADS, DEC_HEAD, DEC_POS = 2, 2, 8, 64  # the decoder step: layers, heads, head width, positions
DEC_PASTS = [0, 1, 37, DEC_POS - 1]  # cache lengths: empty, one, odd, the bound
# The prefill export: (new tokens, cache length) with --dim seq=1..32 --dim past=0..200.
PREFILL_SIZES = [(1, 0), (1, 1), (3, 3), (7, 0), (32, 200), (5, 37)]
PREFILL_POS = 232
FILLED_SEQS = [1, 5, 17, 64]


class Layer(nn.Module):
    def __init__(self, hid, heads, ffn):
        super().__init__()
        self.hid, self.heads = hid, heads
        self.q, self.k, self.v, self.o = (nn.Linear(hid, hid) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(hid), nn.LayerNorm(hid)
        self.ff1, self.ff2 = nn.Linear(hid, ffn), nn.Linear(ffn, hid)

    def forward(self, x, mask_bias):
        b, s, d = x.shape[0], x.shape[1], self.hid // self.heads
        q, k, v = (f(x).reshape(b, s, self.heads, d).transpose(1, 2)
                   for f in (self.q, self.k, self.v))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + mask_bias, dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, s, self.hid)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.ff2(torch.nn.functional.gelu(self.ff1(x))))


class Encoder(nn.Module):
    """BERT-style (bench/dims_bench.py makes a larger one)."""

    def __init__(self, hid=HID, heads=HEADS, ffn=2 * HID, layers=2, vocab=VOCAB):
        super().__init__()
        self.emb = nn.Embedding(vocab, hid)
        self.pos = nn.Parameter(torch.randn(1, 512, hid) * 0.1)
        self.layers = nn.ModuleList(Layer(hid, heads, ffn) for _ in range(layers))

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        x = self.emb(input_ids) + self.pos[:, :seq]
        mask_bias = (1.0 - attention_mask)[:, None, None, :] * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c3 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16, 10)
        for bn in (self.b1, self.b2):  # non-trivial running statistics
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.2, 0.2)

    def forward(self, image):
        a = torch.relu(self.b1(self.c1(image)))
        x = torch.relu(self.b2(self.c2(a))) + a
        x = torch.relu(self.c3(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class ResBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b1, self.b2 = nn.BatchNorm2d(cout), nn.BatchNorm2d(cout)
        self.down = None if stride == 1 else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNetLike(nn.Module):
    """ResNet's shape at small widths: a 7x7 stride-2 stem and a 3x3
    stride-2 max pool, stride-2 blocks, a global average pool: every side
    rounded at each stride."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.blocks = nn.Sequential(ResBlock(8, 8, 1), ResBlock(8, 16, 2), ResBlock(16, 16, 2))
        self.fc = nn.Linear(16, 10)

    def forward(self, image):
        x = self.blocks(self.stem(image))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Wide(nn.Module):
    """Two 32-channel 3x3 layers with a residual: the layers whose variant
    changes with the plane's size."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(32, 32, 3, padding=1), nn.Conv2d(32, 32, 3, padding=1)

    def forward(self, x):
        return self.c2(torch.relu(self.c1(x))) + x


class Stems(nn.Module):
    """A 3-channel 1x1 layer then a 3x3 one, and a 7x7 stride-2 stem with
    a 3x3 stride-2 max pool: FewChannels at large images, Pointwise, Im2col
    or Packed at small ones."""

    def __init__(self):
        super().__init__()
        self.pw, self.c = nn.Conv2d(3, 16, 1), nn.Conv2d(16, 16, 3, padding=1)
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3), nn.ReLU(), nn.MaxPool2d(3, 2, 1))

    def forward(self, x):
        return self.c(torch.relu(self.pw(x))), self.stem(x)


def make_stems(work, rng):
    """Stems exported with symbolic batch, height and width, and its
    outputs from PyTorch at STEM_SIZES."""
    stems = Stems().eval()
    image = {0: "batch", 2: "height", 3: "width"}
    with torch.no_grad():
        torch.onnx.export(stems, (torch.zeros(1, 3, 8, 8),), os.path.join(work, "stems.onnx"),
                          input_names=["image"], output_names=["out", "pooled"],
                          opset_version=17, dynamic_axes={"image": image, "out": image,
                                                          "pooled": {0: "batch"}})
        for b, h, w in STEM_SIZES:
            img = rng.standard_normal((b, 3, h, w), dtype=np.float32)
            write_set(os.path.join(work, f"stems_{b}x{h}x{w}"), [img],
                      [o.numpy() for o in stems(torch.from_numpy(img))])


def make_wide(work, rng):
    """Wide exported with symbolic batch and side, and its outputs from
    PyTorch at WIDE_SIZES."""
    wide = Wide().eval()
    with torch.no_grad():
        export(wide, (torch.zeros(1, 32, 8, 8),), os.path.join(work, "wide.onnx"),
               ["image", "out"], {"image": {0: "batch", 2: "side", 3: "side"},
                                  "out": {0: "batch", 2: "side", 3: "side"}})
        for b, side in WIDE_SIZES:
            img = rng.standard_normal((b, 32, side, side), dtype=np.float32)
            write_set(os.path.join(work, f"wide_{b}x{side}"), [img],
                      [wide(torch.from_numpy(img)).numpy()])


def Decoder(layers=DEC_LAYERS, vocab=VOCAB, positions=DEC_POS):
    """A GPT-2-shaped decoder step (samples/generate/make_decoder.py's):
    token ids [1, seq] and each layer's cache [1, heads, past, head]."""
    return decoder_sample.Decoder(layers, DEC_HEADS, DEC_HEAD, positions, vocab)


def make_resnet(work, rng):
    """ResNetLike exported with symbolic batch, height and width, and its
    outputs from PyTorch at RES_SIZES and RES_NARROW."""
    res = ResNetLike().eval()
    with torch.no_grad():
        torch.onnx.export(res, (torch.zeros(2, 3, 64, 64),), os.path.join(work, "resnet.onnx"),
                          input_names=["image"], output_names=["logits"], opset_version=17,
                          dynamic_axes={"image": {0: "batch", 2: "height", 3: "width"},
                                        "logits": {0: "batch"}})
        for b, h, w in RES_SIZES + [RES_NARROW]:
            img = rng.standard_normal((b, 3, h, w), dtype=np.float32)
            write_set(os.path.join(work, f"resnet_{b}x{h}x{w}"), [img],
                      [res(torch.from_numpy(img)).numpy()])


def make_decoder(work, rng):
    """The decoder step exported with a symbolic cache length, and its
    outputs from PyTorch at each of DEC_PASTS; and the prefill export (a
    symbolic number of new tokens too) of a decoder with room for
    PREFILL_POS positions, with its outputs at each of PREFILL_SIZES."""
    for name, dec, sizes in (("decoder", Decoder().eval(), [(1, p) for p in DEC_PASTS]),
                             ("prefill", Decoder(positions=PREFILL_POS).eval(), PREFILL_SIZES)):
        decoder_sample.export(dec, os.path.join(work, f"{name}.onnx"), prefill=name == "prefill")
        for s, p in sizes:
            ids = rng.integers(0, VOCAB, size=(1, s), dtype=np.int64)
            past = [rng.standard_normal((1, DEC_HEADS, p, DEC_HEAD)).astype(np.float32)
                    for _ in range(2 * DEC_LAYERS)]
            with torch.no_grad():
                outs = dec(torch.from_numpy(ids), *map(torch.from_numpy, past))
            write_set(os.path.join(work, f"{name}_{p}" if name == "decoder" else
                                   f"{name}_{s}x{p}"), [ids] + past, [o.numpy() for o in outs])


def export(model, args, path, names, dyn):
    torch.onnx.export(model, args, path, opset_version=14, input_names=names[:-1],
                      output_names=names[-1:], dynamic_axes=dyn)
    # The exporter leaves the encoder's hidden size as a made-up symbol
    # ('Addhidden_dim_2'); make every output dim that is not dynamic static.
    m, shape = onnx.load(path), model(*args).shape
    for i, d in enumerate(m.graph.output[0].type.tensor_type.shape.dim):
        if i not in dyn[names[-1]]:
            d.dim_value = shape[i]
    onnx.checker.check_model(m)
    onnx.save(m, path)


def write_set(d, inputs, outputs):
    os.makedirs(d, exist_ok=True)
    for prefix, arrs in (("input", inputs), ("output", outputs)):
        for i, a in enumerate(arrs):
            with open(os.path.join(d, f"{prefix}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a).SerializeToString())


def encoder_inputs(rng, b, s):
    ids = rng.integers(0, VOCAB, size=(b, s), dtype=np.int64)
    mask = np.ones((b, s), np.float32)
    mask[1:, s - s // 4:] = 0.0  # rows after the first: last quarter is padding
    return ids, mask


def make_data_dependent(work, rng):
    """Data-dependent sizes of a [batch, seq] input: NonZero (transposed),
    Compress, TopK with a run-time k (its output's inner axis), Unique; and a
    graph that reads such an output, which --dim refuses. Expected outputs
    from numpy."""
    h, T = onnx.helper, onnx.TensorProto
    const = [numpy_helper.from_array(np.array(0, np.float32), "zero"),
             numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array([-1], np.int64), "flat")]
    nodes = [h.make_node("Greater", ["x", "zero"], ["pos"]),
             h.make_node("NonZero", ["pos"], ["idx"]),
             h.make_node("Transpose", ["idx"], ["where"]),
             h.make_node("Reshape", ["pos", "flat"], ["posf"]),
             h.make_node("Compress", ["x", "posf"], ["positive"]),
             h.make_node("TopK", ["x", "k"], ["top", "topi"], axis=1, name="topk"),
             h.make_node("Relu", ["top"], ["toprelu"]),
             h.make_node("Mul", ["x", "two"], ["x2"]),
             h.make_node("Floor", ["x2"], ["fl"]),
             h.make_node("Unique", ["fl"], ["uniq"], sorted=1)]
    inputs = [h.make_tensor_value_info("x", T.FLOAT, ["batch", "seq"]),
              h.make_tensor_value_info("k", T.INT64, [1])]
    outputs = [h.make_tensor_value_info("where", T.INT64, ["n", 2]),
               h.make_tensor_value_info("positive", T.FLOAT, ["m"]),
               h.make_tensor_value_info("toprelu", T.FLOAT, ["batch", "k"]),
               h.make_tensor_value_info("uniq", T.FLOAT, ["u"])]
    for name, extra in (("datadep", []), ("datadep_read", [h.make_node("Neg", ["toprelu"], ["neg"],
                                                                        name="reads_top")])):
        outs = outputs + ([h.make_tensor_value_info("neg", T.FLOAT, ["batch", "k"])]
                          if extra else [])
        m = h.make_model(h.make_graph(nodes + extra, name, inputs, outs, const),
                         opset_imports=[h.make_opsetid("", 13)])
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(work, f"{name}.onnx"))
    for b, s, k in DD_SIZES:
        x = rng.standard_normal((b, s)).astype(np.float32)
        top = np.take_along_axis(x, np.argsort(-x, axis=1, kind="stable")[:, :k], axis=1)
        write_set(os.path.join(work, f"datadep_{b}x{s}"), [x, np.array([k], np.int64)],
                  [np.array(np.nonzero(x > 0)).T.astype(np.int64), x[x > 0],
                   np.maximum(top, 0), np.unique(np.floor(x * 2))])
    write_set(os.path.join(work, "datadep_k_beyond"),
              [np.ones((2, 5), np.float32), np.array([6], np.int64)], [])


def make_filled_mask(work, rng):
    """A [seq, seq] lower triangle of ones made at run time
    (ConstantOfShape of the input's Shape, then Trilu), multiplied by the
    input: running sums, from numpy."""
    h, T = onnx.helper, onnx.TensorProto
    nodes = [h.make_node("Shape", ["x"], ["s"]),
             h.make_node("Gather", ["s", "one"], ["n"]),
             h.make_node("Concat", ["n", "n"], ["square"], axis=0),
             h.make_node("ConstantOfShape", ["square"], ["ones"],
                         value=numpy_helper.from_array(np.ones(1, np.float32))),
             h.make_node("Trilu", ["ones"], ["lower"], upper=0),
             h.make_node("Transpose", ["x"], ["column"], perm=[1, 0]),
             h.make_node("MatMul", ["lower", "column"], ["sums"])]
    graph = h.make_graph(nodes, "filled_mask", [h.make_tensor_value_info("x", T.FLOAT, [1, "seq"])],
                         [h.make_tensor_value_info("sums", T.FLOAT, ["seq", 1])],
                         [numpy_helper.from_array(np.array([1], np.int64), "one")])
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(work, "filled_mask.onnx"))
    for s in FILLED_SEQS:
        x = rng.standard_normal((1, s)).astype(np.float32)
        write_set(os.path.join(work, f"filled_mask_{s}"), [x], [np.cumsum(x, axis=1).T])


def make_control_flow(work, rng):
    """If, Loop and Scan over a [batch, seq] input: a Loop whose trip count
    is seq (Shape and Gather, which cgc folds) carrying a [batch] sum and
    scanning out each column doubled; a Scan over axis 1 (one input in
    reverse) with a running sum, scanned out along axis 1; an If on the
    sign of the total taking x * 2 or x - 1. Expected outputs from numpy."""
    h, T = onnx.helper, onnx.TensorProto
    loop_body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Gather", ["x", "i"], ["col"], axis=1),
         h.make_node("Add", ["acc_in", "col"], ["acc_out"]),
         h.make_node("Add", ["col", "col"], ["twice"])], "loop_body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
         h.make_tensor_value_info("acc_in", T.FLOAT, ["batch"])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []),
         h.make_tensor_value_info("acc_out", T.FLOAT, ["batch"]),
         h.make_tensor_value_info("twice", T.FLOAT, ["batch"])])
    scan_body = h.make_graph(
        [h.make_node("Add", ["s_in", "xt"], ["s_out"]),
         h.make_node("Sub", ["s_out", "rt"], ["y"])], "scan_body",
        [h.make_tensor_value_info("s_in", T.FLOAT, ["batch"]),
         h.make_tensor_value_info("xt", T.FLOAT, ["batch"]),
         h.make_tensor_value_info("rt", T.FLOAT, ["batch"])],
        [h.make_tensor_value_info("s_out", T.FLOAT, ["batch"]),
         h.make_tensor_value_info("y", T.FLOAT, ["batch"])])
    branch = lambda name, op, c: h.make_graph(  # noqa: E731
        [h.make_node(op, ["x", c], [name + "_out"])], name, [],
        [h.make_tensor_value_info(name + "_out", T.FLOAT, ["batch", "seq"])])
    nodes = [
        h.make_node("Shape", ["x"], ["shape"]),
        h.make_node("Gather", ["shape", "one"], ["seq_len"], axis=0),
        h.make_node("ReduceSum", ["x"], ["row_sum0"], keepdims=0, axes=[1]),
        h.make_node("Mul", ["row_sum0", "zero"], ["acc0"]),
        h.make_node("Loop", ["seq_len", "", "acc0"], ["loop_sum", "columns"], body=loop_body,
                    name="sum_loop"),
        h.make_node("Scan", ["acc0", "x", "x"], ["scan_sum", "running"], body=scan_body,
                    num_scan_inputs=2, scan_input_axes=[1, 1], scan_input_directions=[0, 1],
                    scan_output_axes=[1], name="running_scan"),
        h.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
        h.make_node("Greater", ["total", "zero"], ["positive"]),
        h.make_node("If", ["positive"], ["chosen"], then_branch=branch("then", "Mul", "two"),
                    else_branch=branch("else", "Sub", "one_f"), name="sign_if")]
    const = [numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(0, np.float32), "zero"),
             numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array(1, np.float32), "one_f")]
    outputs = [h.make_tensor_value_info("loop_sum", T.FLOAT, ["batch"]),
               h.make_tensor_value_info("columns", T.FLOAT, ["seq", "batch"]),
               h.make_tensor_value_info("scan_sum", T.FLOAT, ["batch"]),
               h.make_tensor_value_info("running", T.FLOAT, ["batch", "seq"]),
               h.make_tensor_value_info("chosen", T.FLOAT, ["batch", "seq"])]
    m = h.make_model(h.make_graph(nodes, "control", [h.make_tensor_value_info(
        "x", T.FLOAT, ["batch", "seq"])], outputs, const), opset_imports=[h.make_opsetid("", 12)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(work, "control.onnx"))
    # An If on seq > 32: its condition computed from the size at run time.
    relu, neg = (h.make_graph([h.make_node(op, ["x"], [op + "_out"])], op, [],
                              [h.make_tensor_value_info(op + "_out", T.FLOAT, ["batch", "seq"])])
                 for op in ("Relu", "Neg"))
    m = h.make_model(h.make_graph(
        nodes[:2] + [h.make_node("Greater", ["seq_len", "limit"], ["long"]),
                     h.make_node("If", ["long"], ["y"], then_branch=relu, else_branch=neg,
                                 name="long_if")], "sized_if",
        [h.make_tensor_value_info("x", T.FLOAT, ["batch", "seq"])],
        [h.make_tensor_value_info("y", T.FLOAT, ["batch", "seq"])],
        const[:1] + [numpy_helper.from_array(np.array(32, np.int64), "limit")]),
        opset_imports=[h.make_opsetid("", 12)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(work, "sized_if.onnx"))
    for b, s in [(2, 7), (3, 40)]:
        x = rng.standard_normal((b, s)).astype(np.float32)
        write_set(os.path.join(work, f"sized_if_{b}x{s}"), [x],
                  [np.maximum(x, 0) if s > 32 else -x])
    for b, s in CF_SIZES:
        x = rng.standard_normal((b, s)).astype(np.float32)
        running = np.cumsum(x, axis=1) - x[:, ::-1]
        chosen = x * 2 if x.sum() > 0 else x - 1
        write_set(os.path.join(work, f"control_{b}x{s}"), [x],
                  [x.sum(axis=1), (2 * x).T.copy(), x.sum(axis=1), running.astype(np.float32),
                   chosen])


def make_data(work):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    os.makedirs(os.path.join(work, "compile_out"), exist_ok=True)
    enc, cnn = Encoder().eval(), Cnn().eval()
    bs = {0: "batch", 1: "seq"}
    with torch.no_grad():
        ids, mask = encoder_inputs(rng, 2, 16)
        export(enc, (torch.from_numpy(ids), torch.from_numpy(mask)),
               os.path.join(work, "encoder.onnx"), ["input_ids", "attention_mask", "hidden"],
               {"input_ids": bs, "attention_mask": bs, "hidden": bs})
        export(cnn, (torch.zeros(2, 3, 32, 32),), os.path.join(work, "cnn.onnx"),
               ["image", "logits"], {"image": {0: "batch", 2: "side", 3: "side"},
                                     "logits": {0: "batch"}})
        for b, s in ENC_SIZES:
            ids, mask = encoder_inputs(rng, b, s)
            out = enc(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
            write_set(os.path.join(work, f"encoder_{b}x{s}"), [ids, mask], [out])
        for b, side in CNN_SIZES + CNN_ODD_SIZES:
            img = rng.standard_normal((b, 3, side, side), dtype=np.float32)
            write_set(os.path.join(work, f"cnn_{b}x{side}"), [img],
                      [cnn(torch.from_numpy(img)).numpy()])
        # A graph that fixes seq (a Reshape to a constant shape).
        shape = numpy_helper.from_array(np.array([1, 64, 4], np.int64), "shape")
        graph = onnx.helper.make_graph(
            [onnx.helper.make_node("Reshape", ["x", "shape"], ["y"], name="pin_seq")], "pinned",
            [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, "seq", 4])],
            [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 64, 4])], [shape])
        onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]),
                  os.path.join(work, "pinned.onnx"))
        # Inputs whose dimensions disagree: batch 2 vs 1, seq 64 vs 128.
        ids, _ = encoder_inputs(rng, 2, 64)
        _, mask = encoder_inputs(rng, 1, 128)
        write_set(os.path.join(work, "encoder_mismatch"), [ids, mask], [])
    make_data_dependent(work, rng)
    make_control_flow(work, rng)
    make_filled_mask(work, rng)
    make_decoder(work, rng)
    make_resnet(work, rng)
    make_wide(work, rng)
    make_stems(work, rng)


def main():
    args = [a for a in sys.argv[1:] if a != "--only-data"]
    if len(args) != 2:
        sys.exit(__doc__)
    cgc, work = os.path.abspath(args[0]), os.path.abspath(args[1])
    make_data(work)
    if "--only-data" in sys.argv:
        print(f"wrote models and data into {work}")
        return

    enc, cnn = os.path.join(work, "encoder.onnx"), os.path.join(work, "cnn.onnx")
    full = ["--dim", "batch=1..8", "--dim", "seq=1..512"]
    step8 = ["--dim", "batch=1..8", "--dim", "seq=8..512:8"]
    failures = []

    def run(label, argv, want_rc=0, must=(), any_of=()):
        """Run cgc; expect want_rc, and for errors one stderr line holding every
        string of `must` and (if given) one of `any_of`."""
        try:
            p = subprocess.run([cgc] + argv, capture_output=True, text=True,
                               timeout=600, env=os.environ)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired as e:
            err = e.stderr or ""
            rc, err = "timeout", err.decode(errors="replace") if isinstance(err, bytes) else err
        ok = rc == want_rc
        if ok and want_rc != 0:  # a cgc that does not know --dim must not pass by accident
            ok = "not expected" not in err and any(
                all(m in line for m in must) and (not any_of or any(a in line for a in any_of))
                for line in err.splitlines())
        if ok:
            print(f"ok {label}")
        else:
            tail = " | ".join(err.strip().splitlines()[-5:])
            print(f"FAIL {label} (exit {rc}, want {want_rc}): {tail}")
            failures.append(label)
        sys.stdout.flush()

    def check(d):
        d = os.path.join(work, d)
        return ["--inputs", d, "--check", d, "--rtol", "1e-3", "--atol", "1e-4"]

    # A decoder step compiled once for every cache length, the empty one
    # too: its positions and mask computed from the cache's length at run time.
    dec = ["--dim", f"past=0..{DEC_POS - 1}"]
    for p in DEC_PASTS:
        run(f"decoder past={p}", ["run", os.path.join(work, "decoder.onnx"), "--quiet"] + dec
            + check(f"decoder_{p}"))
    # The same with its caches kept in place (fed and read densely through
    # set_input and get_output): every past_k/past_v pairs with its present.
    for p in DEC_PASTS:
        run(f"decoder --cache-in-place past={p}",
            ["run", os.path.join(work, "decoder.onnx"), "--quiet", "--cache-in-place"] + dec
            + check(f"decoder_{p}"))
    def inspect_pairs(name, dims, room):
        """cgc inspect lists every past_* -> present_* pair with its room."""
        inspected = subprocess.run([cgc, "inspect", os.path.join(work, f"{name}.onnx"),
                                    "--cache-in-place"] + dims, capture_output=True, text=True)
        pairs = inspected.stdout.count(f"(axis 2, room for {room})")
        if inspected.returncode == 0 and pairs == 2 * DEC_LAYERS and "past_k0 -> present_k0" in \
                inspected.stdout:
            print(f"ok {name} inspect --cache-in-place")
        else:
            print(f"FAIL {name} inspect --cache-in-place: {pairs} pairs\n{inspected.stdout}")
            failures.append(f"{name} inspect")

    inspect_pairs("decoder", dec, DEC_POS)
    # A prompt in one call (prefill): the number of new tokens varies too,
    # and the causal mask is a Slice of a constant at rows and columns that
    # follow both dimensions; kept in place, each call appends seq positions.
    prefill_dims = ["--dim", "seq=1..32", "--dim", "past=0..200"]
    for s, p in PREFILL_SIZES:
        for extra in ([], ["--cache-in-place"]):
            run(" ".join(["prefill"] + extra + [f"seq={s}", f"past={p}"]),
                ["run", os.path.join(work, "prefill.onnx"), "--quiet"] + prefill_dims + extra
                + check(f"prefill_{s}x{p}"))
    inspect_pairs("prefill", prefill_dims, PREFILL_POS)
    run("--cache-in-place without --dim", ["compile", os.path.join(work, "decoder.onnx"),
                                           "--cache-in-place", "--shape", "past_k0=1x2x3x8"],
        want_rc=1, must=["--cache-in-place needs --dim"])
    run("--cache-in-place with --specialize",
        ["compile", os.path.join(work, "decoder.onnx"), "--cache-in-place", "--specialize",
         "past=5", "-o", work] + dec, want_rc=1, must=["--cache-in-place", "--specialize"])
    # A mask filled at run time to a shape that follows seq in two axes.
    for s in FILLED_SEQS:
        run(f"filled mask seq={s}", ["run", os.path.join(work, "filled_mask.onnx"), "--quiet",
                                     "--dim", "seq=1..64"] + check(f"filled_mask_{s}"))
    # Strided convolutions and pools at any side, no multiple: each side
    # divided at run time; and an empty batch.
    for b, h, w in RES_SIZES:
        run(f"resnet {b}x{h}x{w}", ["run", os.path.join(work, "resnet.onnx"), "--quiet", "--dim",
                                    "batch=0..4", "--dim", "height=32..96", "--dim",
                                    "width=32..96"] + check(f"resnet_{b}x{h}x{w}"))
    # Kernels chosen per call: the general code holds each 3x3 layer's
    # variants for small and large planes (ConvParams::alternatives) and
    # matches PyTorch at sizes that take each.
    wide = ["--dim", "batch=1..4", "--dim", "side=4..48"]
    for b, side in WIDE_SIZES:
        run(f"wide {b}x{side}", ["run", os.path.join(work, "wide.onnx"), "--quiet"] + wide
            + check(f"wide_{b}x{side}"))
    out = os.path.join(work, "compile_out", "wide")
    os.makedirs(out, exist_ok=True)
    run("wide compile", ["compile", os.path.join(work, "wide.onnx"), "--quiet", "-o", out] + wide)
    with open(os.path.join(out, "wide.cpp")) as f:
        alternatives = f.read().count(".alternatives = ")
    if alternatives == 2:
        print("ok wide: both 3x3 layers hold alternatives")
    else:
        print(f"FAIL wide: {alternatives} layers hold alternatives, not 2")
        failures.append("wide alternatives")
    # A stem's variant at the bounds takes every smaller image; the GEMM
    # variants that small images prefer are alternatives on its weights.
    stem_dims = ["--dim", "batch=1..2", "--dim", "height=1..64", "--dim", "width=1..64"]
    for b, h, w in STEM_SIZES:
        run(f"stems {b}x{h}x{w}", ["run", os.path.join(work, "stems.onnx"), "--quiet"]
            + stem_dims + check(f"stems_{b}x{h}x{w}"))
    inspected = subprocess.run([cgc, "inspect", os.path.join(work, "stems.onnx")] + stem_dims,
                               capture_output=True, text=True)
    if inspected.returncode == 0 and "FewChannels or Pointwise" in inspected.stdout:
        print("ok stems: the 1x1 layer holds Pointwise beside FewChannels, on its weights")
    else:
        print(f"FAIL stems inspect: no 'FewChannels or Pointwise'\n{inspected.stdout}")
        failures.append("stems alternatives")
    # A narrow range, whose samples two floor divisions fit alike
    # (floor((h + 3) / 4) and floor((h + 4) / 5) + 2 of the stem's output):
    # cgc compiles it where they differ and keeps the one that holds.
    b, h, w = RES_NARROW
    run(f"resnet narrow {b}x{h}x{w}",
        ["run", os.path.join(work, "resnet.onnx"), "--quiet", "--dim", "batch=0..2", "--dim",
         "height=32..48", "--dim", "width=32..48"] + check(f"resnet_{b}x{h}x{w}"))
    for b, s in ENC_SIZES:
        run(f"encoder {b}x{s}", ["run", enc, "--quiet"] + full + check(f"encoder_{b}x{s}"))
    for b, s in ENC_SIZES:
        if s % 8 == 0:
            run(f"encoder seq=8..512:8 {b}x{s}",
                ["run", enc, "--quiet"] + step8 + check(f"encoder_{b}x{s}"))
    for b, side in CNN_SIZES:  # the image side too: a stride-2 layer halves it
        run(f"cnn {b}x{side}", ["run", cnn, "--quiet", "--dim", "batch=1..16",
                                "--dim", "side=16..64:8"] + check(f"cnn_{b}x{side}"))
    # Any side, no multiple: the stride-2 layer's output side is derived at
    # run time, and the pool's positions are that side squared.
    for b, side in CNN_ODD_SIZES + [(5, 56)]:
        run(f"cnn side=1..64 {b}x{side}", ["run", cnn, "--quiet", "--dim", "batch=1..16",
                                           "--dim", "side=1..64"] + check(f"cnn_{b}x{side}"))
    # Data-dependent sizes within variable dimensions: their bounds follow
    # the dimensions, and outputs are dense at their actual shape, in the
    # general code and in a partly and a wholly specialised path.
    dd = os.path.join(work, "datadep.onnx")
    dd_dims = ["--dim", "batch=1..4", "--dim", "seq=1..64"]
    for spec in ([], ["--specialize", "seq=7,30"], ["--specialize", "batch=2", "--specialize",
                                                     "seq=30"]):
        for b, s, _ in DD_SIZES:
            run(f"data-dependent {' '.join(spec)} {b}x{s}",
                ["run", dd, "--quiet"] + dd_dims + spec + check(f"datadep_{b}x{s}"))
    run("error data-dependent: k beyond seq",
        ["run", dd, "--quiet"] + dd_dims + ["--inputs", os.path.join(work, "datadep_k_beyond")],
        1, must=("topk",))
    run("error data-dependent output read by a node",
        ["compile", os.path.join(work, "datadep_read.onnx"), "--quiet"] + dd_dims +
        ["-o", os.path.join(work, "compile_out")], 1, must=("reads_top", "toprelu", "--shape"))
    # int8 within variable dimensions: calibrated on input sets of three
    # sizes (the input's statistics against numpy's), then quantised the
    # same at every size (within int8's error of PyTorch's float).
    calib = os.path.join(work, "cnn.calib.json")
    sets = [os.path.join(work, f"cnn_{size}") for size in ("3x32", "1x32", "5x56")]
    run("cgc calibrate --dim on sets of three sizes",
        ["calibrate", cnn, "--quiet", "--dim", "batch=1..16", "--dim", "side=16..64:8", "-o",
         calib] + [a for d in sets for a in ("--inputs", d)])
    with open(calib) as f:
        image = json.load(f)["tensors"]["image"]
    xs = [numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "input_0.pb"))).astype(np.float64)
          for d in sets]
    lo, hi, bins = image["min"], image["max"], len(image["histogram"])
    histogram = np.zeros(bins, np.int64)
    for x in xs:
        np.add.at(histogram, np.minimum(np.floor((x - lo) / (hi - lo) * bins), bins - 1)
                  .astype(np.int64).ravel(), 1)
    if image["count"] != sum(x.size for x in xs) or lo != min(x.min() for x in xs) or \
            hi != max(x.max() for x in xs) or histogram.tolist() != image["histogram"]:
        print(f"FAIL cgc calibrate --dim: count {image['count']}, min {lo}, max {hi}")
        failures.append("cgc calibrate --dim")
    else:
        print("ok cgc calibrate --dim: the input's statistics over three sizes match numpy")
    for b, side in CNN_SIZES:
        d = os.path.join(work, f"cnn_{b}x{side}")
        run(f"cnn --quantize int8 {b}x{side}",
            ["run", cnn, "--quiet", "--dim", "batch=1..16", "--dim", "side=16..64:8", "--quantize",
             "int8", "--calibration", calib, "--inputs", d, "--check", d, "--rtol", "0.1",
             "--atol", "0.02"])
    # --observe within variable dimensions (cgc run --statistics-out): the
    # statistics of the tensors at the run's sizes, the input's as numpy's,
    # every tensor's count, min and max as a static build's.
    stats = {}
    for label, dims in (("dim", ["--dim", "batch=1..16", "--dim", "side=16..64:8"]),
                        ("static", [])):
        stats[label] = os.path.join(work, f"statistics_{label}.json")
        run(f"--statistics-out ({label}) at 5x56",
            ["run", cnn, "--quiet", "--inputs", os.path.join(work, "cnn_5x56"),
             "--statistics-out", stats[label]] + dims)
    with open(stats["dim"]) as f:
        observed = json.load(f)["tensors"]
    with open(stats["static"]) as f:
        static = json.load(f)["tensors"]
    x = numpy_helper.to_array(onnx.load_tensor(os.path.join(work, "cnn_5x56", "input_0.pb")))
    summary = {k: (t["count"], t["min"], t["max"]) for k, t in observed.items()}
    if summary["image"] != (x.size, float(x.min()), float(x.max())) or \
            summary != {k: (t["count"], t["min"], t["max"]) for k, t in static.items()}:
        print(f"FAIL --observe with --dim: {summary.get('image')}")
        failures.append("--observe with --dim")
    else:
        print(f"ok --observe with --dim: {len(summary)} tensors as at 5x56")
    run("error --observe with --specialize",
        ["compile", cnn, "--quiet", "--dim", "batch=1..16", "--dim", "side=16..64:8", "--observe",
         "--specialize", "batch=1", "-o", os.path.join(work, "compile_out")], 1,
        must=("--observe", "--specialize"))
    # If, Loop (its trip count the variable seq) and Scan within variable
    # dimensions, also in a specialised path.
    for spec in ([], ["--specialize", "seq=7"]):
        for b, s in CF_SIZES:
            run(f"control flow {' '.join(spec)} {b}x{s}",
                ["run", os.path.join(work, "control.onnx"), "--quiet", "--dim", "batch=1..4",
                 "--dim", "seq=1..64"] + spec + check(f"control_{b}x{s}"))
    for b, s in [(2, 7), (3, 40)]:
        run(f"an If whose condition the sizes decide {b}x{s}",
            ["run", os.path.join(work, "sized_if.onnx"), "--quiet", "--dim", "batch=1..4",
             "--dim", "seq=1..64"] + check(f"sized_if_{b}x{s}"))
    # --specialize: static code for seq=128 (batch still variable) beside the
    # general code; a profile names the nodes that ran, so it shows which
    # path each size took.
    spec = full + ["--specialize", "seq=128"]
    for b, s in ENC_SIZES:
        profile = os.path.join(work, f"spec_{b}x{s}.json")
        label = f"encoder --specialize seq=128 {b}x{s}"
        run(label, ["run", enc, "--quiet"] + spec + check(f"encoder_{b}x{s}") +
            ["--profile-out", profile])
        with open(profile) as f:
            names = [n["name"] for n in json.load(f)["nodes"]]
        took = all(n.endswith("@seq=128") for n in names)
        if not names or took != (s == 128) or (not took and any("@" in n for n in names)):
            print(f"FAIL {label}: ran the {'specialised' if took else 'general'} code: {names[:3]}")
            failures.append(label + " path")
    for b, side in CNN_SIZES:  # both dimensions fixed: a wholly static path
        run(f"cnn --specialize batch=1,3 side=32 {b}x{side}",
            ["run", cnn, "--quiet", "--dim", "batch=1..16", "--dim", "side=16..64:8",
             "--specialize", "batch=1,3", "--specialize", "side=32"] + check(f"cnn_{b}x{side}"))
    for b, s in [(1, 128), (3, 200)]:  # a library of two builds, each with the paths
        run(f"encoder --specialize seq=128 for two targets {b}x{s}",
            ["run", enc, "--quiet", "--target", "x86-64-v3,x86-64-v2"] + spec +
            check(f"encoder_{b}x{s}"))
    for bad, what in [("seq=600", "600"), ("seq=12", "multiple"), ("nosuchdim=4", "nosuchdim"),
                      ("seq=", "of the form"), ("seq=8,8", "twice")]:
        run(f"error --specialize {bad}",
            ["compile", enc, "--quiet"] + step8 + ["--specialize", bad, "-o",
                                                   os.path.join(work, "compile_out")],
            1, must=("--specialize", what))
    run("error --specialize without --dim",
        ["compile", cnn, "--quiet", "--shape", "image=1x3x32x32", "--specialize", "side=32",
         "-o", os.path.join(work, "compile_out")], 1, must=("--specialize", "--dim"))

    # A profile counts the runs at each size; a recompile with it
    # specialises the size that had them.
    profile = os.path.join(work, "sizes_profile.json")
    run("profile of runs at 1x128", ["run", enc, "--quiet"] + full + check("encoder_1x128") +
        ["--bench", "3", "--profile-out", profile])
    with open(profile) as f:
        sizes = json.load(f).get("sizes")
    out = os.path.join(work, "profiled_out")
    p = subprocess.run([cgc, "compile", enc, "-o", out, "--profile", profile] + full,
                       capture_output=True, text=True, timeout=600)
    with open(os.path.join(out, "encoder.cpp")) as f:
        specialised = "spec_batch1_seq128_executor0(" in f.read()
    if sizes != [{"dims": {"batch": 1, "seq": 128}, "runs": 6}] or p.returncode != 0 or \
            "specialising batch=1, seq=128" not in p.stderr or not specialised:
        print(f"FAIL --profile specialises: sizes {sizes}, exit {p.returncode}, "
              f"specialised {specialised}: {p.stderr.strip()[-300:]}")
        failures.append("--profile specialises")
    else:
        print("ok --profile specialises the size it ran")

    # cgc run --bench --sweep: one JSON line per combination of sizes.
    p = subprocess.run([cgc, "run", enc, "--quiet"] + full +
                       ["--inputs", os.path.join(work, "encoder_1x7"), "--bench", "2",
                        "--sweep", "seq=1,64", "--sweep", "batch=1,3"],
                       capture_output=True, text=True, timeout=600)
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    swept = [(line["dims"]["batch"], line["dims"]["seq"]) for line in lines]
    if p.returncode != 0 or sorted(swept) != [(1, 1), (1, 64), (3, 1), (3, 64)] or \
            not all(line["median_ms"] > 0 for line in lines):
        print(f"FAIL --sweep: exit {p.returncode}, {swept}: {p.stderr.strip()[-300:]}")
        failures.append("--sweep")
    else:
        print("ok --sweep")
    run("error --sweep beyond the bounds",
        ["run", enc, "--quiet"] + full + ["--inputs", os.path.join(work, "encoder_1x7"),
                                          "--bench", "1", "--sweep", "seq=513"],
        1, must=("--sweep", "513"))

    # A range in --shape: batch fixed at 1 by name, seq variable.
    for s in (7, 128):
        run(f"encoder --shape input_ids=1x1..256 1x{s}",
            ["run", enc, "--quiet", "--shape", "input_ids=1x1..256"] + check(f"encoder_1x{s}"))
    run("error --shape range, batch fixed at 1, given 3",
        ["run", enc, "--quiet", "--shape", "input_ids=1x1..256"] + check("encoder_3x200"), 1,
        must=("axis 0",))
    # cgc tune --dim: tunes the general code at the inputs' sizes and records
    # them; a compile with its profile specialises them.
    tuned = os.path.join(work, "tuned")
    run("cgc tune --dim at 1x128", ["tune", enc, "--quiet"] + full +
        ["--inputs", os.path.join(work, "encoder_1x128"), "--budget", "0", "--rounds", "1",
         "-o", tuned])
    with open(os.path.join(tuned, "encoder.profile.json")) as f:
        tuned_profile = json.load(f)
    p = subprocess.run([cgc, "compile", enc, "-o", os.path.join(work, "tuned_out"), "--profile",
                        os.path.join(tuned, "encoder.profile.json")] + full,
                       capture_output=True, text=True, timeout=600)
    sizes = [s["dims"] for s in tuned_profile.get("sizes", [])]
    if sizes != [{"batch": 1, "seq": 128}] or "executors" not in tuned_profile or \
            p.returncode != 0 or "specialising batch=1, seq=128" not in p.stderr:
        print(f"FAIL cgc tune --dim: sizes {sizes}, compile exit {p.returncode}: "
              f"{p.stderr.strip()[-300:]}")
        failures.append("cgc tune --dim")
    else:
        print("ok cgc tune --dim records the size; its profile specialises it")

    # cgc tune --specialize: the path is tuned on its own (a section of the
    # profile, keyed by its sizes); a compile with the profile specialises
    # it and reads that section (a section of another graph is refused).
    tuned = os.path.join(work, "tuned_spec")
    run("cgc tune --dim --specialize", ["tune", enc, "--quiet"] + full +
        ["--specialize", "seq=128", "--specialize", "batch=1", "--budget", "0", "--rounds", "1",
         "-o", tuned])
    tuned_path = os.path.join(tuned, "encoder.profile.json")
    with open(tuned_path) as f:
        tuned_profile = json.load(f)
    paths = tuned_profile.get("specializations", [])
    if [p["dims"] for p in paths] != [{"batch": 1, "seq": 128}] or \
            paths[0]["profile"].get("executors") != tuned_profile.get("executors") or \
            not paths[0]["profile"].get("nodes"):
        print(f"FAIL cgc tune --specialize: {[p.get('dims') for p in paths]}")
        failures.append("cgc tune --specialize")
    else:
        print("ok cgc tune --specialize tunes the path on its own")
    spec_profile = os.path.join(work, "spec_profile")
    for b, s in [(1, 128), (3, 200)]:
        run(f"encoder with the tuned path {b}x{s}",
            ["run", enc, "--quiet"] + full + ["--profile", tuned_path,
                                              "--profile-out", spec_profile] +
            check(f"encoder_{b}x{s}"))
        with open(spec_profile) as f:
            names = [n["name"] for n in json.load(f)["nodes"]]
        if all(n.endswith("@batch=1,seq=128") for n in names) != (s == 128):
            print(f"FAIL the tuned path at {b}x{s}: {names[:2]}")
            failures.append(f"tuned path {b}x{s}")
    paths[0]["profile"]["graph_hash"] = "0" * 16
    stale = os.path.join(work, "stale_section.json")
    with open(stale, "w") as f:
        json.dump(tuned_profile, f)
    run("error a tuned path measured on another graph",
        ["compile", enc, "--quiet"] + full + ["--profile", stale, "-o",
                                              os.path.join(work, "compile_out")],
        1, must=("stale_section.json", "different graph"))

    # Bad sizes: exit 1, one stderr line naming the dimension.
    run("error seq 200 beyond 1..128",
        ["run", enc, "--quiet", "--dim", "batch=1..8", "--dim", "seq=1..128"] + check("encoder_3x200"),
        1, must=("seq", "128"))
    run("error seq 7 off step 8",
        ["run", enc, "--quiet"] + step8 + check("encoder_1x7"), 1, must=("seq", "8"))
    run("error inputs disagree",
        ["run", enc, "--quiet"] + full + ["--inputs", os.path.join(work, "encoder_mismatch")],
        1, any_of=("batch", "seq"))
    run("error a graph that fixes a variable dimension",
        ["compile", os.path.join(work, "pinned.onnx"), "--quiet", "--dim", "seq=1..64", "-o",
         os.path.join(work, "compile_out")], 1, must=("pin_seq", "seq=", "--dim"))
    run("error batch unbound at compile time",
        ["compile", enc, "--quiet", "--dim", "seq=1..512", "-o", os.path.join(work, "compile_out")],
        1, must=("batch", "--dim"))
    # Malformed or unknown --dim.
    for bad in ["seq=5..2", "seq=1..512:0", "nosuchdim=1..4", "seq=abc"]:
        dims = ["batch=1..8"] + (["seq=1..512"] if bad.startswith("nosuchdim") else []) + [bad]
        argv = ["run", enc, "--quiet"] + [a for d in dims for a in ("--dim", d)] + check("encoder_1x7")
        run(f"error --dim {bad}", argv, 1, must=("--dim",) + (("nosuchdim",) if "nosuchdim" in bad else ()))

    if failures:
        print(f"{len(failures)} failed: {', '.join(failures)}")
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
