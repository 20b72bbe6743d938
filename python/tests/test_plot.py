"""The figures draw what the results hold."""

import matplotlib

matplotlib.use("Agg")

import pytest

import deltaflash as df
from deltaflash import plot
from conftest import TINY


@pytest.fixture(scope="module")
def runs():
    table, results = df.compare(**TINY, interval=0.25, schemes=["0x0", "2x4"], return_results=True)
    return table, results


def test_update_size_cdf_is_cumulative():
    cdf = plot.update_size_cdf([2, 0, 1, 1])
    assert cdf["bytes_below"].tolist() == [2, 4, 8, 16]
    assert cdf["share"].tolist() == [0.5, 0.5, 0.75, 1.0]


def test_cdf_of_an_object(runs, tmp_path):
    _, results = runs
    ax = plot.cdf(results[1], object="subscriber")
    ys = ax.lines[0].get_ydata()
    assert ys[-1] == pytest.approx(1.0) and all(a <= b for a, b in zip(ys, ys[1:]))
    ax.figure.savefig(tmp_path / "cdf.png")
    with pytest.raises(KeyError, match="no object `nope`"):
        plot.cdf(results[1], object="nope")


def test_timeseries_one_line_per_result(runs):
    _, results = runs
    ax = plot.timeseries(results, metric="throughput_tps")
    assert [l.get_label() for l in ax.lines] == ["[0x0]", "[2x4]"]
    assert list(ax.lines[1].get_ydata()) == results[1].timeseries["throughput_tps"].tolist()
    with pytest.raises(KeyError, match="no interval metric"):
        plot.timeseries(results, metric="nope")


def test_compare_bars_are_the_deltas(runs):
    table, _ = runs
    ax = plot.compare(table, metrics=["Host writes", "Throughput [tps]"])
    widths = [p.get_width() for p in ax.patches]
    assert widths == pytest.approx(table.loc[["Host writes", "Throughput [tps]"], "[2x4] Δ%"].tolist())


def test_compare_labels_lie_inside_the_figure(runs):
    table, _ = runs
    long_label = "WRITE I/O latency [ms] of every page written back"
    renamed = table.rename(index={"WRITE I/O latency [ms]": long_label})
    for frame, metrics in ((table, None), (renamed, ["Host writes", long_label])):
        ax = plot.compare(frame, metrics=metrics)
        figure = ax.figure
        figure.canvas.draw()
        inside = figure.bbox
        # The row labels one by one, and everything drawn around the axes (tick labels
        # within the view, the axis label, the legend).
        boxes = [(t.get_text(), t.get_window_extent()) for t in ax.get_yticklabels()]
        boxes.append(("the axes with their labels", ax.get_tightbbox()))
        for what, box in boxes:
            assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1, (
                f"{what!r} at {box} outside the figure {inside}"
            )
        # The bars keep their width beside the labels.
        assert ax.get_window_extent().width >= 0.5 * plot.BARS_WIDTH_IN * figure.dpi


def test_sweep_lines_per_hue():
    import pandas as pd

    frame = pd.DataFrame({"buffer": [0.2, 0.1, 0.1, 0.2], "scheme": ["a", "a", "b", "b"], "tps": [2, 1, 3, 4]})
    ax = plot.sweep(frame, x="buffer", y="tps", hue="scheme")
    assert [list(l.get_ydata()) for l in ax.lines] == [[1, 2], [3, 4]]
