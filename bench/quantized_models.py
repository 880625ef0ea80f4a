"""The quantised cases of cgc's corpus (bench/models.py calls these).

  - torchvision ResNet-18, ResNet-50 and MobileNetV2 quantised with
    PyTorch's eager flow: torchvision.models.quantization with random
    weights and trained-looking BatchNorm statistics, fuse_model(), the x86
    qconfig (per-channel symmetric int8 weights; HistogramObserver on
    uint8 activations with reduce_range, so that a uint8 activation times
    an int8 weight pair cannot saturate vpmaddubsw: ONNX Runtime's AVX2
    kernels do saturate, see the README), calibrated on 4 random batches,
    convert(), torch.onnx.export at opset 13 (a QDQ graph);
  - qdq_block: a QDQ graph made with onnx.helper: uint8 activations,
    per-channel int8 weights, a pointwise and a depthwise convolution with
    Relu6 (Clip), a residual Add, max pooling, Concat, global average
    pooling and a Gemm (transB) head. Its weights are 7-bit ([-64, 63],
    what ONNX Runtime's quantiser makes for AVX2 with reduce_range):
    with full-range weights ONNX Runtime's vpmaddubsw saturates on this
    block's uint8 activations and is no reference;
  - qdq_small_cnn: issue 56's small QDQ CNN, built the same way: stride-1
    3x3 convolutions on few channels (3 -> 16 -> 32, a 2x2 max pool,
    32 -> 32, each with Relu) on a 1x3x32x32 image, global average pooling
    and a Gemm with bias to 10 classes;
  - qdq_depthwise_block: depthwise-heavy, the same way: three MobileNetV2
    inverted residual blocks on 24 channels of 56x56 (1x1 to 144, depthwise
    3x3, 1x1 back, the residual Add; the third's depthwise at stride 2),
    global average pooling and a Gemm.

Each case records in case.json the scale of the output's
DequantizeLinear, so that bench/check.py compares float outputs in
quantisation steps, and "quantized": the intermediate QuantizeLinear
outputs that check.py compares too, within one step.
"""

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

OPSET = 13


def quantized_torchvision_case(name, calibration_batches=4):
    def make(path):
        import torch
        import warnings
        from torchvision.models import quantization

        torch.manual_seed(0)
        torch.backends.quantized.engine = "onednn"
        model = getattr(quantization, name)(weights=None, quantize=False).eval()
        randomize_batch_norms(model)
        model.fuse_model()
        model.qconfig = torch.ao.quantization.get_default_qconfig("x86")
        torch.ao.quantization.prepare(model, inplace=True)
        with torch.no_grad():
            for _ in range(calibration_batches):
                model(torch.randn(2, 3, 224, 224))
        torch.ao.quantization.convert(model, inplace=True)
        x = torch.randn(1, 3, 224, 224)
        warnings.filterwarnings("ignore")
        with torch.no_grad():
            torch.onnx.export(model, (x,), path, opset_version=OPSET, input_names=["input"],
                              output_names=["output"])
        return {"input": x.numpy()}, quantized_case(path)
    return make


def randomize_batch_norms(model):
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            with torch.no_grad():
                n = module.num_features
                module.weight.copy_(torch.rand(n) * 0.5 + 0.5)
                module.bias.copy_(torch.randn(n) * 0.1)
                module.running_mean.copy_(torch.randn(n) * 0.1)
                module.running_var.copy_(torch.rand(n) + 1.0)


def quantized_case(path, float_steps=4):
    """case.json entries: the output's quantisation step (the scale of the
    DequantizeLinear that makes it) as the float tolerance unit."""
    model = onnx.load(path)
    constants = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    producers = {o: n for n in model.graph.node for o in n.output}
    steps = []
    for output in model.graph.output:
        node = producers[output.name]
        if node.op_type != "DequantizeLinear":
            raise SystemExit(f"{path}: output {output.name} is not dequantised")
        steps.append(float(constants[node.input[1]].max()))
    return {"quantized": {"output_steps": steps, "float_steps": float_steps, "int_steps": 1}}


