"""Every sample model (samples/models/*) compiled and run from numpy, its
outputs against the reference outputs of its test data."""

import pytest

from conftest import SAMPLES, assert_close

NAMES = sorted(p.name for p in SAMPLES.iterdir() if (p / "model.onnx").exists())


@pytest.mark.parametrize("name", NAMES)
def test_sample_matches_reference(compiled, name):
    model, inputs, expected = compiled(name)
    assert [t.shape for t in model.inputs] == [x.shape for x in inputs]
    outputs = model.run({t.name: x for t, x in zip(model.inputs, inputs)})
    assert list(outputs) == [t.name for t in model.outputs]
    for (output_name, actual), reference in zip(outputs.items(), expected):
        assert_close(actual, reference, output_name)
    # m(*arrays) takes the inputs in order and gives the same answer.
    again = model(*inputs)
    again = again if isinstance(again, tuple) else (again,)
    for actual, reference in zip(again, expected):
        assert_close(actual, reference)
