"""Model tests of the bindings: results, errors, determinism, cancellation, the GIL,
the device against a model of its pages, and the SQL engine."""

import json
import os
import queue
import random
import signal
import threading
import time

import pandas as pd
import pytest

import deltaflash as df
from conftest import TINY, WALL_CLOCK


@pytest.fixture(scope="module")
def result():
    return df.run(**TINY, scheme="2x4", interval=0.25)


def test_result_has_metrics_timeseries_and_objects(result):
    m = result.metrics
    assert m["transactions"] > 0 and m["throughput_tps"] > 0
    assert m["ipa"] == "2x4" and m["in_place_appends"] > 0
    ts = result.timeseries
    assert ts.columns[0] == "sim_seconds" and "throughput_tps" in ts
    assert len(ts) == 4 and (ts["sim_seconds"].diff().dropna() > 0).all()
    objects = set(result.per_object["name"])
    assert {"subscriber", "access_info"} <= objects
    assert result.config["workload"] == {"name": "tatp", "subscribers": 1000}
    again = df.Result.from_json(result.to_json())
    assert again.data == result.data and again.table == result.table


def test_config_error_names_the_field():
    with pytest.raises(df.ConfigError, match=r"engine.buffer_share: .*got 2"):
        df.run(**TINY, buffer=2.0)
    with pytest.raises(df.ConfigError, match="device.preset"):
        df.run(**{**TINY, "device": "no-such-device"})
    with pytest.raises(df.ConfigError, match="bogus"):
        df.run(**TINY, bogus=1)
    with pytest.raises(df.ConfigError, match="storage"):
        df.run(**TINY, storage="ftl:nope")


def test_failed_run_raises_the_rust_message():
    with pytest.raises(df.DeltaflashError, match="loading stopped: the log region is full") as info:
        df.run(**{**TINY, "blocks_per_chip": 32})
    assert not isinstance(info.value, df.ConfigError)


def test_same_seed_same_dataframe():
    a = df.run(**TINY, seed=7, interval=0.5)
    b = df.run(**TINY, seed=7, interval=0.5)
    c = df.run(**TINY, seed=8, interval=0.5)
    row = lambda r: pd.DataFrame([r.row()]).drop(columns=WALL_CLOCK)
    pd.testing.assert_frame_equal(row(a), row(b))
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)
    pd.testing.assert_frame_equal(a.per_object, b.per_object)
    assert not row(a).equals(row(c))


def test_timeseries_is_filled_by_default():
    ts = df.run(**TINY).timeseries
    # A line every fiftieth of the measured second.
    assert len(ts) == 50
    assert ts["sim_seconds"].iloc[0] == pytest.approx(1.0 / 50, abs=0.002)
    assert ts["sim_seconds"].iloc[-1] == pytest.approx(1.0, abs=0.002)
    assert (ts["throughput_tps"] > 0).all()


@pytest.mark.parametrize("off", [0, None])
def test_interval_0_or_none_turns_the_timeseries_off(off):
    assert df.run(**TINY, interval=off).timeseries.empty
    assert df.run(**TINY, **{"driver.progress_interval_s": off or 0.0}).timeseries.empty


def test_interval_lines_do_not_change_the_run():
    lines, none = df.run(**TINY), df.run(**TINY, interval=0)
    assert {k: v for k, v in lines.row().items() if k not in WALL_CLOCK} == {
        k: v for k, v in none.row().items() if k not in WALL_CLOCK
    }


def test_compare_is_table_7():
    table, results = df.compare(**TINY, schemes=["0x0", "2x4"], return_results=True)
    assert list(table.columns) == ["[0x0]", "[2x4]", "[2x4] Δ%"]
    assert table.loc["  in-place appends", "[0x0]"] == 0
    base, ipa = results[0].metrics, results[1].metrics
    assert table.loc["Throughput [tps]", "[2x4]"] == pytest.approx(ipa["throughput_tps"])
    expected = (ipa["host_writes"] - base["host_writes"]) / base["host_writes"] * 100
    assert table.loc["Host writes", "[2x4] Δ%"] == pytest.approx(expected)
    ratio = ipa["out_of_place_writes"] / ipa["in_place_appends"]
    assert table.loc["Out-of-place : IPA", "[2x4]"] == pytest.approx(ratio)


def test_cancel_token_stops_the_run():
    token = df.CancelToken()
    seen = []

    def progress(sim_s, total_s, tps):
        seen.append(sim_s)
        token.cancel()

    with pytest.raises(df.Cancelled, match="stopped after"):
        df.run(**{**TINY, "sim_time": 1000.0}, cancel=token, on_progress=progress)
    assert token.cancelled and len(seen) == 1


def test_callback_exception_propagates():
    def progress(sim_s, total_s, tps):
        raise ValueError("from the callback")

    with pytest.raises(ValueError, match="from the callback"):
        df.run(**{**TINY, "sim_time": 1000.0}, on_progress=progress)


def test_ctrl_c_stops_a_run():
    # Python's Ctrl-C handler, even when the test runner was started with SIGINT ignored
    # (as a shell's background job is), so the signal reaches the run.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            df.run(**{**TINY, "sim_time": 100000.0})
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 30


def test_gil_is_released_during_a_run():
    """This thread runs a fixed amount of Python code after the run's first progress
    report, then cancels the run. A run holding the GIL would let this thread go on only
    once it had ended by itself, so the order alone tells: no clock is read."""
    # SimpleQueue.put is C code: calling it runs no Python bytecode of the runner thread,
    # which could hand this thread the GIL between two reports of a run holding it.
    reports = queue.SimpleQueue()
    token = df.CancelToken()
    ended = []

    def run():
        try:
            df.run(**{**TINY, "sim_time": 60.0}, cancel=token, on_progress=reports.put)
            ended.append("by itself")
        except df.Cancelled:
            ended.append("cancelled")

    runner = threading.Thread(target=run)
    runner.start()
    reports.get()
    squares = sum(i * i for i in range(100_000))
    token.cancel()
    runner.join()
    assert squares == 333328333350000
    assert ended == ["cancelled"], "the run ended before another thread could run Python code"


