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
    block's uint8 activations and is no reference.

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


def qdq_block_case(path):
    rng = np.random.default_rng(3)
    nodes, inits = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def quantize(x, name, scale, zero=128):
        s, z = const(f"{name}_scale", np.float32(scale)), const(f"{name}_zero", np.uint8(zero))
        nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [f"{name}_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", s, z], [f"{name}_dq"]))
        return f"{name}_dq"

    def conv(x, name, c_in, c_out, k, group=1, scale_in=0.05):
        w = rng.integers(-64, 64, (c_out, c_in // group, k, k)).astype(np.int8)
        w_scale = (rng.random(c_out) * 0.01 + 0.002).astype(np.float32)
        bias = rng.integers(-2000, 2000, c_out).astype(np.int32)
        nodes.append(helper.make_node("DequantizeLinear", [const(f"{name}_w", w), const(
            f"{name}_ws", w_scale), const(f"{name}_wz", np.zeros(c_out, np.int8))],
            [f"{name}_wdq"], axis=0))
        nodes.append(helper.make_node("DequantizeLinear", [const(f"{name}_b", bias), const(
            f"{name}_bs", (np.float32(scale_in) * w_scale).astype(np.float32))], [f"{name}_bdq"], axis=0))
        nodes.append(helper.make_node("Conv", [x, f"{name}_wdq", f"{name}_bdq"], [f"{name}_y"],
                                      pads=[k // 2] * 4, group=group))
        return f"{name}_y"

    x = quantize("input", "in", 0.05)
    a = conv(x, "pw1", 8, 24, 1)
    nodes.append(helper.make_node("Clip", [a, const("six_lo", np.float32(0)), const(
        "six_hi", np.float32(6))], ["pw1_act"]))
    a = quantize("pw1_act", "pw1o", 0.03, 0)
    b = conv(a, "dw", 24, 24, 3, group=24, scale_in=0.03)
    nodes.append(helper.make_node("Relu", [b], ["dw_act"]))
    b = quantize("dw_act", "dwo", 0.04, 0)
    c = conv(b, "pw2", 24, 8, 1, scale_in=0.04)
    c = quantize(c, "pw2o", 0.06, 120)
    nodes.append(helper.make_node("Add", [c, x], ["sum"]))
    s = quantize("sum", "sumo", 0.07, 125)
    nodes.append(helper.make_node("MaxPool", [s], ["pool"], kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    p = quantize("pool", "sumo_pool", 0.07, 125)
    nodes.append(helper.make_node("Concat", [p, p], ["cat"], axis=1))
    q = quantize("cat", "sumo_cat", 0.07, 125)
    nodes.append(helper.make_node("GlobalAveragePool", [q], ["gap"]))
    g = quantize("gap", "gapo", 0.02, 128)
    nodes.append(helper.make_node("Flatten", [g], ["flat"]))
    f = quantize("flat", "gapo_flat", 0.02, 128)
    w = rng.integers(-64, 64, (10, 16)).astype(np.int8)
    ws = (rng.random(10) * 0.01 + 0.002).astype(np.float32)
    nodes.append(helper.make_node("DequantizeLinear", [const("fc_w", w), const("fc_ws", ws),
                                                       const("fc_wz", np.zeros(10, np.int8))],
                                  ["fc_wdq"], axis=0))
    nodes.append(helper.make_node("Gemm", [f, "fc_wdq"], ["fc_y"], transB=1))
    out = quantize("fc_y", "fco", 0.05, 128)
    nodes.append(helper.make_node("Identity", [out], ["output"]))
    graph = helper.make_graph(
        nodes, "qdq_block", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 8, 20, 20])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    # The Identity keeps the graph output's name; the step is the last DQ's.
    onnx.save(model, path)
    inputs = {"input": (rng.standard_normal((1, 8, 20, 20)) * 2).astype(np.float32)}
    return inputs, {"quantized": {"output_steps": [0.05], "float_steps": 2, "int_steps": 1}}


def quantized_corpus():
    return {
        "resnet18_int8": quantized_torchvision_case("resnet18"),
        "mobilenet_v2_int8": quantized_torchvision_case("mobilenet_v2"),
        "resnet50_int8": quantized_torchvision_case("resnet50"),
        "qdq_block": qdq_block_case,
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
