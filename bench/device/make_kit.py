"""Assembles the device kit (see build_kit.sh, which compiles the models and
the binaries first) from the cgc cache that compile_models.sh filled.

What goes in, per model:
  - its libraries (<case>-<target>): the .so with its embedded weights blob
    cut out, zlib'ed (so/<key>.code.z), and the blob, zlib'ed once for all
    the targets that embed the same bytes (blobs/<md5>.z); the manifest has
    the offset and the sha256 of the whole .so, devbench.py puts it back;
  - ONNX Runtime's model: the corpus model.onnx where it is small, else its
    skeleton (onnx_skeleton.py: the graph without the large weights, and
    their statistics) that devbench.py fills with random weights;
  - its inputs: inputs.json and the small input files; the large float32
    ones are generated on the device from a seed (devbench.py).

Usage: /usr/bin/python3 make_kit.py --cache DIR --corpus DIR --kit DIR
           --bin DIR --isa-header FILE
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import onnx_skeleton  # noqa: E402

# name, how ONNX Runtime gets the model, scaling runs, fallback target
CASES = [
    ("squeezenet1_1", "skeleton", True, "x86-64-v3"),
    ("mobilenet_v2", "skeleton", True, None),
    ("lstm_h256_b1", "file", False, "x86-64-v3"),
    ("lstm_h256_b10", "skeleton", False, None),
    ("silero_vad", "file", False, None),
    ("mobilenet_v2_int8", "skeleton", False, None),
    ("qdq_block", "file", False, None),
    ("pathnet_conv", "file", False, None),
]
TARGET = "cascadelake"
GENERATE_BYTES = 256 * 1024  # float32 inputs this large are generated on the device
SCRIPTS = ["run.sh", "devbench.py", "ort_worker.py", "onnx_skeleton.py"]


def library_entry(kit, cache, case, target, blobs):
    directory = os.path.join(cache, f"{case}-{target}")
    hashes = [d for d in os.listdir(directory) if os.path.isfile(os.path.join(directory, d, "model.so"))]
    if len(hashes) != 1:
        raise SystemExit(f"{directory}: expected one compiled model, found {hashes}")
    with open(os.path.join(directory, hashes[0], "model.so"), "rb") as f:
        data = f.read()
    with open(os.path.join(directory, hashes[0], "model.weights.bin"), "rb") as f:
        weights = f.read()
    key = f"{case}-{target}"
    offset = data.find(weights) if len(weights) >= 4096 else -1
    entry = {"key": key, "case": case, "target": target, "prefix": "model",
             "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    if offset >= 0:
        code = data[:offset] + data[offset + len(weights):]
        digest = hashlib.md5(weights).hexdigest()
        blob = f"blobs/{digest}.z"
        if digest not in blobs:
            with open(os.path.join(kit, blob), "wb") as f:
                f.write(zlib.compress(weights, 9))
            blobs[digest] = blob
        entry.update(blob=blob, blob_offset=offset)
    else:
        code = data
        entry.update(blob=None, blob_offset=0)
    entry["code"] = f"so/{key}.code.z"
    with open(os.path.join(kit, entry["code"]), "wb") as f:
        f.write(zlib.compress(code, 9))
    return entry


def case_entry(kit, corpus, name, onnx_mode, scaling, fallback):
    source = os.path.join(corpus, name)
    with open(os.path.join(source, "case.json")) as f:
        spec = json.load(f)
    data = os.path.join(source, "test_data_set_0")
    with open(os.path.join(data, "inputs.json")) as f:
        inputs = json.load(f)
    target_dir = os.path.join(kit, "inputs", name)
    os.makedirs(target_dir)
    shutil.copyfile(os.path.join(data, "inputs.json"), os.path.join(target_dir, "inputs.json"))
    files = []
    for index, item in enumerate(inputs):
        if item["file"] != f"input_{index}.bin":
            raise SystemExit(f"{name}: input {index} is {item['file']}: the driver reads input_N.bin")
        size = os.path.getsize(os.path.join(data, item["file"]))
        if item["dtype"] == "float32" and size >= GENERATE_BYTES:
            files.append({"file": item["file"],
                          "generate": {"count": size // 4, "seed": 1000 + index, "mean": 0.0, "std": 1.0}})
        else:
            shutil.copyfile(os.path.join(data, item["file"]), os.path.join(target_dir, item["file"]))
            files.append({"file": item["file"]})
    entry = {"name": name, "target": TARGET, "fallback": fallback, "scaling": scaling,
             "inputs": f"inputs/{name}", "input_files": files}
    if onnx_mode == "file":
        entry["onnx"] = {"file": f"onnx/{name}.onnx"}
        shutil.copyfile(os.path.join(source, "model.onnx"), os.path.join(kit, entry["onnx"]["file"]))
        compare = {"rtol": spec.get("rtol", 1e-3), "atol": spec.get("atol", 1e-4)}
        if "quantized" in spec:
            compare["output_steps"] = spec["quantized"]["output_steps"]
            compare["float_steps"] = spec["quantized"]["float_steps"]
        entry["compare"] = compare
    else:
        entry["onnx"] = {"skeleton": f"onnx/{name}.skeleton.onnx", "fill": f"onnx/{name}.fill.json"}
        onnx_skeleton.strip(os.path.join(source, "model.onnx"),
                            os.path.join(kit, entry["onnx"]["skeleton"]),
                            os.path.join(kit, entry["onnx"]["fill"]))
        entry["compare"] = None
    return entry


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--kit", required=True)
    parser.add_argument("--bin", required=True, help="drive, peak-cascadelake, peak-x86-64-v3")
    parser.add_argument("--isa-header", required=True)
    args = parser.parse_args()
    kit = args.kit
    if os.path.exists(kit):
        shutil.rmtree(kit)
    for sub in ("so", "blobs", "onnx", "inputs", "bin", "peak/core"):
        os.makedirs(os.path.join(kit, sub))
    for script in SCRIPTS:
        shutil.copy2(os.path.join(HERE, script), os.path.join(kit, script))
    for binary in ("drive", "peak-cascadelake", "peak-x86-64-v3"):
        shutil.copy2(os.path.join(args.bin, binary), os.path.join(kit, "bin", binary))
    shutil.copy2(os.path.join(HERE, "..", "peak.cpp"), os.path.join(kit, "peak", "peak.cpp"))
    shutil.copy2(args.isa_header, os.path.join(kit, "peak", "core", "isa.h"))

    blobs, libraries, cases = {}, [], []
    for name, onnx_mode, scaling, fallback in CASES:
        cases.append(case_entry(kit, args.corpus, name, onnx_mode, scaling, fallback))
        for target in [TARGET] + ([fallback] if fallback else []):
            libraries.append(library_entry(kit, args.cache, name, target, blobs))
    with open(os.path.join(kit, "manifest.json"), "w") as f:
        json.dump({"cases": cases, "libraries": libraries}, f, indent=1)
    total = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(kit) for n in ns)
    print(f"kit {kit}: {len(cases)} models, {len(libraries)} libraries, {total / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
