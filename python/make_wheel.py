#!/usr/bin/python3
"""Packs an installed cgc into a wheel of the Python package `cgc`.

    make_wheel.py PREFIX OUT_DIR    # PREFIX: cmake --install build --prefix PREFIX

The wheel's package directory is itself an install prefix: cgc/_cgc*.so and
the Python files beside cgc/bin/cgc, cgc/include/cgc, cgc/lib/libcgc_runtime*.a,
the Clang module and the CMake and pkg-config files, laid out as under PREFIX,
so the module and the executable find them relative to themselves
(codegen/install_prefix.h) and find_package(cgc) takes the package directory
as its prefix. A platform wheel for the Python that runs this script
(cp311-cp311-linux_x86_64 with Debian 12's), needing at run time the Debian
packages build.sh installs (the C++ compiler, LIBXSMM, protobuf, ONNX, Clang's
libraries, numpy), as the install does. Written with Debian's `wheel pack`,
which adds the RECORD; prints the wheel's path.
"""

import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

# What the package's dist-info says; the Tag is this interpreter's.
METADATA = """Metadata-Version: 2.1
Name: cgc
Version: {version}
Summary: An ahead-of-time compiler from ONNX to C++, and a runner of its models from numpy
Requires-Python: =={major}.{minor}.*
Requires-Dist: numpy
"""
WHEEL = """Wheel-Version: 1.0
Generator: cgc make_wheel.py
Root-Is-Purelib: false
Tag: {tag}
"""
ENTRY_POINTS = """[console_scripts]
cgc = cgc.__main__:main
"""


def fail(message):
    sys.exit(f"make_wheel.py: error: {message}")


def version_of(prefix):
    """The version the install's CMake package declares."""
    for config in prefix.glob("lib*/**/cmake/cgc/cgcConfigVersion.cmake"):
        match = re.search(r'set\(PACKAGE_VERSION "([^"]+)"\)', config.read_text())
        if match:
            return match.group(1)
    fail(f"{prefix}: no cgcConfigVersion.cmake (not a cgc install prefix)")


def main():
    if len(sys.argv) != 3:
        fail("usage: make_wheel.py PREFIX OUT_DIR")
    prefix, out = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2])
    package = next(prefix.glob("lib*/python3*/*-packages/cgc"), None)
    if package is None or not (prefix / "bin" / "cgc").is_file():
        fail(f"{prefix}: no cgc Python package or executable (not a cgc install prefix)")
    version = version_of(prefix)
    major, minor = sys.version_info[:2]
    tag = f"cp{major}{minor}-cp{major}{minor}-" + re.sub(r"[-.]", "_", sysconfig.get_platform())
    with tempfile.TemporaryDirectory(prefix="cgc-wheel-") as scratch:
        root = pathlib.Path(scratch) / f"cgc-{version}"
        target = root / "cgc"
        shutil.copytree(package, target)
        python_dir = package.parent.parent  # PREFIX/lib/python3: the package is above

        def without_python(directory, names):
            return [name for name in names if pathlib.Path(directory, name) == python_dir]

        for part in ("bin", "include", "lib", "share"):
            if (prefix / part).is_dir():
                shutil.copytree(prefix / part, target / part, symlinks=True,
                                ignore=without_python)
        info = root / f"cgc-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(METADATA.format(version=version, major=major, minor=minor))
        (info / "WHEEL").write_text(WHEEL.format(tag=tag))
        (info / "entry_points.txt").write_text(ENTRY_POINTS)
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "wheel", "pack", "--dest-dir", str(out), str(root)],
                       check=True, stdout=subprocess.DEVNULL)
    print(out / f"cgc-{version}-{tag}.whl")


if __name__ == "__main__":
    main()
