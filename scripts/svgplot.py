"""Grouped bar charts and line charts as standalone SVG files, with the standard library
only (the figure scripts run on a fresh machine without matplotlib).

    bars(path, title, ylabel, groups, series)   series: {name: [value per group]}
    lines(path, title, xlabel, ylabel, xs, series, logx=False)

A value of None is drawn as a gap. Colours follow one fixed palette so a scheme keeps its
colour across figures when the series are given in the same order."""
import math
from html import escape

PALETTE = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]
WIDTH, HEIGHT = 760, 400
LEFT, RIGHT, TOP, BOTTOM = 70, 210, 40, 60


def _nice_max(v):
    """The smallest 1/2/5 × 10^k at or above v (the y axis top)."""
    if v <= 0:
        return 1.0
    k = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 5, 10):
        if m * k >= v:
            return m * k
    return 10 * k


def _fmt(v):
    for unit, div in (("M", 1e6), ("k", 1e4)):
        if abs(v) >= div:
            return f"{v / (1e3 if unit == 'k' else div):,.4g}{unit}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _frame(title, ylabel, ymax):
    plot_h = HEIGHT - TOP - BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
        f'<text transform="translate(16,{TOP + plot_h / 2}) rotate(-90)" text-anchor="middle">{escape(ylabel)}</text>',
    ]
    for i in range(6):
        v = ymax * i / 5
        y = TOP + plot_h - plot_h * i / 5
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y}" y2="{y}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4}" text-anchor="end">{_fmt(v)}</text>')
    return out


def _legend(names):
    out = []
    for i, name in enumerate(names):
        y = TOP + 10 + 20 * i
        x = WIDTH - RIGHT + 15
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{PALETTE[i % len(PALETTE)]}"/>')
        out.append(f'<text x="{x + 18}" y="{y}">{escape(name)}</text>')
    return out


def _write(path, parts):
    with open(path, "w") as f:
        f.write("\n".join(parts + ["</svg>"]) + "\n")


def bars(path, title, ylabel, groups, series):
    values = [v for vs in series.values() for v in vs if v is not None]
    ymax = _nice_max(max(values, default=1.0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    out = _frame(title, ylabel, ymax)
    slot = plot_w / max(len(groups), 1)
    bar = slot * 0.8 / max(len(series), 1)
    for g, group in enumerate(groups):
        x0 = LEFT + g * slot + slot * 0.1
        out.append(f'<text x="{LEFT + (g + 0.5) * slot}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle">{escape(str(group))}</text>')
        for s, vs in enumerate(series.values()):
            v = vs[g]
            if v is None:
                continue
            h = plot_h * v / ymax
            out.append(
                f'<rect x="{x0 + s * bar:.1f}" y="{TOP + plot_h - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[s % len(PALETTE)]}"><title>{escape(str(group))}: {_fmt(v)}</title></rect>'
            )
    _write(path, out + _legend(list(series)))


def lines(path, title, xlabel, ylabel, xs, series, logx=False):
    values = [v for vs in series.values() for v in vs if v is not None]
    ymax = _nice_max(max(values, default=1.0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    scale = math.log10 if logx else (lambda v: v)
    lo, hi = scale(min(xs)), scale(max(xs))

    def px(x):
        return LEFT + (plot_w * (scale(x) - lo) / (hi - lo) if hi > lo else plot_w / 2)

    out = _frame(title, ylabel, ymax)
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 14}" text-anchor="middle">{escape(xlabel)}</text>')
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle">{_fmt(x)}</text>')
    for s, vs in enumerate(series.values()):
        colour = PALETTE[s % len(PALETTE)]
        points = [(px(x), TOP + plot_h - plot_h * v / ymax) for x, v in zip(xs, vs) if v is not None]
        if len(points) > 1:
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            out.append(f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in points:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
    _write(path, out + _legend(list(series)))
