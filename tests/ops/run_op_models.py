"""End-to-end checks of op forms that ONNX 1.12's backend test data lacks.

The data covers Resize-13, Upsample-9 nearest, float64 Einsum and Dropout-12+;
this script builds small float32 models for the rest (Einsum equations, older
Upsample/Resize/Dropout opsets, Dropout-13 in training mode with ratio 0,
LayerNormalization without bias or unused statistics outputs, TopK with a constant k, ConvTranspose with constant
weights: the test data's take them as inputs, and cgc's
decompose-conv-transpose pass rewrites only constant ones), computes the
expected outputs with numpy, and checks each with cgc: compiled with
--verify, all built into one library (`cgc build`, one translation unit: a
C++ compiler's start and the runtime's headers once, not once a model), and
each run from it with `cgc run --check`.

Usage: run_op_models.py --cgc CGC --work DIR
"""

import argparse
import concurrent.futures
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

rng = np.random.default_rng(0)


def floats(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def write_model(work, name, node, inputs, outputs, opset, initializers=()):
    """inputs: [(name, array)] graph inputs; outputs: arrays for node outputs."""
    path = os.path.join(work, name)
    data = os.path.join(path, "test_data_set_0")
    os.makedirs(data, exist_ok=True)

    def info(n, a):
        return helper.make_tensor_value_info(
            n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)

    graph = helper.make_graph(
        [node], name, [info(n, a) for n, a in inputs],
        [info(n, a) for n, a in zip(node.output, outputs)],
        initializer=list(initializers))
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, os.path.join(path, "model.onnx"))
    for i, (n, a) in enumerate(inputs):
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for i, (n, a) in enumerate(zip(node.output, outputs)):
        with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    return name


def einsum_models(work):
    cases = [
        ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)]),
        ("ij,jk->ik", [(4, 5), (5, 6)]),
        ("bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]),
        ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),
        ("...ij,jk->...ik", [(2, 3, 4, 5), (5, 6)]),
        ("...ij,...jk->...ik", [(2, 1, 4, 5), (3, 5, 6)]),
        ("ij,jk", [(4, 5), (5, 3)]),
        ("bij,bkj->bki", [(2, 4, 5), (2, 3, 5)]),
        ("i,i", [(5,), (5,)]),
        ("ij,kl->ijkl", [(2, 3), (4, 5)]),
        ("bhid , bhjd -> bhji", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ]
    names = []
    for k, (equation, shapes) in enumerate(cases):
        a, b = floats(*shapes[0]), floats(*shapes[1])
        y = np.einsum(equation.replace(" ", ""), a, b).astype(np.float32)
        node = helper.make_node("Einsum", ["a", "b"], ["y"], equation=equation)
        names.append(write_model(work, f"einsum_{k}", node,
                                 [("a", a), ("b", b)], [y], 12))
    return names


def linear_asymmetric(x, scales):
    """Upsample's linear mode: asymmetric coordinates, clamped neighbours."""
    out = x.astype(np.float64)
    for axis, s in enumerate(scales):
        n = out.shape[axis]
        c = np.arange(int(n * s)) / s
        lo = np.floor(c).astype(int)
        r = c - lo
        hi, lo = np.minimum(lo + 1, n - 1), np.minimum(lo, n - 1)
        shape = [1] * out.ndim
        shape[axis] = len(c)
        out = (np.take(out, lo, axis=axis) * (1 - r).reshape(shape) +
               np.take(out, hi, axis=axis) * r.reshape(shape))
    return out.astype(np.float32)


