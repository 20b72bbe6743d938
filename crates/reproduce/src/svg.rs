//! A figure as SVG, written by hand: our values as lines with round markers, the
//! paper's values overlaid as black diamonds, labelled axes with units, a legend.
//!
//! Deterministic: the same plot gives the same bytes (numbers at fixed precision, no
//! time or randomness). Points that are not finite are left out (a failed run); a plot
//! with no point at all still has its axes, labels and legend.

use crate::compare::Cell;
use std::fmt::Write;

/// One line of ours.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    /// (x, y) in axis units, in x order.
    pub points: Vec<(f64, f64)>,
}

/// One value of the paper, placed on the plot.
#[derive(Clone, Debug, PartialEq)]
pub struct PaperPoint {
    pub label: String,
    pub x: f64,
    pub y: f64,
}

/// What a figure shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    pub title: String,
    /// Axis labels with their units, "buffer frames", "share of update I/Os (%)".
    pub x_label: String,
    pub y_label: String,
    /// A logarithmic x axis (its values must be positive).
    pub x_log: bool,
    pub series: Vec<Series>,
    pub paper: Vec<PaperPoint>,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 460.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
/// Line colours, one per series in order (repeated past the eighth).
const PALETTE: [&str; 8] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

impl Plot {
    pub fn new(title: &str, x_label: &str, y_label: &str, series: Vec<Series>) -> Plot {
        Plot {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_log: false,
            series,
            paper: Vec::new(),
        }
    }

    pub fn log_x(mut self) -> Plot {
        self.x_log = true;
        self
    }

    pub fn with_paper(mut self, points: Vec<PaperPoint>) -> Plot {
        self.paper.extend(points);
        self
    }

