"""Builds cgc's sample models: small PyTorch models exported to ONNX (opset 13)
with reference outputs computed by PyTorch, in the ONNX test-data layout:

    samples/models/<name>/model.onnx
    samples/models/<name>/test_data_set_0/input_N.pb, output_N.pb

Everything is seeded, so re-running gives byte-identical files. Prints one
line per model: its size, input and output shapes, and op histogram.

Usage: /usr/bin/python3 samples/make_samples.py [OUT_DIR]   (default samples/models)
"""

import collections
import dataclasses
import io
import os
import sys

import onnx
import torch
from onnx import numpy_helper
from torch import nn

OPSET = 13
DEFAULT_OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


def randomize_batch_norm(bn):
    """Gives a BatchNorm non-trivial affine parameters and running stats, so
    that folding it into the preceding Conv changes the weights for real."""
    channels = bn.num_features
    with torch.no_grad():
        bn.weight.copy_(torch.rand(channels) + 0.5)
        bn.bias.copy_(torch.randn(channels) * 0.5)
        bn.running_mean.copy_(torch.rand(channels) * 0.6 + 0.1)
        bn.running_var.copy_(torch.rand(channels) * 1.5 + 0.25)
    return bn


class TinyCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            randomize_batch_norm(nn.BatchNorm2d(8)),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2),
            randomize_batch_norm(nn.BatchNorm2d(16)),
            nn.LeakyReLU(0.1),
            # count_include_pad=False keeps PyTorch from inserting an all-zero
            # Pad in front of the AveragePool; with no padding it is the same op.
            nn.AvgPool2d(2, ceil_mode=False, count_include_pad=False),
            nn.Flatten(),
        )
        self.classifier = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        return torch.softmax(self.classifier(self.features(x)), dim=1)


class Mlp(nn.Module):
    """Elementwise and MatMul ops; explicit matmul + bias gives MatMul + Add
    rather than Gemm."""

    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(16, 32) * 0.25)
        self.b1 = nn.Parameter(torch.randn(32) * 0.1)
        self.w2 = nn.Parameter(torch.randn(16, 32) * 0.25)
        self.b2 = nn.Parameter(torch.randn(32) * 0.1)
        self.w3 = nn.Parameter(torch.randn(32, 8) * 0.25)
        self.b3 = nn.Parameter(torch.randn(8) * 0.1)

    def forward(self, x, y):
        a = torch.tanh(torch.matmul(x, self.w1) + self.b1)
        b = torch.sigmoid(torch.matmul(y, self.w2) + self.b2)
        c = (a - b) * b / 3.0
        smooth = torch.sqrt(x * x + 1.0) + torch.log(1.0 + torch.sigmoid(y))
        hidden = c.pow(2) + torch.exp(-a)
        logits = torch.matmul(hidden, self.w3) + self.b3
        return (torch.clamp(logits, min=-2.5, max=3.5),
                nn.functional.hardsigmoid(smooth - y))


class Shapes(nn.Module):
    """Shape plumbing that cgc must constant-fold, around a few real ops."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 5) * 0.3)
        self.w_batched = nn.Parameter(torch.randn(1, 8, 4) * 0.3)
        self.w_flat = nn.Parameter(torch.randn(48, 6) * 0.2)

    def forward(self, x):
        flat = x.view(x.size(0), -1)                      # Shape/Gather/Unsqueeze/Concat/Reshape
        rows = torch.matmul(flat, self.w_flat)            # 2x6
        permuted = x.permute(0, 2, 1).unsqueeze(1)        # 2x1x8x6
        back = permuted.squeeze(1).permute(0, 2, 1)       # 2x6x8
        odd = back[:, 1::2]                               # 2x3x8, Slice with step
        picked = x[:, 3]                                  # 2x8, Gather
        truncated = (x * 4.0).to(torch.int64).to(torch.float32)
        joined = torch.cat([torch.flatten(odd, 1), picked, rows], dim=1)  # 2x38
        projected = torch.matmul(truncated, self.w)       # 2x6x5
        broadcast = torch.matmul(back, self.w_batched)    # 2x6x4, batch broadcast
        mixed = torch.cat([projected, broadcast], dim=2)  # 2x6x9
        return joined, torch.softmax(mixed, dim=1)


class Deconv(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1),
            nn.ReLU(),
            nn.Conv2d(6, 8, 3, padding=1, dilation=2),
            nn.Sigmoid(),
            nn.AdaptiveAvgPool2d(1),
        )

    def forward(self, x):
        return self.layers(x)


class BatchNormOnly(nn.Module):
    """A BatchNorm after an Add, so nothing can fold it away."""

    def __init__(self):
        super().__init__()
        self.bn = randomize_batch_norm(nn.BatchNorm2d(3))

    def forward(self, x, y):
        return self.bn(x + y)


class Gated(nn.Module):
    """sigmoid(W x + b) * x; the "functions" sample exports it as an ONNX
    local function."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return torch.sigmoid(self.linear(x)) * x


