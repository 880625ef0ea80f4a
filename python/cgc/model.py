"""A compiled model loaded into this process (cgc.compile, cgc.load).

Inputs are checked here, before anything reaches the model: each must be a
numpy array (or something numpy.asarray takes) of exactly the input's dtype
and shape, else ValueError naming the input and what it expects. Nothing is
cast or broadcast.
"""

import numpy as np

from . import _cgc

__all__ = ["Model", "TensorInfo"]


class TensorInfo(tuple):
    """(name, dtype, shape) of an input or output: the shape's axes are
    sizes, or in a model compiled with dims= the names of the variable
    dimensions (cgc.compile)."""

    __slots__ = ()

    def __new__(cls, name, dtype, shape):
        return super().__new__(cls, (name, dtype, shape))

    name = property(lambda self: self[0])
    dtype = property(lambda self: self[1])
    shape = property(lambda self: self[2])

    def __repr__(self):
        return f"TensorInfo(name={self.name!r}, dtype={self.dtype}, shape={self.shape})"


def _tensor_infos(entries, dims):
    return [TensorInfo(t["name"], _numpy_dtype(t["onnx_type"]),
                       tuple(dims[j][0] if j >= 0 else size
                             for size, j in zip(t["shape"], t["dims"])))
            for t in entries]


def _numpy_dtype(onnx_type):
    try:
        return _cgc.numpy_dtype(onnx_type)
    except ValueError:
        return None  # a type numpy lacks (bfloat16): the input cannot be fed


def _describe(dtype, shape):
    return f"{dtype} of shape {tuple(shape)}"


