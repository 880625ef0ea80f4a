"""cgc: compile ONNX models to specialised C++ and run them from numpy.

    import cgc
    m = cgc.compile("model.onnx")           # compiled, built (cached), loaded
    y = m(x)                                # numpy in, numpy out

The compile shares ``cgc run``'s cache ($CGC_CACHE_DIR, else
$XDG_CACHE_HOME/cgc, else ~/.cache/cgc): a model compiled before with the
same options only loads. README.md, "Python", lists the API.
"""

import json
import os
import re
import tempfile

from .errors import CompileError, Error, InternalError, RunError
from . import _cgc
from .model import Model, TensorInfo

__all__ = ["compile", "load", "inspect", "tune", "calibrate", "cache_directory", "runtime_paths",
           "Model", "TensorInfo", "Error", "CompileError", "InternalError", "RunError"]


def cache_directory():
    """Where compiled models are cached (shared with ``cgc run``)."""
    return _cgc.cache_directory()


def runtime_paths(target="native"):
    """(include_dir, library): the runtime's headers and its library for
    `target` that this package builds models with (``cgc config``'s): the
    wheel's own, in the package directory, or the install's, or the build
    tree's."""
    return _cgc.runtime_paths(str(target))


def compile(model, shapes=None, constants=None, target="native", executors=0, threads=0,
            profile=None, verbose=False, quantize=None, observe=False, dims=None,
            specialize=None, precision="fp32", cache_in_place=False, **quantize_options):
    """Compiles the ONNX file `model`, builds it (cached) and loads it.

    shapes     {input name: shape}: binds inputs' symbolic dimensions (--shape)
    dims       {dimension name: (min, max) or (min, max, multiple)}: symbolic
               dimensions that stay variable (--dim): the model then takes
               inputs of any size within them (README "Variable dimensions")
    specialize {dimension name: [size, ...]}: sizes of dims that also get
               static code of their own, run at those sizes (--specialize); a
               (min, max) tuple or "min..max" is a bucket of sizes
    cache_in_place  with dims: each key/value cache (an input concatenated
               into an output, a decoder's past_k -> present_k) shares its
               buffer with that output (--cache-in-place): Model.cache_pairs
               lists them; after a run, Model.set_dim("past", past + 1) makes
               the outputs the next run's inputs without a copy
    constants  {input name: array or TensorProto .pb path}: the input becomes
               a compile-time constant (--constant)
    target     a cgc target name (--target; "native": this CPU)
    executors, threads   the schedule (--executors, --threads; 0: the default)
    profile    a profile JSON (Model.profile, cgc.tune) whose costs and
               tuned configuration the compile uses (--profile)
    verbose    cgc's progress lines on stderr
    quantize   "int8": --quantize, with these keyword arguments (README,
               "Quantisation"): calibration (a cgc calibrate file, needed),
               method ("percentile", "minmax", "entropy"), percentile
               (99.99), activations ("u8", "s8"), keep_float (layer names),
               keep_bf16 (layer names left out of int8 with bf16 weights),
               max_error, check_inputs (directories of input_N.pb) and
               report (the report's .json path); or weights_only=True
               (--weights-only: the constant weights of MatMul and Gemm in
               int8 per output column, activations float, no calibration;
               keep_float and the budget's keywords as with calibration)
    precision  "fp32" or "bf16" (--precision: the constant weights of MatMul
               and Gemm stored as bfloat16; needs a CPU with avx512bf16;
               docs/PRECISION.md); keep_float= names products left float;
               "auto" with quantize="int8", max_error and check_inputs: each
               layer int8, bf16 or fp32 as the budget measures
    observe    --observe: Model.record_statistics() then records the float
               tensors' statistics on every run, for write_calibration()
               (the fusions that would erase tensors are off: slower)
    Raises CompileError for a problem in the model or the arguments.
    """
    options = _quantize_options(quantize, quantize_options, precision)
    if cache_in_place and not dims:
        raise ValueError("cache_in_place= (--cache-in-place) needs dims= (the cache's length "
                         "varies from step to step)")
    with tempfile.TemporaryDirectory(prefix="cgc-constants-") as scratch:
        native = _cgc.compile(_path(model), _shapes(shapes), _constants(constants, scratch),
                              target, int(executors), int(threads),
                              "" if profile is None else _path(profile), bool(verbose), options,
                              bool(observe), _dims(dims), _specialize(specialize),
                              bool(cache_in_place))
    return Model(native)


def _dims(dims):
    """compile()'s dims as (name, min, max, multiple) tuples."""
    ranges = []
    for name, bounds in (dims or {}).items():
        values = [int(v) for v in bounds]
        if len(values) not in (2, 3):
            raise ValueError(f"dims['{name}']: expected (min, max) or (min, max, multiple), "
                             f"got {bounds!r}")
        ranges.append((str(name), values[0], values[1], values[2] if len(values) == 3 else 1))
    return ranges


