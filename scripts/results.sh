#!/usr/bin/env bash
# Runs every experiment behind docs/results.md and writes its JSON to out/results/.
# `scripts/results_tables.py` turns those files into the tables of docs/results.md.
# About an hour on one core. Usage: scripts/results.sh [BIN] [PREFIX...]: only the
# runs whose names start with one of the prefixes (t4, t9-buffer0.5, ...).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/deltaflash}
shift || true
OUT=out/results
mkdir -p "$OUT"
PREFIXES=("$@")
run() { # name, then compare arguments
    local name=$1; shift
    if [[ ${#PREFIXES[@]} -gt 0 ]]; then
        local p wanted=""
        for p in "${PREFIXES[@]}"; do [[ "$name" == "$p"* ]] && wanted=1; done
        [[ -n "$wanted" ]] || return 0
    fi
    echo "== $name: $BIN compare $* --format json" >&2
    if ! "$BIN" compare "$@" --format json > "$OUT/$name.json"; then
        echo "FAILED: $name" >&2
        rm -f "$OUT/$name.json"
    fi
}
COMMON="--log-chips 4 --sim-time 60 --warmup 10"

# Table 7: TPC-B on the SLC emulator preset, 10% and 20% buffer.
for b in 0.1 0.2; do
    run "t7-buffer$b" --workload tpcb --scale 2 --schemes 0x0,2x4,3x4 --buffer $b --blocks-per-chip 32 $COMMON
done
# Tables 6 and 8: TPC-B and TPC-C on the MLC preset, IPA in pSLC and odd-MLC mode; the
# preset serves one host I/O at a time as the board did, and the `-qd0` runs lift that.
for qd in "" "-qd0"; do
    QD=()
    [[ -n "$qd" ]] && QD=(--host-queue-depth 0)
    for mode in pslc odd-mlc; do
        run "t6-$mode$qd" --workload tpcb --scale 4 --schemes 0x0,2x4 --device openssd-mlc --blocks-per-chip 32 \
            --ipa-mode $mode "${QD[@]}" $COMMON
        run "t8-$mode$qd" --workload tpcc --warehouses 1 --schemes 0x0,2x3 --device openssd-mlc --blocks-per-chip 64 \
            --ipa-mode $mode "${QD[@]}" $COMMON
        # The same with the board's 1.5% buffer (the paper's appendix D), on fuller regions.
        run "t6-buffer0.015-$mode$qd" --workload tpcb --scale 8 --schemes 0x0,2x4 --device openssd-mlc \
            --blocks-per-chip 32 --buffer 0.015 --ipa-mode $mode "${QD[@]}" $COMMON
        run "t8-buffer0.015-$mode$qd" --workload tpcc --warehouses 1 --schemes 0x0,2x3 --device openssd-mlc \
            --blocks-per-chip 48 --buffer 0.015 --ipa-mode $mode "${QD[@]}" $COMMON
    done
done
# Table 4: DBMS write amplification at 75% and 90% buffers.
for b in 0.75 0.9; do
    run "t4-tpcb-buffer$b" --workload tpcb --scale 2 --schemes 0x0,2x4,3x4 --buffer $b --blocks-per-chip 32 $COMMON
    run "t4-tpcc-buffer$b" --workload tpcc --warehouses 1 --schemes 0x0,2x3,3x3 --buffer $b --blocks-per-chip 400 $COMMON
done
# Table 9: TPC-C, eager eviction, buffers 10-90%. Ten warehouses (1 GiB) fill the data
# regions of 640 blocks per chip to two thirds, so GC works as on the paper's full device.
for b in 0.1 0.2 0.5 0.75 0.9; do
    run "t9-buffer$b" --workload tpcc --warehouses 10 --schemes 0x0,2x3 --buffer $b --blocks-per-chip 640 \
        --log-chips 4 --sim-time 30 --warmup 10
done
# Table 9 at a 10% buffer, ten times longer, on a device with room for the growth.
run "t9-long-buffer0.1" --workload tpcc --warehouses 10 --schemes 0x0,2x3 --buffer 0.1 --blocks-per-chip 1024 \
    --log-chips 4 --sim-time 300 --warmup 10 --progress 30
# Table 10: as Table 9 with non-eager eviction and late checkpoints, M grown with the buffer.
for spec in 0.1:2x10 0.2:2x10 0.5:2x30 0.75:2x40 0.9:2x40; do
    b=${spec%%:*}; scheme=${spec##*:}
    run "t10-buffer$b" --workload tpcc --warehouses 10 --schemes 0x0,$scheme --buffer $b --blocks-per-chip 640 \
        --eviction non-eager --checkpoint-log-share 0.9 --log-chips 4 --sim-time 30 --warmup 10
done
