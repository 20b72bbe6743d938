"""Parameter sweeps: the Cartesian product of a grid, each point an independent seeded
experiment, run on worker threads of this process or as Ray tasks, collected in one
DataFrame. Local sweeps work from any script, with or without a
``if __name__ == "__main__":`` guard.

Results are appended to a JSON-lines file as each point finishes, one line per point:
``{"point": {...}, "result": {...}}`` or ``{"point": {...}, "error": "..."}``. A sweep
given a file that already holds results skips the points done there, so an interrupted
sweep resumes where it stopped (points that failed are run again). ``deltaflash sweep``
on the command line writes and reads the same file.

A failed point is tried again up to ``retries`` times (a lost worker or node; a config
error is not retried: it would fail the same way), then recorded with its error.
Ctrl-C stops the pending points and raises ``KeyboardInterrupt``; what finished is in
the file. A grid of more than 10,000 points runs only with ``yes=True`` (the command
line's ``--yes``; the native module makes the check and its message).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from . import _deltaflash
from .experiment import Result, build_config

Point = Dict[str, Any]


def points(grid: Mapping[str, Sequence[Any]]) -> List[Point]:
    """The grid's points: every combination of its values, in the grid's key order."""
    keys = list(grid)
    for k in keys:
        if isinstance(grid[k], (str, bytes)) or not isinstance(grid[k], Sequence):
            raise _deltaflash.ConfigError(f"grid: {k} must be a list of values, got {grid[k]!r}")
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def key(point: Mapping[str, Any]) -> str:
    """A point's identity in the results file (the same text the command line writes)."""
    return json.dumps(point, sort_keys=True, separators=(",", ":"))


def load_grid(path: str) -> Tuple[Dict[str, Any], Dict[str, List[Any]]]:
    """A grid file: ``[base]``, the experiment config every point starts from, and
    ``[grid]``, config fields (dotted, or ``run`` keywords) and their values."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    with open(path, "rb") as f:
        try:
            doc = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise _deltaflash.ConfigError(f"{path}: {e}") from None
    unknown = set(doc) - {"base", "grid"}
    if unknown or "grid" not in doc:
        raise _deltaflash.ConfigError(f"{path}: a grid file has a [grid] table and optionally [base], got {sorted(doc)}")
    return doc.get("base", {}), doc["grid"]


def read_results(path: str) -> Dict[str, Dict[str, Any]]:
    """The points finished in a results file, by ``key``; failed points are left out."""
    return read_finished(path, lambda entry: key(entry["point"]))


def read_finished(path: str, key_of: Callable[[Dict[str, Any]], str]) -> Dict[str, Dict[str, Any]]:
    """The entries of a JSON-lines results file that hold a ``result``, by ``key_of``
    (a missing file holds none). A line cut by a kill is skipped: its entry runs again."""
    done: Dict[str, Dict[str, Any]] = {}
    if not os.path.exists(path):
        return done
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                print(f"{path}:{number}: skipping an incomplete line", file=sys.stderr)
                continue
            if "result" in entry:
                done[key_of(entry)] = entry
    return done


def _ends_cut(path: str) -> bool:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


def run_point(base: Optional[Dict[str, Any]], point: Point, cancel: Optional[_deltaflash.CancelToken] = None) -> str:
    """One point's run; the ``Result`` as JSON. Module-level so Ray can ship it."""
    from .experiment import run

    return run(base, cancel=cancel, **point).to_json()


class _Local:
    """Worker threads of this process. A run releases the GIL, so threads run in
    parallel, and unlike worker processes they need no ``if __name__ == "__main__":``
    guard in the calling script (a spawned process re-imports the script's module and
    would start the sweep again). Ctrl-C reaches the main thread only: it cancels the
    runs through their shared ``CancelToken``."""

    def __init__(self, workers: Optional[int]):
        import concurrent.futures

        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers or os.cpu_count() or 1, thread_name_prefix="deltaflash-sweep"
        )
        self.futures = concurrent.futures
        self.token = _deltaflash.CancelToken()

    def submit(self, base: Optional[Dict[str, Any]], point: Point) -> Any:
        return self.pool.submit(run_point, base, point, self.token)

    def wait(self, pending: List[Any]) -> Iterator[Tuple[Any, Optional[str], Optional[BaseException]]]:
        done, _ = self.futures.wait(pending, return_when=self.futures.FIRST_COMPLETED)
        for f in done:
            error = f.exception()
            yield f, (None if error else f.result()), error

    def cancel(self, pending: List[Any]) -> None:
        self.token.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class _Ray:
    """Ray tasks of ``function`` (a sweep's points by default): on ``ray.init()`` of
    this machine, or of the cluster at ``address``."""

    def __init__(self, address: Optional[str], retries: int, function: Callable[..., str] = run_point):
        import ray

        if not ray.is_initialized():
            ray.init(address=address, log_to_driver=False)
        self.ray = ray
        # Ray itself re-runs a task whose worker died; exceptions are retried below.
        self.task = ray.remote(function).options(num_cpus=1, max_retries=retries)

    def submit(self, *args: Any) -> Any:
        return self.task.remote(*args)

    def wait(self, pending: List[Any]) -> Iterator[Tuple[Any, Optional[str], Optional[BaseException]]]:
        done, _ = self.ray.wait(pending, num_returns=1)
        for ref in done:
            try:
                yield ref, self.ray.get(ref), None
            except self.ray.exceptions.RayTaskError as e:
                yield ref, None, e.as_instanceof_cause()
            except self.ray.exceptions.RayError as e:
                yield ref, None, e

    def cancel(self, pending: List[Any]) -> None:
        for ref in pending:
            self.ray.cancel(ref)

    def close(self) -> None:
        pass


