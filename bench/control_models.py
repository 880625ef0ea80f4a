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
    scan outputs have a data-dependent length (cgc --bound);
  - detector_nms: torch.onnx.export, a small convolutional detector head
    (boxes, scores and labels per cell of an 8x8 grid) and
    torchvision.ops.nms: its outputs, the kept boxes, have a data-dependent
    length;
  - dynamic_postprocess: onnx.helper, the ops of data-dependent size with
    their parameters given at run time: NonMaxSuppression (max boxes, IoU and
    score thresholds inputs) read through Gather and Unique, TopK with a
    run-time k, Compress and NonZero -> Transpose -> Gather of a mask; one
    bound given with --bound;
  - topp_sampling_head: torch.onnx.export, top-p filtering of logits the way
    samplers are written (TopK, CumSum, GatherElements, ScatterND through
    index_put); it needs the ops of branch `ops`.
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


def _export_trace(module, args, input_names, output_names, path):
    import torch
    import warnings

    warnings.filterwarnings("ignore")
    with torch.no_grad():
        torch.onnx.export(module, args, path, opset_version=OPSET,
                          input_names=input_names, output_names=output_names)


def detector_nms(path):
    import torch
    import torchvision

    class Detector(torch.nn.Module):
        """Per cell of an 8x8 grid over a 64x64 image: a box around the
        cell's centre (offset, log size), an objectness and 3 class logits;
        the boxes kept by NMS at IoU 0.3, their scores and labels."""

        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(
                torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
                torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
                torch.nn.Conv2d(32, 32, 3, stride=2, padding=1), torch.nn.ReLU())
            self.head = torch.nn.Conv2d(32, 4 + 1 + 3, 1)
            ys, xs = torch.meshgrid(torch.arange(8.0), torch.arange(8.0), indexing="ij")
            self.register_buffer("centers", torch.stack([xs, ys], -1).reshape(-1, 2) * 8 + 4)

        def forward(self, image):
            out = self.head(self.body(image))[0].reshape(8, -1).t()  # [64 cells, 8]
            xy = self.centers + out[:, 0:2] * 8
            wh = torch.exp(out[:, 2:4]) * 12
            boxes = torch.cat([xy - wh / 2, xy + wh / 2], 1)
            scores = torch.sigmoid(out[:, 4])
            labels = out[:, 5:].argmax(1)
            keep = torchvision.ops.nms(boxes, scores, 0.3)
            return boxes[keep], scores[keep], labels[keep]

    torch.manual_seed(0)
    model = Detector().eval()
    image = torch.randn(1, 3, 64, 64)
    _export_trace(model, (image,), ["image"], ["boxes", "scores", "labels"], path)
    return {"image": image.numpy()}, {}


