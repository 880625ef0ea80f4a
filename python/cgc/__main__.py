"""``python -m cgc ARGS`` and the ``cgc`` command a wheel installs: the cgc
executable that came with this package, run with ARGS (the wheel's
cgc/bin/cgc, an install's PREFIX/bin/cgc, the build tree's build/cgc)."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_CANDIDATES = (os.path.join(_HERE, "bin", "cgc"),
               os.path.join(_HERE, "..", "..", "..", "..", "bin", "cgc"),
               os.path.join(_HERE, "..", "..", "cgc"))


def main():
    for executable in _CANDIDATES:
        if os.path.isfile(executable) and os.access(executable, os.X_OK):
            os.execv(executable, [executable] + sys.argv[1:])
    sys.exit(f"cgc: error: no cgc executable beside the package {_HERE}")


if __name__ == "__main__":
    main()
