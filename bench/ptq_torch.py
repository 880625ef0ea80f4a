"""PyTorch's post-training int8 quantisation of the corpus' float networks,
the reference column of bench/quant_eval.py (issue 36).

For resnet50 and mobilenet_v2:
  1. rebuilds the corpus' float network exactly as bench/models.py does
     (torch.manual_seed(0), torchvision.models.<name>(weights=None),
     models.randomize_batch_norms) and checks it is the same network: the
     input drawn after it equals the corpus' test_data_set_0 input (the same
     random stream), the rebuilt model exported as bench/models.py exports
     has the corpus model.onnx's initializers, and ONNX Runtime
     (bench/ort_eval.js) gives the same output for both on that input;
  2. quantises it as bench/quantized_models.py does, but calibrated on the
     50 image calibration sets of bench/quant_data.py instead of random
     batches: torchvision.models.quantization.<name>(quantize=False) with
     the float state dict loaded, fuse_model(), the x86 qconfig
     (per-channel symmetric int8 weights, HistogramObserver uint8
     activations with reduce_range), the onednn engine, prepare, calibrate,
     convert, torch.onnx.export at opset 13 (QDQ). The quantizable
     MobileNetV2 has ReLU for the float one's ReLU6; on the corpus network
     that changes nothing (its activations stay under 6: the check below,
     quantizable_float_vs_float_max_abs, is 0);
  3. writes <data>/torch_int8/<name>.onnx, checks that ONNX Runtime on it
     and PyTorch's quantised model agree on one calibration input, and
     writes what it checked to <data>/torch_int8/<name>.verify.json.

--bnfit also makes <name>_bnfit: the same weights with the BatchNorm
statistics re-estimated on the calibration sets (train-mode forward,
cumulative averages) in torchvision's quantizable network (MobileNetV2's
ReLU6 are ReLU there, as in PyTorch's int8 MobileNetV2), as float (<data>/float/<name>_bnfit.onnx) and as
PyTorch int8 (<data>/torch_int8/<name>_bnfit.onnx). The corpus' random
networks give nearly the same logits for every input (MobileNetV2's vary
by 1e-7 across inputs, ResNet-50 always picks one class), so their top-1
agreement is 100 % whatever the quantisation does; with statistics taken
from the data the signal reaches the logits and top-1 agreement means
something.

Existing outputs are kept (delete one to remake it).

Usage: /usr/bin/python3 bench/ptq_torch.py [--models resnet50,mobilenet_v2]
           [--corpus bench/corpus] [--data bench/quant_data] [--bnfit]
"""

import argparse
import json
import os
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

import models
import quant_eval

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
OPSET = 13
CALIBRATION_BATCH = 10


def rebuild_float(name):
    """bench/models.py's torchvision_case: the model and the input it draws."""
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    models.randomize_batch_norms(model)
    x = torch.randn(1, 3, 224, 224)
    return model.eval(), x


