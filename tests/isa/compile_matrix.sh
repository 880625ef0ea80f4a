#!/usr/bin/env bash
# The instruction-set compile matrix: the runtime builds, without an error
# or a warning, with GCC and with Clang, for every x86 tier and every -march
# a user may name.
#
#  1. Every tier of runtime/include/cgc/isa_tiers.def, with exactly the
#     tier's features (-march=x86-64 plus one -m flag per feature of the tier
#     and its bases): the runtime's sources compile at -O0 (always_inline
#     target mismatches show there too). A kernel may use a feature only
#     under its tier's CGC_ISA_* condition (check_tier_macros.sh), so code
#     that compiles with a tier's features alone compiles on every CPU that
#     has the tier; the tiers' exact feature sets are the strictest builds.
#     The sources without instruction-set code go through Clang's front end
#     for the baseline tier (GCC compiles them in CMake's runtime builds); a
#     source that depends on the instruction set (includes core/isa.h)
#     compiles for the baseline and again for each tier where its
#     preprocessed code differs from its base tier's (the same code compiled
#     with fewer features already), which is where it can fail.
#  2. The -march values of the list below, each tier's CPUs and each tuning
#     family (haswell and znver2 enable what x86-64-v3 does, cooperlake
#     what cascadelake does, and are left out): which tiers it enables
#     (core/isa.h), and the generated model GENERATED_CPP compiled for it
#     against the runtime's public headers.
# Jobs run at most `nproc` at a time. Prints a table, fails on any error
# or warning.
# Usage: compile_matrix.sh SOURCE_DIR GENERATED_INCLUDE_DIR GENERATED_CPP WORK
set -u
src=$1 generated=$2 model=$3 work=$4
marches=(x86-64 x86-64-v2 x86-64-v3 x86-64-v4 skylake-avx512 cascadelake icelake-server
         sapphirerapids alderlake znver3 znver4)
compilers=(g++ clang++-14)
rm -rf "$work" && mkdir -p "$work" && : > "$work/same.txt"
jobs=$(nproc)
start=$(date +%s)
includes=(-I"$src/runtime/include" -I"$src/runtime/src" -I"$generated")
common=(-std=c++20 -O0 -Wall -Wextra -Werror -Werror=undef -fno-trapping-math -ffp-contract=off)

# The x86 tiers, in the table's order, and each one's -m flags.
declare -A tierFlags
tiers=()
while IFS= read -r row; do
  name=$(sed -E 's/^CGC_TIER\("([^"]*)", *"([^"]*)", *"([^"]*)".*/\1/' <<<"$row")
  base=$(sed -E 's/^CGC_TIER\("([^"]*)", *"([^"]*)", *"([^"]*)".*/\2/' <<<"$row")
  features=$(sed -E 's/^CGC_TIER\("([^"]*)", *"([^"]*)", *"([^"]*)".*/\3/' <<<"$row")
  [ "$name" = neon ] || [ "$base" = neon ] && continue
  flags=""
  [ -n "$base" ] && flags=${tierFlags[$base]}
  for f in $features; do flags="$flags -m$f"; done
  tierFlags[$name]=$flags
  tiers+=("$name")
done < <(grep '^CGC_TIER(' "$src/runtime/include/cgc/isa_tiers.def")

