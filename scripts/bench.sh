#!/usr/bin/env bash
# Simulator speed and memory benchmarks for docs/benchmarks.md (issue 21): ftl-bench
# uniform 4 KiB writes at spare factor 0.10, greedy GC, with page bytes and timing and
# metadata-only (--no-data) on 256 MiB, 4 GiB and 64 GiB devices, and issue 16's
# sqlite-bench overwrites on an aged 16 GB device. Each case runs RUNS times (default 3);
# the best and median speed and the peak RSS (VmHWM, as the command reports it) are
# printed as a Markdown table, with the machine.
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
    nodata-*) echo flash_page_programs_per_wall_second ;;
    sqlite-*) echo run_wall_seconds ;;
  esac
}

# bin case -> "best median peak_rss_mib", over RUNS runs
measure() {
  local bin=$1 name=$2 metric values=() rss=0
  metric=$(metric_of "$name")
  for _ in $(seq "$RUNS"); do
    # shellcheck disable=SC2046
    "$bin" $(case_args "$name") --json "$OUT/r.json" >"$OUT/stdout" 2>"$OUT/stderr" || {
      echo "$bin $(case_args "$name") failed:" >&2; tail -5 "$OUT/stderr" >&2; exit 1; }
    read -r value peak < <(python3 - "$OUT/r.json" "$metric" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
peak = d.get("memory_peak_rss_bytes") or 0
print(d[sys.argv[2]], peak)
EOF
)
    values+=("$value")
    [ "${peak%.*}" -gt "$rss" ] && rss=${peak%.*}
  done
  python3 - "$metric" "$rss" "${values[@]}" <<'EOF'
import statistics, sys
metric, rss, values = sys.argv[1], int(sys.argv[2]), sorted(float(v) for v in sys.argv[3:])
best = values[0] if metric.endswith("seconds") else values[-1]
fmt = (lambda v: f"{v:.1f}") if metric.endswith("seconds") else (lambda v: f"{v:,.0f}")
print(fmt(best), fmt(statistics.median_low(values)), f"{rss / 2**20:,.0f}" if rss else "–")
EOF
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 2^20}' /proc/meminfo)
echo "Machine: $cpu, $(nproc) cores, $mem; $(date -u +%Y-%m-%d); best and median of $RUNS runs; peak RSS is the largest VmHWM of the runs."
echo
if [ -n "$BEFORE" ]; then
  echo "| case | command | metric | before best | before median | before peak RSS MiB | after best | after median | after peak RSS MiB |"
  echo "|---|---|---|---|---|---|---|---|---|"
else
  echo "| case | command | metric | best | median | peak RSS MiB |"
  echo "|---|---|---|---|---|---|"
fi
for name in $CASES; do
  row="| $name | \`deltaflash $(case_args "$name")\` | $(metric_of "$name")"
  if [ -n "$BEFORE" ]; then
    read -r b m r < <(measure "$BEFORE" "$name")
    row="$row | $b | $m | $r"
  fi
  read -r b m r < <(measure "$BIN" "$name")
  echo "$row | $b | $m | $r |"
done