    /// Each of `cells`' paper values at the middle of our x range: for values the paper
    /// states without a place on the axis (a range over the whole figure).
    pub fn with_paper_at_middle(self, cells: &[Cell]) -> Plot {
        let xs: Vec<f64> =
            self.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).filter(|x| x.is_finite()).collect();
        let (lo, hi) = (xs.iter().copied().reduce(f64::min), xs.iter().copied().reduce(f64::max));
        let x = match (lo, hi) {
            (Some(lo), Some(hi)) if self.x_log && lo > 0.0 => (lo * hi).sqrt(),
            (Some(lo), Some(hi)) => (lo + hi) / 2.0,
            _ => 1.0,
        };
        let points =
            cells.iter().map(|c| PaperPoint { label: format!("paper: {}", c.column), x, y: c.paper }).collect();
        self.with_paper(points)
    }

    /// The SVG document.
    pub fn to_svg(&self) -> String {
        let ours = self.series.iter().flat_map(|s| s.points.iter().copied());
        let all: Vec<(f64, f64)> = ours
            .chain(self.paper.iter().map(|p| (p.x, p.y)))
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!self.x_log || *x > 0.0))
            .collect();
        let x_axis = Axis::fit(all.iter().map(|p| p.0), self.x_log, false);
        let y_axis = Axis::fit(all.iter().map(|p| p.1), false, true);
        let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let px = |x: f64| LEFT + x_axis.fraction(x) * plot_w;
        let py = |y: f64| TOP + (1.0 - y_axis.fraction(y)) * plot_h;

        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text class="title" x="{:.1}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
            LEFT + plot_w / 2.0,
            escape(&self.title)
        );
        // Axes, ticks and grid.
        let _ = writeln!(
            s,
            r##"<path class="axes" d="M{LEFT:.1},{TOP:.1} V{:.1} H{:.1}" fill="none" stroke="#000"/>"##,
            TOP + plot_h,
            LEFT + plot_w
        );
        for t in x_axis.ticks() {
            let x = px(t);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#000"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                TOP + plot_h,
                TOP + plot_h + 5.0,
                TOP + plot_h + 18.0,
                number(t)
            );
        }
        for t in y_axis.ticks() {
            let y = py(t);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                LEFT + plot_w,
                LEFT - 6.0,
                y + 4.0,
                number(t)
            );
        }
        let _ = writeln!(
            s,
            r#"<text class="x-label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + plot_w / 2.0,
            HEIGHT - 18.0,
            escape(&self.x_label)
        );
        let _ = writeln!(
            s,
            r#"<text class="y-label" x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">{}</text>"#,
            TOP + plot_h / 2.0,
            TOP + plot_h / 2.0,
            escape(&self.y_label)
        );
        // Our lines and their markers.
        for (i, series) in self.series.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!self.x_log || *x > 0.0))
                .map(|(x, y)| (px(x), py(y)))
                .collect();
            if points.len() > 1 {
                let path: Vec<String> = points.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                let _ = writeln!(
                    s,
                    r#"<polyline class="ours" points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                    path.join(" ")
                );
            }
            for (x, y) in points {
                let _ = writeln!(s, r#"<circle class="ours-point" cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{colour}"/>"#);
            }
        }
        // The paper's values.
        for p in &self.paper {
            if !(p.x.is_finite() && p.y.is_finite()) || (self.x_log && p.x <= 0.0) {
                continue;
            }
            let (x, y) = (px(p.x), py(p.y));
            let _ = writeln!(
                s,
                r##"<path class="paper-point" d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z" fill="#000"><title>{} = {}</title></path>"##,
                y - 6.0,
                x + 6.0,
                y + 6.0,
                x - 6.0,
                escape(&p.label),
                number(p.y)
            );
        }
        // Legend.
        let lx = LEFT + plot_w + 16.0;
        let mut ly = TOP + 8.0;
        for (i, series) in self.series.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let _ = writeln!(
                s,
                r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"/><circle cx="{:.1}" cy="{ly:.1}" r="3.5" fill="{colour}"/><text class="legend" x="{:.1}" y="{:.1}">{}</text>"#,
                lx + 22.0,
                lx + 11.0,
                lx + 28.0,
                ly + 4.0,
                escape(&series.name)
            );
            ly += 18.0;
        }
        if !self.paper.is_empty() {
            let _ = writeln!(
                s,
                r##"<path d="M{:.1},{:.1} L{:.1},{ly:.1} L{:.1},{:.1} L{:.1},{ly:.1} Z" fill="#000"/><text class="legend" x="{:.1}" y="{:.1}">paper</text>"##,
                lx + 11.0,
                ly - 6.0,
                lx + 17.0,
                lx + 11.0,
                ly + 6.0,
                lx + 5.0,
                lx + 28.0,
                ly + 4.0
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

/// One axis: its range (log10 of it for a log axis).
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    /// The range of `values`, widened to nice tick bounds; from 0 when `from_zero` and
    /// every value is positive; `0..1` without values.
    fn fit(values: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> Axis {
        let values: Vec<f64> = values.map(|v| if log { v.log10() } else { v }).collect();
        let lo = values.iter().copied().reduce(f64::min).unwrap_or(0.0);
        let hi = values.iter().copied().reduce(f64::max).unwrap_or(1.0);
        if log {
            return Axis { lo: lo.floor(), hi: hi.ceil().max(lo.floor() + 1.0), log };
        }
        let lo = if from_zero && lo >= 0.0 { 0.0 } else { lo };
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let step = nice_step(hi - lo);
        Axis { lo: (lo / step).floor() * step, hi: (hi / step).ceil() * step, log }
    }

    fn fraction(&self, v: f64) -> f64 {
        let v = if self.log { v.log10() } else { v };
        (v - self.lo) / (self.hi - self.lo)
    }

    /// Powers of ten on a log axis; five or so nice steps on a linear one.
    fn ticks(&self) -> Vec<f64> {
        if self.log {
            return (self.lo as i32..=self.hi as i32).map(|e| 10f64.powi(e)).collect();
        }
        let step = nice_step(self.hi - self.lo);
        let n = ((self.hi - self.lo) / step).round() as i64;
        (0..=n).map(|k| self.lo + k as f64 * step).collect()
    }
}

/// A step of 1, 2 or 5 times a power of ten giving about five steps over `span`.
fn nice_step(span: f64) -> f64 {
    let raw = span / 5.0;
    let power = 10f64.powf(raw.log10().floor());
    let m = raw / power;
    power
        * if m <= 1.0 {
            1.0
        } else if m <= 2.0 {
            2.0
        } else if m <= 5.0 {
            5.0
        } else {
            10.0
        }
}

/// A tick or value label: at most three decimals, no trailing zeros.
fn number(v: f64) -> String {
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that every element is closed in order and the document is one `<svg>`;
    /// returns the start tags.
    fn well_formed(svg: &str) -> Vec<String> {
        let mut stack: Vec<String> = Vec::new();
        let mut tags = Vec::new();
        let mut rest = svg;
        while let Some(start) = rest.find('<') {
            let end = rest[start..].find('>').expect("every tag ends") + start;
            let tag = &rest[start + 1..end];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name), "closing tag matches the open one");
            } else {
                let name = tag.split_whitespace().next().unwrap_or("").trim_end_matches('/').to_string();
                assert!(tag.matches('"').count().is_multiple_of(2), "attribute quotes balance in <{tag}>");
                tags.push(tag.to_string());
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
            rest = &rest[end + 1..];
        }
        assert!(stack.is_empty(), "unclosed elements: {stack:?}");
        assert!(tags[0].starts_with("svg "), "the root is <svg>");
        for text in svg.split('>').filter_map(|t| t.split('<').next()) {
            assert!(
                !text.contains('&')
                    || text.contains("&amp;")
                    || text.contains("&lt;")
                    || text.contains("&gt;")
                    || text.contains("&quot;"),
                "a bare & in {text}"
            );
        }
        tags
    }

    fn plot() -> Plot {
        Plot::new(
            "Fig. <1> & more",
            "buffer frames",
            "time (times)",
            vec![
                Series { name: "A".into(), points: vec![(10.0, 2.0), (100.0, 4.0), (1000.0, f64::NAN)] },
                Series { name: "B".into(), points: vec![(10.0, 1.0), (100.0, 8.0)] },
            ],
        )
        .log_x()
        .with_paper(vec![
            PaperPoint { label: "least".into(), x: 50.0, y: 2.0 },
            PaperPoint { label: "most".into(), x: 50.0, y: 15.0 },
        ])
    }

    #[test]
    fn a_plot_is_well_formed_with_a_marker_per_paper_point_and_labelled_axes() {
        let svg = plot().to_svg();
        let tags = well_formed(&svg);
        assert_eq!(tags.iter().filter(|t| t.contains(r#"class="paper-point""#)).count(), 2);
        assert_eq!(tags.iter().filter(|t| t.contains(r#"class="ours-point""#)).count(), 4, "the NaN point is left out");
        assert!(svg.contains(">buffer frames</text>") && svg.contains(">time (times)</text>"), "{svg}");
        assert!(svg.contains("Fig. &lt;1&gt; &amp; more"), "the title is escaped");
        assert!(svg.contains(">A</text>") && svg.contains(">B</text>") && svg.contains(">paper</text>"), "legend");
        assert!(svg.contains(">10</text>") && svg.contains(">100</text>"), "log ticks at powers of ten");
    }

    #[test]
    fn the_same_plot_gives_the_same_bytes_and_an_empty_one_still_renders() {
        assert_eq!(plot().to_svg(), plot().to_svg());
        let empty = Plot::new("t", "x (s)", "y (%)", vec![Series { name: "none".into(), points: vec![] }]);
        let tags = well_formed(&empty.to_svg());
        assert!(tags.iter().all(|t| !t.contains("NaN") && !t.contains("inf")), "{tags:?}");
    }

    #[test]
    fn paper_values_without_a_place_stand_at_the_middle_of_the_axis() {
        let cell = |column: &str, paper: f64| Cell {
            experiment: "x:fig".into(),
            row: "r".into(),
            column: column.into(),
            unit: "times".into(),
            paper,
            ours: None,
            difference: None,
            difference_unit: "%",
            verdict: crate::verdict::Verdict::NotComparable,
            reason: String::new(),
            ablation: String::new(),
            source: "s".into(),
            under: Vec::new(),
        };
        let p = Plot::new("t", "x", "y", vec![Series { name: "a".into(), points: vec![(10.0, 1.0), (1000.0, 2.0)] }])
            .log_x()
            .with_paper_at_middle(&[cell("least", 2.0), cell("most", 15.0)]);
        assert_eq!(p.paper.len(), 2);
        assert!((p.paper[0].x - 100.0).abs() < 1e-9 && p.paper[1].y == 15.0, "{:?}", p.paper);
        assert_eq!(p.paper[1].label, "paper: most");
    }
}
