#!/usr/bin/env bash
# The IPA paper's Table 2 (IPA vs In-Page Logging, §8.3 and appendix B) on DeltaFlash:
# TPC-B, TPC-C and TATP, each with IPA [2x4] on NoFTL and with IPL (8 KiB and 16 KiB log
# regions), same device, seed and duration. The §8.3 configuration: 8 KiB DB pages, SLC
# with 64 × 2 KiB pages per erase unit (NOP 4), 512 B log sectors. JSON goes to
# docs/results/ipl-table2-*.json; the table (appendix-B formulas from the measured inputs
# beside the device counters) is printed at the end.
# Usage: scripts/ipl_table2.sh [SIM_SECONDS]   (default 60; about 3 minutes)
#        scripts/ipl_table2.sh table          (only print the table from the JSON)
set -euo pipefail
cd "$(dirname "$0")/.."
SIM=${1:-60}
if [ "$SIM" != table ]; then
BIN=target/release/deltaflash
cargo build --release --locked -q
mkdir -p target/tmp
CONF=target/tmp/ipl-table2.toml
# bench has no flag for the DB page size: it comes from the config file (and with a
# file, the preset does too).
printf '[device]\npreset = "paper-emulator"\n[engine]\ndb_page_bytes = 8192\n' > "$CONF"
COMMON=(--config "$CONF" --page-bytes 2048 --pages-per-block 64
        --sim-time "$SIM" --warmup 10 --seed 1 --check)
# Each database fills about a third to a half of the NoFTL data regions.
declare -A SIZE=([tpcb]="--blocks-per-chip 32" [tpcc]="--blocks-per-chip 256" [tatp]="--blocks-per-chip 160")
for wl in tpcb tpcc tatp; do
  for run in ipa:2x4 ipl:8192 ipl:16384; do
    kind=${run%:*}; arg=${run##*:}
    if [ "$kind" = ipa ]; then
      extra=(--storage noftl --ipa "$arg")
    else
      extra=(--storage ipl --log-region-bytes "$arg" --sector-bytes 512)
    fi
    name="ipl-table2-$wl-$kind-$arg"
    echo "== $wl $kind $arg" >&2
    # shellcheck disable=SC2086
    "$BIN" bench --workload "$wl" ${SIZE[$wl]} "${COMMON[@]}" "${extra[@]}" \
      --overwrite --json "docs/results/$name.json" > /dev/null
  done
done
fi
python3 - docs/results <<'PY'
"""Table 2 from the JSON: appendix-B formulas with measured inputs, and device counts.

Units are 2 KiB flash-page I/Os (a 512 B partial program counts as one, as in the
paper). A DB page is P = 4 flash pages. Only the data regions count (IPL: the
`ipl_regions` entries other than log and system; IPA: the `regions` entries)."""
import json, sys
d = sys.argv[1]
P = 4
def load(wl, run):
    return json.load(open(f"{d}/ipl-table2-{wl}-{run}.json"))
def data(m, key):
    out = {}
    for name, c in m[key].items():
        if name in ("log", "system"):
            continue
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out
rows = {}
for wl in ("tpcb", "tpcc", "tatp"):
    m = load(wl, "ipa-2x4")
    r = data(m, "regions")
    fetches = m["host_reads"]
    evictions = m["out_of_place_writes"] + m["in_place_appends"]
    # GC moves flash pages; the formula's "#gc page migrations * 4io" counts DB pages
    # of four flash pages, so both come to `mig` flash-page I/Os.
    mig = r["gc_page_migrations"]
    wa_f = (m["in_place_appends"] + m["out_of_place_writes"] * P + mig) / (evictions * P)
    ra_f = (fetches * P + mig) / (fetches * P)
    wa_d = (r["host_writes"] + r["host_write_deltas"] + mig) / (evictions * P)
    ra_d = (r["host_reads"] + mig) / (fetches * P)
    rows[(wl, "IPA [2x4]")] = (wa_f, wa_d, ra_f, ra_d, r["gc_erases"], r["gc_erases"], fetches, evictions, None)
    for lr in (8192, 16384):
        m = load(wl, f"ipl-{lr}")
        c = data(m, "ipl_regions")
        fetches = m["host_reads"]
        evictions = m["logged_writes"] + m["out_of_place_writes"]
        log_pages = lr // 2048
        db_per_unit = (64 - log_pages) // P
        # Sectors beyond one per logged eviction. A flush that finds the log region
        # full is merged instead of written (its records go into the merged pages), so
        # each merge stands for one flush that wrote no sector.
        imlog_full = max(0, c["log_sector_writes"] + c["merges"] - m["logged_writes"])
        wa_f = (c["merges"] * db_per_unit * P + imlog_full + evictions) / (evictions * P)
        ra_f = (fetches * (P + log_pages) + c["merges"] * 64) / (fetches * P)
        wa_d = (c["page_writes"] + c["log_sector_writes"] + c["merge_page_writes"]) / (evictions * P)
        ra_d = (c["page_reads"] + c["log_page_reads"] + c["merge_page_reads"]) / (fetches * P)
        extra = (c["merges"], imlog_full, m["out_of_place_writes"], c["merge_page_writes"] / max(1, c["merges"]) / P,
                 c["log_page_reads"] / fetches)
        rows[(wl, f"IPL {lr // 1024} KiB")] = (wa_f, wa_d, ra_f, ra_d, c["merges"], c["erases"], fetches,
                                               evictions, extra)
print("| workload | scheme | WA formula | WA device | RA formula | RA device | erases formula | erases device "
      "| erases / 1,000 evictions | fetches | evictions | merges / imlog-full / first writes "
      "| DB pages per merge | log pages read per fetch |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (wl, s), (waf, wad, raf, rad, ef, ed, f, e, x) in rows.items():
    xs = " | | " if x is None else f"{x[0]:,} / {x[1]:,} / {x[2]:,} | {x[3]:.1f} | {x[4]:.2f}"
    print(f"| {wl} | {s} | {waf:.2f} | {wad:.2f} | {raf:.2f} | {rad:.2f} | {ef:,} | {ed:,} | {1000 * ed / e:.1f} "
          f"| {f:,} | {e:,} | {xs} |")
PY