def test_resolve_fills_defaults():
    config = df.resolve(**TINY)
    assert config["engine"]["ipa"] == "2x4" and config["engine"]["log_chips"] == 1
    assert df.resolve(storage="ipl")["engine"]["ipa"] == "0x0"
    assert df.resolve(storage="ftl:dftl")["storage"]["ftl"]["kind"] == "dftl"
    assert set(df.workloads()) >= {"tpcb", "tpcc", "tatp"}


def test_device_matches_a_model_of_its_pages():
    dev = df.Device("paper-emulator", chips=2, blocks_per_chip=64)
    region = dev.add_region("data", ipa_mode="slc")
    assert [r.name for r in dev.regions] == ["data"]
    size, rng = region.page_bytes, random.Random(5)
    model = {}
    writes = appends = refused = 0
    for _ in range(600):
        lpn = rng.randrange(32)
        op = rng.random()
        if op < 0.4:
            # The last 256 bytes stay erased: room for appends.
            body = bytes(rng.randrange(255) for _ in range(size - 256)) + b"\xff" * 256
            assert region.write_page(lpn, body) > 0
            model[lpn] = bytearray(body)
            writes += 1
        elif op < 0.8:
            offset = size - 256 + 16 * rng.randrange(16)
            delta = bytes(rng.randrange(255) for _ in range(16))
            try:
                region.write_delta(lpn, offset, delta)
            except df.DeltaflashError:
                refused += 1  # not written, an append slot reused, or NOP exhausted
                continue
            model[lpn][offset : offset + 16] = delta
            appends += 1
        elif op < 0.9:
            region.trim(lpn)
            model.pop(lpn, None)
        page = region.read_page(lpn)
        assert (page.data if page else None) == (bytes(model[lpn]) if lpn in model else None)
    counters = region.counters()
    assert counters["host_writes"] == writes and counters["host_write_deltas"] == appends
    assert appends > 0 and refused > 0
    assert dev.counters()["reprograms"] == appends and dev.now_ns > 0
    with pytest.raises(df.DeltaflashError, match="no region `nope`"):
        dev.region("nope")
    with pytest.raises(df.ConfigError, match="ipa_mode"):
        dev.add_region("x", ipa_mode="bogus")


def test_database_open_execute_reopen(tmp_path):
    path = tmp_path / "db.img"
    with df.Database.open(path, chips=4, blocks_per_chip=32) as db:
        db.execute(
            "CREATE REGION data (IPA_MODE=slc, IPA=2x4); CREATE TABLESPACE ts (REGION=data);"
            "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20)) TABLESPACE ts;"
        )
        assert db.execute("INSERT INTO t VALUES (1, 'one'); INSERT INTO t VALUES (2, 'two');") == [1, 1]
        assert db.execute("UPDATE t SET name = 'uno' WHERE id = 1;") == [1]
        with pytest.raises(df.DeltaflashError, match="nosuch"):
            db.execute("SELECT * FROM nosuch;")
        assert "t" in set(db.object_stats()["name"])
    assert db.closed
    with df.Database.open(path) as db:
        rows = db.query("SELECT id, name FROM t;")
        assert rows.values.tolist() == [[1, "uno"], [2, "two"]]
    with pytest.raises(df.DeltaflashError, match="closed"):
        db.execute("SELECT id FROM t;")


def test_an_error_inside_a_transaction_commits_none_of_it(tmp_path):
    """The bank transfer: the duplicate key fails the whole transaction, so the total
    stays 200 (the statements after the error ran in autocommit: 210)."""
    path = tmp_path / "bank.img"
    total = lambda db: int(db.query("SELECT bal FROM acct;")["bal"].sum())
    with df.Database.open(path, chips=4, blocks_per_chip=32) as db:
        db.execute(
            "CREATE TABLE acct (id INT PRIMARY KEY, bal INT NOT NULL); CREATE TABLE audit (id INT PRIMARY KEY);"
            "INSERT INTO acct VALUES (1, 100), (2, 100); INSERT INTO audit VALUES (7);"
        )
        db.execute("BEGIN; UPDATE acct SET bal = bal - 10 WHERE id = 1;")
        with pytest.raises(df.DeltaflashError, match="duplicate key"):
            db.execute("INSERT INTO audit VALUES (7);")
        with pytest.raises(df.DeltaflashError, match="current transaction is aborted"):
            db.execute("UPDATE acct SET bal = bal + 10 WHERE id = 2;")
        assert db.in_transaction
        with pytest.raises(df.DeltaflashError, match="nothing of it was committed"):
            db.execute("COMMIT;")
        assert not db.in_transaction
        assert total(db) == 200
        # In one call, then ROLLBACK to go on.
        with pytest.raises(df.DeltaflashError, match="duplicate key"):
            db.execute(
                "BEGIN; UPDATE acct SET bal = bal - 10 WHERE id = 1; INSERT INTO audit VALUES (7);"
                "UPDATE acct SET bal = bal + 10 WHERE id = 2; COMMIT;"
            )
        with pytest.raises(df.DeltaflashError, match="current transaction is aborted"):
            db.query("SELECT bal FROM acct;")
        assert db.execute("ROLLBACK;") == ["ROLLBACK"]
        assert total(db) == 200
    with df.Database.open(path) as db:
        assert total(db) == 200
