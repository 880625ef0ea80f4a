#!/usr/bin/python3
"""ONNX external data: models whose tensors lie in files beside the model.

  * a Conv -> Relu -> MatMul -> Add model with its initializers in one data
    file, and again one file per tensor; a model whose tensors are Constant
    nodes' values and an If whose branches hold a Constant and an
    initializer: each saved by onnx.save_model(save_as_external_data=True),
    run with `cgc run` from another working directory (by absolute and by
    relative model path), its outputs against numpy's;
  * torchvision's squeezenet1_1 (random weights) exported inline and
    re-saved with external data: cgc's outputs of the two equal bit for bit,
    and match PyTorch's;
  * `cgc inspect` lists the data files and their sizes, and `cgc compile
    --depfile` (what cgc_add_graph rebuilds on) names them;
  * `cgc compile` of a MatMul chain, with external data and inline, peaks
    under the weights' size plus a quarter plus a fixed working set
    (issue 55's goal) of resident memory;
  * bad data (missing file, truncated file, offset past the end, a length
    that is not the tensor's, an absolute location, one with '..', an empty
    one, an offset or length that is not a number): exit code 1 and one
    stderr line naming the tensor and the file.

Usage: test_external_data.py CGC WORKDIR
"""
import copy
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CGC, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    else:
        print("ok  ", what)


def cgc(args, cwd):
    return subprocess.run([CGC, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def make_model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def external_tensors(model):
    """Names of the tensors stored externally, in the graph, its bodies and
    attributes (as onnx's own helper walks them)."""
    from onnx.external_data_helper import _get_all_tensors
    return sorted(t.name for t in _get_all_tensors(model)
                  if t.data_location == TensorProto.EXTERNAL)


def save_external(model, folder, one_file, location=None):
    """Saves `model` as folder/model.onnx with every tensor external; returns
    the path. Asserts that every tensor did go external."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    onnx.save_model(copy.deepcopy(model), path, save_as_external_data=True,
                    all_tensors_to_one_file=one_file, location=location, size_threshold=0,
                    convert_attribute=True)
    stored = onnx.load(path, load_external_data=False)
    from onnx.external_data_helper import _get_all_tensors
    inline = [t.name for t in _get_all_tensors(stored) if t.data_location != TensorProto.EXTERNAL]
    check(not inline, f"{path}: every tensor external (inline: {inline})")
    return path


def write_inputs(folder, arrays, names):
    os.makedirs(folder, exist_ok=True)
    for i, (a, name) in enumerate(zip(arrays, names)):
        with open(os.path.join(folder, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())


def read_output(folder, i=0):
    t = TensorProto()
    with open(os.path.join(folder, f"output_{i}.pb"), "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def run_against_reference(label, model, path, feeds, expected, cwd, model_arg=None):
    """cgc run of `path` (as `model_arg` from `cwd`) against `expected`
    (numpy's outputs of `model`, the same model inline)."""
    names = [i.name for i in model.graph.input]
    data = os.path.join(WORK, "data", label)
    write_inputs(data, [feeds[n] for n in names], names)
    out = os.path.join(WORK, "out", label)
    shutil.rmtree(out, ignore_errors=True)
    p = cgc(["run", model_arg or path, "--quiet", "--inputs", data, "--outputs", out], cwd)
    if p.returncode != 0:
        check(False, f"{label}: cgc run exit {p.returncode}: {p.stderr.strip()}")
        return
    for i, e in enumerate(expected):
        got = read_output(out, i)
        check(got.shape == e.shape and np.allclose(got, e, rtol=1e-5, atol=1e-5),
              f"{label}: output {i} matches the reference")


# ---------------------------------------------------------------- the models

rng = np.random.default_rng(3)


def conv_matmul_model():
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    w2 = rng.standard_normal((4 * 6 * 6, 5)).astype(np.float32)
    b2 = rng.standard_normal(5).astype(np.float32)
    shape = np.array([1, -1], np.int64)
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "shape"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "W2"], ["m"], name="matmul"),
             helper.make_node("Add", ["m", "B2"], ["y"], name="add")]
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((w, "W"), (b, "B"), (w2, "W2"), (b2, "B2"), (shape, "shape"))]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)


def conv_matmul_numpy(model, x):
    w, b, w2, b2 = (numpy_helper.to_array(t) for t in model.graph.initializer[:4])
    windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))
    c = np.einsum("nchwij,ocij->nohw", windows, w) + b[None, :, None, None]
    return [np.maximum(c, 0).reshape(1, -1) @ w2 + b2]


def constants_model():
    """y = (x * K) + (cond ? A : B + C), K a Constant node, A a Constant in
    the then branch, B a Constant and C an initializer of the else branch."""
    def const(name, value):
        return helper.make_node("Constant", [], [name], name=name + "_node",
                                value=numpy_helper.from_array(value, name))

    k, a, b, c = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4))
    out = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3])
    then_g = helper.make_graph([const("A", a)], "then", [], [out("A")])
    else_g = helper.make_graph([const("Bc", b), helper.make_node("Add", ["Bc", "C"], ["s"])],
                               "else", [], [out("s")], [numpy_helper.from_array(c, "C")])
    nodes = [const("K", k),
             helper.make_node("Mul", ["x", "K"], ["xk"], name="mul"),
             helper.make_node("If", ["cond"], ["branch"], name="if", then_branch=then_g,
                              else_branch=else_g),
             helper.make_node("Add", ["xk", "branch"], ["y"], name="add")]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                       [out("y")])
    return model, lambda x, cond: [x * k + (a if cond else b + c)]


