#!/usr/bin/env bash
# Engine CPU benchmarks for docs/benchmarks.md: `deltaflash engine-bench` with and
# without IPA, with a large and a small buffer, with and without the write-ahead log.
# Each configuration runs RUNS times (default 3); the best and the median per phase
# are printed as markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/deltaflash
RUNS=${RUNS:-3}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

for ipa in 0x0 2x4; do
  for buffer in 4096 256; do
    for i in $(seq "$RUNS"); do
      "$BIN" engine-bench --ipa "$ipa" --buffer-pages "$buffer" --json "$OUT/$ipa-$buffer-$i.json" >/dev/null 2>&1
      "$BIN" engine-bench --ipa "$ipa" --buffer-pages "$buffer" --no-log --json "$OUT/nolog-$ipa-$buffer-$i.json" >/dev/null 2>&1
    done
  done
done
python3 - "$OUT" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
print("| log | IPA | buffer frames | phase | best ops/wall-s | median | out-of-place writes | in-place appends |")
print("|---|---|---|---|---|---|---|---|")
evict = []
for log, prefix in [("aries", ""), ("none", "nolog-")]:
    for ipa in ["0x0", "2x4"]:
        for buffer in ["4096", "256"]:
            runs = [json.load(open(p)) for p in sorted(glob.glob(f"{out}/{prefix}{ipa}-{buffer}-*.json"))]
            for k, phase in enumerate(runs[0]["phases"]):
                rates = sorted(r["phases"][k]["ops_per_wall_second"] for r in runs)
                print(f"| {log} | [{ipa}] | {buffer} | {phase['phase']} | {rates[-1]:,.0f} | {statistics.median(rates):,.0f} "
                      f"| {runs[0]['out_of_place_writes']:,} | {runs[0]['in_place_appends']:,} |")
            if ipa != "0x0":
                evict += [(r["page_write_ns_without_ipa"], r["page_write_ns_with_ipa"]) for r in runs]
plain = min(e[0] for e in evict); ipa = min(e[1] for e in evict)
print()
print(f"Page write (eviction) of a page with one changed body byte and a new LSN, best of {len(evict)}: "
      f"{plain:,.0f} ns out-of-place with [0x0], {ipa:,.0f} ns with [2x4] (diff, rule, record encoding, "
      f"append; every third write of a page is out-of-place).")
PY
