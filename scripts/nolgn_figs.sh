#!/usr/bin/env bash
# The NoLgn-FTL paper's Figs. 6–11 (nolgn-ftl-no-logging.txt §4) on DeltaFlash: SQLite
# with Base-WAL (SQLite's WAL on the page FTL), SW-WAL (remapping checkpoints, page FTL)
# and NoLgn (no log, NoLgn-FTL) on the femu preset (4 KB pages, 1,024 pages per block,
# 50 µs / 500 µs / 5 ms), each device aged first (`--free-space`: the aging file takes
# the rest, written once, then overwritten at random by as many 4 KB writes as the device
# has logical pages, as §4.1's 4 million writes on 16 GB).
#   Figs. 6–9: sqlite-bench fillrandom then overwrite, value size 256 B … 16 KB, NORMAL
#              and FULL; flash programs, throughput, latency and the write distribution
#              (host / GC migration / additional due to locking) of the overwrite phase.
#   Fig. 10:   YCSB A–F, NORMAL, throughput normalised to Base-WAL.
#   Fig. 11:   TPC-C tpmC at 75%, 50%, 25% free space.
# Runs two at a time (2 cores). JSON goes to target/nolgn-figs/, the tables are printed
# and the SVGs drawn to docs/figures/nolgn-fig*.svg by scripts/nolgn_figs_plot.py.
#
# Default (scaled down for a loaded 2-core machine, stated in docs/results.md): 4 chips
# × 64 blocks (1 GiB raw), 10,000 rows then 10,000 overwrites per value size, YCSB
# 10,000 records / 10,000 operations, TPC-C 1 warehouse / 2,000 transactions on 8 chips
# (2 GiB raw: SQLite's 1-warehouse database, ~300 MB, fits in 25% of it).
# A run whose JSON exists is skipped: delete target/nolgn-figs to rerun.
# --full: the paper's sizes: the whole femu preset (16 GB logical), 200,000 overwrites,
# YCSB 100,000 / 100,000, TPC-C 4 warehouses / 10,000 transactions (hours of wall time).
# --host-stack ext4-ordered charges the host I/O stack (docs/host-stack.md; default none);
# its runs go to target/nolgn-figs-ext4-ordered/. `deltaflash reproduce nolgn:fig6 …`
# runs the same figures with the stack on and off side by side (its ablation).
# Usage: scripts/nolgn_figs.sh [--full] [--figs "6 10 11"] [--values "256 …"] [--host-stack S] | plot
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=target/nolgn-figs
FULL=0
HOST_STACK=none
FIGS="6 10 11"
VALUES="256 512 1024 2048 4096 8192 16384"
while [ $# -gt 0 ]; do
  case "$1" in
    --full) FULL=1 ;;
    --figs) FIGS="$2"; shift ;;
    --values) VALUES="$2"; shift ;;
    --host-stack) HOST_STACK="$2"; shift ;;
    plot) PLOT=1 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ "$HOST_STACK" != none ]; then
  OUT="$OUT-$HOST_STACK"
fi
if [ "${PLOT:-0}" = 1 ]; then
  exec python3 scripts/nolgn_figs_plot.py "$OUT" docs/figures
fi
if [ $FULL = 1 ]; then
  DEV="--device femu"; TPCC_DEV="--device femu"
  NUM=200000; RECORDS=100000; OPERATIONS=100000; WH=4; TXNS=10000
else
  DEV="--device femu --chips 4 --blocks-per-chip 64"; TPCC_DEV="--device femu --chips 8 --blocks-per-chip 64"
  NUM=10000; RECORDS=10000; OPERATIONS=10000; WH=1; TXNS=2000
fi
# BIN=path runs another build of deltaflash (no cargo build then).
if [ -z "${BIN:-}" ]; then
  CARGO_INCREMENTAL=0 cargo build --release --locked -q -p deltaflash-cli
  BIN=target/release/deltaflash
fi
export BIN OUT
mkdir -p "$OUT"
# One job per line: output name, then the bench flags.
jobs=()
journal() { # journal name -> storage and journal flags
  case "$1" in
    base-wal) echo "--storage ftl:page --journal base-wal --host-stack $HOST_STACK" ;;
    sw-wal) echo "--storage ftl:page --journal sw-wal --host-stack $HOST_STACK" ;;
    nolgn) echo "--storage ftl:nolgn --journal nolgn --host-stack $HOST_STACK" ;;
  esac
}
for fig in $FIGS; do
  for j in base-wal sw-wal nolgn; do
    case "$fig" in
      6)
        for sync in normal full; do
          for v in $VALUES; do
            jobs+=("f6-$j-$sync-$v $(journal $j) $DEV --workload sqlite-bench --ops fillrandom,overwrite --num $NUM --value-size $v --sync $sync --free-space 50%")
          done
        done ;;
      10)
        for mix in a b c d e f; do
          jobs+=("f10-$j-$mix $(journal $j) $DEV --workload ycsb --mix $mix --records $RECORDS --operations $OPERATIONS --sync normal --free-space 50%")
        done ;;
      11)
        for free in 75 50 25; do
          jobs+=("f11-$j-$free $(journal $j) $TPCC_DEV --workload tpcc --warehouses $WH --transactions $TXNS --sync normal --free-space $free%")
        done ;;
      *) echo "no figure $fig (6 covers 6–9)" >&2; exit 2 ;;
    esac
  done
done
printf '%s\n' "${jobs[@]}" | xargs -P 2 -I{} sh -c '
  set -- {}; name=$1; shift
  [ -s "$OUT/$name.json" ] && exit 0
  echo "== $name" >&2
  "$BIN" bench --engine sqlite "$@" --seed 1 --overwrite --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1 ||
    { echo "FAILED $name (see $OUT/$name.log)" >&2; exit 0; }'
python3 scripts/nolgn_figs_plot.py "$OUT" docs/figures
