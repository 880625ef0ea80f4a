"""Exports torchvision's ResNet-50 with random weights (seeded, nothing is
downloaded) at opset 13, batch 1, with PyTorch's output on a seeded random
input as the reference:

    OUT_DIR/model.onnx                      input "input" 1x3x224x224, output "logits" 1x1000
    OUT_DIR/test_data_set_0/input_0.pb, output_0.pb

Does nothing when OUT_DIR/model.onnx is already newer than this script.

Usage: /usr/bin/python3 tests/models/make_resnet50.py OUT_DIR
"""

import os
import sys
import time

import torch
import torchvision
from onnx import numpy_helper

OPSET = 13


def is_up_to_date(model_path):
    return (os.path.exists(model_path)
            and os.path.getmtime(model_path) > os.path.getmtime(os.path.abspath(__file__)))


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name=name).SerializeToString())


def make_resnet50(out_dir):
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).eval()
    image = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        logits = model(image)

    data_dir = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    write_tensor(os.path.join(data_dir, "input_0.pb"), image.numpy(), "input")
    write_tensor(os.path.join(data_dir, "output_0.pb"), logits.numpy(), "logits")
    # The model last, and atomically: its presence marks the work as done.
    partial_path = os.path.join(out_dir, "model.onnx.partial")
    torch.onnx.export(model, (image,), partial_path, opset_version=OPSET,
                      input_names=["input"], output_names=["logits"])
    os.replace(partial_path, os.path.join(out_dir, "model.onnx"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_resnet50.py OUT_DIR")
    out_dir = sys.argv[1]
    model_path = os.path.join(out_dir, "model.onnx")
    if is_up_to_date(model_path):
        print(f"make_resnet50: {model_path} is up to date")
        return
    start = time.monotonic()
    make_resnet50(out_dir)
    print(f"make_resnet50: wrote {model_path} in {time.monotonic() - start:.1f} s")


if __name__ == "__main__":
    main()
