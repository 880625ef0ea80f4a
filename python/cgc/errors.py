"""cgc's exceptions. The extension module raises them by name (module.cpp).

Error              the base of the three below
CompileError       a problem in the model or the arguments: cgc's one-line
                   diagnostic, naming the file (and node and op where it has one)
InternalError      a fault of cgc itself (a broken invariant, generated code
                   that does not build): please report it
RunError           a model's run() failed on its data; ``node`` names the node
                   (None when the message names none)

Wrong inputs to a loaded model (dtype, shape, a missing or unknown name) are
ValueError, as numpy's own argument errors are.
"""

import re

__all__ = ["Error", "CompileError", "InternalError", "RunError"]


class Error(Exception):
    """Any error of cgc."""


class CompileError(Error):
    """A problem in the model or the arguments (the C++ cgc::CompileError)."""


class InternalError(Error):
    """A fault of cgc itself (the C++ cgc::InternalError)."""


class RunError(Error):
    """A model's run() failed; ``node`` is the failing node's name."""

    def __init__(self, message):
        super().__init__(message)
        match = re.search(r"node '([^']*)'", message)
        self.node = match.group(1) if match else None
