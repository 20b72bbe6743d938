"""``deltaflash reproduce --ray``'s runs on Ray: the command line writes the runs its
output directory does not hold yet as JSON lines (``{"key": ..., "label": ...,
"input": {...}}``), and :func:`run_inputs` makes each as a Ray task through the native
module (``run_input``), appending ``{"key": ..., "result": {...}}`` or ``{"key": ...,
"error": "..."}`` to a results file as each finishes. The command line then keeps every
result in its output directory. A results file that already holds a key's result skips
that run, so an interrupted invocation resumes where it stopped (a line cut by a kill is
ignored and its run made again). Ray's scheduler and retries are the sweep's
(:class:`deltaflash.sweep._Ray`).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional

from . import _deltaflash
from .sweep import _ends_cut, _message, _Ray, read_finished


def run_input(input_json: str) -> str:
    """One run's result JSON from its input JSON. Module-level so Ray can ship it."""
    return _deltaflash.run_input(input_json)


def read_inputs(path: str) -> List[Dict[str, Any]]:
    """The runs of an inputs file, in order."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def finished(path: str) -> Dict[str, Dict[str, Any]]:
    """The keys a results file holds a result for (failed runs are left out)."""
    return read_finished(path, lambda entry: entry["key"])


def run_inputs(
    inputs: str,
    results: str,
    *,
    address: Optional[str] = None,
    workers: Optional[int] = None,
    retries: int = 1,
    log: bool = True,
) -> int:
    """Makes the runs of ``inputs`` not yet in ``results`` as Ray tasks; returns how many
    failed. Ray starts on this machine (``workers`` CPUs, default all) unless it is
    initialised already or ``address`` names a cluster."""
    if retries < 0:
        raise ValueError(f"retries must be at least 0, got {retries}")
    done = finished(results)
    todo = [r for r in read_inputs(inputs) if r["key"] not in done]
    if not todo:
        return 0
    import ray

    if not ray.is_initialized() and address is None and workers is not None:
        ray.init(num_cpus=workers, log_to_driver=False, include_dashboard=False)
    runner = _Ray(address, retries, run_input)
    failed = 0
    with open(results, "a", encoding="utf-8") as sink:
        if _ends_cut(results):
            sink.write("\n")
        pending = {runner.submit(json.dumps(r["input"])): (r, 0) for r in todo}
        try:
            while pending:
                for handle, text, error in list(runner.wait(list(pending))):
                    run, tries = pending.pop(handle)
                    if error is None and text is not None:
                        entry: Dict[str, Any] = {"key": run["key"], "result": json.loads(text)}
                    elif tries < retries and not isinstance(error, _deltaflash.ConfigError):
                        pending[runner.submit(json.dumps(run["input"]))] = (run, tries + 1)
                        continue
                    else:
                        failed += 1
                        entry = {"key": run["key"], "error": _message(error) if error else "no result"}
                    sink.write(json.dumps(entry) + "\n")
                    sink.flush()
                    if log:
                        outcome = "done" if "result" in entry else f"FAILED: {entry['error']}"
                        print(f"{run.get('label', run['key'])}: {outcome} on Ray", file=sys.stderr)
        except BaseException:
            runner.cancel(list(pending))
            raise
    return failed
