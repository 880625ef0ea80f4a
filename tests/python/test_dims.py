"""A model compiled with variable dimensions (cgc.compile(dims=...)): run at
several sizes against numpy, the shapes it reports, and the errors that name
the dimension."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cgc


@pytest.fixture(scope="module")
def attention_file(tmp_path_factory):
    """softmax(x @ W + bias) over the last axis, x of [batch, seq, 8] and a
    bias of [batch, seq, 1]; W fixed. The file and W."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 16)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"]),
         helper.make_node("Add", ["y", "bias"], ["z"]),
         helper.make_node("Softmax", ["z"], ["p"], axis=-1)],
        "attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, ["batch", "seq", 1])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["batch", "seq", 16])],
        [numpy_helper.from_array(w, "W")])
    path = tmp_path_factory.mktemp("dims") / "attention.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path, w


@pytest.fixture(scope="module")
def attention(attention_file):
    path, w = attention_file
    return cgc.compile(path, dims={"batch": (1, 4), "seq": (2, 64, 2)}), w


def reference(x, bias, w):
    z = x @ w + bias
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_any_size_within_bounds(attention):
    model, w = attention
    assert model.dims == [("batch", 1, 4, 1), ("seq", 2, 64, 2)]
    assert model.inputs[0].shape == ("batch", "seq", 8)
    rng = np.random.default_rng(1)
    for b, s in [(1, 2), (3, 10), (4, 64), (2, 38)]:
        x = rng.standard_normal((b, s, 8)).astype(np.float32)
        bias = rng.standard_normal((b, s, 1)).astype(np.float32)
        p = model(x, bias)
        assert p.shape == (b, s, 16)
        np.testing.assert_allclose(p, reference(x, bias, w), rtol=1e-4, atol=1e-6)


def test_sizes_outside_the_bounds_name_the_dimension(attention):
    model, _ = attention
    x = np.zeros((2, 66, 8), np.float32)
    with pytest.raises(ValueError, match="seq.*66.*2..64"):
        model(x, np.zeros((2, 66, 1), np.float32))
    with pytest.raises(ValueError, match="seq.*7.*multiple of 2"):
        model(np.zeros((1, 7, 8), np.float32), np.zeros((1, 7, 1), np.float32))
    with pytest.raises(ValueError, match="batch"):
        model(np.zeros((2, 4, 8), np.float32), np.zeros((3, 4, 1), np.float32))
    with pytest.raises(ValueError, match="expected float32"):
        model(np.zeros((2, 4, 9), np.float32), np.zeros((2, 4, 1), np.float32))
    # The model still runs right after the errors.
    x, bias = np.ones((1, 4, 8), np.float32), np.zeros((1, 4, 1), np.float32)
    np.testing.assert_allclose(model(x, bias), reference(x, bias, attention[1]), rtol=1e-4,
                               atol=1e-6)


def test_bad_dims_argument(attention_file, tmp_path):
    """dims= reach C++ as ranges, checked as --dim's: the error names the
    range as --dim would take it."""
    with pytest.raises(ValueError, match="expected \\(min, max\\)"):
        cgc.compile("unused.onnx", dims={"seq": (1,)})
    path, _ = attention_file
    for dims, why in [({"seq": (9, 2)}, r"'seq=9..2' has MAX 2 below MIN 9"),
                      ({"seq": (-1, 4)}, r"'seq=-1..4' has a negative MIN"),
                      ({"seq": (3, 5, 8)}, r"'seq=3..5:8' holds no multiple of 8")]:
        with pytest.raises(cgc.CompileError, match=r"dims= \(--dim\) " + why):
            cgc.compile(path, dims=dims)


def test_specialized_sizes(attention_file):
    """specialize= adds static code for seq=10 (batch still variable): both
    paths match numpy, and a profile at seq=10 times only the specialised
    nodes, at other sizes only the general ones."""
    path, w = attention_file
    model = cgc.compile(path, dims={"batch": (1, 4), "seq": (2, 64, 2)}, specialize={"seq": [10]})
    rng = np.random.default_rng(2)
    for b, s in [(3, 10), (2, 38), (1, 10)]:
        x = rng.standard_normal((b, s, 8)).astype(np.float32)
        bias = rng.standard_normal((b, s, 1)).astype(np.float32)
        np.testing.assert_allclose(model(x, bias), reference(x, bias, w), rtol=1e-4, atol=1e-6)
        names = [n["name"] for n in model.profile(runs=1)]
        assert all(n.endswith("@seq=10") == (s == 10) for n in names), names
    with pytest.raises(cgc.CompileError, match="--specialize.*seq=65"):
        cgc.compile(path, dims={"batch": (1, 4), "seq": (2, 64, 2)}, specialize={"seq": 65})


