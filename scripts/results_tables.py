#!/usr/bin/env python3
"""Prints the markdown tables of docs/results.md from the JSON that scripts/results.sh
writes to out/results/. Usage: scripts/results_tables.py [DIR]"""
import json
import sys
from pathlib import Path

DIR = Path(sys.argv[1] if len(sys.argv) > 1 else "out/results")

ROWS = [
    ("Host reads", "host_reads"),
    ("Host writes", "host_writes"),
    ("GC page migrations", "gc_page_migrations"),
    ("GC erases", "gc_erases"),
    ("Migrations per host write", "gc_migrations_per_host_write"),
    ("Erases per host write", "gc_erases_per_host_write"),
    ("READ I/O latency [ms]", "read_latency_ms"),
    ("WRITE I/O latency [ms]", "write_latency_ms"),
    ("Throughput [tps]", "throughput_tps"),
    ("DBMS write amplification", "dbms_write_amplification"),
]


def load(name):
    try:
        return json.loads((DIR / f"{name}.json").read_text())
    except (OSError, ValueError):  # not run yet, or still running
        return None


def absolute(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3f}" if v < 1 else f"{v:.2f}"


def relative(base, v):
    return "–" if base == 0 else f"{(v - base) / base * 100:+.0f}"


def split(run):
    total = run["out_of_place_writes"] + run["in_place_appends"]
    return f"{run['out_of_place_writes'] * 100 / total:.0f} : {run['in_place_appends'] * 100 / total:.0f}"


def compare_table(title, columns):
    """columns: (label, baseline run, run or None for the baseline itself)."""
    print(f"\n{title}\n")
    print("| metric | " + " | ".join(label for label, _, _ in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for label, key in ROWS:
        cells = [absolute(base[key]) if run is None else relative(base[key], run[key]) for _, base, run in columns]
        print(f"| {label} | " + " | ".join(cells) + " |")
    cells = ["–" if run is None else split(run) for _, _, run in columns]
    print("| Out-of-place : in-place | " + " | ".join(cells) + " |")
    for _, base, run in columns:
        if run is None:
            t = base["time_per_transaction_ms"]
            print(f"\nbaseline: database {base['database_mib']:.0f} MiB in {base['data_regions_mib']:.0f} MiB; "
                  f"per transaction {t['response']:.2f} ms = reads {t['reads']:.2f} + commits {t['commits']:.2f} "
                  f"+ evictions {t['evictions']:.2f} + checkpoints {t['checkpoints']:.2f} + CPU/other {t['other']:.2f}")


def buckets_table(title, runs):
    """Update-size CDF: share of page writes changing at most 2^k - 1 bytes."""
    print(f"\n{title}\n")
    print("| changed bytes ≤ | " + " | ".join(label for label, _ in runs) + " |")
    print("|---" * (len(runs) + 1) + "|")
    cdfs = []
    for _, run in runs:
        b = run["update_size_writes"]
        total = sum(b) or 1
        cdfs.append([sum(b[: i + 1]) * 100 / total for i in range(len(b))])
    for i in range(1, 9):
        print(f"| {2 ** i - 1} | " + " | ".join(f"{c[i]:.0f}%" for c in cdfs) + " |")


def main():
    t7 = [load(f"t7-buffer{b}") for b in ("0.1", "0.2")]
    if all(t7):
        cols = []
        for b, runs in zip(("10%", "20%"), t7):
            cols += [(f"[0×0] {b}", runs[0], None), (f"[2×4] %", runs[0], runs[1]), (f"[3×4] %", runs[0], runs[2])]
        compare_table("Table 7 (TPC-B, SLC emulator preset)", cols)
    for table, workload in (("t6", "TPC-B [2×4]"), ("t8", "TPC-C [2×3]")):
        for qd, interface in (("", "one host I/O at a time"), ("-qd0", "no host queue limit")):
            for buffer, name in (("10%", table), ("1.5%", f"{table}-buffer0.015")):
                p, o = load(f"{name}-pslc{qd}"), load(f"{name}-odd-mlc{qd}")
                if p and o:
                    compare_table(f"{table} ({workload}, MLC preset, {interface}, {buffer} buffer)",
                                  [("[0×0]", p[0], None), ("pSLC %", p[0], p[1]), ("odd-MLC %", o[0], o[1])])
    for wl in ("tpcb", "tpcc"):
        for b in ("0.75", "0.9"):
            runs = load(f"t4-{wl}-buffer{b}")
            if runs:
                wa = [r["dbms_write_amplification"] for r in runs]
                print(f"\nTable 4 {wl} buffer {b}: " + ", ".join(
                    f"[{r['ipa']}] {wa[0] / w:.2f}x" for r, w in zip(runs[1:], wa[1:])))
    for table in ("t9", "t10"):
        runs = [(b, load(f"{table}-buffer{b}")) for b in ("0.1", "0.2", "0.5", "0.75", "0.9")]
        runs = [(b, r) for b, r in runs if r]
        if runs:
            cols = []
            for b, r in runs:
                cols += [(f"[0×0] {float(b):.0%}", r[0], None), (f"[{r[1]['ipa']}] %", r[0], r[1])]
            config = runs[0][1][0]["config"]
            # Results since the experiment API nest the workload's parameters.
            warehouses = config["workload"]["warehouses"] if isinstance(config["workload"], dict) else config["warehouses"]
            compare_table(f"{table} (TPC-C, {warehouses} warehouses)", cols)
            buckets_table(f"{table} update sizes ([0×0] runs)", [(f"{float(b):.0%}", r[0]) for b, r in runs])
    long = load("t9-long-buffer0.1")
    if long:
        compare_table("t9 at a 10% buffer, 300 simulated seconds", [("[0×0]", long[0], None), ("[2×3] %", long[0], long[1])])
    b = load("t4-tpcb-buffer0.75")
    c = load("t4-tpcc-buffer0.75")
    if b and c:
        buckets_table("Update sizes at a 75% buffer ([0×0])", [("TPC-B", b[0]), ("TPC-C", c[0])])


main()
