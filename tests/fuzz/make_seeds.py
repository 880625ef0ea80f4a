"""Writes the fuzz target's seed models.

Usage: make_seeds.py SOURCE_DIR DATA_DIR OUT_DIR [--all]
  SOURCE_DIR  the cgc checkout (samples/models/*/model.onnx, tests/fuzz/seeds.txt)
  DATA_DIR    the ONNX conformance tests (.../onnx/backend/test/data/node)
  --all       every conformance model, not only those in seeds.txt (for
              long campaigns)

The sample models are copied as they are. Each conformance model named in
seeds.txt is copied with every graph input after the first (and the first
too when it is a short vector or a scalar) turned into an initializer
holding its test_data_set_0 value: cgc needs shape-determining
inputs (Reshape's shape, Slice's starts, Pad's pads) bound at compile time,
and as initializers they are what the mutator's value mutations then attack.
"""

import glob
import os
import shutil
import sys

import onnx


def freeze_inputs(model, test_dir):
    graph = model.graph
    initialized = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in initialized]
    for index, info in enumerate(inputs):
        path = os.path.join(test_dir, "test_data_set_0", f"input_{index}.pb")
        if not os.path.exists(path):
            continue
        tensor = onnx.TensorProto()
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
        small = len(tensor.dims) <= 1 and all(d <= 16 for d in tensor.dims)
        if index == 0 and not small:
            continue
        tensor.name = info.name
        graph.initializer.append(tensor)
        if model.ir_version >= 4:  # before, initializers are inputs too
            graph.input.remove(info)


def main():
    source, data, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    for path in glob.glob(os.path.join(source, "samples/models/*/model.onnx")):
        name = os.path.basename(os.path.dirname(path))
        shutil.copy(path, os.path.join(out, f"sample_{name}.onnx"))
    with open(os.path.join(source, "tests/fuzz/seeds.txt")) as f:
        names = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    if "--all" in sys.argv[4:]:
        names = sorted(os.listdir(data))
    for name in names:
        test_dir = os.path.join(data, name)
        if not os.path.exists(os.path.join(test_dir, "model.onnx")):
            continue
        model = onnx.load(os.path.join(test_dir, "model.onnx"))
        freeze_inputs(model, test_dir)
        onnx.save(model, os.path.join(out, f"{name}.onnx"))


if __name__ == "__main__":
    main()
