"""The Python package refuses what the command line and the dashboard refuse, in the
same words (the experiment config's checks): chips over the preset, a device larger
than the memory allowed, a value quoted at most 80 characters, and grids of more than
10,000 points without ``yes=True``."""

import pytest

import deltaflash as df

CHIPS = "device.chips: must be in 1..=16 on the paper-emulator preset (8 channels × 2 chips), got 40"
FOOTPRINT = (
    "for its metadata before any page is written, more than device.max_memory_bytes (1.0 KiB); "
    "pass a smaller device.blocks_per_chip"
)


def refusal(call):
    with pytest.raises(df.ConfigError) as raised:
        call()
    return str(raised.value)


def test_chips_over_the_preset_are_refused_as_everywhere():
    assert CHIPS in refusal(lambda: df.resolve(chips=40, blocks_per_chip=8))
    assert CHIPS in refusal(lambda: df.Device(chips=40, blocks_per_chip=8))


def test_a_device_over_its_memory_is_refused_before_it_is_allocated():
    assert FOOTPRINT in refusal(lambda: df.resolve(blocks_per_chip=64, max_memory=1024))
    assert FOOTPRINT in refusal(lambda: df.Device(blocks_per_chip=64, max_memory=1024))
    huge = refusal(lambda: df.Device(blocks_per_chip=1_000_000))
    assert huge.startswith("this device (16 chips × 1000000 blocks × 64 pages of 4096 bytes) needs about"), huge
    assert "this device (16 chips × 1000000 blocks" in refusal(lambda: df.resolve(blocks_per_chip=1_000_000))


def test_a_long_value_is_quoted_at_most_80_characters():
    long = "x" * (10 << 20)
    for call in (lambda: df.resolve(device=long), lambda: df.Device(long), lambda: df.resolve(scheme=long)):
        message = refusal(call)
        assert len(message) < 400 and "x" * 81 not in message, message[:200]


def test_a_grid_over_ten_thousand_points_needs_yes():
    grid = {"seed": list(range(1000)), "engine.v": list(range(1, 1001))}
    message = refusal(lambda: df.sweep(grid, progress=False))
    assert "the grid has 1000000 points, more than 10000" in message and "yes=True" in message, message
    df._deltaflash.check_grid_points(10_000, False)
    df._deltaflash.check_grid_points(1_000_000, True)
