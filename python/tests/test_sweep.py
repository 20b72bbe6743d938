"""Sweeps: local processes and Ray give the same DataFrame as single runs; results are
written as they finish and an interrupted sweep resumes; failures are retried and kept."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pandas as pd
import pytest

import deltaflash as df
from deltaflash.sweep import key, points
from conftest import TINY, WALL_CLOCK

GRID = {"scheme": ["0x0", "2x4"], "seed": [1, 2]}


def frame(sweep_df):
    return sweep_df.drop(columns=WALL_CLOCK).reset_index(drop=True)


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "local.jsonl"
    return out, df.sweep(GRID, base=df.build_config(**TINY), out=str(out), workers=2, progress=False)


def test_local_sweep_is_the_grid_of_single_runs(local):
    out, result = local
    assert result[["scheme", "seed"]].values.tolist() == [["0x0", 1], ["0x0", 2], ["2x4", 1], ["2x4", 2]]
    assert "error" not in result
    single = df.run(**TINY, scheme="2x4", seed=2).row()
    row = result.iloc[3]
    for k, v in single.items():
        if k not in WALL_CLOCK:
            assert row[k] == v, k
    assert len(out.read_text().splitlines()) == 4


def test_sweep_resumes_from_its_file(local, tmp_path):
    out, first = local
    partial = tmp_path / "partial.jsonl"
    lines = out.read_text().splitlines()
    # Two finished points and a line cut by a kill.
    partial.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])
    ran = []
    again = df.sweep(
        GRID, base=df.build_config(**TINY), out=str(partial), workers=2, progress=False,
        on_result=lambda point, r: ran.append(point),
    )
    done_before = {key(json.loads(l)["point"]) for l in lines[:2]}
    assert sorted(map(key, ran)) == sorted(set(map(key, points(GRID))) - done_before)
    pd.testing.assert_frame_equal(frame(again), frame(first))
    nothing = []
    df.sweep(GRID, base=df.build_config(**TINY), out=str(partial), progress=False, on_result=lambda p, r: nothing.append(p))
    assert nothing == []


def test_failed_points_are_retried_then_recorded(tmp_path):
    out = tmp_path / "fail.jsonl"
    result = df.sweep(
        {"blocks_per_chip": [32, 64]}, base=df.build_config(**TINY), out=str(out), workers=2, retries=1, progress=False
    )
    assert result.loc[0, "error"].startswith("DeltaflashError: loading stopped")
    assert pd.isna(result.loc[1, "error"]) and result.loc[1, "transactions"] > 0
    entries = [json.loads(l) for l in out.read_text().splitlines()]
    assert sorted("error" in e for e in entries) == [False, True]


def test_bad_point_is_refused_before_running(tmp_path):
    with pytest.raises(df.ConfigError, match=r'point \{"buffer":7\}: engine.buffer_share'):
        df.sweep({"buffer": [0.1, 7]}, base=df.build_config(**TINY), progress=False)


def test_ray_sweep_equals_local_sweep(local, ray_local, tmp_path):
    _, first = local
    out = tmp_path / "ray.jsonl"
    result = df.sweep(GRID, base=df.build_config(**TINY), out=str(out), backend="ray", progress=False)
    pd.testing.assert_frame_equal(frame(result), frame(first))
    assert len(out.read_text().splitlines()) == 4


def test_a_plain_script_sweeps_locally(tmp_path):
    """A script without ``if __name__ == "__main__":``, run as a program: worker
    processes would import it again and start the sweep once more in each."""
    script = tmp_path / "plain_sweep.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import deltaflash as df

            frame = df.sweep({{"scheme": ["0x0", "2x4"]}}, base=df.build_config(**{TINY!r}), progress=False)
            print(frame[["scheme", "transactions"]].to_json(orient="records"))
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout)
    assert [r["scheme"] for r in rows] == ["0x0", "2x4"] and all(r["transactions"] > 0 for r in rows), rows


def test_processes_is_another_name_for_workers(tmp_path):
    frame = df.sweep({"seed": [1]}, base=df.build_config(**TINY), processes=1, progress=False)
    assert frame.loc[0, "transactions"] > 0 and "error" not in frame


def test_ctrl_c_stops_a_local_sweep_and_its_runs(tmp_path):
    """Ctrl-C reaches the main thread only; the sweep cancels the runs on its worker
    threads, which are gone when KeyboardInterrupt arrives."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            df.sweep({"seed": [1, 2]}, base=df.build_config(**{**TINY, "sim_time": 300.0}), workers=2, progress=False)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 60
    assert not [t for t in threading.enumerate() if t.name.startswith("deltaflash-sweep")]


def test_grid_file_from_the_command_line(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text(
        """
[base]
seed = 3
[base.workload]
name = "tatp"
subscribers = 1000
[base.device]
chips = 4
blocks_per_chip = 64
[base.engine]
log_chips = 1
[base.driver]
sim_time_s = 1.0
warmup_s = 0.2

[grid]
"engine.ipa" = ["0x0", "2x4"]
"""
    )
    done = subprocess.run(
        [sys.executable, "-m", "deltaflash", "sweep", "--grid", str(grid), "--workers", "2"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "engine.ipa" in done.stdout and "2x4" in done.stdout
    lines = (tmp_path / "grid.results.jsonl").read_text().splitlines()
    assert [json.loads(l)["point"] for l in lines] in ([{"engine.ipa": "0x0"}, {"engine.ipa": "2x4"}], [{"engine.ipa": "2x4"}, {"engine.ipa": "0x0"}])


def test_precondition_is_a_keyword():
    config = df.build_config(**TINY, precondition="steady")
    assert config["driver"]["precondition"] == "steady"