def fit_batch_norms(model, calibration):
    """BatchNorm running statistics re-estimated on the calibration inputs
    (every other weight kept)."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.reset_running_stats()
            module.momentum = None  # a cumulative average over the batches
    model.train()
    with torch.no_grad():
        for batch in batches(calibration):
            model(batch)
    return model.eval()


def batches(calibration):
    import torch

    for start in range(0, len(calibration), CALIBRATION_BATCH):
        yield torch.from_numpy(calibration[start:start + CALIBRATION_BATCH])


def quantize(name, float_model, calibration, path):
    """bench/quantized_models.py's eager flow with the float model's weights
    and the calibration images."""
    import torch
    from torchvision.models import quantization

    torch.backends.quantized.engine = "onednn"
    model = getattr(quantization, name)(weights=None, quantize=False).eval()
    model.load_state_dict(float_model.state_dict())
    probe = torch.from_numpy(calibration[:2])
    with torch.no_grad():
        loaded = float((model(probe) - float_model(probe)).abs().max())
    model.fuse_model()
    model.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    torch.ao.quantization.prepare(model, inplace=True)
    with torch.no_grad():
        for batch in batches(calibration):
            model(batch)
    torch.ao.quantization.convert(model, inplace=True)
    x = torch.from_numpy(calibration[:1])
    with torch.no_grad():
        y = model(x).numpy()
        torch.onnx.export(model, (x,), path, opset_version=OPSET, input_names=["input"],
                          output_names=["output"])
    return y, loaded


def export_float(model, x, path):
    models.export(model, (x,), ["input"], ["output"], path)


def same_initializers(path_a, path_b):
    """Whether two ONNX files hold the same initializers (by name, bitwise),
    and how many."""
    def load(path):
        return {i.name: numpy_helper.to_array(i)
                for i in onnx.load(path, load_external_data=False).graph.initializer}
    a, b = load(path_a), load(path_b)
    equal = a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)
    return equal, len(a), len(b)


def ort_output(model_path, x):
    session = quant_eval.OrtModel(model_path, threads=2)
    try:
        return session.run_all(x[None], "input")[0]
    finally:
        session.close()


def make(name, corpus, data, calibration, bnfit):
    import torch

    torch.set_num_threads(2)
    warnings.filterwarnings("ignore")
    out_dir = os.path.join(data, "torch_int8")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.onnx")
    report_path = os.path.join(out_dir, f"{name}.verify.json")
    model, x = rebuild_float(name)
    if not (os.path.exists(report_path) and os.path.exists(path)):
        report = {"model": name}
        corpus_model = os.path.join(corpus, name, "model.onnx")
        corpus_x = numpy_helper.to_array(onnx.load_tensor(
            os.path.join(corpus, name, "test_data_set_0", "input_0.pb")))
        report["same_input_stream"] = bool(np.array_equal(corpus_x, x.numpy()))
        rebuilt = os.path.join(out_dir, f"{name}_float_rebuilt.onnx")
        export_float(model, x, rebuilt)
        equal, n_rebuilt, n_corpus = same_initializers(rebuilt, corpus_model)
        report["same_initializers"] = {"equal": equal, "rebuilt": n_rebuilt, "corpus": n_corpus}
        y_corpus, y_rebuilt = ort_output(corpus_model, corpus_x), ort_output(rebuilt, corpus_x)
        with torch.no_grad():
            y_torch = model(torch.from_numpy(corpus_x)).numpy()
        report["ort_rebuilt_vs_corpus_max_abs"] = float(np.abs(y_rebuilt - y_corpus).max())
        report["torch_vs_ort_corpus_max_abs"] = float(np.abs(y_torch - y_corpus).max())
        report["output_max_abs"] = float(np.abs(y_corpus).max())
        os.remove(rebuilt)
        print(f"{name}: rebuilt float network: {json.dumps(report)}", flush=True)
        if not (report["same_input_stream"] and equal
                and report["ort_rebuilt_vs_corpus_max_abs"] <= 1e-5 * max(1, report["output_max_abs"])):
            print(f"{name}: THE REBUILT NETWORK DIFFERS FROM THE CORPUS' (see above)", flush=True)
        y_quantized, loaded = quantize(name, model, calibration, path)
        report.update(check_export(path, calibration[:1], y_quantized, loaded))
        print(f"{name}: {path}: {json.dumps({k: report[k] for k in report if 'int8' in k or 'quantizable' in k})}",
              flush=True)
        with open(report_path, "w") as f:
            json.dump(report, f, indent=1)
    else:
        print(f"{name}: kept ({report_path})")
    if bnfit:
        make_bnfit(name, model, data, calibration)


def check_export(path, x, y_quantized, loaded):
    y_ort = ort_output(path, x)
    return {"quantizable_float_vs_float_max_abs": loaded,
            "torch_int8_vs_ort_int8_max_abs": float(np.abs(y_ort - y_quantized).max()),
            "torch_int8_vs_ort_int8_same_top1": bool(y_ort.argmax() == y_quantized.argmax())}


def make_bnfit(name, model, data, calibration):
    """The float network is torchvision's quantizable one in float (for
    MobileNetV2 that is ReLU where the float model has ReLU6: with the
    statistics from the data activations pass 6, and PyTorch's int8 would
    otherwise quantise another function than the float model computes)."""
    float_path = os.path.join(data, "float", f"{name}_bnfit.onnx")
    int8_path = os.path.join(data, "torch_int8", f"{name}_bnfit.onnx")
    if os.path.exists(float_path) and os.path.exists(int8_path):
        print(f"{name}_bnfit: kept")
        return
    import torch
    from torchvision.models import quantization

    os.makedirs(os.path.dirname(float_path), exist_ok=True)
    quantizable = getattr(quantization, name)(weights=None, quantize=False)
    quantizable.load_state_dict(model.state_dict())
    fit_batch_norms(quantizable, calibration)
    export_float(quantizable, torch.from_numpy(calibration[:1]), float_path)
    y_quantized, loaded = quantize(name, quantizable, calibration, int8_path)
    report = check_export(int8_path, calibration[:1], y_quantized, loaded)
    print(f"{name}_bnfit: {float_path}, {int8_path}: {json.dumps(report)}", flush=True)
    with open(os.path.join(data, "torch_int8", f"{name}_bnfit.verify.json"), "w") as f:
        json.dump({"model": f"{name}_bnfit", **report}, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,mobilenet_v2")
    parser.add_argument("--corpus", default=os.environ.get("CGC_CORPUS",
                                                           os.path.join(BENCH_DIR, "corpus")))
    parser.add_argument("--data", default=os.path.join(BENCH_DIR, "quant_data"))
    parser.add_argument("--bnfit", action="store_true",
                        help="also the variants with BatchNorm statistics from the data")
    args = parser.parse_args()
    calib_dir = os.path.join(args.data, "images", "calib")
    if not os.path.isdir(calib_dir):
        sys.exit(f"ptq_torch.py: no {calib_dir} (run bench/quant_data.py)")
    calibration, _ = quant_eval.load_sets(quant_eval.set_dirs(calib_dir))
    calibration = calibration[:, 0]  # (N, 3, 224, 224)
    for name in [n for n in args.models.split(",") if n]:
        if name not in ("resnet50", "mobilenet_v2"):
            sys.exit(f"ptq_torch.py: unknown model {name} (resnet50, mobilenet_v2)")
        if not os.path.exists(os.path.join(args.corpus, name, "model.onnx")):
            sys.exit(f"ptq_torch.py: no {args.corpus}/{name}/model.onnx "
                     "(bench/models.py --only {name}; or --corpus)")
        make(name, args.corpus, args.data, calibration, args.bnfit)


if __name__ == "__main__":
    main()