def dynamic_postprocess(path):
    """Detections of 2 images x 3 classes x 20 boxes through NMS with its
    parameters as inputs; the classes found (Unique) and how often; the k
    best raw scores with k an input; the boxes whose best score passes the
    threshold (Compress) and their indices (NonZero -> Transpose ->
    Gather). NMS is bound to 24 rows (--bound nms=24), which the data stays
    within."""
    rng = np.random.default_rng(17)
    i64 = lambda values: numpy_helper.from_array(np.array(values, dtype=np.int64))
    nodes = [
        helper.make_node("NonMaxSuppression",
                         ["boxes", "scores", "max_per_class", "iou", "score_min"],
                         ["selected"], name="nms", center_point_box=0),
        helper.make_node("Constant", [], ["col1"], value=i64(1)),
        helper.make_node("Gather", ["selected", "col1"], ["classes"], axis=1),
        helper.make_node("Unique", ["classes"], ["found", "first", "inverse", "counts"],
                         sorted=1),
        helper.make_node("Constant", [], ["flat_shape"], value=i64([-1])),
        helper.make_node("Reshape", ["scores", "flat_shape"], ["flat_scores"]),
        helper.make_node("TopK", ["flat_scores", "k"], ["best", "best_at"], axis=0),
        helper.make_node("Constant", [], ["image0"], value=i64(0)),
        helper.make_node("Gather", ["scores", "image0"], ["scores0"], axis=0),
        helper.make_node("ReduceMax", ["scores0"], ["best_per_box"], axes=[0], keepdims=0),
        helper.make_node("Greater", ["best_per_box", "score_min"], ["passes"]),
        helper.make_node("Gather", ["boxes", "image0"], ["boxes0"], axis=0),
        helper.make_node("Compress", ["boxes0", "passes"], ["passing_boxes"], axis=0),
        helper.make_node("NonZero", ["passes"], ["where"]),
        helper.make_node("Transpose", ["where"], ["where_t"], perm=[1, 0]),
        helper.make_node("Constant", [], ["col0"], value=i64(0)),
        helper.make_node("Gather", ["where_t", "col0"], ["passing_at"], axis=1),
        helper.make_node("Gather", ["best_per_box", "passing_at"], ["passing_scores"], axis=0),
    ]
    float_in = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    graph = helper.make_graph(
        nodes, "dynamic_postprocess",
        [float_in("boxes", [2, 20, 4]), float_in("scores", [2, 3, 20]),
         helper.make_tensor_value_info("max_per_class", TensorProto.INT64, [1]),
         float_in("iou", [1]), float_in("score_min", [1]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, ["n", 3]),
         helper.make_tensor_value_info("found", TensorProto.INT64, ["u"]),
         helper.make_tensor_value_info("counts", TensorProto.INT64, ["u"]),
         float_in("best", ["k"]),
         helper.make_tensor_value_info("best_at", TensorProto.INT64, ["k"]),
         float_in("passing_boxes", ["p", 4]),
         float_in("passing_scores", ["p"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    corners = rng.uniform(0, 10, (2, 20, 2)).astype(np.float32)
    sizes = rng.uniform(1, 4, (2, 20, 2)).astype(np.float32)
    inputs = {"boxes": np.concatenate([corners, corners + sizes], axis=2),
              "scores": rng.uniform(0, 1, (2, 3, 20)).astype(np.float32),
              "max_per_class": np.array([4], dtype=np.int64),
              "iou": np.array([0.4], dtype=np.float32),
              "score_min": np.array([0.6], dtype=np.float32),
              "k": np.array([7], dtype=np.int64)}
    return inputs, {"bounds": {"nms": 24}}


def topp_sampling_head(path):
    import torch

    class TopP(torch.nn.Module):
        """Logits -> the 16 best -> those within top-p 0.8 kept (the rest
        -inf), written back over the vocabulary; and the kept tokens'
        logits read again by index."""

        def forward(self, logits):
            best, at = torch.topk(logits, 16, dim=1)
            cumulative = torch.softmax(best, dim=1).cumsum(dim=1)
            drop = (cumulative - torch.softmax(best, dim=1)) > 0.8
            kept = best.masked_fill(drop, float("-inf"))
            # A batch of 2 traced as a constant: tracing logits.shape[0]
            # makes torch 1.13's ONNX shape inference reject the Expand.
            rows = torch.arange(2).unsqueeze(1).repeat(1, 16)
            out = torch.full_like(logits, float("-inf"))
            out[rows, at] = kept
            again = torch.gather(logits, 1, at)
            return out, again

    torch.manual_seed(9)
    logits = torch.randn(2, 50) * 3
    _export_trace(TopP().eval(), (logits,), ["logits"], ["filtered", "again"], path)
    return {"logits": logits.numpy()}, {}


CASES = {"greedy_decoder": greedy_decoder, "if_branch_shapes": if_branch_shapes,
         "loop_scan_outputs": loop_scan_outputs, "detector_nms": detector_nms,
         "dynamic_postprocess": dynamic_postprocess, "topp_sampling_head": topp_sampling_head}