class QdqGraph:
    """A QDQ graph written with onnx.helper: uint8 activations (Quantize
    then DequantizeLinear), per-channel int8 weights of 7 bits ([-64, 63])
    with int32 biases, as ONNX Runtime's quantiser writes for AVX2."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, inputs, output, **attrs):
        """A node named after its output (bench/layers.py matches names)."""
        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def quantize(self, x, name, scale, zero=128):
        s = self.const(f"{name}_scale", np.float32(scale))
        z = self.const(f"{name}_zero", np.uint8(zero))
        self.node("QuantizeLinear", [x, s, z], f"{name}_q")
        return self.node("DequantizeLinear", [f"{name}_q", s, z], f"{name}_dq")

    def weights(self, name, shape, scale_in):
        """DequantizeLinear of 7-bit per-channel weights and of the int32
        bias at scale_in times the weights' scales."""
        c_out = shape[0]
        w = self.rng.integers(-64, 64, shape).astype(np.int8)
        w_scale = (self.rng.random(c_out) * 0.01 + 0.002).astype(np.float32)
        bias = self.rng.integers(-2000, 2000, c_out).astype(np.int32)
        self.node("DequantizeLinear", [self.const(f"{name}_w", w), self.const(
            f"{name}_ws", w_scale), self.const(f"{name}_wz", np.zeros(c_out, np.int8))],
            f"{name}_wdq", axis=0)
        self.node("DequantizeLinear", [self.const(f"{name}_b", bias), self.const(
            f"{name}_bs", (np.float32(scale_in) * w_scale).astype(np.float32))],
            f"{name}_bdq", axis=0)
        return f"{name}_wdq", f"{name}_bdq"

    def conv(self, x, name, c_in, c_out, k, group=1, scale_in=0.05):
        w, b = self.weights(name, (c_out, c_in // group, k, k), scale_in)
        return self.node("Conv", [x, w, b], f"{name}_y", pads=[k // 2] * 4, group=group)

    def save(self, path, name, input_shape, output_shape):
        # The Identity keeps the graph output's name; the step is the last DQ's.
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                              input_shape)],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, output_shape)],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, path)


