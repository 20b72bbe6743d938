#!/usr/bin/env python3
"""The IPA paper's Table 8 setting (TPC-C on the OpenSSD MLC board, IPA in pSLC mode,
[0x0] vs [2x3]) swept over the buffer size with `deltaflash.sweep(..., backend="ray")`;
writes docs/figures/python-table8-buffer.png and prints the table in docs/python.md.

Usage (in the virtualenv of scripts/python-test.sh, or after `pip install ./python[ray,plot]`):
    python scripts/python_table8.py [--out target/tmp/table8.jsonl] [--address ADDRESS]
Results go to a JSON-lines file, so a run that is interrupted resumes.
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import deltaflash
from deltaflash import plot

# Table 8's pSLC setting (TPC-C, 1 warehouse, openssd-mlc), short: 10 simulated seconds.
BASE = deltaflash.build_config(
    workload="tpcc",
    warehouses=1,
    device="openssd-mlc",
    blocks_per_chip=64,
    ipa_mode="pslc",
    log_chips=4,
    sim_time=10.0,
    warmup=2.0,
    seed=1,
)
GRID = {"buffer": [0.015, 0.1, 0.5], "scheme": ["0x0", "2x3"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="target/tmp/table8.jsonl")
    parser.add_argument("--address", help="a Ray cluster's address (default: Ray on this machine)")
    parser.add_argument("--figure", default="docs/figures/python-table8-buffer.png")
    args = parser.parse_args()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    df = deltaflash.sweep(GRID, base=BASE, backend="ray", address=args.address, out=args.out)
    columns = ["buffer", "scheme", "throughput_tps", "gc_erases", "host_writes", "in_place_appends", "write_latency_ms"]
    print(df[columns].to_string(index=False))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    plot.sweep(df, x="buffer", y="throughput_tps", hue="scheme", ax=axes[0])
    plot.sweep(df, x="buffer", y="write_latency_ms", hue="scheme", ax=axes[1])
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(GRID["buffer"], [f"{b:g}" for b in GRID["buffer"]])
        ax.minorticks_off()
        ax.set_xlabel("buffer pool, share of the database")
    fig.suptitle("TPC-C, 1 warehouse, OpenSSD MLC preset, IPA in pSLC mode (10 simulated s)")
    fig.tight_layout()
    fig.savefig(args.figure, dpi=110)
    print(f"figure: {args.figure}")


if __name__ == "__main__":
    main()