def upsample_models(work):
    x = floats(1, 2, 3, 4)
    repeated = np.repeat(np.repeat(x, 2, axis=2), 3, axis=3)
    scales = numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "s")
    odd = numpy_helper.from_array(np.array([1, 1, 2, 2.5], np.float32), "s")
    return [
        write_model(work, "upsample_1", helper.make_node(
            "Upsample", ["x"], ["y"], height_scale=2.0, width_scale=3.0),
            [("x", x)], [repeated], 6),
        write_model(work, "upsample_7", helper.make_node(
            "Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0]),
            [("x", x)], [repeated], 7),
        write_model(work, "upsample_9_linear", helper.make_node(
            "Upsample", ["x", "s"], ["y"], mode="linear"),
            [("x", x)], [linear_asymmetric(x, [1, 1, 2, 2.5])], 9, [odd]),
        write_model(work, "resize_10", helper.make_node(
            "Resize", ["x", "s"], ["y"], mode="nearest"),
            [("x", x)], [repeated], 10, [scales]),
    ]


def dropout_models(work):
    x = floats(2, 3)
    return [
        write_model(work, "dropout_7_mask", helper.make_node(
            "Dropout", ["x"], ["y", "mask"], ratio=0.3),
            [("x", x)], [x, np.ones_like(x)], 7),
        write_model(work, "dropout_10_mask", helper.make_node(
            "Dropout", ["x"], ["y", "mask"]),
            [("x", x)], [x, np.ones(x.shape, bool)], 10),
        # F.dropout without training= exports training_mode true, ratio 0.
        write_model(work, "dropout_13_training_ratio0", helper.make_node(
            "Dropout", ["x", "ratio", "training_mode"], ["y", "mask"]),
            [("x", x)], [x, np.ones(x.shape, bool)], 13,
            [numpy_helper.from_array(np.array(0, np.float32), "ratio"),
             numpy_helper.from_array(np.array(True), "training_mode")]),
    ]


def layer_norm_models(work):
    x, scale = floats(2, 3, 4), floats(3, 4)
    mean = x.mean(axis=(1, 2), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=(1, 2), keepdims=True)
    y = ((x - mean) / np.sqrt(var + 1e-5) * scale).astype(np.float32)
    # Only Y is requested: the unused Mean and InvStdDev must not share Y's
    # memory.
    return [write_model(work, "layer_norm_no_bias", helper.make_node(
        "LayerNormalization", ["x", "scale"], ["y"], axis=1),
        [("x", x), ("scale", scale)], [y], 17)]


def top_k(x, k, axis, largest):
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, indices, axis=axis), indices.astype(np.int64)


def top_k_models(work):
    """TopK with a constant k (the test data gives k as a graph input, which
    cgc takes at run time): the attribute of opset 1, an initializer K of
    opset 11 with largest=0 on int64, k = 0."""
    x = floats(3, 7, 2)
    xi = rng.integers(0, 4, (5, 6)).astype(np.int64)
    k = lambda value: numpy_helper.from_array(np.array([value], np.int64), "k")
    return [
        write_model(work, "top_k_1_attribute", helper.make_node(
            "TopK", ["x"], ["values", "indices"], axis=1, k=3),
            [("x", x)], list(top_k(x, 3, 1, True)), 1),
        write_model(work, "top_k_11_constant_smallest_int64", helper.make_node(
            "TopK", ["x", "k"], ["values", "indices"], axis=0, largest=0),
            [("x", xi)], list(top_k(xi, 4, 0, False)), 11, [k(4)]),
        write_model(work, "top_k_11_constant_zero", helper.make_node(
            "TopK", ["x", "k"], ["values", "indices"]),
            [("x", x)], list(top_k(x, 0, 2, True)), 11, [k(0)]),
    ]


def conv_transpose(x, w, bias, strides, pads, output_padding):
    """The definition as a scatter: input pixel (h, w) adds W * x at
    (h * s - pad + kh, w * s - pad + kw); then the crop of the padding."""
    n, _, height, width = x.shape
    c_out, kh, kw = w.shape[1:]
    sh, sw = strides
    full = np.zeros((n, c_out, (height - 1) * sh + kh + output_padding[0],
                     (width - 1) * sw + kw + output_padding[1]), np.float64)
    for i in range(kh):
        for j in range(kw):
            full[:, :, i:i + (height - 1) * sh + 1:sh, j:j + (width - 1) * sw + 1:sw] += \
                np.einsum("nchw,cd->ndhw", x.astype(np.float64), w[:, :, i, j])
    top, left, bottom, right = pads
    y = full[:, :, top:full.shape[2] - bottom, left:full.shape[3] - right]
    return (y + bias.reshape(1, -1, 1, 1)).astype(np.float32)


