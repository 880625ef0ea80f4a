#!/usr/bin/env python3
"""No measurement in a code comment: timings, rates and speed-ups belong in
docs/PERFORMANCE.md or bench/history/, where their machine and date are
stated; a comment keeps the rule and names the benchmark that reproduces it.

Scans the comments (// and /* */ in C and C++, # in Python, shell and CMake,
and Python docstrings) of the tracked sources and lists each file:line that
holds a time (µs, us, ns, ms), a rate (GFLOP/s, GOP/s, GMAC/s, GB/s) or a
speed-up ("1.4x", "3x faster", "20% slower"). Exit 1 when there is any.
Usage: check_prose.py [REPO_ROOT]
"""
import ast
import io
import os
import re
import subprocess
import sys
import tokenize

SOURCE = re.compile(r"(\.(c|cc|cpp|h|hpp|def|py|sh|cmake|js)|(^|/)CMakeLists\.txt)$")
SKIP = re.compile(r"^(third_party|bench/history|tests/docs/check_prose\.py$)")
MEASUREMENT = re.compile(
    r"\d(\.\d+)?\s?(µs|us|ns|ms)\b"                      # a time
    r"|\d\s?(G|M|T)(FLOP|OP|MAC|B)/s"                     # a rate
    r"|\b\d+(\.\d+)?(-\d+(\.\d+)?)?x\b(?![0-9])(?!\s*\d)"  # a speed-up: 1.4x, 1.1-1.3x
    r"|\d\s?%\s+(faster|slower|more|less|fewer)"          # 20% faster
    r"|\b(twice|\d+ times) (as fast|faster|slower)")
# Numbers that are settings or test data, not measurements: (path, text).
ALLOWED = [
    ("bench/device/drive.cpp", "50 ms"),            # the warm-up's least length
    ("bench/device/ort_worker.py", "50 ms"),        # the same, for ONNX Runtime
    ("tools/tune_trials.cpp", "~20 ms"),            # a timed round's least length
    ("tests/unit/schedule_test.cpp", ""),           # the cost model's constants under test
    ("tests/runtime/profiler_tests.cpp", ""),       # durations recorded by the test
]


def c_comments(text):
    """(line, comment text) of // and /* */ comments, outside string literals."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j
        elif text.startswith("R\"", i) and (i == 0 or not text[i - 1].isalnum()):
            end = text.find("(", i)
            close = text.find(")" + text[i + 2:end] + "\"", end)
            line += text.count("\n", i, close)
            i = close
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i:j]))
            i = j
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i)
            j = n if j < 0 else j
            for k, part in enumerate(text[i:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j
        i += 1
    return out


def hash_comments(text, python):
    out = []
    if python:
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT:
                    out.append((tok.start[0], tok.string))
            tree = ast.parse(text)
        except (SyntaxError, tokenize.TokenError):
            return out
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                body = node.body
                if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                        and isinstance(body[0].value.value, str):
                    first = body[0].lineno
                    for k, part in enumerate(body[0].value.value.split("\n")):
                        out.append((first + k, part))
        return out
    for number, line in enumerate(text.split("\n"), 1):
        # A # that starts a comment: at the line's start or after a space, outside quotes.
        m = re.search(r"(^|\s)#(?![!{])", line)
        if m and line[:m.start()].count('"') % 2 == 0 and line[:m.start()].count("'") % 2 == 0:
            out.append((number, line[m.start():]))
    return out


def comments(path, text):
    if path.endswith((".py",)):
        return hash_comments(text, True)
    if path.endswith((".sh", ".cmake")) or path.endswith("CMakeLists.txt"):
        return hash_comments(text, False)
    return c_comments(text)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    files = listed.stdout.split()
    if listed.returncode != 0:  # not a git checkout: every file outside build trees
        files = [os.path.relpath(os.path.join(d, f), root)
                 for d, dirs, names in os.walk(root)
                 if not os.path.relpath(d, root).split(os.sep)[0].startswith(("build", "install", "."))
                 for f in names]
    found = []
    for path in files:
        if not SOURCE.search(path) or SKIP.search(path):
            continue
        try:
            text = open(os.path.join(root, path), encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        for line, comment in comments(path, text):
            if MEASUREMENT.search(comment) and not any(
                    path == p and text in comment for p, text in ALLOWED):
                found.append(f"{path}:{line}: {comment.strip()[:120]}")
    for f in found:
        print(f)
    if found:
        print(f"FAIL {len(found)} code comments hold measurements: move the numbers to "
              "docs/PERFORMANCE.md or bench/history/, keep the rule and the benchmark")
        return 1
    print("ok   no measurement in a code comment")
    return 0


if __name__ == "__main__":
    sys.exit(main())
