"""Writes small ONNX models that cgc must reject with a clear diagnostic.

Usage: make_bad_models.py OUT_DIR
  unsupported.onnx     two unsupported ops (StringNormalizer, which cgc
                       leaves out, and a custom-domain op)
  matmul_mismatch.onnx a MatMul whose inner dimensions differ
  symbolic.onnx        an input with a symbolic batch dimension
  lstm_activation.onnx an LSTM with an activation function ONNX does not define
  q_zero_type.onnx     a DequantizeLinear of uint8 data with an int8 zero point
  q_scale_zero.onnx    a QuantizeLinear whose scale is 0
  q_scale_nan.onnx     a DequantizeLinear whose scale is NaN
  q_axis_length.onnx   a per-axis DequantizeLinear with 3 scales for an axis of 4
  range_int64.onnx     a Range over int64 values beyond 2^53 (must be exact)
  data_dependent.onnx  TopK with a run-time k and NonZero, with inputs in
                       data_dependent_k9/ (k beyond the axis) and
                       data_dependent_k2/ (k fine; NonZero beyond a --bound)
  index_range.onnx     Gather and ScatterElements on run-time indices, with
                       inputs in index_gather/ and index_scatter/ (an index
                       beyond its axis: an error from run() naming the node)
  loop_bound.onnx      a Loop whose trip count is an input (5 in loop_steps/)
                       and whose scan output is bound with --bound
  reshape_input.onnx   Reshape whose shape is a graph input, with tensor
                       files for --constant: shape_float.pb (wrong type),
                       shape_ok.pb, not_a_tensor.pb
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


def data_dependent(out):
    """TopK of x [2, 5] with k an input, and NonZero of x; the two input
    sets: k = 9 (beyond the axis: an error from run()) and k = 2 (fine;
    x's 9 nonzeros exceed a --bound nonzero=3)."""
    import numpy as np
    from onnx import numpy_helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])
    k = helper.make_tensor_value_info("k", TensorProto.INT64, [1])
    outputs = [helper.make_tensor_value_info(name, dtype, [2, None]) for name, dtype in
               (("v", TensorProto.FLOAT), ("i", TensorProto.INT64), ("nz", TensorProto.INT64))]
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=1),
             helper.make_node("NonZero", ["x"], ["nz"], name="nonzero")]
    graph = helper.make_graph(nodes, "data_dependent", [x, k], outputs)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "data_dependent.onnx"))
    for kval in (9, 2):
        data = os.path.join(out, f"data_dependent_k{kval}")
        os.makedirs(data, exist_ok=True)
        tensors = [np.arange(10, dtype=np.float32).reshape(2, 5), np.array([kval], np.int64)]
        for index, array in enumerate(tensors):
            with open(os.path.join(data, f"input_{index}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(array).SerializeToString())


def write_inputs(out, folder, arrays):
    from onnx import numpy_helper
    data = os.path.join(out, folder)
    os.makedirs(data, exist_ok=True)
    for index, array in enumerate(arrays):
        with open(os.path.join(data, f"input_{index}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(array).SerializeToString())


def index_range(out):
    """Gather (rows of data by idx) and ScatterElements (upd into data at
    sidx); each input set has one index beyond axis 0's 4 rows."""
    import numpy as np
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    inputs = [helper.make_tensor_value_info("data", f32, [4, 3]),
              helper.make_tensor_value_info("idx", i64, [2]),
              helper.make_tensor_value_info("sidx", i64, [1, 3]),
              helper.make_tensor_value_info("upd", f32, [1, 3])]
    outputs = [helper.make_tensor_value_info("rows", f32, [2, 3]),
               helper.make_tensor_value_info("scattered", f32, [4, 3])]
    nodes = [helper.make_node("Gather", ["data", "idx"], ["rows"], name="lookup", axis=0),
             helper.make_node("ScatterElements", ["data", "sidx", "upd"], ["scattered"],
                              name="scatter", axis=0)]
    graph = helper.make_graph(nodes, "index_range", inputs, outputs)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "index_range.onnx"))
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    ones = np.ones((1, 3), np.float32)
    write_inputs(out, "index_gather", [data, np.array([1, 7], np.int64),
                                       np.array([[0, 1, 2]], np.int64), ones])
    write_inputs(out, "index_scatter", [data, np.array([1, 2], np.int64),
                                        np.array([[0, 9, 1]], np.int64), ones])


def loop_bound(out):
    """Loop `count_loop` over a run-time trip count `steps`, carrying x [2]
    (+1 a step) and recording it as a scan output: the scan output's length
    is the trip count, which --bound count_loop=N caps."""
    import numpy as np
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"], name="keep"),
         helper.make_node("Add", ["acc", "one"], ["acc_out"], name="step"),
         helper.make_node("Identity", ["acc"], ["scan"], name="record")],
        "body",
        [helper.make_tensor_value_info("i", i64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", f32, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", f32, [2]),
         helper.make_tensor_value_info("scan", f32, [2])],
        [helper.make_tensor("one", f32, [1], [1.0])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["steps", "cond", "x"], ["final", "history"],
                          name="count_loop", body=body)],
        "loop_bound",
        [helper.make_tensor_value_info("steps", i64, []),
         helper.make_tensor_value_info("x", f32, [2])],
        [helper.make_tensor_value_info("final", f32, [2]),
         helper.make_tensor_value_info("history", f32, ["n", 2])],
        [helper.make_tensor("cond", TensorProto.BOOL, [], [True])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "loop_bound.onnx"))
    write_inputs(out, "loop_steps", [np.array(5, np.int64), np.zeros(2, np.float32)])


def reshape_input(out):
    """Reshape of x [2, 6] by the graph input `shape`, and tensor files for
    --constant shape=FILE."""
    import numpy as np
    from onnx import numpy_helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])
    shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [2])
    r = helper.make_tensor_value_info("r", TensorProto.FLOAT, ["a", "b"])
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape")],
                              "reshape_input", [x, shape], [r])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(out, "reshape_input.onnx"))
    for name, array in (("shape_float", np.array([3.0, 4.0], np.float32)),
                        ("shape_ok", np.array([3, 4], np.int64))):
        with open(os.path.join(out, f"{name}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(array, "shape").SerializeToString())
    with open(os.path.join(out, "not_a_tensor.pb"), "w") as f:
        f.write("not a tensor")


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
    save(range_int64(), os.path.join(out, "range_int64.onnx"))
    data_dependent(out)
    index_range(out)
    loop_bound(out)
    reshape_input(out)
    for name, model in hostile_models().items():
        # Not through the checker: some are what it would pass, some not,
        # and cgc must hold either way.
        onnx.save(model, os.path.join(out, f"hostile_{name}.onnx"))


if __name__ == "__main__":
    main()
