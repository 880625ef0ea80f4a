"""Makes the Graphi benchmark graphs (Tang et al., "Graphi: scheduling deep
learning computations with parallelism") as corpus cases for bench/parallel.py:
graphs whose independent ops leave cores idle when run one op at a time.

  - pathnet: 3 layers of 6 parallel modules (Conv 3x3 pad 1, ReLU, MaxPool
    2x2 stride 2), the modules' outputs summed per layer, then global average
    pool and a fully connected layer; input 1x3x64x64, 32 channels;
  - lstm_unrolled_h128_s20, lstm_unrolled_h512_s30: 4 LSTM layers, batch 64,
    unrolled into separate nodes as TensorFlow graphs are: per cell and gate
    MatMul(x_t, W_g) + MatMul(h_{t-1}, R_g) + bias, then Sigmoid/Tanh, Mul,
    Add; input [sequence, 64, hidden], initial states h0, c0 [4, 64, hidden];
  - matmul512: 512 independent 200x100 @ 100x200 MatMuls of the input a
    [200, 100] with each its own constant weights, summed by a pairwise tree
    of Adds into one 200x200 output (constant weights rather than slices of
    one large input: 1023 nodes instead of 2559, as the generated code's
    build time grows with the node count);
  - googlenet is bench/models.py's case.

The graphs are written with onnx.helper (unrolled graphs are plain loops
there), opset 13, fixed seeds, weights scaled to keep activations near 1.
Cases use bench/models.py's layout (model.onnx, case.json, test_data_set_0)
and existing cases are kept.

Usage: /usr/bin/python3 bench/graphi_models.py [--out DIR] [--only NAMES]
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

LSTM_LAYERS = 4
LSTM_BATCH = 64


class GraphBuilder:
    """Nodes, constants and unique names for one ONNX graph."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.initializers = [], []
        self.count = 0

    def name(self, stem):
        self.count += 1
        return f"{stem}_{self.count}"

    def constant(self, stem, array):
        name = self.name(stem)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type, inputs, stem=None, **attributes):
        output = self.name(stem or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [output],
                                           name=output, **attributes))
        return output

    def uniform(self, shape, bound):
        return self.rng.uniform(-bound, bound, shape).astype(np.float32)

    def save(self, path, name, inputs, outputs):
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", models.OPSET)],
                                  producer_name="cgc bench/graphi_models.py")
        onnx.checker.check_model(model)
        onnx.save(model, path)


def pathnet(path):
    modules, channels, classes = 6, 32, 10
    g = GraphBuilder(1)
    x = "input"
    cin = 3
    for layer in range(3):
        outputs = []
        for module in range(modules):
            # He-scaled, divided by sqrt(modules) so the layer's sum stays O(1).
            bound = np.sqrt(6.0 / (cin * 9)) / np.sqrt(modules)
            w = g.constant(f"l{layer}m{module}_w", g.uniform((channels, cin, 3, 3), bound))
            b = g.constant(f"l{layer}m{module}_b", g.uniform((channels,), 0.1))
            y = g.op("Conv", [x, w, b], f"l{layer}m{module}_conv",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1])
            y = g.op("Relu", [y], f"l{layer}m{module}_relu")
            outputs.append(g.op("MaxPool", [y], f"l{layer}m{module}_pool",
                                kernel_shape=[2, 2], strides=[2, 2]))
        x = g.op("Sum", outputs, f"l{layer}_sum")
        cin = channels
    x = g.op("GlobalAveragePool", [x], "gap")
    x = g.op("Flatten", [x], "flatten", axis=1)
    w = g.constant("fc_w", g.uniform((classes, channels), 1.0 / np.sqrt(channels)))
    b = g.constant("fc_b", g.uniform((classes,), 0.1))
    g.nodes.append(helper.make_node("Gemm", [x, w, b], ["output"], name="fc", transB=1))
    g.save(path, "pathnet", [("input", [1, 3, 64, 64])], [("output", [1, classes])])
    return {"input": g.rng.standard_normal((1, 3, 64, 64)).astype(np.float32)}, {}