def _specialize(specialize):
    """compile()'s specialize as --specialize's texts "NAME=SIZE,MIN..MAX"."""
    def one(size):
        if isinstance(size, str):
            return size
        if isinstance(size, (tuple, list)):
            if len(size) != 2:
                raise ValueError(f"specialize: a bucket is (min, max), got {size!r}")
            return f"{int(size[0])}..{int(size[1])}"
        return str(int(size))
    texts = []
    for name, sizes in (specialize or {}).items():
        # A tuple is one bucket: specialize={"seq": (1, 64)}; a list lists.
        sizes = [sizes] if isinstance(sizes, (int, str, tuple)) else list(sizes)
        texts.append(f"{name}=" + ",".join(one(s) for s in sizes))
    return texts


_QUANTIZE_DEFAULTS = {"calibration": None, "method": "percentile", "percentile": 99.99,
                      "activations": "u8", "keep_float": (), "keep_bf16": (), "max_error": 0.0,
                      "check_inputs": (), "report": None, "weights_only": False}


def _quantize_options(quantize, given, precision):
    """compile()'s precision and quantisation keywords as _cgc takes them
    (only "precision" for float activations)."""
    unknown = [k for k in given if k not in _QUANTIZE_DEFAULTS]
    if unknown:
        raise TypeError(f"compile() got an unexpected keyword argument '{unknown[0]}'")
    if quantize is None:
        if precision == "bf16" and set(given) <= {"keep_float"}:
            return {"precision": "bf16",
                    "keep_float": [str(k) for k in given.get("keep_float", ())]}
        if given:
            raise ValueError(f"{next(iter(given))}= needs quantize=\"int8\"")
        return {"precision": str(precision)}
    options = dict(_QUANTIZE_DEFAULTS, **given)
    weights_only = bool(options["weights_only"])
    if options["calibration"] is None and not weights_only:
        raise ValueError("quantize=\"int8\" needs calibration= (a cgc calibrate file), "
                         "or weights_only=True")
    return {"precision": str(precision), "weights_only": weights_only,
            "quantize": str(quantize),
            "calibration": "" if options["calibration"] is None else _path(options["calibration"]),
            "method": str(options["method"]), "percentile": float(options["percentile"]),
            "activations": str(options["activations"]),
            "keep_float": [str(k) for k in options["keep_float"]],
            "keep_bf16": [str(k) for k in options["keep_bf16"]],
            "max_error": float(options["max_error"] or 0.0),
            "check_inputs": [_path(d) for d in options["check_inputs"]],
            "report": "" if options["report"] is None else _path(options["report"])}


def load(library, name=None):
    """Loads model class `name` from a shared library built earlier
    (``cgc build``; ``cgc run --library LIB --name NAME``). Without a name,
    the library must hold one model."""
    return Model(_cgc.load(_path(library), name or ""))


def inspect(model, shapes=None, constants=None, target="native", executors=0, threads=0,
            profile=None, quantize=None, dims=None, precision="fp32", **quantize_options):
    """What ``cgc inspect --json`` prints, as a dict: the model's ops and
    inputs, and when it compiles its kernels, arena and weights; a model
    that does not compile has "error" and "hint" (a file that cannot be
    read raises CompileError). quantize= and its keywords, precision and
    dims, as compile()'s."""
    options = _quantize_options(quantize, quantize_options, precision)
    with tempfile.TemporaryDirectory(prefix="cgc-constants-") as scratch:
        text = _cgc.inspect(_path(model), _shapes(shapes), _constants(constants, scratch),
                            target, int(executors), int(threads),
                            "" if profile is None else _path(profile), options, _dims(dims))
    return json.loads(text)


def tune(model, shapes=None, constants=None, target="native", out_dir=".", inputs=None,
         rounds=5, budget=120.0, verbose=False, dims=None, specialize=None):
    """``cgc tune``: searches executors x threads and per-node threads for
    the lowest latency, writes OUT_DIR/<model>.profile.json and returns its
    path (give it to compile(..., profile=PATH)). `inputs` is a directory of
    input_N.pb files (else deterministic data). With `dims` (as compile's),
    the model compiled with those variable dimensions is tuned at the
    inputs' sizes, which the profile records: compile(..., dims=...,
    profile=PATH) specialises them. With `specialize` (as compile's), each
    of those paths is also tuned on its own, and compile(..., dims=...,
    profile=PATH) specialises those paths with their tuning."""
    with tempfile.TemporaryDirectory(prefix="cgc-constants-") as scratch:
        return _cgc.tune(_path(model), _shapes(shapes), _constants(constants, scratch), target,
                         _path(out_dir), "" if inputs is None else _path(inputs), int(rounds),
                         float(budget), bool(verbose), _dims(dims), _specialize(specialize))


