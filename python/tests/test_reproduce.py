"""``deltaflash reproduce --ray``'s Python side: the runs of an experiment at smoke scale
made as Ray tasks on the local 2-worker instance give the results of the same runs made
in this process (but for wall and CPU time), each with its CPU seconds; an interrupted
results file is resumed with only the runs it lacks."""

import json
import subprocess
import sys

import pytest

from deltaflash import _deltaflash
from deltaflash.reproduce import finished, run_inputs

EXPERIMENT = "demo:table1"


def without_times(value):
    """The result without what differs between two makings of one run: wall and CPU
    time, and the process's peak memory (any nesting depth)."""
    if isinstance(value, dict):
        return {
            k: without_times(v) for k, v in value.items()
            if "wall" not in k and k != "cpu_seconds" and not k.startswith("memory_peak_rss")
        }
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    path = tmp_path_factory.mktemp("reproduce") / "inputs.jsonl"
    runs = _deltaflash.reproduce_runs([EXPERIMENT], "smoke")
    assert len(runs) >= 2
    lines = [json.dumps({"key": k, "label": label, "input": json.loads(i)}) for k, label, i in runs]
    path.write_text("\n".join(lines) + "\n")
    return path, runs


def test_runs_on_ray_equal_runs_made_here(inputs, ray_local, tmp_path):
    path, runs = inputs
    results = tmp_path / "results.jsonl"
    assert run_inputs(str(path), str(results), log=False) == 0
    done = finished(str(results))
    assert sorted(done) == sorted(k for k, _, _ in runs)
    for entry in done.values():
        assert entry["result"]["cpu_seconds"] > 0
    key, _, first = runs[0]
    here = json.loads(_deltaflash.run_input(first))
    assert without_times(here) == without_times(done[key]["result"])


def test_an_interrupted_results_file_is_resumed(inputs, ray_local, tmp_path):
    path, runs = inputs
    results = tmp_path / "results.jsonl"
    # One run finished, one failed, and a line cut by a kill.
    kept = json.dumps({"key": runs[0][0], "result": {"wall_seconds": 1.0}})
    failed = json.dumps({"key": runs[1][0], "error": "RayError: worker died"})
    results.write_text(kept + "\n" + failed + "\n" + '{"key": "cu')
    assert run_inputs(str(path), str(results), log=False) == 0
    lines = results.read_text().splitlines()
    assert lines[0] == kept
    made = [json.loads(l)["key"] for l in lines[3:]]
    assert sorted(made) == sorted(k for k, _, _ in runs[1:]), "only the runs without a result"
    assert run_inputs(str(path), str(results), log=False) == 0
    assert results.read_text().splitlines() == lines, "nothing made again"


def test_a_bad_input_and_scale_are_refused_by_name():
    with pytest.raises(_deltaflash.ConfigError, match="run input"):
        _deltaflash.run_input('{"kind": "engine", "config": {"seed": "x"}}')
    with pytest.raises(_deltaflash.ConfigError, match="`huge` is not smoke, quick or full"):
        _deltaflash.reproduce_runs([EXPERIMENT], "huge")
    with pytest.raises(_deltaflash.ConfigError, match="`ipa:table99` is not an experiment id"):
        _deltaflash.reproduce_runs(["ipa:table99"], "smoke")


def test_the_command_line_entry_refuses_a_missing_inputs_file(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "deltaflash", "reproduce-runs", "--inputs", str(tmp_path / "none.jsonl"),
         "--results", str(tmp_path / "r.jsonl"), "--ray", "local"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and "none.jsonl" in done.stderr, done.stderr
