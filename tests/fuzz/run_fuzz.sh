#!/usr/bin/env bash
# The `fuzz` test: builds the libFuzzer target with clang++-14 (its own CMake
# project, tests/fuzz/CMakeLists.txt, in WORK_DIR/build; incremental after the
# first run), replays every regression under tests/fuzz/regressions, then
# fuzzes for SECONDS from the seeds (make_seeds.py: the sample models and the
# ONNX conformance models named in tests/fuzz/seeds.txt) plus the corpus
# earlier runs kept in WORK_DIR/corpus. Any crash, sanitizer report, internal error,
# leak or multi-line diagnostic fails the test and leaves the input in
# WORK_DIR/artifacts; add it to tests/fuzz/regressions/ once fixed.
# Usage: run_fuzz.sh SOURCE_DIR RUNTIME_LIBRARY WORK_DIR SECONDS [libFuzzer flags]
#   RUNTIME_LIBRARY: libcgc_runtime.a of cgc's build (GCC code the target links)
set -eu
src=$1 runtime=$2 work=$3 seconds=$4
shift 4
mkdir -p "$work/corpus" "$work/artifacts"
jobs=$(nproc)

start=$(date +%s)
cmake -S "$src/tests/fuzz" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCGC_RUNTIME_LIBRARY="$runtime" >/dev/null
cmake --build "$work/build" -j"$jobs" 2>&1 | grep -v '^\[' || true
fuzzer=$work/build/cgc_fuzz_model
[ -x "$fuzzer" ] || { echo "FAIL: the fuzz target did not build"; exit 1; }
echo "== build: $(( $(date +%s) - start )) s"

# Seeds: the sample models and a selection of the ONNX conformance models.
rm -rf "$work/seeds"
/usr/bin/python3 "$src/tests/fuzz/make_seeds.py" "$src" \
    /usr/include/onnx/backend/test/data/node "$work/seeds"

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
flags=(-timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=4096 -max_len=65536
       -dict="$src/tests/fuzz/onnx.dict" -print_final_stats=1
       -artifact_prefix="$work/artifacts/")

# Every regression must now pass (a one-line error or a clean compile).
regressions=("$src"/tests/fuzz/regressions/*.onnx)
if [ -e "${regressions[0]}" ]; then
  "$fuzzer" "${flags[@]}" "${regressions[@]}" >"$work/regressions.log" 2>&1 || {
    echo "FAIL: a regression input fails again:"; tail -40 "$work/regressions.log"; exit 1; }
  echo "== ${#regressions[@]} regression inputs pass"
fi

start=$(date +%s)
if ! "$fuzzer" "${flags[@]}" -max_total_time="$seconds" "$@" \
       "$work/corpus" "$work/seeds" >"$work/fuzz.log" 2>&1; then
  echo "FAIL: the fuzzer found a problem (input in $work/artifacts):"
  tail -60 "$work/fuzz.log"
  exit 1
fi
grep -E '^#[0-9]+ +(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss' \
  "$work/fuzz.log" || true
echo "== fuzzed $(( $(date +%s) - start )) s without a finding"
