"""DeltaFlash from Python: IPA experiments on emulated native flash.

- ``run(...)`` one experiment → ``Result`` (``.metrics``, ``.timeseries``,
  ``.per_object``, ``.to_json()``); ``compare(..., schemes=[...])`` → the Table-7
  DataFrame; ``resolve(...)`` the checked config.
- ``sweep(grid, backend="local"|"ray", workers=N)`` a grid of experiments → DataFrame,
  written incrementally and resumable (``out=``).
- ``advise(...)`` the IPA advisor on a baseline run → ``Advice`` (per-object
  statistics, the recommended layout and its DDL, the configs that run it).
- ``Device`` / ``Region`` (page writes, in-place appends, counters) and
  ``Database.open(path).execute(sql)`` for small experiments.
- ``deltaflash.plot`` figures with matplotlib (imported on first use).

Errors raise ``ConfigError`` (a config field that cannot run), ``Cancelled`` (a run
stopped by its ``CancelToken``) or ``DeltaflashError``, with the Rust message. Runs
release the GIL; Ctrl-C stops a run with ``KeyboardInterrupt``.
"""

from typing import Any

from ._deltaflash import GIT_COMMIT, PRESETS, CancelToken, Cancelled, ConfigError, DeltaflashError
from .advisor import Advice, advise
from .device import Database, Device, PageRead, Region
from .experiment import FIELDS, Result, build_config, compare, resolve, run, table
from .sweep import load_grid, read_results, sweep
from ._deltaflash import registered_workloads as _registered_workloads

# The exceptions are named as the package exports them, so that they pickle (Ray tasks
# send them back).
for _error in (DeltaflashError, ConfigError, Cancelled):
    _error.__module__ = __name__

__all__ = [
    "GIT_COMMIT",
    "Advice",
    "PRESETS",
    "FIELDS",
    "CancelToken",
    "Cancelled",
    "ConfigError",
    "DeltaflashError",
    "Database",
    "Device",
    "PageRead",
    "Region",
    "Result",
    "advise",
    "build_config",
    "compare",
    "load_grid",
    "read_results",
    "resolve",
    "run",
    "sweep",
    "table",
    "workloads",
]


def workloads() -> "dict[str, dict[str, Any]]":
    """The registered workloads: name → {"about": ..., "defaults": {param: value}}."""
    import json

    return {name: {"about": about, "defaults": json.loads(defaults)} for name, about, defaults in _registered_workloads()}


def __getattr__(name: str) -> Any:
    # `deltaflash.plot` without importing matplotlib until it is used.
    if name == "plot":
        import importlib

        return importlib.import_module(".plot", __name__)
    raise AttributeError(f"module 'deltaflash' has no attribute {name!r}")
