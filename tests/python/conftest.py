"""Shared fixtures of the Python package's tests (tests/CMakeLists.txt runs
them with PYTHONPATH at the build tree's package and CGC_CACHE_DIR at the
build's cache). Each model is compiled once per session."""

import pathlib

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

import cgc

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples" / "models"


def read_tensor(path):
    proto = onnx.TensorProto()
    proto.ParseFromString(pathlib.Path(path).read_bytes())
    return onnx.numpy_helper.to_array(proto)


def sample_case(name):
    """(model path, [inputs], [expected outputs]) of samples/models/NAME,
    the inputs in the model's input order (ONNX test-data numbering)."""
    directory = SAMPLES / name
    data = directory / "test_data_set_0"
    inputs = [read_tensor(p) for p in sorted(data.glob("input_*.pb"),
                                             key=lambda p: int(p.stem.split("_")[1]))]
    outputs = [read_tensor(p) for p in sorted(data.glob("output_*.pb"),
                                              key=lambda p: int(p.stem.split("_")[1]))]
    return directory / "model.onnx", inputs, outputs


def input_names(model_path):
    graph = onnx.load(str(model_path), load_external_data=False).graph
    initializers = {i.name for i in graph.initializer}
    return [i.name for i in graph.input if i.name not in initializers]


_compiled = {}


@pytest.fixture(scope="session")
def compiled():
    """compiled(name) -> (Model, inputs, outputs) for a sample, compiled once
    (shapes bound from its test data, as cgc run --inputs does)."""
    def get(name):
        if name not in _compiled:
            path, inputs, outputs = sample_case(name)
            names = input_names(path)[:len(inputs)]
            shapes = {n: x.shape for n, x in zip(names, inputs)}
            # 1 executor x 1 thread: the builds of the sample_NAME_1x1 ctests
            # (one cache), and no oversubscription on a small machine.
            _compiled[name] = (cgc.compile(path, shapes=shapes, executors=1, threads=1),
                               inputs, outputs)
        return _compiled[name]
    return get


@pytest.fixture(scope="session")
def tiny_cnn(compiled):
    return compiled("tiny_cnn")


def assert_close(actual, expected, name=""):
    assert actual.dtype == expected.dtype, name
    assert actual.shape == expected.shape, name
    np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-4, err_msg=name)
