#!/usr/bin/env bash
# Simulator speed and memory benchmarks for docs/benchmarks.md: ftl-bench
# uniform 4 KiB writes at spare factor 0.10, greedy GC, with page bytes and timing and
# metadata-only (--no-data) on 256 MiB, 4 GiB and 64 GiB devices, and
# sqlite-bench overwrites on an aged 16 GB device. Each case runs RUNS times (default 3);
# the best and median speed, the least CPU time (user + sys, from /usr/bin/time) and the
# peak RSS (VmHWM, as the command reports it) are printed as a Markdown table, with the
# machine. For the ftl-bench cases the CPU time of the measured phase alone is the
# command's least CPU time minus that of one run with `--writes 1` (same fill and
# warm-up), given per flash page program: on a shared machine wall-clock rates swing
# with the load, CPU time much less.
#
#   scripts/bench.sh                          # target/release/deltaflash
#   BEFORE=/path/to/old/deltaflash scripts/bench.sh   # adds the old binary's columns
#   CASES="nodata-256m nodata-4g" scripts/bench.sh     # a subset
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/deltaflash}
RUNS=${RUNS:-3}
BEFORE=${BEFORE:-}
CASES=${CASES:-"data-4g nodata-256m nodata-4g nodata-64g sqlite-16g"}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

FTL=(ftl-bench --device paper-emulator --pattern uniform --over-provisioning 0.10 --gc greedy --pages-per-block 64 --seed 7)
SQLITE=(bench --engine sqlite --workload sqlite-bench --ops overwrite --num 200000 --value-size 4096
  --storage ftl:page --device femu --free-space 25% --seed 1)

# args of a case, after the command
case_args() {
  case $1 in
    data-4g) echo "${FTL[*]} --writes 400000" ;;
    nodata-256m) echo "${FTL[*]} --writes 2000000 --no-data --blocks-per-chip 64" ;;
    nodata-4g) echo "${FTL[*]} --writes 2000000 --no-data" ;;
    nodata-64g) echo "${FTL[*]} --writes 2000000 --no-data --blocks-per-chip 16384 --warmup 16000000" ;;
    sqlite-16g) echo "${SQLITE[*]}" ;;
    *) echo "unknown case $1" >&2; exit 2 ;;
  esac
}

# metric (a JSON key, or wall seconds for sqlite) of a case
metric_of() {
  case $1 in
    data-*) echo host_writes_per_wall_second ;;
    nodata-*) echo flash_programs_per_wall_second ;;
    sqlite-*) echo run_wall_seconds ;;
  esac
}

# bin args... -> "cpu_seconds" of one run (user + sys); the JSON is left in $OUT/r.json
run_once() {
  local bin=$1
  shift
  rm -f "$OUT/r.json"
  /usr/bin/time -f "%U %S" -o "$OUT/time" "$bin" "$@" --json "$OUT/r.json" >"$OUT/stdout" 2>"$OUT/stderr" || {
    echo "$bin $* failed:" >&2; tail -5 "$OUT/stderr" >&2; exit 1; }
  awk '{print $1 + $2}' "$OUT/time"
}

# bin case -> "best median peak_rss_mib cpu_s phase_cpu_ns_per_program", over RUNS runs
measure() {
  local bin=$1 name=$2 metric values=() rss=0 cpus=() programs=0 base="-"
  metric=$(metric_of "$name")
  for _ in $(seq "$RUNS"); do
    # shellcheck disable=SC2046
    cpus+=("$(run_once "$bin" $(case_args "$name"))")
    read -r value peak programs < <(python3 - "$OUT/r.json" "$metric" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
peak = d.get("memory_peak_rss_bytes") or 0
print(d[sys.argv[2]], peak, d.get("flash_programs", 0))
EOF
)
    values+=("$value")
    [ "${peak%.*}" -gt "$rss" ] && rss=${peak%.*}
  done
  if [ "$programs" -gt 0 ]; then
    # shellcheck disable=SC2046
    base=$(run_once "$bin" $(case_args "$name" | sed 's/--writes [0-9]*/--writes 1/'))
  fi
  python3 - "$metric" "$rss" "$programs" "$base" "${cpus[*]}" "${values[@]}" <<'EOF'
import statistics, sys
metric, rss, programs, base = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
cpu = min(float(c) for c in sys.argv[5].split())
values = sorted(float(v) for v in sys.argv[6:])
best = values[0] if metric.endswith("seconds") else values[-1]
fmt = (lambda v: f"{v:.1f}") if metric.endswith("seconds") else (lambda v: f"{v:,.0f}")
phase = f"{(cpu - float(base)) * 1e9 / programs:.0f}" if base != "-" else "–"
print(fmt(best), fmt(statistics.median_low(values)), f"{rss / 2**20:,.0f}" if rss else "–", f"{cpu:.1f}", phase)
EOF
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 2^20}' /proc/meminfo)
echo "Machine: $cpu, $(nproc) cores, $mem; load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%d); best and median of $RUNS runs; CPU s is the least user + sys of the runs; peak RSS is the largest VmHWM of the runs; phase ns/program is the measured phase's CPU per flash page program."
echo
cols=("best" "median" "peak RSS MiB" "CPU s" "phase ns/program")
if [ -n "$BEFORE" ]; then
  head="| case | command | metric"
  for c in "${cols[@]}"; do head="$head | before: $c"; done
  for c in "${cols[@]}"; do head="$head | after: $c"; done
  echo "$head |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
else
  echo "| case | command | metric | best | median | peak RSS MiB | CPU s | phase ns/program |"
  echo "|---|---|---|---|---|---|---|---|"
fi
for name in $CASES; do
  row="| $name | \`deltaflash $(case_args "$name")\` | $(metric_of "$name")"
  if [ -n "$BEFORE" ]; then
    read -r b m r c p < <(measure "$BEFORE" "$name")
    row="$row | $b | $m | $r | $c | $p"
  fi
  read -r b m r c p < <(measure "$BIN" "$name")
  echo "$row | $b | $m | $r | $c | $p |"
done
