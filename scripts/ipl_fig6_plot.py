#!/usr/bin/env python3
"""Fig. 6 (a-d) of the IPL B+-tree paper from scripts/ipl_fig6.sh's JSON.

Prints a markdown table (one row per index and buffer size: flash reads, writes,
erases, simulated I/O seconds of the insert phase) and writes four SVG line charts,
ipl-fig6a.svg (reads) to ipl-fig6d.svg (simulated I/O time), x = buffer frames on a
log axis, drawn by svgplot.py (no plotting library needed).
Usage: ipl_fig6_plot.py RESULTS_DIR FIGURES_DIR"""
import glob
import json
import os
import re
import sys

import svgplot

RESULTS, FIGURES = sys.argv[1], sys.argv[2]
SERIES = [
    ("ipl", "IPL B+-tree"),
    ("fast16", "B+-tree, FAST 16 log"),
    ("fast32", "B+-tree, FAST 32 log"),
    ("bast16", "B+-tree, BAST 16 log"),
    ("bast32", "B+-tree, BAST 32 log"),
]
PANELS = [
    ("a", "flash_reads", "(a) reads"),
    ("b", "flash_writes", "(b) writes"),
    ("c", "erases", "(c) erases"),
    ("d", "sim_io_s", "(d) simulated I/O time (s)"),
]

data = {}  # name -> {frames: insert phase}
for path in glob.glob(os.path.join(RESULTS, "ipl-fig6-*.json")):
    m = re.match(r"ipl-fig6-(\w+)-(\d+)\.json$", os.path.basename(path))
    if not m:
        continue
    with open(path) as f:
        data.setdefault(m.group(1), {})[int(m.group(2))] = json.load(f)["phases"]["insert"]
if not data:
    sys.exit(f"no ipl-fig6-*.json in {RESULTS}")
frames = sorted({f for runs in data.values() for f in runs})

print("| index | frames | reads | writes | erases | sim I/O s | wall s |")
print("|---|---:|---:|---:|---:|---:|---:|")
for key, label in SERIES:
    for f in frames:
        p = data.get(key, {}).get(f)
        if p is None:
            print(f"| {label} | {f} | not run | | | | |")
            continue
        print(
            f"| {label} | {f} | {p['flash_reads']:,} | {p['flash_writes']:,} | {p['erases']:,} "
            f"| {p['sim_io_s']:,.0f} | {p['wall_s']:.1f} |"
        )


os.makedirs(FIGURES, exist_ok=True)
for letter, key, title in PANELS:
    series = {label: [data.get(name, {}).get(f, {}).get(key) for f in frames] for name, label in SERIES}
    svgplot.lines(
        os.path.join(FIGURES, f"ipl-fig6{letter}.svg"),
        f"{title}, 1,000,000 random inserts",
        "buffer frames",
        title.split(") ", 1)[1],
        frames,
        series,
        logx=True,
    )
print(f"figures: {FIGURES}/ipl-fig6{{a,b,c,d}}.svg")
