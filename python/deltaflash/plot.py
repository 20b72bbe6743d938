"""Figures with matplotlib, of the papers' kinds: the update-size CDF (Table 1 and
appendix A), a metric over simulated time, a Table-7 comparison, and a sweep's metric
against one grid column. Each draws on ``ax`` (a new figure's if None) and returns it.

A new figure lays itself out (matplotlib's constrained layout): its labels stay inside
it. On an ``ax`` of the caller's, the layout is the caller's figure's.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Union

import pandas as pd

from .experiment import Result


#: The size of a new figure in inches: matplotlib's default width, a little lower.
FIGSIZE = (6.4, 4.0)

#: The least width in inches the bars of ``compare`` keep beside their row labels.
BARS_WIDTH_IN = 4.0


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=FIGSIZE, layout="constrained")[1]


def _widen_for_row_labels(ax: Any) -> None:
    """Widens the figure so that the row labels, as rendered, leave the bars
    ``BARS_WIDTH_IN``: constrained layout makes room for labels within the figure's
    width, but a figure narrower than its labels would squeeze the bars to nothing."""
    figure = ax.figure
    figure.draw_without_rendering()
    labels_in = max((t.get_window_extent().width for t in ax.get_yticklabels()), default=0.0) / figure.dpi
    figure.set_figwidth(max(figure.get_figwidth(), labels_in + BARS_WIDTH_IN))


def update_size_cdf(buckets: Sequence[int]) -> pd.DataFrame:
    """The cumulative share of page writes by net changed bytes: bucket k holds writes of
    [2^k, 2^(k+1)) bytes (bucket 0 also 0 and 1 byte, the last 8 KiB and more), so the
    share at ``bytes_below`` = 2^(k+1) is that of writes smaller than it."""
    total = sum(buckets)
    rows, running = [], 0
    for k, count in enumerate(buckets):
        running += count
        rows.append({"bytes_below": 2 ** (k + 1), "share": running / total if total else float("nan")})
    return pd.DataFrame(rows)


def cdf(result: Result, object: Optional[str] = None, ax: Any = None) -> Any:
    """The CDF of update sizes (net changed bytes per page write) of one table or index
    (``object``), or of all objects."""
    if object is None:
        buckets = result.data["update_size_writes"]
        label = "all objects"
    else:
        matches = [o for o in result.data["objects"] if o["name"] == object]
        if not matches:
            names = ", ".join(o["name"] for o in result.data["objects"])
            raise KeyError(f"no object `{object}` in the result (objects: {names})")
        buckets, label = matches[0]["update_size_writes"], object
    df = update_size_cdf(buckets)
    ax = _axes(ax)
    ax.step(df["bytes_below"], df["share"], where="post", label=f"{label} [{result.scheme}]")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("net changed bytes per page write (below)")
    ax.set_ylabel("share of page writes")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def timeseries(
    results: Union[Result, Iterable[Result], Mapping[str, Result]], metric: str = "throughput_tps", ax: Any = None
) -> Any:
    """``metric`` of each interval line over simulated seconds, one line per result
    (labelled by scheme, or by the mapping's keys). Runs have interval lines unless
    they were run with ``interval=0`` or ``None``."""
    if isinstance(results, Result):
        labelled: Dict[str, Result] = {f"[{results.scheme}]": results}
    elif isinstance(results, Mapping):
        labelled = dict(results)
    else:
        labelled = {f"[{r.scheme}]": r for r in results}
    ax = _axes(ax)
    for label, r in labelled.items():
        ts = r.timeseries
        if ts.empty:
            raise ValueError(f"{label} has no interval lines: it ran with interval=0 or None")
        if metric not in ts:
            raise KeyError(f"no interval metric `{metric}` (metrics: {', '.join(c for c in ts if c != 'sim_seconds')})")
        ax.plot(ts["sim_seconds"], ts[metric], marker=".", label=label)
    ax.set_xlabel("simulated seconds")
    ax.set_ylabel(metric)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def compare(df: pd.DataFrame, metrics: Optional[Sequence[str]] = None, ax: Any = None) -> Any:
    """The change of each scheme against the baseline (the ``Δ%`` columns of a
    ``deltaflash.compare`` DataFrame), one bar group per metric. A new figure is as
    wide as its row labels need."""
    deltas = [c for c in df.columns if c.endswith("Δ%")]
    if not deltas:
        raise ValueError("the DataFrame has no Δ% columns: compare at least two schemes")
    chosen = list(metrics) if metrics is not None else [
        "Host writes",
        "GC page migrations",
        "GC erases",
        "READ I/O latency [ms]",
        "WRITE I/O latency [ms]",
        "Throughput [tps]",
    ]
    missing = [m for m in chosen if m not in df.index]
    if missing:
        raise KeyError(f"no rows {missing} in the table")
    new_figure = ax is None
    ax = _axes(ax)
    df.loc[chosen, deltas].plot.barh(ax=ax)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.invert_yaxis()
    ax.set_xlabel(f"change against {df.columns[0]} [%]")
    ax.set_ylabel("")
    ax.grid(True, axis="x", alpha=0.3)
    if new_figure:
        _widen_for_row_labels(ax)
    return ax


def sweep(df: pd.DataFrame, x: str, y: str = "throughput_tps", hue: Optional[str] = None, ax: Any = None) -> Any:
    """A sweep's ``y`` against grid column ``x``, one line per value of ``hue``."""
    for column in [x, y] + ([hue] if hue else []):
        if column not in df:
            raise KeyError(f"no column `{column}` in the sweep (columns: {', '.join(df.columns)})")
    ax = _axes(ax)
    groups = df.groupby(hue, sort=False) if hue else [(y, df)]
    for label, part in groups:
        part = part.sort_values(x)
        ax.plot(part[x], part[y], marker="o", label=f"{hue} = {label}" if hue else y)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax
