#!/usr/bin/env bash
# The IPL B+-tree paper's Fig. 6 (ipl-btree-in-page-logging.txt §4.2) on DeltaFlash:
# 1,000,000 random inserts into the IPL B+-tree and into a traditional B+-tree on BAST
# and on FAST with 16 and 32 log blocks, on the paper's Table 1 chip (preset ipl-slc),
# for each buffer size of the sweep; reads, writes, erases and simulated I/O time of the
# insert phase. Runs two at a time (the machine has 2 cores). JSON goes to
# docs/results/ipl-fig6-<index>-<frames>.json; the table is printed and the four panels
# are drawn to docs/figures/ipl-fig6{a,b,c,d}.svg by scripts/ipl_fig6_plot.py.
# Usage: scripts/ipl_fig6.sh [FRAMES...]   (default 50 100 200 500 1000)
#        scripts/ipl_fig6.sh plot          (only the table and figures from the JSON)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != plot ]; then
  FRAMES=("$@")
  [ ${#FRAMES[@]} -gt 0 ] || FRAMES=(50 100 200 500 1000)
  # BIN=path runs another build of deltaflash (no cargo build then).
  if [ -z "${BIN:-}" ]; then
    cargo build --release --locked -q -p deltaflash-cli
    BIN=target/release/deltaflash
  fi
  export BIN
  mkdir -p docs/results
  jobs=()
  for f in "${FRAMES[@]}"; do
    jobs+=("ipl $f --index ipl"
           "fast16 $f --index btree --storage fast --log-blocks 16"
           "fast32 $f --index btree --storage fast --log-blocks 32"
           "bast16 $f --index btree --storage bast --log-blocks 16"
           "bast32 $f --index btree --storage bast --log-blocks 32")
  done
  printf '%s\n' "${jobs[@]}" | xargs -P 2 -I{} sh -c '
    set -- {}; name=$1; frames=$2; shift 2
    echo "== $name $frames frames" >&2
    "$BIN" index-bench "$@" --inserts 1000000 --buffer-frames "$frames" \
      --order random --seed 1 --queries 0 --scans 0 \
      --overwrite --json "docs/results/ipl-fig6-$name-$frames.json" > /dev/null'
fi
python3 scripts/ipl_fig6_plot.py docs/results docs/figures
