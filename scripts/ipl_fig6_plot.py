#!/usr/bin/env python3
"""Fig. 6 (a-d) of the IPL B+-tree paper from scripts/ipl_fig6.sh's JSON.

Prints a markdown table (one row per index and buffer size: flash reads, writes,
erases, simulated I/O seconds of the insert phase) and writes four SVG line charts,
ipl-fig6a.svg (reads) to ipl-fig6d.svg (simulated I/O time), x = buffer frames on a
log axis. Plain SVG, no plotting library needed.
Usage: ipl_fig6_plot.py RESULTS_DIR FIGURES_DIR"""
import glob
import json
import math
import os
import re
import sys

RESULTS, FIGURES = sys.argv[1], sys.argv[2]
SERIES = [
    ("ipl", "IPL B+-tree", "#d62728"),
    ("fast16", "B+-tree, FAST 16 log", "#1f77b4"),
    ("fast32", "B+-tree, FAST 32 log", "#17becf"),
    ("bast16", "B+-tree, BAST 16 log", "#2ca02c"),
    ("bast32", "B+-tree, BAST 32 log", "#bcbd22"),
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
for key, label, _ in SERIES:
    for f in frames:
        p = data.get(key, {}).get(f)
        if p is None:
            print(f"| {label} | {f} | not run | | | | |")
            continue
        print(
            f"| {label} | {f} | {p['flash_reads']:,} | {p['flash_writes']:,} | {p['erases']:,} "
            f"| {p['sim_io_s']:,.0f} | {p['wall_s']:.1f} |"
        )


def nice_max(v):
    """The smallest 1, 2 or 5 × 10^k at or above v."""
    if v <= 0:
        return 1
    e = 10 ** math.floor(math.log10(v))
    return next(m * e for m in (1, 2, 5, 10) if m * e >= v)


def fmt(v):
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if v >= div:
            return f"{v / div:g}{unit}"
    return f"{v:g}"


W, H, L, R, T, B = 560, 360, 70, 190, 30, 50
os.makedirs(FIGURES, exist_ok=True)
lo, hi = math.log10(min(frames)), math.log10(max(frames))
span = (hi - lo) or 1
for letter, key, title in PANELS:
    ymax = nice_max(max(p[key] for runs in data.values() for p in runs.values()))
    x = lambda f: L + (math.log10(f) - lo) / span * (W - L - R)
    y = lambda v: H - B - v / ymax * (H - T - B)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{L}" y="18" font-size="14">{title}, 1,000,000 random inserts</text>',
        f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
        f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>',
        f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">buffer frames</text>',
    ]
    for f in frames:
        out.append(f'<text x="{x(f):.1f}" y="{H - B + 16}" text-anchor="middle">{f}</text>')
    for i in range(6):
        v = ymax * i / 5
        out.append(f'<line x1="{L - 4}" y1="{y(v):.1f}" x2="{W - R}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{fmt(v)}</text>')
    for i, (name, label, colour) in enumerate(SERIES):
        pts = sorted(data.get(name, {}).items())
        if not pts:
            continue
        path = " ".join(f"{x(f):.1f},{y(p[key]):.1f}" for f, p in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for f, p in pts:
            out.append(f'<circle cx="{x(f):.1f}" cy="{y(p[key]):.1f}" r="3" fill="{colour}"/>')
        ly = T + 10 + 18 * i
        out.append(f'<line x1="{W - R + 10}" y1="{ly}" x2="{W - R + 30}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{W - R + 35}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    with open(os.path.join(FIGURES, f"ipl-fig6{letter}.svg"), "w") as f:
        f.write("\n".join(out) + "\n")
print(f"figures: {FIGURES}/ipl-fig6{{a,b,c,d}}.svg")
