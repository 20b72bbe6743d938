"""examples/ipa-tour.ipynb runs from top to bottom in a fresh kernel, and its cells show
what they say: the run's metrics, the Table-7 rows, the sweep's points, a figure per
plot cell, the advisor's layout and the prediction beside the measurement."""

import ast
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "examples" / "ipa-tour.ipynb"


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    """The executed notebook's code cells by tag (its working directory a scratch one)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    scratch = tmp_path_factory.mktemp("notebook")
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(scratch)}}).execute()
    assert list(scratch.iterdir()) == [], "the notebook wrote files"
    tagged = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            for tag in cell.metadata.get("tags", []):
                tagged[tag] = cell
    return tagged


def text(cell):
    """What a cell showed as text: its result's repr and what it printed."""
    out = []
    for o in cell.outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif "data" in o:
            out.append(o.data.get("text/plain", ""))
    return "".join(out)


def test_no_cell_raised(cells):
    for tag, cell in cells.items():
        assert not [o for o in cell.outputs if o.output_type == "error"], tag


def test_the_run_shows_its_metrics_and_timeseries(cells):
    metrics = ast.literal_eval(text(cells["run"]))
    assert set(metrics) == {
        "throughput_tps", "transactions", "host_writes", "in_place_appends", "out_of_place_writes", "write_latency_ms",
    }
    assert metrics["transactions"] > 0 and metrics["in_place_appends"] > 0
    assert "sim_seconds" in text(cells["timeseries"]) and "throughput_tps" in text(cells["timeseries"])


def test_compare_and_sweep_show_their_tables(cells):
    shown = text(cells["compare"])
    assert "Host writes" in shown and "[2x4] Δ%" in shown
    swept = text(cells["sweep"])
    assert swept.count("0x0") == 2 and swept.count("2x4") == 2 and "error" not in swept


@pytest.mark.parametrize("tag", ["plot-timeseries", "plot-compare", "plot-sweep", "plot-cdf"])
def test_each_plot_cell_draws_a_figure(cells, tag):
    images = [o for o in cells[tag].outputs if "data" in o and "image/png" in o.data]
    assert len(images) == 1, tag


def test_the_advisor_recommends_and_its_layout_runs(cells):
    assert text(cells["advise"]).startswith("<Advice [")
    assert "fit 2x4" in text(cells["advise-objects"])
    assert "CREATE REGION" in text(cells["advise-ddl"])
    shares = ast.literal_eval(text(cells["advise-verify"]))
    assert set(shares) == {"predicted IPA share", "measured IPA share"}
    assert all(0.0 <= v <= 1.0 for v in shares.values()), shares
