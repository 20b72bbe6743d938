#!/usr/bin/env bash
# Simulator speed benchmarks for docs/benchmarks.md: uniform 4 KiB writes at spare
# factor 0.10, greedy GC, with page bytes and timing, and metadata-only (--no-data).
# Each configuration runs RUNS times (default 3); the best and median are printed.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/deltaflash
RUNS=${RUNS:-3}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

run() { # name metric args...
  local name=$1 metric=$2; shift 2
  local values=()
  for i in $(seq "$RUNS"); do
    "$BIN" ftl-bench --over-provisioning 0.10 --gc greedy --seed 1 --json "$OUT/r.json" "$@" >/dev/null 2>&1
    values+=("$(python3 -c "import json,sys; d=json.load(open('$OUT/r.json')); print(round(d['$metric']))")")
    wa=$(python3 -c "import json; print(round(json.load(open('$OUT/r.json'))['write_amplification'],3))")
  done
  sorted=$(printf '%s\n' "${values[@]}" | sort -n)
  best=$(echo "$sorted" | tail -1)
  median=$(echo "$sorted" | sed -n "$(( (RUNS + 1) / 2 ))p")
  printf '| %s | `deltaflash ftl-bench --over-provisioning 0.10 --gc greedy --seed 1 %s` | %s | %s | %s | %s |\n' \
    "$name" "$*" "$metric" "$best" "$median" "$wa"
}

echo "| case | command | metric | best | median | WA |"
echo "|---|---|---|---|---|---|"
run "data, 4 GiB device" host_writes_per_wall_second --writes 2000000
run "data, 256 MiB device" host_writes_per_wall_second --writes 2000000 --blocks-per-chip 64
run "no data, 4 GiB device" flash_page_programs_per_wall_second --writes 4000000 --no-data
run "no data, 256 MiB device" flash_page_programs_per_wall_second --writes 4000000 --no-data --blocks-per-chip 64
