"""``python -m deltaflash sweep --grid GRID.toml [--ray ADDRESS] [--out FILE]``: a sweep
from a grid file, as ``deltaflash sweep --ray`` runs it. Prints one line per point.

``python -m deltaflash reproduce-runs --inputs FILE --results FILE --ray ADDRESS``:
``deltaflash reproduce --ray``'s runs as Ray tasks (see ``deltaflash.reproduce``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from . import ConfigError, DeltaflashError, load_grid, sweep


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaflash", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="run a grid file's points")
    s.add_argument("--grid", required=True, help="grid file: [base] config and [grid] fields → values")
    s.add_argument("--out", help="JSON-lines results file (default: GRID.results.jsonl); resumed if it exists")
    s.add_argument("--ray", metavar="ADDRESS", help="run on Ray: `auto`, `local` or a cluster's address")
    s.add_argument(
        "--workers", "--processes", dest="workers", type=int, help="points run at once locally (default: one per core)"
    )
    s.add_argument("--retries", type=int, default=1, help="tries again of a failed point (default 1)")
    r = sub.add_parser("reproduce-runs", help="make `deltaflash reproduce --ray`'s runs on Ray")
    r.add_argument("--inputs", required=True, help="the runs, as JSON lines the command line wrote")
    r.add_argument("--results", required=True, help="JSON-lines results file, appended to; resumed if it exists")
    r.add_argument("--ray", metavar="ADDRESS", required=True, help="`local` (Ray on this machine), `auto` or an address")
    r.add_argument("--workers", type=int, help="CPUs of a local Ray started here (default: all)")
    r.add_argument("--retries", type=int, default=1, help="tries again of a failed run (default 1)")
    args = parser.parse_args(argv)
    if args.command == "reproduce-runs":
        return _reproduce_runs(args)
    out = args.out or os.path.splitext(args.grid)[0] + ".results.jsonl"
    try:
        base, grid = load_grid(args.grid)
        df = sweep(
            grid,
            base=base,
            out=out,
            backend="ray" if args.ray else "local",
            address=None if args.ray in (None, "local") else args.ray,
            workers=args.workers,
            retries=args.retries,
        )
    except (ConfigError, DeltaflashError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted; finished points are in {out}, run again to resume", file=sys.stderr)
        return 130
    columns = list(grid) + [c for c in ("throughput_tps", "gc_erases", "write_amplification", "error") if c in df]
    print(df[columns].to_string(index=False))
    print(f"results: {out}", file=sys.stderr)
    return 1 if "error" in df and df["error"].notna().any() else 0


def _reproduce_runs(args: argparse.Namespace) -> int:
    from .reproduce import run_inputs

    try:
        failed = run_inputs(
            args.inputs,
            args.results,
            address=None if args.ray == "local" else args.ray,
            workers=args.workers,
            retries=args.retries,
        )
    except (ConfigError, DeltaflashError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"error: --ray needs Ray (pip install './python[ray]'): {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted; finished runs are in {args.results}, run again to resume", file=sys.stderr)
        return 130
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