def test_specialized_buckets(attention_file):
    """specialize= takes buckets: a (min, max) tuple or "min..max". Padding
    the batch is neutral (a padded path at its bound), padding seq is not
    (general code over the bucket); both match numpy, and the profile
    names the path each size took."""
    path, w = attention_file
    model = cgc.compile(path, dims={"batch": (1, 4), "seq": (2, 64, 2)},
                        specialize={"batch": (1, 2), "seq": ["2..16", (18, 32)]})
    rng = np.random.default_rng(3)
    for b, s in [(1, 2), (2, 16), (2, 18), (1, 32), (3, 10), (2, 40)]:
        x = rng.standard_normal((b, s, 8)).astype(np.float32)
        bias = rng.standard_normal((b, s, 1)).astype(np.float32)
        np.testing.assert_allclose(model(x, bias), reference(x, bias, w), rtol=1e-4, atol=1e-6)
        names = [n["name"] for n in model.profile(runs=1)]
        seq = "seq=2..16" if s <= 16 else "seq=18..32" if s <= 32 else None
        path_sizes = f"@batch=1..2,{seq}" if b <= 2 and seq else None
        assert all((path_sizes and n.endswith(path_sizes)) or (not path_sizes and "@" not in n)
                   for n in names), names
    with pytest.raises(cgc.CompileError, match="--specialize.*overlap"):
        cgc.compile(path, dims={"batch": (1, 4), "seq": (2, 64, 2)},
                    specialize={"seq": [(2, 16), (10, 20)]})


def test_tune_records_the_sizes(attention_file, tmp_path):
    """cgc.tune(dims=...) without inputs times the bounds and records them."""
    path, _ = attention_file
    profile = cgc.tune(path, dims={"batch": (1, 4), "seq": (2, 64, 2)}, out_dir=tmp_path,
                       rounds=1, budget=0)
    with open(profile) as f:
        sizes = [s["dims"] for s in json.load(f)["sizes"]]
    assert sizes == [{"batch": 4, "seq": 64}]


def test_tune_specialize_tunes_each_path(attention_file, tmp_path):
    """cgc.tune(specialize=...) tunes each path on its own; a compile with
    the profile specialises them, and both paths match numpy."""
    path, w = attention_file
    dims = {"batch": (1, 4), "seq": (2, 64, 2)}
    profile = cgc.tune(path, dims=dims, specialize={"seq": [16]}, out_dir=tmp_path, rounds=1,
                       budget=0)
    with open(profile) as f:
        paths = json.load(f)["specializations"]
    assert [p["dims"] for p in paths] == [{"seq": 16}]
    assert paths[0]["profile"]["nodes"]
    model = cgc.compile(path, dims=dims, profile=profile)
    rng = np.random.default_rng(3)
    for b, s in [(2, 16), (3, 10)]:
        x = rng.standard_normal((b, s, 8)).astype(np.float32)
        bias = rng.standard_normal((b, s, 1)).astype(np.float32)
        np.testing.assert_allclose(model(x, bias), reference(x, bias, w), rtol=1e-4, atol=1e-6)
        names = [n["name"] for n in model.profile(runs=1)]
        assert all(n.endswith("@seq=16") == (s == 16) for n in names), names


def test_calibrate_sets_of_several_sizes(attention_file, tmp_path):
    """cgc.calibrate(dims=...) takes input sets of different sizes: the
    statistics of x cover them all (numpy's count, min and max); a size
    outside the bounds is a CompileError naming the dimension."""
    path, _ = attention_file
    dims = {"batch": (1, 4), "seq": (2, 64, 2)}
    rng = np.random.default_rng(4)
    sets = [(rng.standard_normal((b, s, 8)).astype(np.float32),
             rng.standard_normal((b, s, 1)).astype(np.float32)) for b, s in [(1, 2), (3, 10)]]
    stats = cgc.calibrate(path, sets, output=tmp_path / "a.calib.json", dims=dims)
    x = stats["tensors"]["x"]
    assert x["count"] == sum(a.size for a, _ in sets)
    assert x["min"] == pytest.approx(min(float(a.min()) for a, _ in sets))
    assert x["max"] == pytest.approx(max(float(a.max()) for a, _ in sets))
    with pytest.raises(cgc.CompileError, match="seq"):
        cgc.calibrate(path, [(np.zeros((1, 66, 8), np.float32), np.zeros((1, 66, 1), np.float32))],
                      output=tmp_path / "b.calib.json", dims=dims)
    with pytest.raises(ValueError, match="input 'x'"):
        cgc.calibrate(path, [(np.zeros((1, 4, 9), np.float32), np.zeros((1, 4, 1), np.float32))],
                      output=tmp_path / "c.calib.json", dims=dims)
