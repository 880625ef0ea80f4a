#!/usr/bin/env bash
# Builds sample models' generated code, the runtime and a driver with
# sanitizers (-Wall -Wextra -Werror) and runs it. Any sanitizer report fails
# the test.
#   both:    a BERT-style encoder (from an empty batch) and a model of If,
#            Loop and Scan, compiled with --dim and --specialize, a decoder
#            step from an empty cache and a strided CNN from an empty batch
#            (dims_driver.cpp);
#   address: AddressSanitizer + UndefinedBehaviorSanitizer on the runtime
#            built for this machine (-march=native: its vector paths, the
#            int8 ones with their gathers and masked tails), every sample on
#            the default schedule, and the float and int8 kernel tests
#            (gemm_tests.cpp and gemm_conv_tests.cpp: scratch sized for
#            every band and split; quant_kernel_tests.cpp;
#            attention_kernel_tests.cpp);
#   thread:  ThreadSanitizer, the samples with parallel branches on 3
#            executors x 2 threads (cross-executor signals, team barriers,
#            the pool's start and finish, the profiler recording from
#            several executors) and those with control flow (If, Loop) on
#            2 executors x 2 threads, the inception sample built with
#            --observe recording tensor statistics on 3 x 2 (the
#            profiler's histograms fed from every executor), team_kernels.cpp (threads sharing
#            scratch inside one kernel call, a pipelined LSTM), and
#            model_runtimes.cpp (two ModelRuntime instances run from two
#            threads at once, one on the caller's arena, while a third
#            thread's run() calls meet the busy guard).
# Usage: run_sanitizers.sh CGC SAMPLES_DIR RUNTIME_DIR GENERATED_DIR WORK_DIR [address|thread]
#   GENERATED_DIR: the build's runtime/generated (core/isa.h).
set -eu
cgc=$1 samples=$2 runtime=$3 generated=$4 work=$5 mode=${6:-address}
rm -rf "$work" && mkdir -p "$work/runtime"
case $mode in
  address)
    sanitize=address,undefined
    models=(tiny_cnn mlp shapes deconv batch_norm_only branches control_flow inception)
    schedule=()
    march=(-march=native)
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ;;
  thread)
    sanitize=thread
    models=(inception tiny_cnn mlp branches control_flow inception:observed)
    schedule=(--executors 3 --threads 2)
    march=()
    # Every thread asked for, also on a machine of fewer cores (not capped).
    export CGC_OVERSUBSCRIBE=1
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
# -g1: line tables only; reports still name file and line, and the runtime
# builds in half the time of -g (winograd.cpp under ASan: 32 s to 14).
flags="-std=c++20 -O1 -g1 -fno-omit-frame-pointer -fsanitize=$sanitize -fno-sanitize-recover=all -Wall -Wextra -Werror"

# spawn CMD...: CMD in the background, at most `nproc` at a time;
# wait_all: waits for them, and fails if one failed.
pids=()
spawn() {
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
  "$@" &
  pids+=($!)
}
wait_all() {
  local pid failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  pids=()
  [ "$failed" -eq 0 ]
}
libs=(-lxsmm -lxsmmnoblas -lpthread -ldl)

