"""Writes a sample's test data (test_data_set_0/*.pb) as raw files for the
targets tests' driver (driver.cpp): input_<i>.raw and output_<i>.raw, the
tensors' bytes in their own element type.

Usage: /usr/bin/python3 make_raw.py SAMPLES_DIR OUT_DIR SAMPLE...
"""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

samples, out = sys.argv[1:3]
for model in sys.argv[3:]:
    src = os.path.join(samples, model, "test_data_set_0")
    os.makedirs(os.path.join(out, model), exist_ok=True)
    for name in sorted(os.listdir(src)):
        tensor = TensorProto()
        with open(os.path.join(src, name), "rb") as f:
            tensor.ParseFromString(f.read())
        array = np.ascontiguousarray(numpy_helper.to_array(tensor))
        array.tofile(os.path.join(out, model, name.replace(".pb", ".raw")))