def squeezenet_onnx(path):
    import torch
    import torchvision
    torch.manual_seed(0)
    net = torchvision.models.squeezenet1_1(weights=None).eval()
    x = torch.randn(1, 3, 64, 64)
    torch.onnx.export(net, x, path, opset_version=13, input_names=["x"], output_names=["y"])
    with torch.no_grad():
        return x.numpy(), net(x).numpy()


# ------------------------------------------------------------------ the tests

def test_runs():
    elsewhere = os.path.join(WORK, "elsewhere")
    os.makedirs(elsewhere, exist_ok=True)
    model = conv_matmul_model()
    feeds = {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}
    expected = conv_matmul_numpy(model, feeds["x"])
    one = save_external(model, os.path.join(WORK, "models", "one_file"), True, "weights.bin")
    run_against_reference("one file, absolute path", model, one, feeds, expected, elsewhere)
    # A relative model path from the work folder: locations resolve against
    # the model's folder, not the working directory.
    run_against_reference("one file, relative path", model, one, feeds, expected, WORK,
                          os.path.join("models", "one_file", "model.onnx"))
    many = save_external(model, os.path.join(WORK, "models", "many_files"), False)
    run_against_reference("a file per tensor", model, many, feeds, expected, elsewhere)

    cmodel, cnumpy = constants_model()
    cpath = save_external(cmodel, os.path.join(WORK, "models", "constants"), True, "c.data")
    check(len(external_tensors(onnx.load(cpath, load_external_data=False))) == 4,
          "constants model: K, A, Bc and C stored externally")
    x = rng.standard_normal((2, 3)).astype(np.float32)
    for cond in (True, False):
        run_against_reference(f"Constant and If (cond {cond})", cmodel, cpath,
                              {"x": x, "cond": np.array(cond)}, cnumpy(x, cond), elsewhere)

    p = cgc(["inspect", one, "--json"], elsewhere)
    files = json.loads(p.stdout).get("external_data", []) if p.stdout else []
    size = os.path.getsize(os.path.join(WORK, "models", "one_file", "weights.bin"))
    check(files == [{"file": "weights.bin", "tensors": 5, "bytes": size}],
          f"inspect --json lists weights.bin, 5 tensors, {size} bytes: {files}")
    p = cgc(["inspect", many], elsewhere)
    check("external data" in p.stdout and "W2" in p.stdout, "inspect lists a file per tensor")
    # --depfile (what cgc_add_graph rebuilds on): the model and every data file.
    depfile = os.path.join(WORK, "many.d")
    p = cgc(["compile", many, "-o", os.path.join(WORK, "many_out"), "--quiet", "--depfile",
             depfile], elsewhere)
    listed = open(depfile).read().replace("\\\n", " ").split() if p.returncode == 0 else []
    data = [os.path.join(os.path.dirname(many), t) for t in external_tensors(model)]
    check(p.returncode == 0 and many in listed and all(d in listed for d in data)
          and any(f.endswith("model.h") for f in listed[:listed.index(":")]),
          f"--depfile lists the outputs, the model and its {len(data)} data files: {listed}")
    return one


def test_squeezenet():
    folder = os.path.join(WORK, "models", "squeezenet")
    os.makedirs(folder, exist_ok=True)
    inline = os.path.join(folder, "squeezenet.onnx")
    x, expected = squeezenet_onnx(inline)
    external = save_external(onnx.load(inline), os.path.join(folder, "external"), True,
                             "squeezenet.data")
    data = os.path.join(WORK, "data", "squeezenet")
    write_inputs(data, [x], ["x"])
    outputs = []
    for label, path in (("inline", inline), ("external", external)):
        out = os.path.join(WORK, "out", "squeezenet_" + label)
        shutil.rmtree(out, ignore_errors=True)
        p = cgc(["run", path, "--quiet", "--inputs", data, "--outputs", out], WORK)
        check(p.returncode == 0, f"squeezenet {label}: cgc run ({p.stderr.strip()})")
        outputs.append(read_output(out) if p.returncode == 0 else None)
    if outputs[0] is not None and outputs[1] is not None:
        check(outputs[0].tobytes() == outputs[1].tobytes(),
              "squeezenet: external data gives the inline model's outputs bit for bit")
        check(np.allclose(outputs[1], expected, rtol=1e-3, atol=1e-4),
              "squeezenet: outputs match PyTorch's")


def expect_error(label, path, *named):
    p = cgc(["compile", path, "-o", os.path.join(WORK, "bad_out")], os.path.join(WORK, "elsewhere"))
    lines = p.stderr.strip().splitlines()
    ok = p.returncode == 1 and len(lines) == 1 and all(n in lines[0] for n in named)
    check(ok, f"{label}: exit 1, one line naming {named} (exit {p.returncode}: {p.stderr.strip()})")