class Model:
    """One instance of a compiled model. Not for two threads at once (a
    second concurrent run raises RunError); one model per thread is fine."""

    def __init__(self, native):
        self._native = native
        info = native.info()
        self.info = info
        self.name = info["name"]
        self.library = info["library"]
        # (name, min, max, multiple) of each variable dimension (dims=).
        self.dims = [tuple(d) for d in info["dims"]]
        self.inputs = _tensor_infos(info["inputs"], self.dims)
        self.outputs = _tensor_infos(info["outputs"], self.dims)
        self._input_index = {t.name: i for i, t in enumerate(self.inputs)}
        # cache_in_place=True: {input name: the output that shares its buffer}.
        self.cache_pairs = {i: o for i, o, _, _ in info["cache_pairs"]}
        self._input_buffers = {}

    def __repr__(self):
        return (f"<cgc.Model {self.name} inputs={[tuple(t) for t in self.inputs]} "
                f"outputs={[tuple(t) for t in self.outputs]}>")

    @property
    def placement(self):
        """Where the model's threads run (its executors' CPUs)."""
        return self._native.placement()

    def input_buffer(self, name):
        """A writable numpy view of the model's own buffer for input `name`.
        Write into it (``buf[...] = x``) and call run() without that input
        (or with the buffer itself) to feed it without a copy. Valid while
        the model lives (the view keeps it alive)."""
        index = self._index(name)
        if self.dims:  # a view at the input's current shape
            return self._native.input_view(index)
        if name not in self._input_buffers:
            self._input_buffers[name] = self._native.input_view(index)
        return self._input_buffers[name]

    def __call__(self, *arrays, copy=True):
        """m(x) or m(x1, x2, ...): the inputs in order; returns the output,
        or a tuple of them when the model has several."""
        if len(arrays) != len(self.inputs):
            raise ValueError(
                f"model {self.name} takes {len(self.inputs)} input(s) "
                f"({', '.join(t.name for t in self.inputs)}), got {len(arrays)}")
        outputs = self.run(dict(zip((t.name for t in self.inputs), arrays)), copy=copy)
        values = tuple(outputs.values())
        return values[0] if len(values) == 1 else values

    def set_dim(self, name, value):
        """Sets variable dimension `name` (dims=) for the next run; the
        input buffers keep their data. With cache_in_place=True,
        set_dim("past", past + 1) after a run makes each output of
        cache_pairs the next run's input, without a copy."""
        self._native.set_dim(str(name), int(value))

    def run(self, inputs=None, copy=True):
        """Runs the model on `inputs` ({name: array}, every input but the
        caches kept in place, which keep what the last run left), or with
        inputs=None on what its input buffers hold (input_buffer). Returns
        {output name: array}. With copy=True (the default) the arrays are
        fresh; with copy=False they are read-only views of the model's output
        buffers, valid until the next run of this model (the next run
        overwrites them)."""
        if inputs is not None:
            self._set_inputs(inputs)
        self._native.run()
        return self._outputs(copy)

    def _set_inputs(self, inputs):
        if not isinstance(inputs, dict):
            raise TypeError("run() takes a dict {input name: array}")
        for name in inputs:
            self._index(name)  # ValueError for a name the model lacks
        for info in self.inputs:
            if info.name not in inputs and info.name not in self.cache_pairs:
                raise ValueError(f"input '{info.name}' is missing: expected "
                                 f"{_describe(info.dtype, info.shape)}")
        for info in self.inputs:
            if info.name in inputs:
                self._set_input(info, inputs[info.name])

    def _set_input(self, info, value):
        array = np.asarray(value)
        if self.dims:
            return self._set_variable_input(info, array)
        if array.dtype != info.dtype or array.shape != info.shape:
            raise ValueError(f"input '{info.name}': expected {_describe(info.dtype, info.shape)}, "
                             f"got {_describe(array.dtype, array.shape)}")
        buffer = self.input_buffer(info.name)
        if array.__array_interface__["data"][0] != buffer.__array_interface__["data"][0]:
            np.copyto(buffer, array)

    def _set_variable_input(self, info, array):
        """An input of a model of variable dimensions: its fixed axes as
        the model's, its variable ones set the dimensions (ValueError naming
        one outside its bounds, or two inputs that disagree)."""
        fits = array.ndim == len(info.shape) and all(
            isinstance(axis, str) or axis == size for axis, size in zip(info.shape, array.shape))
        if array.dtype != info.dtype or not fits:
            raise ValueError(f"input '{info.name}': expected {_describe(info.dtype, info.shape)}, "
                             f"got {_describe(array.dtype, array.shape)}")
        self._native.set_input_shape(self._index(info.name), list(array.shape))
        np.copyto(self.input_buffer(info.name), array)

    def _outputs(self, copy):
        result = {}
        for i, info in enumerate(self.outputs):
            view = self._native.output_view(i)
            if copy:
                result[info.name] = view.copy()
            else:
                view.flags.writeable = False
                result[info.name] = view
        return result

    def _index(self, name):
        if name not in self._input_index:
            raise ValueError(
                f"model {self.name} has no input '{name}' (its inputs: "
                f"{', '.join(t.name for t in self.inputs)})")
        return self._input_index[name]

    def profile(self, runs=10, warmup=1, profile_path=None, trace_path=None):
        """Runs the model warmup + runs times on its current inputs and
        returns per-node timings of the timed runs: a list, in schedule
        order, of dicts with name, op, executor, threads, calls, median_us,
        min_us, total_us. With profile_path, also writes the profile JSON
        (what ``cgc run --profile-out`` writes, for ``cgc.compile(...,
        profile=...)``); with trace_path, a Chrome trace."""
        if warmup > 0:
            self._native.bench_runs(warmup)
        self._native.profile(runs)
        if profile_path is not None:
            self.write_profile(profile_path)
        if trace_path is not None:
            self.write_trace(trace_path)
        return self._native.profile_nodes()

    def write_profile(self, path):
        """The last profile() as a profile JSON file (per-node medians)."""
        self._native.write_profile(str(path))

    def write_trace(self, path):
        """The last profile() as a Chrome trace (chrome://tracing, Perfetto)."""
        self._native.write_trace(str(path))

    def record_statistics(self, bins=2048):
        """From now on, every run records the statistics of the model's
        float tensors (count, min, max, a histogram of `bins` bins): the
        model must be compiled with observe=True. A new call starts afresh.
        For quantising on the traffic a deployment sees: write_calibration()
        then compile(..., quantize="int8", calibration=PATH)."""
        self._native.record_statistics(int(bins))

    def write_calibration(self, path):
        """What record_statistics() recorded, as a calibration file (the
        format of ``cgc calibrate``). ValueError when nothing was recorded."""
        self._native.write_calibration(str(path))

    def _bench_run(self, runs):
        """`runs` runs on the current inputs, looped in C++ (no Python between
        them): the milliseconds of each (bench/python_overhead.py)."""
        return self._native.bench_runs(runs)
