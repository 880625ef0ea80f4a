"""Writes small ONNX models that cgc must reject with a clear diagnostic.

Usage: make_bad_models.py OUT_DIR
  unsupported.onnx     two unsupported ops (StringNormalizer, which cgc
                       leaves out, and a custom-domain op)
  matmul_mismatch.onnx a MatMul whose inner dimensions differ
  symbolic.onnx        an input with a symbolic batch dimension
  lstm_activation.onnx an LSTM with an activation function ONNX does not define
  range_int64.onnx     a Range over int64 values beyond 2^53 (must be exact)
  hostile_*.onnx       sizes beyond cgc's limits (README, "Limits"): a Tile,
                       Conv pads and a Range that overflow int64, a
                       ConstantOfShape over 2^40 bytes (and one of 16 GiB,
                       which compiles into a run-time fill), an arena over
                       2^40 bytes, a node name with a line break in it
"""

import os
import sys

import onnx
from onnx import TensorProto, helper


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)


def unsupported():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    words = helper.make_tensor_value_info("words", TensorProto.STRING, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    lower = helper.make_tensor_value_info("lower", TensorProto.STRING, [3])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu_ok"),
        helper.make_node("StringNormalizer", ["words"], ["lower"],
                         name="strings_node", case_change_action="LOWER"),
        helper.make_node("Frobnicate", ["r"], ["f"], name="custom_node",
                         domain="com.example"),
        helper.make_node("Add", ["r", "f"], ["y"], name="add_ok"),
    ]
    graph = helper.make_graph(nodes, "unsupported", [x, words], [y, lower])
    return helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])


def matmul_mismatch():
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="bad_matmul")
    graph = helper.make_graph([node], "mismatch", [a, b], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def symbolic():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph([node], "symbolic", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def lstm_activation():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4])
    w = helper.make_tensor("w", TensorProto.FLOAT, [1, 16, 3], [0.1] * 48)
    r = helper.make_tensor("r", TensorProto.FLOAT, [1, 16, 4], [0.1] * 64)
    node = helper.make_node("LSTM", ["x", "w", "r"], ["", "y"],
                            name="bad_lstm", hidden_size=4,
                            activations=["Sigmoid", "Gelu", "Tanh"])
    graph = helper.make_graph([node], "lstm_activation", [x], [y], [w, r])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def hostile_models():
    """name -> model; each must be a one-line error (run_diagnostics.sh)."""
    models = {}
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    def y(rank):  # an output of symbolic shape
        return helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [f"d{i}" for i in range(rank)])
    repeats = helper.make_tensor("repeats", TensorProto.INT64, [2], [2**62, 4])
    tile = helper.make_node("Tile", ["x", "repeats"], ["y"], name="tile")
    models["tile_overflow"] = helper.make_graph([tile], "t", [x], [y(2)], [repeats])

    img = helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 1, 4, 4])
    w = helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 1, 1], [1.0])
    conv = helper.make_node("Conv", ["img", "w"], ["y"], name="conv",
                            pads=[2**63 - 1, 0, 2**63 - 1, 0])
    models["conv_pads_overflow"] = helper.make_graph([conv], "c", [img], [y(4)], [w])

    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [2**39, 4])
    fill = helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill")
    models["fill_too_large"] = helper.make_graph([fill], "f", [], [y(2)], [shape])
    # 16 GiB: within the tensor limit, so filled at run time, not a weight.
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [2**30, 4])
    models["fill_at_run_time"] = helper.make_graph([fill], "f", [], [y(2)], [shape])

    start = helper.make_tensor("start", TensorProto.FLOAT, [], [0.0])
    limit = helper.make_tensor("limit", TensorProto.FLOAT, [], [1e30])
    delta = helper.make_tensor("delta", TensorProto.FLOAT, [], [1.0])
    rng = helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")
    models["range_too_long"] = helper.make_graph([rng], "r", [], [y(1)],
                                                 [start, limit, delta])

    # Three float32 tensors of 2^40 bytes live at once: input, two products.
    big = helper.make_tensor_value_info("big", TensorProto.FLOAT, [2**38])
    nodes = [helper.make_node("Relu", ["big"], ["a"], name="a"),
             helper.make_node("Neg", ["big"], ["b"], name="b"),
             helper.make_node("Add", ["a", "b"], ["y"], name="sum")]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2**38])
    models["arena_over_limit"] = helper.make_graph(nodes, "a", [big], [out])

    relu = helper.make_node("Relu", ["x"], ["y"], name="relu\nint injected;")
    models["name_with_newline"] = helper.make_graph([relu], "n", [x], [y(2)])
    return {name: helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
            for name, graph in models.items()}


def range_int64():
    """Range over int64 values beyond 2^53 (doubles would lose them), plus x."""
    start = helper.make_tensor("start", TensorProto.INT64, [], [2**62 + 1])
    limit = helper.make_tensor("limit", TensorProto.INT64, [], [2**62 + 11])
    delta = helper.make_tensor("delta", TensorProto.INT64, [], [3])
    x = helper.make_tensor_value_info("x", TensorProto.INT64, [4])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [4])
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range"),
             helper.make_node("Add", ["r", "x"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "range_int64", [x], [y], [start, limit, delta])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    save(unsupported(), os.path.join(out, "unsupported.onnx"))
    save(matmul_mismatch(), os.path.join(out, "matmul_mismatch.onnx"))
    save(symbolic(), os.path.join(out, "symbolic.onnx"))
    save(lstm_activation(), os.path.join(out, "lstm_activation.onnx"))
    save(range_int64(), os.path.join(out, "range_int64.onnx"))
    for name, model in hostile_models().items():
        # Not through the checker: some are what it would pass, some not,
        # and cgc must hold either way.
        onnx.save(model, os.path.join(out, f"hostile_{name}.onnx"))


if __name__ == "__main__":
    main()
