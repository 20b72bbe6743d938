"""The IPA advisor from Python: the baseline's statistics, a layout whose DDL runs, and
the refusals of `deltaflash advise`."""

import pytest

import deltaflash as df
from conftest import TINY


@pytest.fixture(scope="module")
def advice():
    return df.advise(**TINY)


def test_advice_on_the_baseline(advice):
    assert advice.baseline.scheme == "0x0" and advice.baseline.metrics["in_place_appends"] == 0
    objects = advice.objects
    assert {"subscriber", "access_info"} <= set(objects["name"])
    assert {"pages", "evictions", "fit 2x4"} <= set(objects.columns)
    assert (objects["pages"] > 0).all()
    r = advice.recommendation
    assert advice.scheme == r["scheme"] == f"{r['n']}x{r['m']}"
    assert set(advice.predicted.index) >= {"ipa_share", "gc_reduction"}
    assert "CREATE REGION" in advice.ddl and "image" not in advice.selective_config()["device"]


def test_the_recommended_layout_runs(advice):
    measured = df.run(advice.selective_config())
    assert measured.config["engine"]["schema"] == advice.ddl
    if advice.ipa_tables:
        assert measured.metrics["in_place_appends"] > 0
    everywhere = df.run(advice.global_config())
    assert everywhere.scheme == advice.scheme and everywhere.metrics["in_place_appends"] > 0


def test_a_config_with_its_own_layout_is_refused():
    with pytest.raises(df.ConfigError, match="baseline runs without IPA in one region"):
        df.advise(**TINY, ipa_objects=["subscriber"])


def test_the_baseline_image_is_kept_only_when_named(tmp_path):
    image = tmp_path / "baseline.img"
    df.advise(**TINY, image=str(image))
    assert image.exists()


def test_a_missing_image_or_a_bad_result_is_an_error_naming_it(tmp_path):
    missing = tmp_path / "no-such.img"
    with pytest.raises(df.DeltaflashError, match="no-such.img"):
        df._deltaflash.advise_baseline(str(missing), "{}", "title")
    image = tmp_path / "kept.img"
    df.advise(**TINY, image=str(image))
    with pytest.raises(df.DeltaflashError, match="the baseline run's result"):
        df._deltaflash.advise_baseline(str(image), "{not json", "title")
    with pytest.raises(df.DeltaflashError, match=r'no "objects" array'):
        df._deltaflash.advise_baseline(str(image), "{}", "title")