def lstm_unrolled(hidden, sequence):
    def make(path):
        g = GraphBuilder(hidden + sequence)
        bound = 1.0 / np.sqrt(hidden)  # PyTorch's LSTM initialisation
        index = lambda i: g.constant("index", np.array(i, dtype=np.int64))
        xs = [g.op("Gather", ["input", index(t)], f"x{t}", axis=0) for t in range(sequence)]
        for layer in range(LSTM_LAYERS):
            gates = "ifco"
            W = {k: g.constant(f"l{layer}_W{k}", g.uniform((hidden, hidden), bound)) for k in gates}
            R = {k: g.constant(f"l{layer}_R{k}", g.uniform((hidden, hidden), bound)) for k in gates}
            B = {k: g.constant(f"l{layer}_B{k}", g.uniform((hidden,), bound)) for k in gates}
            h = g.op("Gather", ["h0", index(layer)], f"l{layer}_h0", axis=0)
            c = g.op("Gather", ["c0", index(layer)], f"l{layer}_c0", axis=0)
            for t in range(sequence):
                cell = f"l{layer}t{t}"
                pre = {}
                for k in gates:
                    a = g.op("MatMul", [xs[t], W[k]], f"{cell}_x{k}")
                    r = g.op("MatMul", [h, R[k]], f"{cell}_h{k}")
                    s = g.op("Add", [a, r], f"{cell}_s{k}")
                    pre[k] = g.op("Add", [s, B[k]], f"{cell}_b{k}")
                i = g.op("Sigmoid", [pre["i"]], f"{cell}_i")
                f = g.op("Sigmoid", [pre["f"]], f"{cell}_f")
                o = g.op("Sigmoid", [pre["o"]], f"{cell}_o")
                u = g.op("Tanh", [pre["c"]], f"{cell}_u")
                c = g.op("Add", [g.op("Mul", [f, c], f"{cell}_fc"),
                                 g.op("Mul", [i, u], f"{cell}_iu")], f"{cell}_c")
                h = g.op("Mul", [o, g.op("Tanh", [c], f"{cell}_tc")], f"{cell}_h")
                xs[t] = h
        g.nodes.append(helper.make_node("Identity", [h], ["h"], name="h_out"))
        g.nodes.append(helper.make_node("Identity", [c], ["c"], name="c_out"))
        state = [LSTM_LAYERS, LSTM_BATCH, hidden]
        g.save(path, f"lstm_unrolled_h{hidden}_s{sequence}",
               [("input", [sequence, LSTM_BATCH, hidden]), ("h0", state), ("c0", state)],
               [("h", state[1:]), ("c", state[1:])])
        return {"input": g.rng.standard_normal((sequence, LSTM_BATCH, hidden)).astype(np.float32),
                "h0": (g.rng.standard_normal(state) * 0.1).astype(np.float32),
                "c0": (g.rng.standard_normal(state) * 0.1).astype(np.float32)}, {}
    return make


def matmul512(path):
    count, m, k, n = 512, 200, 100, 200
    g = GraphBuilder(512)
    # Each product entry ~ N(0, 1 / count), so the sum of all is ~ N(0, 1).
    scale = 1.0 / np.sqrt(k * count)
    terms = [g.op("MatMul", ["a", g.constant(f"w{i}", (g.rng.standard_normal((k, n)) * scale)
                                             .astype(np.float32))], f"mm{i}")
             for i in range(count)]
    while len(terms) > 1:  # pairwise tree: log2(512) = 9 levels of Adds
        terms = [g.op("Add", terms[j:j + 2], "add") for j in range(0, len(terms), 2)]
    g.nodes.append(helper.make_node("Identity", [terms[0]], ["output"], name="out"))
    g.save(path, "matmul512", [("a", [m, k])], [("output", [m, n])])
    return {"a": g.rng.standard_normal((m, k)).astype(np.float32)}, {}


def cases():
    return {"pathnet": pathnet,
            "lstm_unrolled_h128_s20": lstm_unrolled(128, 20),
            "lstm_unrolled_h512_s30": lstm_unrolled(512, 30),
            "matmul512": matmul512}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(models.BENCH_DIR, "corpus"))
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()
    made = cases()
    wanted = [n for n in args.only.split(",") if n] or list(made)
    unknown = [n for n in wanted if n not in made]
    if unknown:
        sys.exit(f"graphi_models.py: unknown case {', '.join(unknown)} (cases: {', '.join(made)})")
    for name in wanted:
        models.make_case(name, made[name], args.out)


if __name__ == "__main__":
    main()
