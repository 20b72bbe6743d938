#!/usr/bin/env bash
# The IPL B+-tree paper's Tables 3 and 4 (ipl-btree-in-page-logging.txt §4.3) and the
# index-bench speed figures on DeltaFlash: 1,000,000 random inserts
# (seed 1, 100 buffer frames, preset ipl-slc), then 100,000 point queries and 1,000
# range scans, into each index: BFTL 2 KB (FAST, 30% and 10% log blocks), BFTL 8 KB
# (30%), μ-Tree, the IPL B+-tree, and a traditional B+-tree on the page FTL, BAST and
# FAST (11%). Runs two at a time. Per run: docs/results/ipl-t34-<name>.json (the
# index-bench JSON) and docs/results/ipl-t34-<name>.cpu (user and system CPU seconds
# from /usr/bin/time; wall time is meaningless on the shared machine). Then prints
# the Table 3/4 rows and the CPU table.
# Usage: scripts/ipl_tables34.sh [NAME...]   (default: all; names as below)
#        scripts/ipl_tables34.sh table       (only the tables from the files)
#        BIN=path scripts/ipl_tables34.sh     (another build; no cargo build then)
#        OUT=dir scripts/ipl_tables34.sh      (files into dir instead of docs/results)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-docs/results}
declare -A RUNS=(
  [bftl2k-30]="--index bftl --storage fast --node-bytes 2048 --log-blocks-percent 30"
  [bftl2k-10]="--index bftl --storage fast --node-bytes 2048 --log-blocks-percent 10"
  [bftl8k-30]="--index bftl --storage fast --node-bytes 8192 --log-blocks-percent 30"
  [mutree]="--index mutree"
  [ipl]="--index ipl"
  [btree-page]="--index btree --storage page"
  [btree-bast]="--index btree --storage bast"
  [btree-fast]="--index btree --storage fast"
)
if [ "${1:-}" != table ]; then
  NAMES=("$@")
  [ ${#NAMES[@]} -gt 0 ] || NAMES=(bftl8k-30 ipl bftl2k-30 bftl2k-10 mutree btree-page btree-bast btree-fast)
  if [ -z "${BIN:-}" ]; then
    CARGO_INCREMENTAL=0 cargo build --release --locked -q -p deltaflash-cli
    BIN=target/release/deltaflash
  fi
  export BIN OUT
  mkdir -p "$OUT"
  for n in "${NAMES[@]}"; do
    [ -n "${RUNS[$n]:-}" ] || { echo "unknown run '$n' (one of: ${!RUNS[*]})" >&2; exit 2; }
    echo "$n ${RUNS[$n]}"
  done | xargs -P 2 -I{} sh -c '
    set -- {}; name=$1; shift
    echo "== $name" >&2
    /usr/bin/time -f "%U %S" -o "$OUT/ipl-t34-$name.cpu" "$BIN" index-bench "$@" \
      --inserts 1000000 --buffer-frames 100 --order random --seed 1 \
      --queries 100000 --scans 1000 --overwrite --json "$OUT/ipl-t34-$name.json" > /dev/null'
fi
python3 - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
names = ["bftl2k-30", "bftl2k-10", "bftl8k-30", "mutree", "ipl", "btree-page", "btree-bast", "btree-fast"]
print("| run | reads | node reads | add. reads | internal | writes | erases | sim time | used + log / total | format erases | CPU s (user+sys) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
for n in names:
    path = os.path.join(out, f"ipl-t34-{n}.json")
    if not os.path.exists(path):
        continue
    j = json.load(open(path))
    p = j["phases"]["insert"]
    cpu = "n.m."
    cpath = os.path.join(out, f"ipl-t34-{n}.cpu")
    if os.path.exists(cpath):
        fields = open(cpath).read().split()
        if len(fields) >= 2:
            cpu = f"{float(fields[-2]) + float(fields[-1]):.1f}"
    fmt = j.get("format", {}).get("erases", "n.m.")
    print(f"| {n} | {p['flash_reads']:,} | {p['node_reads']:,} | {p['additional_reads']:,} | "
          f"{p['internal_reads']:,} | {p['flash_writes']:,} | {p['erases']:,} | {p['sim_io_s'] / 60:.1f} min | "
          f"{j['used_blocks']} + {j['log_blocks']} / {j['total_blocks']} | {fmt} | {cpu} |")
EOF
