"""Hostile inputs and callers: arrays in any memory layout give the answer
of C-contiguous ones, NaN and Inf run, one Model run from two threads at
once raises RunError saying so, and create/run/destroy cycles through the C
ABI do not grow the resident memory."""

import ctypes
import os
import subprocess
import threading
import time

import numpy as np

import cgc


def test_memory_layouts(tiny_cnn):
    model, inputs, _ = tiny_cnn
    x = inputs[0]
    expected = model(x)
    fortran = np.asfortranarray(x)
    assert not fortran.flags.c_contiguous
    np.testing.assert_array_equal(model(fortran), expected)
    # Every other element of a larger array, and a reversed view.
    wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    wide[..., ::2] = x
    strided = wide[..., ::2]
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(model(strided), expected)
    reversed_view = np.ascontiguousarray(x[..., ::-1])[..., ::-1]
    assert reversed_view.strides[-1] < 0
    np.testing.assert_array_equal(model(reversed_view), expected)


def test_nan_and_inf_run(tiny_cnn):
    model, inputs, _ = tiny_cnn
    x = inputs[0].copy()
    flat = x.reshape(-1)
    flat[0], flat[1], flat[2] = np.nan, np.inf, -np.inf
    y = model(x)
    assert y.shape == model.outputs[0].shape
    # The model still gives its answer on finite data afterwards.
    np.testing.assert_array_equal(model(inputs[0]), model(inputs[0].copy()))


def test_two_threads_at_once(compiled):
    model, inputs, _ = compiled("inception")
    for info, x in zip(model.inputs, inputs):
        model.input_buffer(info.name)[...] = x
    errors, stop = [], threading.Event()

    def work():
        deadline = time.monotonic() + 20
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                model.run(copy=False)
            except cgc.RunError as error:
                errors.append(error)
                stop.set()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors, "two threads ran one Model for 20 s without meeting"
    error = errors[0]
    assert "run() entered from two threads at once; use one instance per thread" in str(error)
    assert model.name in str(error)
    assert error.node is None
    # The model runs again once alone.
    model.run()


def _resident_kib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGESIZE") // 1024


def test_create_destroy_cycles(tiny_cnn):
    model, inputs, _ = tiny_cnn
    symbols = subprocess.run(["nm", "-D", "--defined-only", model.library], check=True,
                             capture_output=True, text=True).stdout.split()
    prefix = next(s[:-len("_api")] for s in symbols if s.endswith("_api"))
    library = ctypes.CDLL(model.library)
    create, run, destroy = (getattr(library, prefix + f) for f in ("_create", "_run", "_destroy"))
    create.restype = ctypes.c_void_p
    create.argtypes = [ctypes.c_char_p]
    run.argtypes = destroy.argtypes = [ctypes.c_void_p]
    set_input = getattr(library, prefix + "_set_input")
    set_input.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int64]
    x = np.ascontiguousarray(inputs[0])

    def cycle():
        instance = create(None)
        assert instance
        assert set_input(instance, 0, x.ctypes.data, x.nbytes) == 0
        assert run(instance) == 0
        destroy(instance)

    for _ in range(10):
        cycle()
    before = _resident_kib()
    for _ in range(1000):
        cycle()
    after = _resident_kib()
    print(f"1000 create/run/destroy cycles: resident {before} KiB -> {after} KiB")
    assert after - before < 2048, f"1000 cycles: resident {before} KiB -> {after} KiB"