def conv_transpose_models(work):
    # (c_in, c_out, input HxW, kernel, strides, pads, output_padding): the
    # sub-pixel phases (DCGAN's 4x4 stride 2; odd kernels, strides 3 and
    # uneven phases; stride 1 with uneven pads), the MatMul form (1x1 input)
    # and forms the pass leaves to the runtime's kernel (a phase that would
    # need negative padding; 3 output channels).
    cases = [
        ("phases_k4_s2", 8, 16, (5, 6), (4, 4), (2, 2), (1, 1, 1, 1), (0, 0)),
        ("phases_k3_s2_op1", 5, 17, (4, 3), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
        ("phases_k5x3_s3x2", 4, 16, (3, 3), (5, 3), (3, 2), (2, 1, 2, 1), (2, 1)),
        ("stride1_uneven_pads", 6, 16, (5, 5), (3, 3), (1, 1), (0, 1, 2, 1), (0, 0)),
        ("matmul_1x1_input", 10, 16, (1, 1), (4, 4), (1, 1), (0, 0, 0, 0), (0, 0)),
        ("kept_negative_phase_pad", 3, 16, (8, 8), (4, 4), (2, 2), (5, 5, 5, 5), (0, 0)),
        ("kept_three_channels", 16, 3, (6, 6), (4, 4), (2, 2), (1, 1, 1, 1), (0, 0)),
    ]
    names = []
    for name, c_in, c_out, hw, kernel, strides, pads, output_padding in cases:
        x = floats(2, c_in, *hw)
        w = floats(c_in, c_out, *kernel)
        bias = floats(c_out)
        y = conv_transpose(x, w, bias, strides, pads, output_padding)
        node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=kernel,
                                strides=strides, pads=pads, output_padding=output_padding)
        names.append(write_model(work, "conv_transpose_" + name, node, [("x", x)], [y], 13,
                                 [numpy_helper.from_array(w, "w"),
                                  numpy_helper.from_array(bias, "b")]))
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgc", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    names = (einsum_models(args.work) + upsample_models(args.work) +
             dropout_models(args.work) + layer_norm_models(args.work) +
             top_k_models(args.work) + conv_transpose_models(args.work))
    def cgc(*command):
        result = subprocess.run([args.cgc, *command], capture_output=True, text=True,
                                timeout=600)
        lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
        return None if result.returncode == 0 else (lines[-1] if lines else result.returncode)

    def compile_model(index):
        path = os.path.join(args.work, names[index])
        return cgc("compile", os.path.join(path, "model.onnx"), "-o", os.path.join(path, "cgc"),
                   "--name", f"OpModel{index}", "--namespace", f"cgc_op_model{index}",
                   "--quiet", "--verify")

    def run_model(index):
        path = os.path.join(args.work, names[index])
        data = os.path.join(path, "test_data_set_0")
        return cgc("run", os.path.join(path, "model.onnx"), "--quiet", "--library", library,
                   "--name", f"OpModel{index}", "--inputs", data, "--check", data)

    library = os.path.join(args.work, "op_models.so")
    pool = concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2)
    errors = list(pool.map(compile_model, range(len(names))))
    built = [i for i, error in enumerate(errors) if error is None]
    error = cgc("build", "--quiet", "-O1", "-o", library,
                *[os.path.join(args.work, names[i], "cgc", f"op_model{i}.cpp") for i in built])
    if error is not None:
        print(f"FAIL cgc build: {error}")
        return 1
    for i, error in zip(built, pool.map(run_model, built)):
        errors[i] = error
    failures = []
    for name, error in zip(names, errors):
        if error is None:
            print(f"ok   {name}")
        else:
            print(f"FAIL {name}: {error}")
            failures.append(name)
    print(f"op models: {len(names) - len(failures)} of {len(names)} pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
