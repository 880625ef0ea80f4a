"""Writes small ONNX models that cgc must reject with a clear diagnostic.

Usage: make_bad_models.py OUT_DIR
  unsupported.onnx     two unsupported ops (TopK, a custom-domain op)
  matmul_mismatch.onnx a MatMul whose inner dimensions differ
  symbolic.onnx        an input with a symbolic batch dimension
  lstm_activation.onnx an LSTM with an activation function ONNX does not define
  q_zero_type.onnx     a DequantizeLinear of uint8 data with an int8 zero point
  q_scale_zero.onnx    a QuantizeLinear whose scale is 0
  q_scale_nan.onnx     a DequantizeLinear whose scale is NaN
  q_axis_length.onnx   a per-axis DequantizeLinear with 3 scales for an axis of 4
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
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    k = helper.make_tensor("k", TensorProto.INT64, [1], [3])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu_ok"),
        helper.make_node("TopK", ["r", "k"], ["top", "idx"], name="topk_node"),
        helper.make_node("Frobnicate", ["r"], ["f"], name="custom_node",
                         domain="com.example"),
        helper.make_node("Add", ["r", "f"], ["y"], name="add_ok"),
    ]
    graph = helper.make_graph(nodes, "unsupported", [x], [y], [k])
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


def quant(name, x_type, x_shape, scale, zero_type, zero, axis=None, quantize=False):
    """One QuantizeLinear (float x) or DequantizeLinear (int8 x) node."""
    op = "QuantizeLinear" if quantize else "DequantizeLinear"
    out_type = zero_type if quantize else TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", x_type, x_shape)
    y = helper.make_tensor_value_info("y", out_type, x_shape)
    inits = [helper.make_tensor("scale", TensorProto.FLOAT, [len(scale)] if len(scale) > 1 else [],
                                scale),
             helper.make_tensor("zero", zero_type, [len(zero)] if len(zero) > 1 else [], zero)]
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node(op, ["x", "scale", "zero"], ["y"], name=name, **attrs)
    graph = helper.make_graph([node], name, [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    save(unsupported(), os.path.join(out, "unsupported.onnx"))
    save(matmul_mismatch(), os.path.join(out, "matmul_mismatch.onnx"))
    save(symbolic(), os.path.join(out, "symbolic.onnx"))
    save(lstm_activation(), os.path.join(out, "lstm_activation.onnx"))
    u8, i8, f32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT
    save(quant("bad_zero_type", u8, [1, 4], [0.1], i8, [0]),
         os.path.join(out, "q_zero_type.onnx"))
    save(quant("bad_scale_zero", f32, [1, 4], [0.0], u8, [128], quantize=True),
         os.path.join(out, "q_scale_zero.onnx"))
    save(quant("bad_scale_nan", i8, [1, 4], [float("nan")], i8, [0]),
         os.path.join(out, "q_scale_nan.onnx"))
    save(quant("bad_axis_scales", i8, [4, 3], [0.1, 0.2, 0.3], i8, [0, 0, 0], axis=0),
         os.path.join(out, "q_axis_length.onnx"))


if __name__ == "__main__":
    main()