# The runtime once, with sanitizers: for this machine (address), for the
# baseline (thread). The int8 family without contraction, as
# runtime/CMakeLists.txt builds it.
objects=()
for src in "$runtime"/src/*/*.cpp; do
  rel=${src#"$runtime/src/"}
  obj="$work/runtime/${rel//\//_}"
  extra=()
  [[ $rel == int8/* ]] && extra=(-ffp-contract=off)
  # shellcheck disable=SC2086
  spawn c++ $flags "${march[@]}" "${extra[@]}" -I"$runtime/include" -I"$runtime/src" \
      -I"$generated" -c "$src" -o "${obj%.cpp}.o"
  objects+=("${obj%.cpp}.o")
done
wait_all
tests="$(dirname "$0")/../runtime"

# Every program built first, side by side, then run one at a time.
programs=()
for entry in "${models[@]}"; do
  # SAMPLE or SAMPLE:observed (compiled with --observe, recording statistics).
  sample=${entry%%:*} observed=()
  [ "$entry" != "$sample" ] && observed=(--observe)
  out="$work/${entry/:/_}" name="San_${entry/:/_}"
  # Control flow on 2 executors: the If's and the Loop's bodies run inside
  # one executor while the other runs the branch beside them.
  case "$mode:$sample" in
    thread:branches | thread:control_flow) placement=(--executors 2 --threads 2) ;;
    *) placement=("${schedule[@]}") ;;
  esac
  "$cgc" compile "$samples/$sample/model.onnx" -o "$out" --name "$name" \
      --quiet "${placement[@]}" "${observed[@]}"
  prefix=$(echo "$name" | tr '[:upper:]' '[:lower:]')
  defines=(-DCGC_MODEL_HEADER="\"$prefix.h\"" -DCGC_MODEL_PREFIX="$prefix")
  [ ${#observed[@]} -gt 0 ] && defines+=(-DCGC_OBSERVED="\"$out/statistics.json\"")
  # shellcheck disable=SC2086
  spawn c++ $flags "${march[@]}" -I"$runtime/include" -I"$out" -Wa,-I"$out" "${defines[@]}" \
      "$out/$prefix.cpp" "$(dirname "$0")/driver.cpp" "${objects[@]}" "${libs[@]}" -o "$out/driver"
  programs+=("$out/driver")
done
# Models of variable dimensions (cgc compile --dim; tests/dims makes them),
# the BERT-style encoder and one of If, Loop and Scan, at several sizes,
# their errors, and two instances at different sizes at once; the driver's
# middle sizes (batch 2, seq 32) run the specialised code. The encoder, the
# decoder step and the strided CNN start at 0: an empty batch, an empty cache,
# an empty batch (the CNN's batch 0 and 1 in a bucket: static code at 1 run
# on its inputs padded, run() copying them); `cached` is
# the decoder step with its caches kept in place (--cache-in-place), fed
# through set_input's strided copies.
/usr/bin/python3 "$(dirname "$0")/../dims/test_dims.py" "$cgc" "$work/dims" --only-data >/dev/null
declare -A dim_flags=(
  [encoder]="--dim batch=0..4 --dim seq=1..64 --specialize seq=32"
  [control]="--dim batch=1..4 --dim seq=1..64 --specialize seq=32"
  [decoder]="--dim past=0..63"
  [cached]="--dim past=0..63 --cache-in-place"
  [resnet]="--dim batch=0..2 --dim height=32..96 --dim width=32..96 --specialize batch=0..1")
declare -A dim_defines=([decoder]="-DCGC_INDEX_INPUT=0" [cached]="-DCGC_INDEX_INPUT=0")
declare -A dim_models=([cached]=decoder)
for name in encoder control decoder cached resnet; do
  # shellcheck disable=SC2086
  "$cgc" compile "$work/dims/${dim_models[$name]:-$name}.onnx" -o "$work/dims/$name" \
      --name "${name^}" --quiet \
      ${dim_flags[$name]} "${schedule[@]}"
  # shellcheck disable=SC2086
  spawn c++ $flags "${march[@]}" -I"$runtime/include" -I"$work/dims/$name" \
      -Wa,-I"$work/dims/$name" -DCGC_MODEL_HEADER="\"$name.h\"" -DCGC_MODEL_PREFIX="$name" \
      ${dim_defines[$name]:-} \
      "$work/dims/$name/$name.cpp" "$(dirname "$0")/dims_driver.cpp" "${objects[@]}" "${libs[@]}" \
      -o "$work/dims/$name/driver"
  programs+=("$work/dims/$name/driver")
done
if [ "$mode" = address ]; then  # the kernels' own tests
  # The tests' own code (reference loops, Catch2) at -O2 without
  # instrumentation: the kernels they call are the sanitized runtime's, the
  # buffers they pass come from ASan's allocator, and the runtime's objects
  # come first on the link line, so that an inline function both define is
  # the instrumented one. Catch2's std::regex trips GCC 12's
  # -Wmaybe-uninitialized (a false positive inside libstdc++). The int8
  # tests round as the float emulation only without contraction.
  for test in main gemm_tests gemm_conv_tests quant_kernel_tests attention_kernel_tests; do
    spawn c++ -std=c++20 -O2 -g1 -Wall -Wextra -Werror -Wno-maybe-uninitialized "${march[@]}" \
        -ffp-contract=off -I"$runtime/include" -c "$tests/$test.cpp" -o "$work/$test.o"
  done
  wait_all
  c++ -fsanitize=$sanitize "${objects[@]}" "$work"/{main,gemm_tests,gemm_conv_tests,quant_kernel_tests,attention_kernel_tests}.o \
      "${libs[@]}" -o "$work/kernel_tests"
fi
if [ "$mode" = thread ]; then  # memory shared inside one kernel call; instances at once
  for test in team_kernels model_runtimes; do
    # shellcheck disable=SC2086
    spawn c++ $flags -I"$runtime/include" "$(dirname "$0")/$test.cpp" "${objects[@]}" \
        "${libs[@]}" -o "$work/$test"
    programs+=("$work/$test")
  done
fi
wait_all
for program in "${programs[@]}"; do "$program"; done
if [ "$mode" = address ]; then
  # Less the Winograd windows other than 3x3 (22 s under ASan, the same
  # transforms and scratch as 3x3's, which stays): the suite's time.
  "$work/kernel_tests" --use-colour no "~conv on Winograd weights for 5x5*" | tail -2
  [ "${PIPESTATUS[0]}" -eq 0 ]
  # The bf16 cases where this runtime and CPU have the tier (77: they lack it).
  "$work/kernel_tests" --needs tier=bf16 --use-colour no "[bf16]" | tail -2
  status=${PIPESTATUS[0]}
  [ "$status" -eq 0 ] || [ "$status" -eq 77 ]
fi
echo "sanitizers ($mode): the sample models and kernels ran clean"
