"""One experiment: ``run`` and ``compare``, and their ``Result``.

An experiment is the Rust ``ExperimentConfig`` (the TOML of ``deltaflash bench
--config``). ``run`` builds it from keyword arguments named like the command line's
flags (``buffer=0.2``, ``scheme="2x3"``, ``sim_time=60``), dotted config fields
(``**{"engine.buffer_share": 0.2}``) or a whole ``config`` dict; any other keyword is a
parameter of the workload (``warehouses=1``, ``scale=2``). The native module checks it
(errors name the config field) and runs it without holding the GIL.

The same config gives the same result, apart from the wall-clock fields listed in
``Result.WALL_CLOCK``.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import pandas as pd

from . import _deltaflash

#: Keyword arguments of ``run`` and the config field each sets.
FIELDS: Dict[str, str] = {
    "seed": "seed",
    "workload": "workload.name",
    "device": "device.preset",
    "chips": "device.chips",
    "blocks_per_chip": "device.blocks_per_chip",
    "pages_per_block": "device.pages_per_block",
    "page_bytes": "device.page_bytes",
    "host_queue_depth": "device.host_queue_depth",
    "no_data": "device.no_data",
    "max_memory": "device.max_memory_bytes",
    "image": "device.image",
    "scheme": "engine.ipa",
    "ipa": "engine.ipa",
    "buffer": "engine.buffer_share",
    "eviction": "engine.eviction",
    "ipa_mode": "engine.ipa_mode",
    "v": "engine.v",
    "ipa_objects": "engine.ipa_objects",
    "schema": "engine.schema",
    "log_chips": "engine.log_chips",
    "checkpoint_log_share": "engine.checkpoint_log_share",
    "group_commit_us": "engine.group_commit_us",
    "log_buffer_bytes": "engine.log_buffer_bytes",
    "db_page_bytes": "engine.db_page_bytes",
    "sim_time": "driver.sim_time_s",
    "warmup": "driver.warmup_s",
    "terminals": "driver.terminals",
    "cpu_us": "driver.cpu_per_operation_us",
    "interval": "driver.progress_interval_s",
    "check": "driver.check",
    "precondition": "driver.precondition",
}


def _set(config: Dict[str, Any], dotted: str, value: Any) -> None:
    node = config
    *parents, leaf = dotted.split(".")
    for name in parents:
        child = node.setdefault(name, {})
        if not isinstance(child, dict):
            raise _deltaflash.ConfigError(f"{dotted}: `{name}` is not a table in the config")
        node = child
    node[leaf] = value


def build_config(config: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Dict[str, Any]:
    """The config dict ``run(config, **kwargs)`` would run, before defaults are filled in.

    ``storage`` takes ``"noftl"``, ``"ipl"`` or ``"ftl:KIND"``; on ``ipl`` the scheme
    defaults to 0x0 (as on the command line). ``None`` values are left out, but for
    ``interval=None``: no interval lines, as ``interval=0``.
    """
    out = copy.deepcopy(config) if config else {}
    for key, value in kwargs.items():
        if key == "interval" and value is None:
            value = 0.0
        if value is None:
            continue
        if key == "storage":
            out["storage"] = json.loads(_deltaflash.storage_config(str(value)))
            if str(value).lower() == "ipl" and "scheme" not in kwargs and "ipa" not in kwargs:
                _set(out, "engine.ipa", "0x0")
        elif key in FIELDS:
            _set(out, FIELDS[key], value)
        elif "." in key:
            _set(out, key, value)
        else:
            _set(out, f"workload.{key}", value)
    return out


def resolve(config: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Dict[str, Any]:
    """The checked config with every default filled in (raises ``ConfigError``); optional
    keys left unset, such as ``engine.log_buffer_bytes``, stay absent."""
    return json.loads(_deltaflash.resolve_config(json.dumps(build_config(config, **kwargs))))


#: Interval lines of a run that does not set ``interval``: its measured time in 50 steps.
#: Enough points for a smooth curve over simulated time, yet each interval spans 2% of the
#: run, so that even a 1-second run has transactions enough per interval for a steady
#: throughput; it holds for runs of any length, which a fixed step in seconds would not
#: (a 1 s test run and a 600 s paper run differ 600-fold).
DEFAULT_INTERVALS = 50


def _add_interval_lines(config: Dict[str, Any]) -> None:
    """Sets interval lines every 1/``DEFAULT_INTERVALS`` of the measured time, unless
    the config sets ``driver.progress_interval_s`` itself (0 turns the lines off)."""
    if "progress_interval_s" in config.get("driver", {}):
        return
    sim_time_s = resolve(config)["driver"]["sim_time_s"]
    _set(config, FIELDS["interval"], sim_time_s / DEFAULT_INTERVALS)


class Result:
    """One run's results: ``metrics`` (dict), ``timeseries`` (one row per interval:
    50 over the measured time unless ``interval=`` says otherwise), ``per_object`` (one
    row per table and index), ``config`` (the resolved config: it alone reproduces the
    run), ``to_json()``."""

    #: Fields that depend on the machine, not on the config.
    WALL_CLOCK: Tuple[str, ...] = ("wall_seconds", "run_wall_seconds", "simulated_seconds_per_wall_second")

    def __init__(self, data: Dict[str, Any], table: Sequence[Tuple[str, float]]):
        self.data = data
        #: The Table-7 rows (label, value), as ``deltaflash compare`` prints them.
        self.table: List[Tuple[str, float]] = [(str(k), float(v)) for k, v in table]

    @classmethod
    def from_json(cls, text: str) -> "Result":
        """A result written by ``to_json`` (the table rows included)."""
        data = json.loads(text)
        table = data.pop("table_rows", [])
        return cls(data, [tuple(row) for row in table])

    def to_json(self) -> str:
        """The result as ``deltaflash bench --json`` writes it, plus the table rows."""
        return json.dumps({**self.data, "table_rows": self.table}, sort_keys=True)

    @property
    def metrics(self) -> Dict[str, Any]:
        return {k: v for k, v in self.data.items() if k not in ("config", "objects", "intervals")}

    @property
    def config(self) -> Dict[str, Any]:
        return self.data["config"]

    @property
    def scheme(self) -> str:
        return self.data["ipa"]

    @property
    def timeseries(self) -> pd.DataFrame:
        ts = pd.DataFrame(self.data.get("intervals", []))
        return ts[["sim_seconds"] + [c for c in ts.columns if c != "sim_seconds"]] if len(ts) else ts

    @property
    def per_object(self) -> pd.DataFrame:
        return pd.DataFrame(self.data.get("objects", []))

    def row(self) -> Dict[str, Any]:
        """The scalar metrics, flat: one row of a sweep's DataFrame. Each transaction
        type's p99 latency is a column too, named by its JSON path
        (``transaction_latency_us_by_type.new_order.p99``, µs)."""
        row = {k: v for k, v in self.data.items() if isinstance(v, (int, float, str, bool)) or v is None}
        for kind, latency in self.data.get("transaction_latency_us_by_type", {}).items():
            row[f"transaction_latency_us_by_type.{kind}.p99"] = latency["p99"]
        return row

    def __repr__(self) -> str:
        m = self.data
        return f"<Result [{m['ipa']}] {m['throughput_tps']:.1f} tps, {m['transactions']} transactions>"


def _bar(progress: bool) -> Tuple[Optional[Callable[[float, float, float], None]], Any]:
    if not progress:
        return None, None
    from tqdm.auto import tqdm

    bar = tqdm(total=1.0, unit="sim s", bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} simulated s {postfix}")

    def update(sim_seconds: float, total: float, tps: float) -> None:
        bar.total = total
        bar.n = sim_seconds
        bar.set_postfix_str(f"{tps:.0f} tps", refresh=False)
        bar.refresh()

    return update, bar


def run(
    config: Optional[Dict[str, Any]] = None,
    *,
    progress: bool = False,
    on_progress: Optional[Callable[[float, float, float], None]] = None,
    cancel: Optional[_deltaflash.CancelToken] = None,
    **kwargs: Any,
) -> Result:
    """Runs one experiment and returns its ``Result``.

    ``deltaflash.run(workload="tpcc", warehouses=1, scheme="2x3", device="paper-emulator",
    sim_time=60, seed=1)``. Keywords: see ``FIELDS`` (the command line's flags), dotted
    config fields, ``storage="noftl"|"ipl"|"ftl:KIND"``, else workload parameters.
    ``interval`` is the step of ``timeseries`` in simulated seconds (default: a
    fiftieth of ``sim_time``; ``0`` or ``None``: no interval lines).
    ``progress`` shows a bar of simulated seconds; ``on_progress(sim_s, total_s, tps)``
    is called at most every 100 ms; ``cancel`` (a ``CancelToken``) stops the run from
    another thread with ``Cancelled``. Ctrl-C stops it with ``KeyboardInterrupt``.
    Errors raise ``ConfigError`` (naming the field) or ``DeltaflashError``.
    """
    built = build_config(config, **kwargs)
    _add_interval_lines(built)
    text = json.dumps(built)
    update, bar = _bar(progress)
    callback = update
    if on_progress is not None:
        if update is None:
            callback = on_progress
        else:

            def callback(s: float, t: float, tps: float) -> None:
                update(s, t, tps)
                on_progress(s, t, tps)

    try:
        data, table = _deltaflash.run_experiment(text, cancel, callback)
    finally:
        if bar is not None:
            bar.close()
    return Result(json.loads(data), table)


def table(results: Sequence[Result]) -> pd.DataFrame:
    """The Table-7 DataFrame of runs on the same seed: the first is the baseline; for
    each other scheme its values and their change against the baseline in percent
    (NaN where the baseline is 0), and the out-of-place : IPA write ratio."""
    if not results:
        raise ValueError("table() needs at least one result")
    base = results[0]
    labels = [label for label, _ in base.table]
    columns: Dict[str, List[float]] = {f"[{base.scheme}]": [v for _, v in base.table]}
    ratio: Dict[str, float] = {f"[{base.scheme}]": float("nan")}
    for r in results[1:]:
        values = [v for _, v in r.table]
        if [label for label, _ in r.table] != labels:
            raise ValueError(f"[{r.scheme}] has other table rows than the baseline (another storage?)")
        columns[f"[{r.scheme}]"] = values
        columns[f"[{r.scheme}] Δ%"] = [
            float("nan") if v0 == 0 else (v - v0) / v0 * 100.0 for v, (_, v0) in zip(values, base.table)
        ]
        appends = r.data["in_place_appends"]
        ratio[f"[{r.scheme}]"] = r.data["out_of_place_writes"] / appends if appends else float("nan")
        ratio[f"[{r.scheme}] Δ%"] = float("nan")
    df = pd.DataFrame(columns, index=pd.Index(labels, name="metric"))
    df.loc["Out-of-place : IPA"] = pd.Series(ratio)
    return df


def compare(
    config: Optional[Dict[str, Any]] = None,
    *,
    schemes: Iterable[str] = ("0x0", "2x4"),
    progress: bool = False,
    return_results: bool = False,
    **kwargs: Any,
) -> Any:
    """Runs the experiment under each [NxM] scheme on the same seed (the first is the
    baseline) and returns the Table-7 DataFrame (see ``table``); with
    ``return_results=True``, the DataFrame and the list of ``Result``."""
    results = [run(config, progress=progress, scheme=s, **kwargs) for s in schemes]
    df = table(results)
    return (df, results) if return_results else df
