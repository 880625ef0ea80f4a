"""Corpus cases of control flow that runs at run time (bench/models.py adds
them): each made with PyTorch's scripting or with onnx.helper, run by cgc and
by ONNX Runtime on the same inputs.

  - greedy_decoder: torch.jit.script, a greedy decoding loop whose number of
    steps is a run-time input (an ONNX Loop with a run-time trip count);
  - if_branch_shapes: torch.jit.script, an If on a run-time sample rate that
    picks between two sub-networks expecting different input lengths (at
    the bound length only the taken branch can be compiled; the other
    becomes a run-time error);
  - loop_scan_outputs: onnx.helper, a Loop with a run-time trip count whose
    scan outputs have a data-dependent length (cgc --bound).
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def _export_script(module, args, input_names, output_names, path):
    import torch
    import warnings

    warnings.filterwarnings("ignore")
    scripted = torch.jit.script(module)
    with torch.no_grad():
        torch.onnx.export(scripted, args, path, opset_version=OPSET,
                          input_names=input_names, output_names=output_names)


def greedy_decoder(path):
    import torch

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(32, 24)
            self.w = torch.nn.Linear(24, 48)
            self.u = torch.nn.Linear(48, 48)
            self.v = torch.nn.Linear(48, 32)

        def forward(self, h, token, steps):
            total = torch.zeros(1, 32)
            for _ in range(int(steps)):
                x = self.embed(token)
                h = torch.tanh(self.w(x) + self.u(h))
                logits = self.v(h)
                token = torch.argmax(logits, dim=1)
                total = total + torch.softmax(logits, dim=1)
            return h, token, total

    torch.manual_seed(3)
    model = Decoder().eval()
    h = torch.randn(1, 48) * 0.5
    token = torch.tensor([5], dtype=torch.long)
    steps = torch.tensor(7, dtype=torch.long)
    _export_script(model, (h, token, steps), ["h", "token", "steps"], ["h_out", "token_out", "total"],
                   path)
    return {"h": h.numpy(), "token": token.numpy(), "steps": steps.numpy()}, {}


def if_branch_shapes(path):
    import torch

    class TwoRates(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fast = torch.nn.Conv1d(4, 8, 3, padding=1)
            self.slow = torch.nn.Conv1d(2, 8, 3, padding=1)

        def forward(self, x, sr):
            if bool(sr == 16000):
                y = self.fast(x.reshape(1, 4, 128))
            else:
                y = self.slow(x.reshape(1, 2, 128))
            return torch.relu(y).mean(dim=2)

    torch.manual_seed(5)
    model = TwoRates().eval()
    x = torch.randn(1, 512)
    sr = torch.tensor(16000, dtype=torch.long)
    _export_script(model, (x, sr), ["x", "sr"], ["y"], path)
    return {"x": x.numpy(), "sr": sr.numpy()}, {"shapes": {"x": [1, 512]}}


def loop_scan_outputs(path):
    """y_i = tanh(W y_{i-1} + b) for i < steps, every y_i a scan output."""
    rng = np.random.default_rng(13)
    w = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)
    b = (rng.standard_normal((16,)) * 0.1).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["y_in", "W"], ["wy"]),
         helper.make_node("Add", ["wy", "B"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["y_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["y_out"], ["scan"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_out", TensorProto.FLOAT, [1, 16]),
         helper.make_tensor_value_info("scan", TensorProto.FLOAT, [1, 16])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["steps", "", "y0"], ["y_final", "ys"], name="recurrence",
                          body=body)],
        "loop_scan_outputs",
        [helper.make_tensor_value_info("steps", TensorProto.INT64, []),
         helper.make_tensor_value_info("y0", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y_final", TensorProto.FLOAT, [1, 16]),
         helper.make_tensor_value_info("ys", TensorProto.FLOAT, ["n", 1, 16])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    inputs = {"steps": np.array(9, dtype=np.int64),
              "y0": rng.standard_normal((1, 16)).astype(np.float32)}
    return inputs, {"bounds": {"recurrence": 32}}


CASES = {"greedy_decoder": greedy_decoder, "if_branch_shapes": if_branch_shapes,
         "loop_scan_outputs": loop_scan_outputs}
