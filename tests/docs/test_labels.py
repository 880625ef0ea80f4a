#!/usr/bin/env python3
"""Every ctest test has a label: quick, slow or network (docs/TESTS.md), so
that `ctest -L quick` is the quick subset and no test falls out of it
unseen. Reads the test list with `ctest --show-only=json-v1` (nothing runs)
and exits 1 naming each test without one of the labels.
Usage: test_labels.py BUILD_DIR [CTEST]
"""
import json
import subprocess
import sys

KNOWN = {"quick", "slow", "network"}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ctest = sys.argv[2] if len(sys.argv) > 2 else "ctest"
    listing = subprocess.run([ctest, "--test-dir", sys.argv[1], "--show-only=json-v1"],
                             capture_output=True, text=True, check=True).stdout
    missing, unknown = [], []
    for test in json.loads(listing)["tests"]:
        labels = []
        for prop in test.get("properties", []):
            if prop["name"] == "LABELS":
                labels = prop["value"]
        if not KNOWN & set(labels):
            missing.append(test["name"])
        unknown += [f"{test['name']} ({label})" for label in labels if label not in KNOWN]
    for name in missing:
        print(f"FAIL {name}: no label of {sorted(KNOWN)} (tests/CMakeLists.txt, the LABELS block)")
    for name in unknown:
        print(f"FAIL {name}: a label docs/TESTS.md does not describe")
    if missing or unknown:
        return 1
    print("ok   every test is labelled quick, slow or network")
    return 0


if __name__ == "__main__":
    sys.exit(main())