def qdq_block_case(path):
    g = QdqGraph(3)
    x = g.quantize("input", "in", 0.05)
    a = g.conv(x, "pw1", 8, 24, 1)
    g.node("Clip", [a, g.const("six_lo", np.float32(0)), g.const("six_hi", np.float32(6))],
           "pw1_act")
    a = g.quantize("pw1_act", "pw1o", 0.03, 0)
    b = g.conv(a, "dw", 24, 24, 3, group=24, scale_in=0.03)
    g.node("Relu", [b], "dw_act")
    b = g.quantize("dw_act", "dwo", 0.04, 0)
    c = g.conv(b, "pw2", 24, 8, 1, scale_in=0.04)
    c = g.quantize(c, "pw2o", 0.06, 120)
    g.node("Add", [c, x], "sum")
    s = g.quantize("sum", "sumo", 0.07, 125)
    g.node("MaxPool", [s], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    p = g.quantize("pool", "sumo_pool", 0.07, 125)
    g.node("Concat", [p, p], "cat", axis=1)
    q = g.quantize("cat", "sumo_cat", 0.07, 125)
    g.node("GlobalAveragePool", [q], "gap")
    q = g.quantize("gap", "gapo", 0.02, 128)
    g.node("Flatten", [q], "flat")
    f = g.quantize("flat", "gapo_flat", 0.02, 128)
    w = g.rng.integers(-64, 64, (10, 16)).astype(np.int8)
    ws = (g.rng.random(10) * 0.01 + 0.002).astype(np.float32)
    g.node("DequantizeLinear", [g.const("fc_w", w), g.const("fc_ws", ws),
                                g.const("fc_wz", np.zeros(10, np.int8))], "fc_wdq", axis=0)
    g.node("Gemm", [f, "fc_wdq"], "fc_y", transB=1)
    out = g.quantize("fc_y", "fco", 0.05, 128)
    g.node("Identity", [out], "output")
    g.save(path, "qdq_block", [1, 8, 20, 20], [1, 10])
    inputs = {"input": (g.rng.standard_normal((1, 8, 20, 20)) * 2).astype(np.float32)}
    return inputs, {"quantized": {"output_steps": [0.05], "float_steps": 2, "int_steps": 1}}


def qdq_small_cnn_case(path):
    """The small CNN of issue 56: stride-1 3x3 convolutions on few channels
    (3 -> 16 -> 32, a 2x2 max pool, 32 -> 32, each with Relu) on a 32x32
    image, global average pooling and a Gemm with bias to 10 classes."""
    g = QdqGraph(5)
    x = g.quantize("input", "in", 0.05)
    layers = [("c1", 3, 16, 0.05, 0.03), ("c2", 16, 32, 0.03, 0.08), ("c3", 32, 32, 0.08, 0.2)]
    for name, c_in, c_out, scale_in, scale_out in layers:
        y = g.conv(x, name, c_in, c_out, 3, scale_in=scale_in)
        x = g.quantize(g.node("Relu", [y], f"{name}_act"), f"{name}o", scale_out, 0)
        if name == "c2":
            pool = g.node("MaxPool", [x], "pool", kernel_shape=[2, 2], strides=[2, 2])
            x = g.quantize(pool, f"{name}o_pool", scale_out, 0)
    x = g.quantize(g.node("GlobalAveragePool", [x], "gap"), "gapo", 0.1, 0)
    x = g.quantize(g.node("Flatten", [x], "flat"), "gapo_flat", 0.1, 0)
    w, b = g.weights("fc", (10, 32), 0.1)
    out = g.quantize(g.node("Gemm", [x, w, b], "fc_y", transB=1), "fco", 0.3, 128)
    g.node("Identity", [out], "output")
    g.save(path, "qdq_small_cnn", [1, 3, 32, 32], [1, 10])
    inputs = {"input": (g.rng.standard_normal((1, 3, 32, 32)) * 2).astype(np.float32)}
    return inputs, {"quantized": {"output_steps": [0.3], "float_steps": 2, "int_steps": 1}}


def qdq_depthwise_block_case(path):
    """Depthwise-heavy: two MobileNetV2 inverted residual blocks on 24
    channels of 56x56 (1x1 to 144 with Relu, depthwise 3x3 with Relu, 1x1
    back to 24, the residual Add), a third whose depthwise layer has
    stride 2, then global average pooling and a Gemm to 10 classes. Relu,
    not qdq_block's Clip to 6: ONNX Runtime folds a Relu into the
    QuantizeLinear after it (zero point 0) and runs the block in NHWC, but
    keeps a Clip that the quantisation range does not cover in float, and
    its convolutions then in NCHW, several times slower."""
    g = QdqGraph(7)

    def relu(y, name, scale):
        return g.quantize(g.node("Relu", [y], f"{name}_act"), f"{name}o", scale, 0)

    x = g.quantize("input", "in", 0.05)
    for i, stride in enumerate([1, 1, 2]):
        e = relu(g.conv(x, f"b{i}_expand", 24, 144, 1), f"b{i}_expand", 0.03)
        w, b = g.weights(f"b{i}_dw", (144, 1, 3, 3), 0.03)
        d = g.node("Conv", [e, w, b], f"b{i}_dw_y", pads=[1] * 4, group=144, strides=[stride] * 2)
        d = relu(d, f"b{i}_dw", 0.04)
        p = g.quantize(g.conv(d, f"b{i}_project", 144, 24, 1, scale_in=0.04), f"b{i}_projecto",
                       0.08, 128)
        if stride == 1:
            x = g.quantize(g.node("Add", [p, x], f"b{i}_sum"), f"b{i}_sumo", 0.05, 128)
        else:
            x = p
    x = g.quantize(g.node("GlobalAveragePool", [x], "gap"), "gapo", 0.05, 128)
    x = g.quantize(g.node("Flatten", [x], "flat"), "gapo_flat", 0.05, 128)
    w, b = g.weights("fc", (10, 24), 0.05)
    out = g.quantize(g.node("Gemm", [x, w, b], "fc_y", transB=1), "fco", 0.1, 128)
    g.node("Identity", [out], "output")
    g.save(path, "qdq_depthwise_block", [1, 24, 56, 56], [1, 10])
    inputs = {"input": (g.rng.standard_normal((1, 24, 56, 56)) * 2).astype(np.float32)}
    return inputs, {"quantized": {"output_steps": [0.1], "float_steps": 2, "int_steps": 1}}


def quantized_corpus():
    return {
        "resnet18_int8": quantized_torchvision_case("resnet18"),
        "mobilenet_v2_int8": quantized_torchvision_case("mobilenet_v2"),
        "resnet50_int8": quantized_torchvision_case("resnet50"),
        "qdq_block": qdq_block_case,
        "qdq_small_cnn": qdq_small_cnn_case,
        "qdq_depthwise_block": qdq_depthwise_block_case,
    }


def float_twin(path, out_path):
    """The float32 network a QDQ model quantises, for bench/bench.py's cgc
    float column: every DequantizeLinear of constants (through Cast and
    ConstantOfShape, as PyTorch exports them) becomes its float values,
    every QuantizeLinear -> (Cast ->) DequantizeLinear pair on activations
    is bypassed, and what no output needs is dropped. Same weights (as
    dequantised), same ops, no quantisation."""
    model = onnx.load(path)
    graph = model.graph
    values = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output}
    nodes = []
    renamed = {}  # a DequantizeLinear output -> the float tensor it stands for

    def source(name):
        return renamed.get(name, name)

    for node in graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        ins = [source(i) for i in node.input]
        if node.op_type == "Constant":
            values[node.output[0]] = numpy_helper.to_array(attrs["value"])
            continue
        if node.op_type == "Cast" and ins[0] in values:
            values[node.output[0]] = values[ins[0]].astype(
                onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[attrs["to"]])
            continue
        if node.op_type == "ConstantOfShape" and ins[0] in values:
            fill = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
            values[node.output[0]] = np.full(values[ins[0]].astype(np.int64), fill.reshape(-1)[0],
                                             dtype=fill.dtype)
            continue
        if node.op_type == "DequantizeLinear" and all(i in values for i in ins if i):
            x, scale = values[ins[0]], values[ins[1]]
            zero = values[ins[2]] if len(ins) > 2 and ins[2] else None
            axis = attrs.get("axis", 1) % max(x.ndim, 1)
            zf = np.zeros_like(scale) if zero is None else zero.astype(np.float32)
            if scale.size > 1:
                shape = [1] * x.ndim
                shape[axis] = scale.size
                scale, zf = scale.reshape(shape), zf.reshape(shape)
            values[node.output[0]] = ((x.astype(np.float32) - zf) * scale).astype(np.float32)
            continue
        if node.op_type == "DequantizeLinear":
            q = producers[node.input[0]]
            while q.op_type == "Cast":
                q = producers[q.input[0]]
            if q.op_type != "QuantizeLinear":
                raise SystemExit(f"{path}: {node.name} dequantises a {q.op_type}")
            renamed[node.output[0]] = source(q.input[0])
            continue
        if node.op_type in ("QuantizeLinear", "Cast"):
            continue  # feeds only the DequantizeLinear nodes bypassed above
        new = helper.make_node(node.op_type, ins, list(node.output), name=node.name,
                               domain=node.domain)
        new.attribute.extend(node.attribute)
        nodes.append(new)
    for out in graph.output:
        if out.name in renamed:
            nodes.append(helper.make_node("Identity", [renamed[out.name]], [out.name]))
    # Only what the outputs need, and the constants they read as initializers.
    needed = {o.name for o in graph.output}
    kept = []
    for node in reversed(nodes):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
    kept.reverse()
    inits = [numpy_helper.from_array(np.asarray(values[n]), n) for n in sorted(needed)
             if n in values]
    twin = helper.make_graph(kept, graph.name + "_float", list(graph.input), list(graph.output),
                             inits)
    result = helper.make_model(twin, opset_imports=list(model.opset_import))
    result.ir_version = model.ir_version
    onnx.checker.check_model(result)
    onnx.save(result, out_path)