@torch.jit.script
def pick_branches(x: torch.Tensor, y: torch.Tensor):
    """Data-dependent branches, exported as ONNX If nodes whose condition is
    known only at run time. For the sample input the first takes its else
    branch and the second its then branch."""
    if bool(x.sum() > 0):
        a = torch.relu(y) * 2.0
    else:
        a = torch.tanh(y) - 1.0
    if bool(x.mean() < 100.0):
        b = y * y
    else:
        b = y + 1.0
    return a, b


class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gated()

    def forward(self, x):
        return pick_branches(x, self.gate(x))


@torch.jit.script
def refine(x: torch.Tensor, w: torch.Tensor):
    """A run-time If choosing the start, then a Loop of 4 steps carrying two
    states (exported as ONNX If and Loop nodes)."""
    if bool(x.sum() > 0):
        h = torch.relu(x)
    else:
        h = torch.tanh(x) - 0.5
    total = torch.zeros_like(h)
    for _ in range(4):
        h = torch.tanh(torch.matmul(h, w))
        total = total + h
    return h, total


class ControlFlow(nn.Module):
    """Control flow that runs (an If, a Loop) beside a branch that does not
    depend on it: the graph several executors run at once."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8) * 0.4)
        self.side = Gated()

    def forward(self, x):
        h, total = refine(x, self.w)
        return h, total + self.side(x)


class Functions(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Gated()
        self.second = Gated()

    def forward(self, x):
        y = self.first(x)
        return y, self.second(y) * 2.0


class Inception(nn.Module):
    """Four independent branches joined by a Concat, then two parallel heads:
    the shape of graph that several executors run concurrently."""

    def __init__(self):
        super().__init__()
        self.branch1 = nn.Conv2d(8, 8, 1)
        self.branch3 = nn.Sequential(nn.Conv2d(8, 6, 1), nn.ReLU(), nn.Conv2d(6, 8, 3, padding=1))
        self.branch5 = nn.Sequential(nn.Conv2d(8, 4, 1), nn.ReLU(), nn.Conv2d(4, 8, 5, padding=2))
        self.pool = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1), nn.Conv2d(8, 8, 1))
        self.head_a = nn.Linear(32, 10)
        self.head_b = nn.Linear(32, 4)

    def forward(self, x):
        y = torch.cat([self.branch1(x), self.branch3(x), self.branch5(x), self.pool(x)], 1)
        features = torch.relu(y).mean(dim=(2, 3))
        return torch.softmax(self.head_a(features), 1), torch.sigmoid(self.head_b(features))


@dataclasses.dataclass
class Sample:
    model_class: type
    input_shapes: dict  # input name -> shape
    output_names: list
    # Export with a symbolic batch dimension, so that PyTorch emits real
    # Shape/Gather/... chains for x.size(0), then pin it back to the static
    # size. With static shapes PyTorch folds those chains itself.
    dynamic_batch: bool = False
    opset: int = OPSET
    # Module classes exported as ONNX local functions (opset 15 or later).
    local_functions: tuple = ()


SAMPLES = {
    "tiny_cnn": Sample(TinyCnn, {"input": (1, 3, 16, 16)}, ["probs"]),
    "mlp": Sample(Mlp, {"x": (4, 16), "y": (4, 16)}, ["logits", "gate"]),
    "shapes": Sample(Shapes, {"x": (2, 6, 8)}, ["joined", "mixed"], dynamic_batch=True),
    "deconv": Sample(Deconv, {"input": (1, 4, 9, 9)}, ["pooled"]),
    "batch_norm_only": Sample(BatchNormOnly, {"x": (2, 3, 5, 5), "y": (2, 3, 5, 5)},
                              ["normalized"]),
    "branches": Sample(Branches, {"x": (4, 8)}, ["a", "b"]),
    "control_flow": Sample(ControlFlow, {"x": (4, 8)}, ["h", "total"]),
    "inception": Sample(Inception, {"input": (2, 8, 12, 12)}, ["classes", "flags"]),
    "functions": Sample(Functions, {"x": (4, 8)}, ["y", "z"], opset=15,
                        local_functions=(Gated,)),
}


def build_sample(sample):
    """The model in eval mode and its inputs, both from a fresh seed so each
    sample is independent of the others."""
    torch.manual_seed(0)
    model = sample.model_class().eval()
    inputs = tuple(torch.randn(shape) for shape in sample.input_shapes.values())
    return model, inputs


def pin_shapes(values, tensors):
    """Sets the graph inputs' or outputs' dims to the tensors' static sizes."""
    for value, tensor in zip(values, tensors):
        for dim, size in zip(value.type.tensor_type.shape.dim, tensor.shape):
            dim.Clear()
            dim.dim_value = size