# The runtime sources that depend on the instruction set: those that
# include core/isa.h, directly or through another header.
mapfile -t sources < <(cd "$src/runtime/src" && for f in */*.cpp; do
  g++ -std=c++20 -MM "${includes[@]}" "$f" | grep -q 'core/isa\.h' && echo "$f"; done)
echo "${#sources[@]} runtime sources depend on the instruction set"

# GCC's preprocessed code of each ISA-dependent source for each tier, less
# the system headers' `#pragma GCC target` switches (the same intrinsics
# declared either way): a hash a line, "<tier> <file> <hash>". Both
# compilers take it: a tier's code is chosen by the CGC_ISA_* macros alone
# (check_tier_macros.sh), which the same -m flags set alike in both; GCC's
# headers differ by tier where Clang's do not, so GCC's hashes are the
# stricter.
hash_one() {
  IFS='|' read -r tier flags file <<<"$1"
  # shellcheck disable=SC2086
  echo "$tier $file $(g++ "${common[@]}" $flags "${includes[@]}" -E -P \
        "$src/runtime/src/$file" 2>/dev/null |
        grep -vE '^#pragma GCC (push_options|pop_options|target)' | sha1sum | cut -c1-16)"
}
export -f hash_one
export work src includes_str="${includes[*]}" common_str="${common[*]}"
for tier in "${tiers[@]}"; do
  for f in "${sources[@]}"; do echo "$tier|-march=x86-64${tierFlags[$tier]}|$f"; done
done | xargs -d '\n' -P "$jobs" -I{} bash -c \
  'includes=($includes_str); common=($common_str); hash_one "$@"' _ {} > "$work/hashes.txt"
declare -A hashOf baseOf
while read -r tier file hash; do hashOf["$tier $file"]=$hash; done < "$work/hashes.txt"
for tier in "${tiers[@]}"; do baseOf[$tier]=$(sed -nE "s/^CGC_TIER\(\"$tier\", *\"([^\"]*)\".*/\1/p" \
                                               "$src/runtime/include/cgc/isa_tiers.def"); done

# One job a line: "<label>|<compiler>|<flags>|<file>".
jobfile="$work/jobs.txt"
: > "$jobfile"
for cxx in "${compilers[@]}"; do
  for tier in "${tiers[@]}"; do
    base=${baseOf[$tier]}
    if [ -z "$base" ]; then  # the baseline: every source (GCC: CMake's runtime builds do)
      for f in "${sources[@]}"; do
        echo "tier $tier|$cxx|-march=x86-64${tierFlags[$tier]}|runtime/src/$f"; done >> "$jobfile"
      # The others hold no instruction-set code: Clang's front end checks
      # them (GCC's are CMake's runtime builds).
      [ "$cxx" = g++ ] && continue
      (cd "$src/runtime/src" && ls ./*/*.cpp | sed 's|^\./||') | while read -r f; do
        [[ " ${sources[*]} " == *" $f "* ]] ||
          echo "syntax $tier|$cxx|-march=x86-64${tierFlags[$tier]} -fsyntax-only|runtime/src/$f"
      done >> "$jobfile"
      continue
    fi
    for f in "${sources[@]}"; do
      if [ "${hashOf["$tier $f"]}" = "${hashOf["$base $f"]}" ]; then
        echo "same|$tier|$cxx|runtime/src/$f" >> "$work/same.txt"
        continue
      fi
      echo "tier $tier|$cxx|-march=x86-64${tierFlags[$tier]}|runtime/src/$f" >> "$jobfile"
    done
  done
  for march in "${marches[@]}"; do
    if ! "$cxx" -march="$march" -E -x c++ /dev/null >/dev/null 2>&1; then
      echo "march $march|$cxx|-march=$march|(unknown to this compiler)" >> "$jobfile"
      continue
    fi
    echo "march $march|$cxx|-march=$march|$model" >> "$jobfile"
  done
done

compile_one() {
  IFS='|' read -r label cxx flags file <<<"$1"
  local log="$work/$(echo "$label $cxx $file" | tr ' /' '__').log"
  [ "$file" = "(unknown to this compiler)" ] && { echo "SKIP|$label|$cxx|$file"; return; }
  local path=$file
  [ "${file#/}" = "$file" ] && path="$src/$file"
  # shellcheck disable=SC2086
  if "$cxx" "${common[@]}" $flags "${includes[@]}" -I"$(dirname "$path")" -Wa,-I"$(dirname "$path")" \
       -c "$path" -o /dev/null > "$log" 2>&1; then
    echo "OK|$label|$cxx|$file"
  else
    echo "FAIL|$label|$cxx|$file"
    sed 's/^/    /' "$log" | head -20
  fi
}
export -f compile_one
xargs -d '\n' -P "$jobs" -I{} bash -c 'includes=($includes_str); common=($common_str); compile_one "$@"' _ {} \
  < "$jobfile" > "$work/results.txt"
elapsed=$(( $(date +%s) - start ))

# Which tiers each -march enables.
echo
printf '%-16s %-10s %s\n' "-march" compiler "tiers enabled (core/isa.h)"
for cxx in "${compilers[@]}"; do
  for march in "${marches[@]}"; do
    enabled=$(printf '#include "core/isa.h"\n' | "$cxx" -march="$march" -dM -E -x c++ \
              "${includes[@]}" - 2>/dev/null | awk '/#define CGC_ISA_[A-Z0-9]+ 1$/ {print tolower(substr($2, 9))}' | tr '\n' ' ')
    printf '%-16s %-10s %s\n' "$march" "$cxx" "${enabled:-(unknown -march)}"
  done
done
echo
awk -F'|' '{count[$1" "$3" "$2]++; if ($1 == "FAIL") fail++} END {
  for (k in count) print k": "count[k]" files"; print (fail ? fail : 0)" failed"}' \
  "$work/results.txt" | sort
grep -v '^OK|' "$work/results.txt" | grep -v '^SKIP|' || true
echo "compile matrix: $(grep -c '^OK|' "$work/results.txt") compiles, $(wc -l < "$work/same.txt" 2>/dev/null || echo 0) ISA-dependent sources the same as for their base tier, in ${elapsed}s on $jobs cores"
! grep -q '^FAIL|' "$work/results.txt"
