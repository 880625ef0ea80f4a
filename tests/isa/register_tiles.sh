#!/usr/bin/env bash
# Register tiles under GCC's Intel AVX-512 tunings: the runtime's
# register-tiled kernels, built as the x86-64-v4-vnni runtime is
# (cgc/targets.def) but with each -mtune below, have in no function more
# multiply-adds that read a stack operand (an accumulator kept in memory)
# than with -mtune=generic, the tuning the benchmarks time. A tuning's code
# is otherwise timed only on a machine of its family: GCC 12's Cascade Lake
# tuning once kept the packed GEMM's 24 sums on the stack, several times
# slower, and every test passed.
# The kernels are the sources that size tiles by simd::kRegisters or use
# VNNI; those without a multiply-add under generic have no accumulator to
# keep and are not built again. Compiled at most `nproc` at a time.
# Usage: register_tiles.sh SOURCE_DIR GENERATED_INCLUDE_DIR WORK
set -u
src=$1 generated=$2 work=$3
# cascadelake stands for skylake-avx512, cooperlake and icelake-server,
# which GCC 12 tunes alike here (all three kept the packed GEMM's sums on
# the stack); sapphirerapids for the newer Xeons.
tunings=(generic cascadelake sapphirerapids)
rm -rf "$work" && mkdir -p "$work"
row=$(grep '^CGC_TARGET("x86-64-v4-vnni"' "$src/runtime/include/cgc/targets.def")
march=$(sed -E 's/^CGC_TARGET\("[^"]*", *"[^"]*", *"([^"]*)".*/\1/' <<<"$row")
mapfile -t sources < <(cd "$src/runtime/src" && grep -lE 'kRegisters|dpbusd' -- */*.cpp)

# Per function of one object with a multiply-add (FMA, VNNI): those that
# take an operand from the stack, "<count>\t<function>" in .spills, and
# all of them, in .all.
compile_one() {
  IFS='|' read -r tune file <<<"$1"
  local out="$work/$tune.${file//\//_}"
  # The runtime's flags (runtime/CMakeLists.txt: -O3, -fno-trapping-math,
  # the register tiles' scalarisation limit) and the target row's.
  # shellcheck disable=SC2086
  g++ -std=c++20 -O3 -DNDEBUG -fno-trapping-math --param=sra-max-scalarization-size-Ospeed=2048 \
      $march -mtune="$tune" -I"$src/runtime/include" -I"$src/runtime/src" -I"$generated" \
      -c "$src/runtime/src/$file" -o "$out.o" || { echo "compile failed: $tune $file"; return 1; }
  # The stack: %rsp, or %rbp in a function that makes it its frame pointer
  # (those that align their frame for 64-byte vectors).
  objdump -d --no-show-raw-insn -C "$out.o" | awk -v all="$out.all" '
    /^[0-9a-f]+ <.*>:$/ { fn = substr($0, index($0, "<") + 1); sub(/>:$/, "", fn); fp = 0 }
    /\tmov +%rsp,%rbp$/ { fp = 1 }
    /(vfn?madd|vpdpbusd|vpdpwssd)[a-z0-9]* / { print fn > all }
    /(vfn?madd|vpdpbusd|vpdpwssd)[a-z0-9]* [^,]*\(%rsp\)/ ||
      (fp && /(vfn?madd|vpdpbusd|vpdpwssd)[a-z0-9]* [^,]*\(%rbp\)/) { n[fn]++ }
    END { for (f in n) print n[f] "\t" f }' | sort -k2 > "$out.spills"
  touch "$out.all"
}
export -f compile_one
export work src generated march
# compile_all TUNING... : every source under each tuning.
compile_all() {
  for tune in "$@"; do
    for f in "${sources[@]}"; do echo "$tune|$f"; done
  done | xargs -d '\n' -P "$(nproc)" -I{} bash -c 'compile_one "$@"' _ {}
}
compile_all generic || exit 1
mapfile -t sources < <(for f in "${sources[@]}"; do
  [ -s "$work/generic.${f//\//_}.all" ] && echo "$f"; done)
echo "${#sources[@]} register-tiled sources with multiply-adds, tunings: ${tunings[*]}"
compile_all "${tunings[@]:1}" || exit 1

status=0
for f in "${sources[@]}"; do
  base="$work/generic.${f//\//_}.spills"
  for tune in "${tunings[@]:1}"; do
    # Functions whose count under `tune` passes generic's.
    worse=$(awk -F'\t' 'FILENAME == ARGV[1] { g[$2] = $1; next } $1 > g[$2] + 0 {
                          printf "  %s: %d stack multiply-adds, generic %d\n", $2, $1, g[$2] }' \
            "$base" "$work/$tune.${f//\//_}.spills")
    if [ -n "$worse" ]; then
      echo "FAIL $f with -mtune=$tune keeps accumulators on the stack:"
      echo "$worse"
      status=1
    fi
  done
done
[ $status = 0 ] && echo "every tuning keeps the register tiles' accumulators in registers"
exit $status
