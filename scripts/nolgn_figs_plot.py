"""Tables and SVGs of the NoLgn-FTL paper's Figs. 6–11 from scripts/nolgn_figs.sh's JSON.

    python3 scripts/nolgn_figs_plot.py JSON_DIR FIGURE_DIR

Figs. 6–9 use the overwrite phase of each sqlite-bench run (its `kinds.overwrite` row:
flash counters, throughput, latency over the overwrites only). Missing runs are gaps.
Prints Markdown tables (ours normalised to Base-WAL, with the paper's averages) and
writes docs/figures/nolgn-fig{6,7,8,9,10,11}.svg. Standard library only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import svgplot  # noqa: E402

JOURNALS = [("base-wal", "Base-WAL"), ("sw-wal", "SW-WAL"), ("nolgn", "NoLgn")]
VALUES = [256, 512, 1024, 2048, 4096, 8192, 16384]


def load(d, name):
    path = os.path.join(d, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def label(v):
    return f"{v // 1024}K" if v >= 1024 else f"{v}B"


def overwrite(r):
    return r["kinds"]["overwrite"] if r else None


def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def pct(x):
    return "–" if x is None else f"{(x - 1) * 100:+.0f}%"


def num(x, digits=0):
    return "–" if x is None else f"{x:,.{digits}f}"


def sweep(d, sync, metric):
    """{journal: [metric of the overwrite phase per value size]}"""
    return {j: [metric(overwrite(load(d, f"f6-{j}-{sync}-{v}"))) for v in VALUES] for j, _ in JOURNALS}


def programs(k):
    return k["flash"]["flash_programs"] if k else None


def tps(k):
    return k["throughput_tps"] if k else None


def latency(k):
    return k["latency"]["mean_us"] if k else None


def normalised_table(title, data, fmt_digits=0):
    print(f"\n{title}\n")
    print("| value | " + " | ".join(n for _, n in JOURNALS) + " | SW-WAL/Base | NoLgn/Base | NoLgn/SW-WAL |")
    print("|---|" + "---:|" * (len(JOURNALS) + 3))
    for i, v in enumerate(VALUES):
        b, s, n = (data[j][i] for j, _ in JOURNALS)
        if b is None and s is None and n is None:
            continue
        row = [num(x, fmt_digits) for x in (b, s, n)] + [pct(ratio(s, b)), pct(ratio(n, b)), pct(ratio(n, s))]
        print(f"| {label(v)} | " + " | ".join(row) + " |")
    avg = [mean(ratio(data[a][i], data[b][i]) for i in range(len(VALUES))) for a, b in
           (("sw-wal", "base-wal"), ("nolgn", "base-wal"), ("nolgn", "sw-wal"))]
    print("| average | | | | " + " | ".join(pct(x) for x in avg) + " |")


def base_ratio_table(title, what, labels, data, with_average):
    """One row per label: each journal's value and SW-WAL's and NoLgn's ratio to Base-WAL."""
    print(f"\n{title}\n")
    print(f"| {what} | " + " | ".join(n for _, n in JOURNALS) + " | SW-WAL/Base | NoLgn/Base |")
    print("|---|" + "---:|" * (len(JOURNALS) + 2))
    for i, lab in enumerate(labels):
        b, s, n = (data[j][i] for j, _ in JOURNALS)
        print(f"| {lab} | {num(b, 1)} | {num(s, 1)} | {num(n, 1)} | {pct(ratio(s, b))} | {pct(ratio(n, b))} |")
    if with_average:
        avg = [mean(ratio(data[a][i], data["base-wal"][i]) for i in range(len(labels))) for a in ("sw-wal", "nolgn")]
        print(f"| average | | | | {pct(avg[0])} | {pct(avg[1])} |")


def normalised_series(data):
    base = data["base-wal"]
    return {n: [ratio(x, b) for x, b in zip(data[j], base)] for j, n in JOURNALS}


def main():
    d, figs = sys.argv[1], sys.argv[2]
    os.makedirs(figs, exist_ok=True)
    groups = [label(v) for v in VALUES]
    for fig, what, metric, unit in ((6, "flash page writes", programs, "flash programs"),
                                     (7, "throughput", tps, "overwrites per s"),
                                     (8, "latency", latency, "mean µs")):
        for sync in ("normal", "full"):
            data = sweep(d, sync, metric)
            if not any(x is not None for xs in data.values() for x in xs):
                continue
            normalised_table(f"Fig. {fig}, {sync.upper()}: {what} of the overwrite phase ({unit})", data,
                             1 if fig > 6 else 0)
            svgplot.bars(os.path.join(figs, f"nolgn-fig{fig}-{sync}.svg"),
                         f"Fig. {fig}: {what}, {sync.upper()} (normalised to Base-WAL)",
                         f"{what} / Base-WAL", groups, normalised_series(data))
    # Fig. 9: where NoLgn's flash programs go, NORMAL.
    rows = []
    series = {"host": [], "GC migration": [], "additional (locking)": []}
    for v in VALUES:
        k = overwrite(load(d, f"f6-nolgn-normal-{v}"))
        if not k:
            for s in series.values():
                s.append(None)
            continue
        f = k["flash"]
        lock = f.get("gc_lock_migrations", 0)
        gc = f["gc_page_migrations"] - lock
        host = f["flash_programs"] - f["gc_page_migrations"]
        total = max(f["flash_programs"], 1)
        for name, x in (("host", host), ("GC migration", gc), ("additional (locking)", lock)):
            series[name].append(x / total)
        rows.append((label(v), host, gc, lock, lock / total))
    if rows:
        print("\nFig. 9, NoLgn, NORMAL: write distribution of the overwrite phase (flash programs)\n")
        print("| value | host (incl. file table) | GC migration | additional due to locking | additional share |")
        print("|---|---:|---:|---:|---:|")
        for lab, host, gc, lock, share in rows:
            print(f"| {lab} | {host:,} | {gc:,} | {lock:,} | {share * 100:.1f}% |")
        svgplot.bars(os.path.join(figs, "nolgn-fig9.svg"), "Fig. 9: NoLgn write distribution, NORMAL",
                     "share of flash programs", groups, series)
    # Fig. 10: YCSB A–F, NORMAL, throughput normalised to Base-WAL.
    mixes = "abcdef"
    y = {j: [(load(d, f"f10-{j}-{m}") or {}).get("throughput_tps") for m in mixes] for j, _ in JOURNALS}
    if any(x is not None for xs in y.values() for x in xs):
        base_ratio_table("Fig. 10: YCSB, NORMAL, throughput (operations per simulated s)", "mix",
                         [m.upper() for m in mixes], y, with_average=True)
        svgplot.bars(os.path.join(figs, "nolgn-fig10.svg"), "Fig. 10: YCSB, NORMAL (normalised to Base-WAL)",
                     "throughput / Base-WAL", [m.upper() for m in mixes], normalised_series(y))
    # Fig. 11: TPC-C tpmC at 75/50/25% free.
    frees = [75, 50, 25]
    t = {j: [(load(d, f"f11-{j}-{f}") or {}).get("tpmc") for f in frees] for j, _ in JOURNALS}
    if any(x is not None for xs in t.values() for x in xs):
        base_ratio_table("Fig. 11: TPC-C, NORMAL, tpmC", "free space", [f"{f}%" for f in frees], t,
                         with_average=False)
        svgplot.bars(os.path.join(figs, "nolgn-fig11.svg"), "Fig. 11: TPC-C tpmC, NORMAL",
                     "tpmC", [f"{f}% free" for f in frees], {n: t[j] for j, n in JOURNALS})


if __name__ == "__main__":
    main()
