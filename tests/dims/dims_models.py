"""The models and test data of tests/dims (test_dims.py, test_buckets.py):
PyTorch modules exported with symbolic dimensions, and input sets with
PyTorch's or numpy's outputs, written as cgc test-data directories."""
import math
import os
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


def write_encoder_and_cnn(work, rng, enc_sizes, cnn_sizes):
    """encoder.onnx (batch and seq symbolic) and cnn.onnx (batch and side),
    and input sets of each at the given sizes with PyTorch's outputs."""
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
        for b, s in enc_sizes:
            ids, mask = encoder_inputs(rng, b, s)
            out = enc(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
            write_set(os.path.join(work, f"encoder_{b}x{s}"), [ids, mask], [out])
        for b, side in cnn_sizes:
            img = rng.standard_normal((b, 3, side, side), dtype=np.float32)
            write_set(os.path.join(work, f"cnn_{b}x{side}"), [img],
                      [cnn(torch.from_numpy(img)).numpy()])


def make_data(work):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    os.makedirs(os.path.join(work, "compile_out"), exist_ok=True)
    write_encoder_and_cnn(work, rng, ENC_SIZES, CNN_SIZES + CNN_ODD_SIZES)
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
