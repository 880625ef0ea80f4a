"""The worker side of batch_infer.py: what each Dask worker process runs.

A separate module (shipped with ``client.upload_file``), so that tasks
refer to its functions by name: functions defined in a script's
``__main__`` are pickled by value with the globals they use, and a
module-level cache there would arrive empty with every task.
"""

import os

import cgc

# Per worker process: library path -> its loaded Model, and how many times
# each library was loaded (batch_infer.py checks 1 per worker).
_models = {}
_loads = {}


def library_path(library):
    """Where this worker finds `library`: an absolute path as it is (a path
    every machine shares), a bare file name in the worker's local directory
    (where ``client.upload_file`` put it)."""
    if os.path.isabs(library):
        return library
    from distributed import get_worker
    return os.path.join(get_worker().local_directory, library)


def model(library, name):
    """The worker's one Model of `library` (loaded on first use)."""
    path = library_path(library)
    loaded = _models.get(path)
    if loaded is None:
        loaded = cgc.load(path, name)
        _models[path] = loaded
        _loads[path] = _loads.get(path, 0) + 1
    return loaded


def warm(library, name):
    """Loads the model now (client.run calls it on every worker), so that
    timed batches measure inference, not the load."""
    model(library, name)


def infer_batch(library, name, batch):
    """The model's outputs for each item of `batch` (each a list of the
    model's inputs: one inference), in order. One Model per worker process,
    used by one thread: workers run with 1 thread each."""
    m = model(library, name)
    return [m(*inputs) for inputs in batch]


def loads():
    """{library path: times loaded} of this worker process."""
    return dict(_loads)
