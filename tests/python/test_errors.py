"""The documented exceptions and their messages: wrong inputs are
ValueError naming the input and what it expects; a broken model is
CompileError (cgc's one-line diagnostic); a failed run is RunError naming
the node."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import cgc
from conftest import sample_case


def test_wrong_dtype(tiny_cnn):
    model, inputs, _ = tiny_cnn
    name = model.inputs[0].name
    with pytest.raises(ValueError, match=rf"input '{name}': expected float32 of shape "
                                         rf".* got float64"):
        model(inputs[0].astype(np.float64))


def test_wrong_shape(tiny_cnn):
    model, inputs, _ = tiny_cnn
    name = model.inputs[0].name
    wrong = np.zeros((2,) + inputs[0].shape[1:], np.float32)
    with pytest.raises(ValueError, match=rf"input '{name}': expected float32 of shape "
                                         rf"\(1, .*got float32 of shape \(2, "):
        model(wrong)


def test_missing_input(tiny_cnn):
    model, _, _ = tiny_cnn
    with pytest.raises(ValueError, match=rf"input '{model.inputs[0].name}' is missing"):
        model.run({})
    with pytest.raises(ValueError, match=r"takes 1 input\(s\)"):
        model()


def test_unknown_input(tiny_cnn):
    model, inputs, _ = tiny_cnn
    with pytest.raises(ValueError, match=r"has no input 'nope' \(its inputs: "):
        model.run({model.inputs[0].name: inputs[0], "nope": inputs[0]})


def test_garbage_model(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\x07not a model\xff\x00" * 16)
    with pytest.raises(cgc.CompileError, match=str(path)) as error:
        cgc.compile(path)
    assert "\n" not in str(error.value).strip()


def test_missing_file(tmp_path):
    path = tmp_path / "absent.onnx"
    with pytest.raises(cgc.CompileError, match=str(path)):
        cgc.compile(path)


def test_unsupported_op(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu_ok"),
             helper.make_node("Frobnicate", ["r"], ["y"], name="custom_node",
                              domain="com.example")]
    model = helper.make_model(helper.make_graph(nodes, "unsupported", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 13),
                                             helper.make_opsetid("com.example", 1)])
    path = tmp_path / "unsupported.onnx"
    onnx.save(model, str(path))
    with pytest.raises(cgc.CompileError, match=r"com\.example\.Frobnicate \(node 'custom_node'\)"):
        cgc.compile(path)
    # inspect reports it instead of raising.
    report = cgc.inspect(path)
    assert "com.example.Frobnicate" in report["unsupported_ops"]
    assert "error" in report


def test_run_error_names_node(tmp_path):
    data = helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 3])
    indices = helper.make_tensor_value_info("indices", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    node = helper.make_node("Gather", ["data", "indices"], ["y"], name="gather_node", axis=0)
    model = helper.make_model(helper.make_graph([node], "gather", [data, indices], [y]),
                              opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "gather.onnx"
    onnx.save(model, str(path))
    m = cgc.compile(path)
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(m(table, np.array([3, 1])), table[[3, 1]])
    with pytest.raises(cgc.RunError, match="gather_node") as error:
        m(table, np.array([0, 7]))
    assert error.value.node == "gather_node"
    # The model still runs after a failed run.
    np.testing.assert_array_equal(m(table, np.array([0, 2])), table[[0, 2]])


def test_calibrate_names_input_set(tiny_cnn):
    model, inputs, _ = tiny_cnn
    path = sample_case("tiny_cnn")[0]
    bad = inputs[0].copy()
    bad.reshape(-1)[0] = np.nan
    with pytest.raises(cgc.CompileError, match=r"input set 1\b.*holds a NaN") as error:
        cgc.calibrate(path, [inputs, [bad]], output=None)
    assert "cgc-calibrate-" not in str(error.value)


def test_errors_name_python_keywords(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    model = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "symbolic",
                          [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "symbolic.onnx"
    onnx.save(model, str(path))
    with pytest.raises(cgc.CompileError, match=r"shapes= \(--shape\)"):
        cgc.compile(path)
    with pytest.raises(cgc.CompileError,
                       match=r"specialize= \(--specialize\) 'nope=2' .*no dims= \(--dim\)"):
        cgc.compile(path, dims={"batch": (1, 4)}, specialize={"nope": [2]})