def _message(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def sweep(
    grid: Mapping[str, Sequence[Any]],
    *,
    backend: str = "local",
    workers: Optional[int] = None,
    processes: Optional[int] = None,
    base: Optional[Dict[str, Any]] = None,
    out: Optional[str] = None,
    retries: int = 1,
    progress: bool = True,
    address: Optional[str] = None,
    on_result: Optional[Callable[[Point, Result], None]] = None,
    yes: bool = False,
    **fixed: Any,
) -> pd.DataFrame:
    """Runs every point of ``grid`` (config fields or ``run`` keywords → lists of values)
    on top of ``base`` (a config dict) and ``fixed`` (``run`` keywords for all points).

    ``backend="local"`` runs ``workers`` points at once on threads of this process
    (default: one per core; ``processes`` is another name for it);
    ``backend="ray"`` submits Ray tasks (``ray.init(address=address)`` unless Ray is
    initialised already: one machine by default, unchanged on a cluster). ``out``: the
    JSON-lines results file to append to and resume from. ``yes=True`` runs a grid of
    more than 10,000 points (refused otherwise, before anything runs). Returns one row per
    point: the grid's columns, then the run's scalar metrics (and ``error`` for points
    that failed).
    """
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
    if retries < 0:
        raise ValueError(f"retries must be at least 0, got {retries}")
    count = 1
    for k in grid:
        count *= len(grid[k]) if isinstance(grid[k], Sequence) and not isinstance(grid[k], (str, bytes)) else 1
    _deltaflash.check_grid_points(count, yes)
    all_points = points(grid)
    config = build_config(base, **fixed)
    for p in all_points:
        # Refuse a bad point before anything runs (the message names its field).
        try:
            _deltaflash.resolve_config(json.dumps(build_config(config, **p)))
        except _deltaflash.ConfigError as e:
            raise _deltaflash.ConfigError(f"point {key(p)}: {e}") from None
    done = read_results(out) if out else {}
    todo = [p for p in all_points if key(p) not in done]
    errors: Dict[str, str] = {}

    runner = _Ray(address, retries) if backend == "ray" else _Local(workers or processes)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(all_points), initial=len(all_points) - len(todo), unit="point", desc=f"sweep ({backend})")
    sink = open(out, "a", encoding="utf-8") if out else None
    if out and _ends_cut(out) and sink is not None:
        # End a last line cut by a kill, so the next result starts a line of its own.
        sink.write("\n")

    def record(point: Point, entry: Dict[str, Any]) -> None:
        if sink is not None:
            sink.write(json.dumps({"point": point, **entry}, sort_keys=True) + "\n")
            sink.flush()
        if bar is not None:
            bar.update(1)

    pending: Dict[Any, Tuple[Point, int]] = {}
    try:
        for p in todo:
            pending[runner.submit(config, p)] = (p, 0)
        while pending:
            for handle, text, error in list(runner.wait(list(pending))):
                point, tries = pending.pop(handle)
                if error is None and text is not None:
                    result = Result.from_json(text)
                    done[key(point)] = {"point": point, "result": json.loads(text)}
                    record(point, {"result": json.loads(text)})
                    if on_result is not None:
                        on_result(point, result)
                elif isinstance(error, (KeyboardInterrupt, _deltaflash.Cancelled)):
                    raise KeyboardInterrupt(f"point {key(point)} was interrupted")
                elif tries < retries and not isinstance(error, _deltaflash.ConfigError):
                    pending[runner.submit(config, point)] = (point, tries + 1)
                else:
                    errors[key(point)] = _message(error) if error else "no result"
                    record(point, {"error": errors[key(point)]})
    except BaseException:
        runner.cancel(list(pending))
        raise
    finally:
        runner.close()
        if sink is not None:
            sink.close()
        if bar is not None:
            bar.close()

    rows = []
    for p in all_points:
        k = key(p)
        if k in done:
            res = done[k]["result"]
            rows.append({**p, **Result(res, res.get("table_rows", [])).row()})
        else:
            rows.append({**p, "error": errors.get(k, "not run")})
    return pd.DataFrame(rows)
