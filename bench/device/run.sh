#!/bin/bash
# cgc against ONNX Runtime on a machine without cgc: the device kit's one
# command, run from the checkout root: bash .devkit/run.sh
#
# 1. machine facts (lscpu, flags, caches, SMT siblings, g++, Python
#    packages) into $OUT/machine.txt, printed;
# 2. one core's FMA and int8 peak (bench/peak.cpp built with g++
#    -march=native where g++ exists, else the kit's prebuilt copy for the
#    CPU's tier, else skipped);
# 3. devbench.py: every model of the kit at 16 threads, squeezenet1_1 and
#    mobilenet_v2 also at 1, 2, 4 and 8, ONNX Runtime and cgc in alternating
#    rounds; $OUT/device_bench.json and $OUT/device_bench.md;
# 4. the Markdown table, last.
# All of it within DEVKIT_BUDGET_S seconds (default 285); $OUT/run.log has
# everything printed; the unpacked models, ONNX files and inputs go to
# DEVKIT_WORK (default /tmp/cgc-devkit-work). PYTHON: the Python with
# onnxruntime (default python3). Extra arguments go to devbench.py
# (--only a,b, --rounds N, --main-threads N, --scaling 1,2,4,8,
# --round-s S).
set -u
START=$(date +%s)
KIT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-/tmp/devout}
WORK=${DEVKIT_WORK:-${TMPDIR:-/tmp}/cgc-devkit-work}
BUDGET=${DEVKIT_BUDGET_S:-285}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$WORK"
# The unpacked libraries must be mappable executable: where WORK is on a
# noexec mount, use the kit's own folder (bin/drive runs from there).
cp "$KIT/bin/drive" "$WORK/.exec-test" 2>/dev/null
"$WORK/.exec-test" >/dev/null 2>&1
if [ $? -ne 2 ]; then
  echo "$WORK cannot run programs: using $KIT/work"
  WORK=$KIT/work
  mkdir -p "$WORK"
fi

elapsed() { echo $(( $(date +%s) - START )); }

facts() {
  echo "== date"; date -u
  echo "== uname"; uname -a
  echo "== lscpu"; lscpu
  echo "== lscpu -e"; lscpu -e 2>/dev/null
  echo "== flags"; grep -m1 '^flags' /proc/cpuinfo
  echo "== nproc"; nproc; echo "nproc --all: $(nproc --all)"
  echo "== caches (cpu0, sysfs)"
  for d in /sys/devices/system/cpu/cpu0/cache/index*; do
    [ -d "$d" ] && echo "L$(cat "$d/level") $(cat "$d/type") $(cat "$d/size") shared_cpu_list=$(cat "$d/shared_cpu_list" 2>/dev/null)"
  done
  echo "== caches (lscpu -C)"; lscpu -C 2>/dev/null
  getconf -a 2>/dev/null | grep -E 'CACHE_(SIZE|LINESIZE|ASSOC)' | awk 'NF == 2 && $2 != 0'
  echo "== topology (cpu: thread siblings, core id, package)"
  for c in /sys/devices/system/cpu/cpu[0-9]*; do
    echo "$(basename "$c"): siblings $(cat "$c/topology/thread_siblings_list" 2>/dev/null) core $(cat "$c/topology/core_id" 2>/dev/null) package $(cat "$c/topology/physical_package_id" 2>/dev/null)"
  done | sort -V
  echo "== frequency"
  for f in scaling_governor scaling_min_freq scaling_max_freq cpuinfo_max_freq; do
    [ -r /sys/devices/system/cpu/cpu0/cpufreq/$f ] && echo "$f: $(cat /sys/devices/system/cpu/cpu0/cpufreq/$f)"
  done
  grep -m1 'cpu MHz' /proc/cpuinfo
  echo "== cgroup cpu limit"; cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo "(no cgroup v2 cpu.max)"
  echo "== memory"; grep -E 'MemTotal|MemAvailable|HugePages_Total|Hugepagesize' /proc/meminfo
  cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null | sed 's/^/THP: /'
  echo "== numa nodes"
  for n in /sys/devices/system/node/node[0-9]*; do
    [ -d "$n" ] && echo "$(basename "$n"): cpus $(cat "$n/cpulist")"
  done
  echo "== load"; cat /proc/loadavg
  echo "== g++"; if command -v g++ >/dev/null; then g++ --version | head -1; else echo "no g++"; fi
  echo "== glibc"; ldd --version 2>&1 | head -1
  echo "== python"; "$PY" --version
  "$PY" - <<'EOF'
from importlib import metadata
for name in ("onnxruntime", "onnx", "numpy", "torch", "torchvision"):
    try:
        print(name, metadata.version(name))
    except Exception as e:
        print(name, "not installed:", type(e).__name__)
EOF
}

peak() {
  local binary="" how=""
  if command -v g++ >/dev/null; then
    local source=bench/peak.cpp
    [ -f "$source" ] || source=$KIT/peak/peak.cpp
    if timeout 60 g++ -O2 -march=native -I "$KIT/peak" -o "$WORK/peak" "$source"; then
      binary=$WORK/peak; how="g++ -O2 -march=native"
    else
      echo "g++ could not build peak.cpp"
    fi
  fi
  if [ -z "$binary" ]; then
    local flags; flags=$(grep -m1 '^flags' /proc/cpuinfo)
    if [[ " $flags " == *" avx512_vnni "* && " $flags " == *" avx512bw "* && " $flags " == *" avx512vl "* ]]; then
      binary=$KIT/bin/peak-cascadelake; how="prebuilt -march=cascadelake (no g++)"
    elif [[ " $flags " == *" avx2 "* && " $flags " == *" fma "* ]]; then
      binary=$KIT/bin/peak-x86-64-v3; how="prebuilt -march=x86-64-v3 (no g++)"
    fi
  fi
  if [ -z "$binary" ]; then echo "peak: skipped"; return; fi
  local pin=""; command -v taskset >/dev/null && pin="taskset -c $("$PY" -c 'import os; print(min(os.sched_getaffinity(0)))')"
  local out; out=$(timeout 60 $pin "$binary" 2>/dev/null)
  set -- $out
  if [ $# -ge 2 ]; then
    echo "FMA $1 GFLOP/s, int8 $2 GOP/s (one core; $how)" | tee "$WORK/peak.txt"
  else
    echo "peak: $binary failed"
  fi
}

main() {
  echo "cgc device kit: $KIT; results in $OUT; budget ${BUDGET} s"
  facts > "$OUT/machine.txt" 2>&1
  cat "$OUT/machine.txt"
  echo "== peak ($(elapsed) s)"
  rm -f "$WORK/peak.txt"
  peak
  cat "$WORK/peak.txt" >> "$OUT/machine.txt" 2>/dev/null
  echo "== benchmark ($(elapsed) s)"
  local left=$(( START + BUDGET - $(date +%s) ))
  [ $left -lt 30 ] && left=30
  timeout -k 5 $(( left - 4 )) "$PY" "$KIT/devbench.py" --kit "$KIT" --work "$WORK" --out "$OUT" \
    --deadline $(( START + BUDGET - 15 )) --peak "$WORK/peak.txt" "$@"
  local rc=$?
  [ $rc -ne 0 ] && echo "devbench.py exited $rc"
  echo "== done in $(elapsed) s"
  echo
  if [ -f "$OUT/device_bench.md" ]; then cat "$OUT/device_bench.md"; else echo "(no device_bench.md)"; fi
}

main "$@" 2>&1 | tee "$OUT/run.log"
