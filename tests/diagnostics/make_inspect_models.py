"""Writes the models of the diagnostics block on `cgc inspect` and its hints.

Usage: make_inspect_models.py OUT_DIR
  nested_branches.onnx  an If on a run-time condition whose branches hold
                        convolutions with their own weights, one of them an
                        If again: ONNX ops, kernels and weights in every
                        body; 3 Conv, 2 If, 1 Relu, 5 nodes in bodies, 4
                        bodies, 352 bytes of raw convolution weights
  ort_internal.onnx     ONNX Runtime's internal ops, as its optimiser saves
                        them (com.microsoft.nchwc.Conv, com.microsoft.FusedMatMul)
  pcm.onnx              audio inputs pcm [batch, 16] and state [2, batch, 4]:
                        the --shape example must be pcm=1x16, with inputs in
                        pcm_inputs/ (batch 1 in both) and pcm_conflict/
                        (batch 1 in input_0.pb, 3 in input_1.pb)
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)


def conv_branch(name, weights, relu=False):
    w = numpy_helper.from_array(weights, f"{name}_w")
    out = f"{name}_y"
    nodes = [helper.make_node("Conv", ["x", w.name], [out if not relu else f"{name}_c"],
                              name=f"{name}_conv",
                              pads=[weights.shape[2] // 2] * 4)]
    if relu:
        nodes.append(helper.make_node("Relu", [f"{name}_c"], [out], name=f"{name}_relu"))
    y = helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 4, 8, 8])
    return helper.make_graph(nodes, name, [], [y], initializer=[w])


def nested_branches():
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])
    c1 = helper.make_tensor_value_info("c1", TensorProto.BOOL, [])
    c2 = helper.make_tensor_value_info("c2", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    weights = lambda k: rng.standard_normal((4, 2, k, k)).astype(np.float32)  # noqa: E731
    inner = helper.make_node("If", ["c2"], ["inner_y"], name="inner_if",
                             then_branch=conv_branch("inner_then", weights(1)),
                             else_branch=conv_branch("inner_else", weights(1), relu=True))
    inner_y = helper.make_tensor_value_info("inner_y", TensorProto.FLOAT, [1, 4, 8, 8])
    outer_else = helper.make_graph([inner], "outer_else", [], [inner_y])
    outer = helper.make_node("If", ["c1"], ["y"], name="outer_if",
                             then_branch=conv_branch("outer_then", weights(3)),
                             else_branch=outer_else)
    graph = helper.make_graph([outer], "nested_branches", [x, c1, c2], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def ort_internal():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])
    w = numpy_helper.from_array(np.zeros((8, 8, 1, 1), np.float32), "w")
    m = numpy_helper.from_array(np.zeros((4, 4), np.float32), "m")
    nodes = [
        helper.make_node("ReorderInput", ["x"], ["xb"], name="reorder_in",
                         domain="com.microsoft.nchwc"),
        helper.make_node("Conv", ["xb", "w"], ["cb"], name="nchwc_conv",
                         domain="com.microsoft.nchwc"),
        helper.make_node("ReorderOutput", ["cb"], ["c"], name="reorder_out", channels=8,
                         domain="com.microsoft.nchwc"),
        helper.make_node("FusedMatMul", ["c", "m"], ["y"], name="fused_matmul",
                         domain="com.microsoft", alpha=1.0),
    ]
    graph = helper.make_graph(nodes, "ort_internal", [x], [y], initializer=[w, m])
    return helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1),
        helper.make_opsetid("com.microsoft.nchwc", 1)])


def pcm():
    pcm_in = helper.make_tensor_value_info("pcm", TensorProto.FLOAT, ["batch", 16])
    state = helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, "batch", 4])
    nodes = [helper.make_node("Relu", ["pcm"], ["y"], name="relu"),
             helper.make_node("Neg", ["state"], ["s"], name="neg")]
    graph = helper.make_graph(nodes, "pcm", [pcm_in, state], [y, s])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def write_inputs(out, folder, arrays):
    os.makedirs(os.path.join(out, folder), exist_ok=True)
    for i, (name, array) in enumerate(arrays):
        tensor = numpy_helper.from_array(array, name)
        with open(os.path.join(out, folder, f"input_{i}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())


def main():
    out = sys.argv[1]
    save(nested_branches(), os.path.join(out, "nested_branches.onnx"))
    # ONNX's checker knows no com.microsoft ops: saved as ONNX Runtime does.
    onnx.save(ort_internal(), os.path.join(out, "ort_internal.onnx"))
    save(pcm(), os.path.join(out, "pcm.onnx"))
    ones = np.arange(16, dtype=np.float32).reshape(1, 16) - 8
    write_inputs(out, "pcm_inputs", [("pcm", ones), ("state", np.ones((2, 1, 4), np.float32))])
    write_inputs(out, "pcm_conflict", [("pcm", ones), ("state", np.ones((2, 3, 4), np.float32))])


if __name__ == "__main__":
    main()
