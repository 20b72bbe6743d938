"""Shared tiny configs: each run takes about a second in a release build."""

import os

import pytest

# A 4-chip device with TATP on 1,000 subscribers, 1 simulated second after 0.2 of warm-up.
TINY = dict(
    workload="tatp",
    subscribers=1000,
    chips=4,
    blocks_per_chip=64,
    log_chips=1,
    sim_time=1.0,
    warmup=0.2,
)

WALL_CLOCK = ["wall_seconds", "run_wall_seconds", "simulated_seconds_per_wall_second"]


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray instance with 2 workers, shared by the tests that use it."""
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
