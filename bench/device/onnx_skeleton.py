"""An ONNX model without its large weights, and the model again from it with
random weights of the same statistics: so that a benchmark kit can carry a
large model's graph for ONNX Runtime in a few kilobytes. The graph, its
inputs, outputs, attributes and small initializers (shapes, scales, zero
points: everything of INT64/INT16/BOOL type or under MIN_BYTES) are kept
exactly; each large FLOAT/FLOAT16/DOUBLE/INT8/UINT8/INT32 initializer (or
Constant node's value, as the quantiser writes int8 weights) is dropped and
recorded (name, type, dims, mean, std, min, max) in a JSON file,
and `fill` puts back one drawn from a normal distribution with that mean and
std, clipped to [min, max] (rounded for integers). The values are not the
model's, only their scale: fine for timing (no denormals, activations of the
same magnitude), not for comparing outputs.

Usage: python3 onnx_skeleton.py strip MODEL.onnx SKELETON.onnx FILL.json
       python3 onnx_skeleton.py fill SKELETON.onnx FILL.json OUT.onnx
"""

import json
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

MIN_BYTES = 16384
STRIPPED_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT8,
                  TensorProto.UINT8, TensorProto.INT32}


def statistics(tensor):
    """The record of a large tensor to drop, else None."""
    if tensor.data_type not in STRIPPED_TYPES or tensor.data_location == TensorProto.EXTERNAL:
        return None
    array = numpy_helper.to_array(tensor)
    if array.nbytes < MIN_BYTES:
        return None
    values = array.astype(np.float64)
    return {"name": tensor.name, "data_type": int(tensor.data_type),
            "dims": [int(d) for d in tensor.dims],
            "mean": float(values.mean()), "std": float(values.std()),
            "min": float(values.min()), "max": float(values.max())}


def strip(model_path, skeleton_path, fill_path, seed=1234):
    model = onnx.load(model_path)
    kept, dropped = [], []
    for init in model.graph.initializer:
        record = statistics(init)
        if record:
            dropped.append(record)
        else:
            kept.append(init)
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    for node in model.graph.node:
        if node.op_type != "Constant":
            continue
        for attr in node.attribute:
            if attr.name == "value":
                record = statistics(attr.t)
                if record:
                    record["constant"] = node.output[0]
                    dropped.append(record)
                    attr.t.CopyFrom(numpy_helper.from_array(np.zeros([0], np.float32), attr.t.name))
    onnx.save(model, skeleton_path)
    with open(fill_path, "w") as f:
        json.dump({"seed": seed, "initializers": dropped}, f, indent=1)
    return len(dropped)


def fill(skeleton_path, fill_path, out_path):
    model = onnx.load(skeleton_path)
    with open(fill_path) as f:
        spec = json.load(f)
    rng = np.random.default_rng(spec["seed"])
    for item in spec["initializers"]:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(item["data_type"]) \
            if hasattr(onnx.helper, "tensor_dtype_to_np_dtype") \
            else onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[item["data_type"]]
        values = rng.normal(item["mean"], item["std"], size=item["dims"])
        if np.issubdtype(dtype, np.integer):
            values = np.rint(values)
        values = np.clip(values, item["min"], item["max"]).astype(dtype)
        tensor = numpy_helper.from_array(values, item["name"])
        if "constant" in item:
            node = next(n for n in model.graph.node
                        if n.op_type == "Constant" and n.output[0] == item["constant"])
            next(a for a in node.attribute if a.name == "value").t.CopyFrom(tensor)
        else:
            model.graph.initializer.append(tensor)
    onnx.save(model, out_path)
    return len(spec["initializers"])


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "strip":
        print(f"{sys.argv[2]}: dropped {strip(*sys.argv[2:])} initializers")
    elif len(sys.argv) == 5 and sys.argv[1] == "fill":
        print(f"{sys.argv[4]}: filled {fill(*sys.argv[2:])} initializers")
    else:
        sys.exit(__doc__)
