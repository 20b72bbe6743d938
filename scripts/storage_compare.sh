#!/usr/bin/env bash
# TPC-B and TPC-C on NoFTL (no IPA and IPA [2x4]) and on each conventional FTL, same
# device and seed: the storage table of docs/measurements.md. JSON goes to docs/results/.
# Usage: scripts/storage_compare.sh [SIM_SECONDS]   (default 30; about 10 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
SIM=${1:-30}
BIN=target/release/deltaflash
cargo build --release --locked -q
COMMON=(--sim-time "$SIM" --warmup 5 --seed 1 --check)
# Each database fills about half of the NoFTL data regions, so GC works.
declare -A SIZE=([tpcb]="--scale 4 --blocks-per-chip 56" [tpcc]="--warehouses 1 --blocks-per-chip 96")
for wl in tpcb tpcc; do
  for run in noftl:0x0 noftl:2x4 ftl:page:0x0 ftl:dftl:0x0 ftl:bast:0x0 ftl:fast:0x0; do
    storage=${run%:*}; ipa=${run##*:}
    name="storage-$wl-${storage/:/-}-$ipa"
    echo "== $wl on $storage [$ipa]" >&2
    # shellcheck disable=SC2086
    "$BIN" bench --workload "$wl" ${SIZE[$wl]} --storage "$storage" --ipa "$ipa" "${COMMON[@]}" \
      --overwrite --json "docs/results/$name.json" > /dev/null
  done
done