def bad_copy(good, label, edit=None, data_edit=None):
    """A copy of the one-file model's folder with `edit(model)` applied to its
    proto (external data not loaded) and `data_edit(data_path)` to its data."""
    folder = os.path.join(WORK, "bad", label)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(os.path.dirname(good), folder)
    path = os.path.join(folder, "model.onnx")
    if edit:
        model = onnx.load(path, load_external_data=False)
        edit(model)
        onnx.save_model(model, path)
    if data_edit:
        data_edit(os.path.join(folder, "weights.bin"))
    return path


def set_key(name, key, value):
    """An edit setting (None: removing) one external_data entry of a tensor."""
    def edit(model):
        t = next(t for t in model.graph.initializer if t.name == name)
        entries = {e.key: e.value for e in t.external_data}
        entries[key] = value
        if value is None:
            del entries[key]
        del t.external_data[:]
        for k, v in entries.items():
            t.external_data.add(key=k, value=v)
    return edit


def test_errors(good):
    stored = onnx.load(good, load_external_data=False)
    spans = {t.name: {e.key: e.value for e in t.external_data} for t in stored.graph.initializer}
    last = max(spans, key=lambda n: int(spans[n].get("offset", 0)))
    size = os.path.getsize(os.path.join(os.path.dirname(good), "weights.bin"))

    expect_error("missing file", bad_copy(good, "missing", data_edit=os.remove),
                 "'W'", "weights.bin", "cannot open")
    expect_error("truncated file",
                 bad_copy(good, "truncated", data_edit=lambda p: os.truncate(p, size - 4)),
                 f"'{last}'", "weights.bin", "truncated")
    expect_error("offset past the end",
                 bad_copy(good, "offset", set_key("W2", "offset", str(size + 64))),
                 "'W2'", "weights.bin", "past the end")
    expect_error("length not the tensor's size",
                 bad_copy(good, "length", set_key("B", "length", "12")), "'B'", "weights.bin",
                 "length 12", "16 bytes")
    expect_error("no length, rest of the file not the tensor's size",
                 bad_copy(good, "nolength", set_key("B", "length", None)), "'B'", "weights.bin",
                 "no length")
    expect_error("absolute location",
                 bad_copy(good, "absolute", set_key("W", "location", "/etc/hostname")), "'W'",
                 "/etc/hostname", "relative")
    expect_error("location leaving the folder",
                 bad_copy(good, "dotdot", set_key("W", "location", "../one_file/weights.bin")),
                 "'W'", "../one_file/weights.bin", "..")
    expect_error("empty location", bad_copy(good, "empty", set_key("W", "location", "")), "'W'",
                 "location is empty")
    expect_error("offset not a number",
                 bad_copy(good, "offset_text", set_key("W", "offset", "12abc")), "'W'",
                 "weights.bin", "offset '12abc'")
    expect_error("length not a number",
                 bad_copy(good, "length_text", set_key("W", "length", "-4")), "'W'",
                 "weights.bin", "length '-4'")


def peak_rss_of(args):
    """Peak resident bytes of `cgc ARGS`, run from a fresh Python process so
    that no earlier child counts."""
    probe = ("import resource, subprocess, sys; "
             "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
             "print(r.stderr, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", probe, CGC, *args], capture_output=True, text=True,
                         timeout=300)
    code, kb = out.stdout.split()
    return int(code), int(kb) * 1024, out.stderr.strip()


def test_compile_memory():
    d, layers = 1024, 8
    rng = np.random.default_rng(3)
    nodes, inits, x = [], [], "x"
    for i in range(layers):
        for j, shape in enumerate([(d, 4 * d), (4 * d, d)]):
            w = f"w{i}_{j}"
            inits.append(numpy_helper.from_array(rng.standard_normal(shape, np.float32), w))
            nodes.append(helper.make_node("MatMul", [x, w], [f"{w}_out"]))
            x = f"{w}_out"
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, d])],
                       [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, d])], inits)
    weights = sum(len(t.raw_data) for t in model.graph.initializer)
    folder = os.path.join(WORK, "memory")
    os.makedirs(folder)
    inline = os.path.join(folder, "chain_inline.onnx")
    onnx.save_model(model, inline)
    external = save_external(model, os.path.join(folder, "ext"), True)
    limit = 1.25 * weights + 300e6
    for label, path in [("external data", external), ("inline", inline)]:
        code, peak, err = peak_rss_of(["compile", path, "-o", os.path.join(folder, label[:3]),
                                       "--weights", "file", "--quiet"])
        check(code == 0, f"compile memory ({label}): compiles ({err})")
        check(peak <= limit, f"compile memory ({label}): peak {peak / 1e6:.0f} MB for "
              f"{weights / 1e6:.0f} MB of weights (limit {limit / 1e6:.0f} MB)")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    good = test_runs()
    test_errors(good)
    test_squeezenet()
    test_compile_memory()
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
