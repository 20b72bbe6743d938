#!/usr/bin/env python3
"""Compares two sets of results.sh JSON (same experiments, e.g. docs/results and a
re-run in out/results): per experiment, the largest change of a headline count and of
each scheme's throughput and GC copies relative to the no-IPA baseline.
Usage: scripts/results_compare.py OLD_DIR NEW_DIR"""
import json
import sys
from pathlib import Path

KEYS = ["committed_transactions", "throughput_tps", "host_reads", "host_writes",
        "gc_page_migrations", "gc_erases", "dbms_write_amplification"]


def runs(path):
    data = json.loads(path.read_text())
    return data if isinstance(data, list) else [data]


def relative(rs, i, key):
    return (rs[i][key] / rs[0][key] - 1) * 100 if rs[0][key] else 0.0


def main(old_dir, new_dir):
    print("| experiment | largest change of a count | throughput vs no IPA, points | GC copies vs no IPA, points |")
    print("|---|---|---|---|")
    for new_path in sorted(Path(new_dir).glob("*.json")):
        old_path = Path(old_dir) / new_path.name
        if not old_path.exists():
            continue
        old, new = runs(old_path), runs(new_path)
        change, what = 0.0, "–"
        for a, b in zip(old, new):
            for k in KEYS:
                if a.get(k) and k in b:
                    d = (b[k] - a[k]) / a[k] * 100
                    if abs(d) > abs(change):
                        change, what = d, f"{k} [{a['ipa']}] {a[k]:,.6g} → {b[k]:,.6g}"
        tps = max((abs(relative(new, i, "throughput_tps") - relative(old, i, "throughput_tps"))
                   for i in range(1, len(old))), default=0.0)
        gc = max((abs(relative(new, i, "gc_page_migrations") - relative(old, i, "gc_page_migrations"))
                  for i in range(1, len(old))), default=0.0)
        print(f"| {new_path.stem} | {change:+.2f}% ({what}) | {tps:.2f} | {gc:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