def export_onnx(sample, model, inputs, outputs):
    """The ONNX model's bytes. TrainingMode.PRESERVE (the model is in eval
    mode) skips the exporter's eval peephole, which would fold BatchNorm into
    the preceding Conv: that folding is cgc's job."""
    input_names = list(sample.input_shapes)
    dynamic_axes = None
    if sample.dynamic_batch:
        dynamic_axes = {name: {0: "batch"} for name in input_names + sample.output_names}
    buffer = io.BytesIO()
    extra = {}
    if sample.local_functions:
        extra["export_modules_as_functions"] = set(sample.local_functions)
    torch.onnx.export(model, inputs, buffer, opset_version=sample.opset,
                      input_names=input_names, output_names=sample.output_names,
                      dynamic_axes=dynamic_axes, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, **extra)
    if not sample.dynamic_batch:
        return buffer.getvalue()
    proto = onnx.load_from_string(buffer.getvalue())
    pin_shapes(proto.graph.input, inputs)
    pin_shapes(proto.graph.output, outputs)
    return proto.SerializeToString()


def tensor_bytes(array, name):
    return numpy_helper.from_array(array, name=name).SerializeToString()


def write_sample(out_dir, name, sample):
    model, inputs = build_sample(sample)
    with torch.no_grad():
        outputs = model(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    onnx_bytes = export_onnx(sample, model, inputs, outputs)

    sample_dir = os.path.join(out_dir, name)
    data_dir = os.path.join(sample_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    with open(os.path.join(sample_dir, "model.onnx"), "wb") as f:
        f.write(onnx_bytes)
    for prefix, names, tensors in (("input", list(sample.input_shapes), inputs),
                                   ("output", sample.output_names, outputs)):
        for i, (tensor_name, tensor) in enumerate(zip(names, tensors)):
            with open(os.path.join(data_dir, f"{prefix}_{i}.pb"), "wb") as f:
                f.write(tensor_bytes(tensor.numpy(), tensor_name))
    return os.path.join(sample_dir, "model.onnx")


def value_shape(value_info):
    return "x".join(str(d.dim_value) for d in value_info.type.tensor_type.shape.dim)


def summarize(name, model_path):
    """Checks the exported model and describes it in one line."""
    model = onnx.load(model_path)
    onnx.checker.check_model(model)
    ops = collections.Counter(node.op_type for node in model.graph.node)
    histogram = " ".join(f"{op}:{count}" for op, count in sorted(ops.items()))
    inputs = ", ".join(f"{v.name} {value_shape(v)}" for v in model.graph.input)
    outputs = ", ".join(f"{v.name} {value_shape(v)}" for v in model.graph.output)
    size = os.path.getsize(model_path)
    return f"{name}: {size} bytes; inputs {inputs}; outputs {outputs}; ops {histogram}"


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT_DIR
    for name, sample in SAMPLES.items():
        model_path = write_sample(out_dir, name, sample)
        print(summarize(name, model_path))


if __name__ == "__main__":
    main()
