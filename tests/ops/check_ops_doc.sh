#!/usr/bin/env bash
# docs/OPS.md is the output of `cgc inspect --ops` (the frontend's tables):
# an op added to or removed from the importers changes the list, and this
# test fails until the file is regenerated.
# Usage: check_ops_doc.sh CGC DOC
set -u
cgc=$1 doc=$2
if "$cgc" inspect --ops | diff -u "$doc" -; then
  echo "ok   $doc is the output of cgc inspect --ops"
else
  echo "FAIL $doc differs from cgc inspect --ops (above); regenerate it:"
  echo "     $cgc inspect --ops > $doc"
  exit 1
fi
