#!/usr/bin/env bash
# Fails, listing the files, when a tracked C++ source differs from what
# clang-format (the project's .clang-format) makes of it. Fix with
#   git ls-files '*.cpp' '*.h' '*.c' | xargs clang-format-14 -i
set -euo pipefail
clang_format=$1
root=$2
cd "$root"
if git rev-parse --git-dir >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.c' '*.hpp')
else
  # Not a git checkout: the sources, without build trees and npm packages.
  mapfile -t files < <(find . \( -path './build*' -o -path ./install -o -name node_modules \) -prune \
                       -o \( -name '*.cpp' -o -name '*.h' -o -name '*.c' -o -name '*.hpp' \) -print)
fi
# One clang-format for every file (its start is a tenth of a second): each
# place it would change is an error line naming the file.
status=0
report=$("$clang_format" --dry-run -Werror "${files[@]}" 2>&1 >/dev/null) || status=$?
mapfile -t bad < <(sed -nE 's/^(.+):[0-9]+:[0-9]+: error: .*/\1/p' <<<"$report" | sort -u)
if [ "$status" -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
  echo "clang-format failed (exit $status):"
  echo "$report" | head -20
  exit 1
fi
if [ ${#bad[@]} -gt 0 ]; then
  echo "not in clang-format's form (${#bad[@]} of ${#files[@]} files):"
  printf '  %s\n' "${bad[@]}"
  echo "fix: git ls-files '*.cpp' '*.h' '*.c' | xargs $clang_format -i"
  exit 1
fi
echo "format: ${#files[@]} files in clang-format's form ($("$clang_format" --version | head -1))"
