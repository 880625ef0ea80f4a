"""A stand-in for onnxruntime, to test devbench.py and ort_worker.py where
onnxruntime cannot be installed (this machine): its outputs are cgc run's
outputs that compile_models.sh saved ($FAKEORT_REFS, default
/tmp/devkit-cache, <model>-cascadelake/outputs/output_N.pb), and every run
sleeps FAKEORT_MS (0.5) ms. The times mean nothing; the protocol, pinning,
ratios, output comparison and report are what it tests:

  cd /work/main && PYTHONPATH=$PWD/../wt/bench/device/fake_ort \\
    PYTHON=/usr/bin/python3 OUT=/tmp/devout bash .devkit/run.sh
"""
import os
import time

import onnx
from onnx import numpy_helper

__version__ = "0.0-stub"


class ExecutionMode:
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    pass


class _Value:
    def __init__(self, name):
        self.name = name


class InferenceSession:
    def __init__(self, path, sess_options=None, providers=None):
        model = onnx.load(path)
        initializers = {i.name for i in model.graph.initializer}
        self._inputs = [_Value(i.name) for i in model.graph.input if i.name not in initializers]
        self._outputs = [_Value(o.name) for o in model.graph.output]
        name = os.path.splitext(os.path.basename(path))[0]
        refs = os.path.join(os.environ.get("FAKEORT_REFS", "/tmp/devkit-cache"),
                            f"{name}-cascadelake", "outputs")
        self._values = [numpy_helper.to_array(onnx.load_tensor(os.path.join(refs, f"output_{i}.pb")))
                        for i in range(len(self._outputs))]
        self._sleep = float(os.environ.get("FAKEORT_MS", "0.5")) / 1e3
        self._threads = sess_options.intra_op_num_threads

    def get_inputs(self):
        return self._inputs

    def get_outputs(self):
        return self._outputs

    def get_providers(self):
        return ["CPUExecutionProvider"]

    def run(self, names, feeds):
        assert set(feeds) == {i.name for i in self._inputs}, sorted(feeds)
        assert len(os.sched_getaffinity(0)) == self._threads, "not pinned to THREADS CPUs"
        time.sleep(self._sleep)
        return [v.copy() for v in self._values]
