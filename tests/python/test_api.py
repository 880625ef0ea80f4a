"""The API around a model: PyTorch as the reference, several models at
once, runs in threads (the GIL released), zero-copy inputs and outputs,
profiles, inspect and load."""

import json
import os
import re
import threading
import time

import numpy as np
import pytest

import cgc
from conftest import SAMPLES, assert_close


def test_against_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10), torch.nn.Softmax(dim=1)).eval()
    x = torch.randn(2, 3, 8, 8)
    path = tmp_path / "net.onnx"
    torch.onnx.export(net, (x,), str(path), input_names=["image"], output_names=["probs"],
                      opset_version=13)
    model = cgc.compile(path)
    assert model.inputs == [("image", np.dtype(np.float32), (2, 3, 8, 8))]
    with torch.no_grad():
        expected = net(x).numpy()
    assert_close(model(x.numpy()), expected)


def test_two_models_at_once(compiled):
    first, first_inputs, first_expected = compiled("tiny_cnn")
    second, second_inputs, second_expected = compiled("mlp")
    assert first.library != second.library
    for _ in range(2):
        for model, inputs, expected in ((first, first_inputs, first_expected),
                                        (second, second_inputs, second_expected)):
            outputs = model.run({t.name: x for t, x in zip(model.inputs, inputs)})
            for actual, reference in zip(outputs.values(), expected):
                assert_close(actual, reference)


def test_two_libraries_take_different_cores():
    """Each model library links its own copy of the runtime; the second
    library's instance still leaves the cores the first one's workers are
    pinned to (the kernel tells it), and says so where none are left."""
    cpus = len(os.sched_getaffinity(0))
    if cpus < 2:
        pytest.skip("needs 2 CPUs to pin a worker")
    first = cgc.compile(str(SAMPLES / "tiny_cnn" / "model.onnx"), threads=2)
    second = cgc.compile(str(SAMPLES / "mlp" / "model.onnx"), threads=2)
    assert first.library != second.library
    assert "unpinned" not in first.placement, first.placement
    if cpus < 4:
        assert second.placement.endswith("unpinned: cores held by other instances"), \
            second.placement
    else:
        taken = lambda p: set(re.findall(r"cpu (\d+)", p))
        assert not taken(first.placement) & taken(second.placement), \
            (first.placement, second.placement)


def test_run_in_thread_releases_gil(tiny_cnn):
    # One C++ call of many runs in a thread: were the GIL held through it,
    # this thread could not run Python until it returned.
    model, inputs, expected = tiny_cnn
    model.input_buffer(model.inputs[0].name)[...] = inputs[0]
    runs_in_300ms = int(300 / max(min(model._bench_run(100)), 1e-3))
    window = []
    done = threading.Event()

    def runs():
        window.append(time.perf_counter())
        model._bench_run(runs_in_300ms)
        window.append(time.perf_counter())
        done.set()

    ticks = []
    thread = threading.Thread(target=runs)
    thread.start()
    while not done.is_set():
        ticks.append(time.perf_counter())
    thread.join()
    start, end = window
    assert end - start >= 0.2
    inside = [t for t in ticks if start + 0.05 < t < end - 0.05]
    assert len(inside) > 1000, f"{len(inside)} ticks of this thread while the model ran"
    assert_close(model.run()[model.outputs[0].name], expected[0])


def test_zero_copy(tiny_cnn):
    model, inputs, expected = tiny_cnn
    name = model.inputs[0].name
    buffer = model.input_buffer(name)
    assert buffer.flags.writeable and buffer.shape == model.inputs[0].shape
    buffer[...] = inputs[0]
    views = model.run(copy=False)
    view = views[model.outputs[0].name]
    assert not view.flags.writeable
    assert_close(view, expected[0])
    kept = view.copy()
    buffer[...] = 0
    model.run()  # inputs=None: the buffer as written
    assert not np.array_equal(view, kept)  # the next run overwrote the view
    fresh = model.run({name: inputs[0]})[model.outputs[0].name]
    assert_close(fresh, expected[0])
    assert not np.shares_memory(fresh, view)