def calibrate(model, batches, output=None, shapes=None, constants=None, target="native",
              bins=2048, verbose=False, dims=None):
    """``cgc calibrate`` from numpy: runs the float model on each input set
    of `batches` (an iterable of dicts {input name: array}, or of sequences
    of arrays in the model's input order; each array exactly the input's
    dtype and shape, else ValueError naming the set and the input), writes
    the per-tensor statistics JSON to `output` (default: next to the model,
    <model stem>.calib.json) and returns them as a dict. Raises
    CompileError for a NaN or infinite value (naming the tensor), as the
    command does. With `dims` (as compile's), the sets may have any sizes
    within them (a size outside them is a CompileError naming the
    dimension)."""
    report = inspect(model, shapes=shapes, constants=constants, target=target, dims=dims)
    if "error" in report:
        raise CompileError(report["error"])
    inputs = [(t["name"], _tensor_type(t["type"])) for t in report["inputs"]]
    with tempfile.TemporaryDirectory(prefix="cgc-calibrate-") as scratch:
        dirs = [_write_input_set(scratch, i, batch, inputs) for i, batch in enumerate(batches)]
        if not dirs:
            raise ValueError("calibrate() takes at least one input set")
        path = _path(output) if output is not None else \
            _cgc.default_calibration_path(_path(model))
        with tempfile.TemporaryDirectory(prefix="cgc-constants-") as constants_dir:
            _cgc.calibrate(_path(model), _shapes(shapes), _constants(constants, constants_dir),
                           target, dirs, path, int(bins), bool(verbose), _dims(dims))
    with open(path) as file:
        return json.load(file)


def _tensor_type(text):
    """"float32[1,3,224,224]" (cgc inspect's type) -> (numpy dtype, shape);
    a variable dimension's axis is its name ("float32[batch,3,side,side]")."""
    import numpy as np
    match = re.fullmatch(r"(\w+)\[([^\]]*)\]", text)
    if not match:
        raise InternalError(f"cgc inspect gave the type '{text}'")
    shape = tuple(int(d) if d.isdigit() else d for d in match.group(2).split(",") if d)
    try:
        return np.dtype(match.group(1)), shape
    except TypeError:
        return None, shape  # a type numpy lacks (bfloat16)


def _write_input_set(scratch, index, batch, inputs):
    """One input set as DIR/input_N.pb (the ONNX test-data layout)."""
    import numpy as np
    names = [name for name, _ in inputs]
    if isinstance(batch, dict):
        unknown = [name for name in batch if name not in names]
        if unknown:
            raise ValueError(f"input set {index}: the model has no input '{unknown[0]}' "
                             f"(its inputs: {', '.join(names)})")
        missing = [name for name in names if name not in batch]
        if missing:
            raise ValueError(f"input set {index}: input '{missing[0]}' is missing")
        arrays = [batch[name] for name in names]
    else:
        arrays = list(batch)
        if len(arrays) != len(names):
            raise ValueError(f"input set {index}: the model takes {len(names)} input(s) "
                             f"({', '.join(names)}), got {len(arrays)}")
    directory = os.path.join(scratch, f"set_{index}")
    os.mkdir(directory)
    for n, ((name, (dtype, shape)), value) in enumerate(zip(inputs, arrays)):
        array = np.ascontiguousarray(value)
        fits = len(array.shape) == len(shape) and all(
            isinstance(want, str) or want == got for want, got in zip(shape, array.shape))
        if array.dtype != dtype or not fits:
            raise ValueError(f"input set {index}, input '{name}': expected {dtype} of shape "
                             f"{shape}, got {array.dtype} of shape {array.shape}")
        _cgc.write_tensor(os.path.join(directory, f"input_{n}.pb"), name, array)
    return directory


def _path(value):
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"expected a file path, got {type(value).__name__}")
    return os.fspath(value)


def _shapes(shapes):
    result = []
    for name, shape in (shapes or {}).items():
        dims = [int(d) for d in shape]
        result.append((str(name), dims))
    return result


def _constants(constants, scratch):
    """{name: array or path} -> [(name, path)]: arrays written as TensorProto
    files into `scratch`."""
    result = []
    for i, (name, value) in enumerate((constants or {}).items()):
        if isinstance(value, (str, os.PathLike)):
            result.append((str(name), os.fspath(value)))
            continue
        import numpy as np
        path = os.path.join(scratch, f"constant_{i}.pb")
        _cgc.write_tensor(path, str(name), np.ascontiguousarray(value))
        result.append((str(name), path))
    return result