def test_profile(tiny_cnn, tmp_path):
    model, inputs, _ = tiny_cnn
    model(inputs[0])
    nodes = model.profile(runs=3, profile_path=tmp_path / "p.json",
                          trace_path=tmp_path / "t.json")
    names = [name for name, _ in model.info["nodes"]]
    assert [n["name"] for n in nodes] == [n for n in names if n in {m["name"] for m in nodes}]
    assert all(n["calls"] == 3 and n["median_us"] >= 0 for n in nodes)
    assert json.loads((tmp_path / "p.json").read_text())
    assert json.loads((tmp_path / "t.json").read_text())


def test_inspect_and_load(tiny_cnn):
    model, inputs, expected = tiny_cnn
    report = cgc.inspect(SAMPLES / "tiny_cnn" / "model.onnx")
    assert report["nodes"] > 0 and "kernels" in report
    loaded = cgc.load(model.library, name=model.name)
    assert_close(loaded(inputs[0]), expected[0])
    assert_close(cgc.load(model.library)(inputs[0]), expected[0])
    with pytest.raises(cgc.CompileError):
        cgc.load(model.library + ".absent", name=model.name)


def test_constants_from_array(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    data = helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 3])
    indices = helper.make_tensor_value_info("indices", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    node = helper.make_node("Gather", ["data", "indices"], ["y"], name="gather_node", axis=0)
    path = tmp_path / "gather_constant.onnx"
    onnx.save(helper.make_model(helper.make_graph([node], "gather", [data, indices], [y]),
                                opset_imports=[helper.make_opsetid("", 13)]), str(path))
    model = cgc.compile(path, constants={"indices": np.array([2, 0])})
    assert [t.name for t in model.inputs] == ["data"]
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(model(table), table[[2, 0]])


def test_tune_writes_a_profile_compile_reads(tmp_path):
    sample = SAMPLES / "tiny_cnn" / "model.onnx"
    path = cgc.tune(sample, out_dir=tmp_path, rounds=1, budget=1)
    profile = json.loads(open(path).read())
    assert profile["executors"] >= 1 and "nodes" in profile
    model = cgc.compile(sample, profile=path)
    assert model.info["executors"] == profile["executors"]


def test_calibrate_from_numpy(tiny_cnn, tmp_path):
    model, inputs, _ = tiny_cnn
    path = SAMPLES / "tiny_cnn" / "model.onnx"
    rng = np.random.default_rng(0)
    shape = model.inputs[0].shape
    batches = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    stats = cgc.calibrate(path, [{model.inputs[0].name: x} for x in batches],
                          output=tmp_path / "c.json", bins=32)
    assert stats == json.loads((tmp_path / "c.json").read_text())
    assert stats["input_sets"] == 3 and stats["bins"] == 32
    # The input and the output, against numpy over what cgc's model gives.
    seen = np.stack(batches)
    outputs = np.stack([model(x) for x in batches])
    for name, values in ((model.inputs[0].name, seen), (model.outputs[0].name, outputs)):
        tensor = stats["tensors"][name]
        assert tensor["count"] == values.size, name
        assert tensor["min"] == pytest.approx(float(values.min()), rel=1e-6), name
        assert tensor["max"] == pytest.approx(float(values.max()), rel=1e-6), name
        assert sum(tensor["histogram"]) == values.size, name
    assert len(stats["tensors"]) > 2  # the intermediate activations too
    # Sequences in input order work the same.
    again = cgc.calibrate(path, [[x] for x in batches], output=tmp_path / "d.json", bins=32)
    assert again["tensors"] == stats["tensors"]


def test_calibrate_errors(tiny_cnn, tmp_path):
    model, _, _ = tiny_cnn
    path = SAMPLES / "tiny_cnn" / "model.onnx"
    good = np.zeros(model.inputs[0].shape, np.float32)
    out = tmp_path / "c.json"
    with pytest.raises(ValueError, match="input set 1, input 'input': expected float32"):
        cgc.calibrate(path, [[good], [good[..., :-1]]], output=out)
    with pytest.raises(ValueError, match="at least one input set"):
        cgc.calibrate(path, [], output=out)
    with pytest.raises(ValueError, match="input set 0: the model has no input 'x'"):
        cgc.calibrate(path, [{"x": good}], output=out)
    nan = good.copy()
    nan[0, 0, 0, 0] = np.nan
    with pytest.raises(cgc.CompileError, match="NaN"):
        cgc.calibrate(path, [[good], [nan]], output=out)
    assert not out.exists()


def test_observed_statistics(tiny_cnn, tmp_path):
    """observe=True and Model.record_statistics(): the statistics of every
    run while recording (count, min and max as numpy's; the histogram holds
    every value), an observed build's outputs unchanged, and a calibration
    file that quantises the model as cgc calibrate's does."""
    _, inputs, outputs = tiny_cnn
    path = SAMPLES / "tiny_cnn" / "model.onnx"
    model = cgc.compile(path, observe=True, executors=1, threads=1)
    with pytest.raises(ValueError, match="no tensor statistics"):
        model.write_calibration(tmp_path / "none.json")
    model.record_statistics(bins=256)
    x = inputs[0]
    runs = [x, 0.5 * x, 3 * x, -x]  # ranges that grow both ways
    for run in runs:
        result = model(run)
    np.testing.assert_allclose(model(x), outputs[0], rtol=1e-3, atol=1e-4)
    model.write_calibration(tmp_path / "traffic.json")
    stats = json.loads((tmp_path / "traffic.json").read_text())["tensors"]
    seen = np.concatenate([r.ravel() for r in runs + [x]])
    first = stats[model.inputs[0].name]
    assert first["count"] == seen.size and sum(first["histogram"]) == seen.size
    assert first["min"] == float(seen.min()) and first["max"] == float(seen.max())
    assert first["histogram_min"] <= first["min"] and first["max"] <= first["histogram_max"]
    assert len(first["histogram"]) == 256
    assert stats[model.outputs[0].name]["count"] == (len(runs) + 1) * result.size

    model.record_statistics()  # afresh: the sample's input alone
    model(x)
    model.write_calibration(tmp_path / "one.json")
    int8 = cgc.compile(path, quantize="int8", calibration=tmp_path / "one.json", method="minmax")
    np.testing.assert_allclose(int8(x), outputs[0], rtol=1e-2, atol=1e-3)
    with pytest.raises(cgc.CompileError, match="--observe"):
        cgc.compile(path, observe=True, quantize="int8", calibration=tmp_path / "one.json")


def test_compile_quantized(tiny_cnn, tmp_path):
    """quantize="int8" and its keywords: the int8 model against PyTorch's
    float outputs (the sample's test data), the layers inspect reports, a
    layer kept float, the report, and the keywords' errors."""
    _, inputs, outputs = tiny_cnn
    path = SAMPLES / "tiny_cnn" / "model.onnx"
    calibration = SAMPLES / "tiny_cnn" / "model.calib.json"
    int8 = cgc.compile(path, executors=1, threads=1, quantize="int8", calibration=calibration,
                       method="minmax", report=tmp_path / "q.json")
    np.testing.assert_allclose(int8(*inputs), outputs[0], rtol=1e-2, atol=1e-3)
    report = json.loads((tmp_path / "q.json").read_text())
    assert [layer["precision"] for layer in report["layers"]] == ["int8"] * 3
    first = "/features/features.0/Conv"
    info = cgc.inspect(path, quantize="int8", calibration=calibration, keep_float=[first])
    assert info["kernels"].get("QLinearConv") == 1 and info["float_layers"] == [first]
    with pytest.raises(ValueError, match='method= needs quantize="int8"'):
        cgc.compile(path, method="minmax")
    with pytest.raises(ValueError, match="needs calibration="):
        cgc.compile(path, quantize="int8")
    with pytest.raises(TypeError, match="'bins'"):
        cgc.compile(path, quantize="int8", calibration=calibration, bins=3)
    with pytest.raises(cgc.CompileError, match="--method: 'mode'"):
        cgc.compile(path, quantize="int8", calibration=calibration, method="mode")
