// DeltaFlash dashboard charts: small SVG line, bar and heat-map charts drawn in the
// page (no library, nothing fetched), so every chart exports as SVG as drawn and as
// PNG through a canvas. Every chart function returns a detached <svg> element that
// scales to its box (viewBox), with both axes labelled, its legend in rows under the
// plot (wrapped, never cut) and each series in its own colour of a colour-blind-safe
// palette. Numbers read with thousands separators and three significant digits.
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';
// Okabe & Ito, "Color Universal Design" (2008): eight colours told apart with any
// common colour-vision deficiency. Yellow last: it is the faintest on white.
const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442'];
// One colour per page state on every chart of the Device page (Okabe–Ito hues; free
// pages a light grey, as they hold nothing).
const STATE_COLOURS = {
  free: '#CCCCCC', valid: '#0072B2', appended: '#009E73', invalid: '#D55E00',
  unused: '#000000', programmed: '#CC79A7', 'trim records': '#E69F00',
};
const FONT = 11;
// Width of a character of the 11 px sans-serif font, generous (measured in Debian's
// chromium: digits 6.1 px, the widest lower-case letters 8 px): legends and labels are
// laid out with it, so they wrap before they could run out of the chart.
const CHAR_W = 6.8;

function svgEl(tag, attrs, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

const plainFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const sigFormat = new Intl.NumberFormat('en-US', { maximumSignificantDigits: 3 });

// A number for people: integers whole with thousands separators (27,502), others to
// three significant digits (0.0123, 1.23) and whole from 1,000 on; '–' for no value.
function fmt(v) {
  if (v === null || v === undefined || (typeof v === 'number' && !Number.isFinite(v))) return '–';
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v) || Math.abs(v) >= 1000) return plainFormat.format(v);
  return sigFormat.format(v);
}

// An axis tick: three significant digits, thousands separators, M past a million.
function tickText(v) {
  if (Math.abs(v) >= 1e6) return sigFormat.format(v / 1e6) + 'M';
  return Math.abs(v) >= 1000 ? plainFormat.format(v) : sigFormat.format(v);
}

// A "nice" step for about `n` ticks over [lo, hi]; the ticks cover the range.
function niceTicks(lo, hi, n) {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const ticks = [];
  // A bound within a millionth of a step of a tick is that tick (sums of interval times).
  const last = Math.ceil(hi / step - 1e-6) * step;
  for (let t = Math.floor(lo / step + 1e-6) * step; t <= last + step * 1e-6; t += step) ticks.push(+t.toPrecision(12));
  return ticks;
}

// The y scale over values `ys`: linear from 0 (or the least negative value) with 8%
// headroom, so a line at the maximum stays inside the frame; or log10 over whole
// decades of the positive values.
function yScale(ys, log) {
  const finite = ys.filter(Number.isFinite);
  if (log) {
    const pos = finite.filter((v) => v > 0);
    const lo = pos.length ? Math.floor(Math.log10(Math.min(...pos))) : 0;
    let hi = pos.length ? Math.ceil(Math.log10(Math.max(...pos) * 1.08)) : 1;
    if (hi <= lo) hi = lo + 1;
    const ticks = [];
    for (let e = lo; e <= hi; e++) ticks.push(+Math.pow(10, e).toPrecision(12));
    return { ticks, t: (v) => (Math.log10(v) - lo) / (hi - lo), ok: (v) => v > 0, log: true };
  }
  const max = finite.length ? Math.max(0, ...finite) : 1;
  const min = finite.length ? Math.min(0, ...finite) : 0;
  if (max === 0 && min === 0) return { ticks: [0, 1], t: (v) => v, ok: Number.isFinite, log: false };
  const pad = (max - min) * 0.08;
  const ticks = niceTicks(min < 0 ? min - pad : 0, max + pad, 5);
  const [a, b] = [ticks[0], ticks[ticks.length - 1]];
  return { ticks, t: (v) => (v - a) / (b - a || 1), ok: Number.isFinite, log: false };
}

// Splits `text` into lines of at most `width` px (at CHAR_W per character).
function wrapText(text, width) {
  const max = Math.max(4, Math.floor(width / CHAR_W));
  const lines = [];
  let line = '';
  for (const word of String(text).split(' ')) {
    let w = word;
    while (w.length > max) { // a word longer than a line is split
      if (line) { lines.push(line); line = ''; }
      lines.push(w.slice(0, max));
      w = w.slice(max);
    }
    if (!line) line = w;
    else if ((line + ' ' + w).length <= max) line += ' ' + w;
    else { lines.push(line); line = w; }
  }
  if (line) lines.push(line);
  return lines;
}

// Legend items laid out in rows across `width`: [{x, y, lines}] and the height taken.
// A name wider than a row is wrapped onto lines of its own.
function legendLayout(names, width) {
  const items = [];
  let x = 0, y = 0, rowH = 16;
  for (const name of names) {
    const lines = wrapText(name, width - 18);
    const w = 18 + Math.max(...lines.map((l) => l.length)) * CHAR_W + 14;
    if (x > 0 && x + w > width) { x = 0; y += rowH; rowH = 16; }
    items.push({ x, y, lines });
    x += w;
    rowH = Math.max(rowH, 16 + (lines.length - 1) * 14);
  }
  return { items, height: items.length ? y + rowH : 0 };
}

function drawLegend(svg, series, x0, y0, width) {
  const { items } = legendLayout(series.map((s) => s.name), width);
  const g = svgEl('g', { class: 'legend' });
  items.forEach((it, i) => {
    const s = series[i];
    g.appendChild(svgEl('rect', { x: x0 + it.x, y: y0 + it.y - 9, width: 12, height: 12, fill: s.colour, stroke: '#666', 'stroke-width': 0.5, class: 'swatch' }));
    const text = svgEl('text', { x: x0 + it.x + 18, y: y0 + it.y + 1, class: 'legend-text' });
    it.lines.forEach((l, k) => text.appendChild(svgEl('tspan', { x: x0 + it.x + 18, dy: k ? 14 : 0 }, l)));
    g.appendChild(text);
  });
  svg.appendChild(g);
}

// The default width a chart is drawn at: the grid's column at 1280 px, the screen on a phone.
function defaultWidth() {
  const w = typeof window === 'undefined' ? 620 : window.innerWidth;
  return Math.max(300, Math.min(620, w - 40));
}

// The frame of a chart: title lines, plot area, x/y labels and the legend under it.
// Returns {svg, m, W, H} with the plot area at (m.l, m.t) of size W × H.
function frame({ title, width, plotHeight, yLabel, xLabel, series, extraBottom = 0 }) {
  const titleLines = title ? wrapText(title, width - 20).length : 0;
  const m = { l: 64, r: 16, t: 12 + titleLines * 16, b: 40 + extraBottom };
  const legendH = series && series.length ? legendLayout(series.map((s) => s.name), width - 24).height + 8 : 0;
  const height = m.t + plotHeight + m.b + legendH;
  const svg = svgEl('svg', { xmlns: SVG_NS, width, height, viewBox: `0 0 ${width} ${height}`, class: 'chart', 'font-family': 'sans-serif', 'font-size': FONT });
  svg.appendChild(svgEl('rect', { x: 0, y: 0, width, height, fill: '#fff' }));
  if (title) {
    const t = svgEl('text', { x: width / 2, y: 16, 'text-anchor': 'middle', 'font-size': 13, 'font-weight': 'bold', class: 'title' });
    wrapText(title, width - 20).forEach((l, k) => t.appendChild(svgEl('tspan', { x: width / 2, dy: k ? 16 : 0 }, l)));
    svg.appendChild(t);
  }
  const W = width - m.l - m.r, H = plotHeight;
  if (yLabel) svg.appendChild(svgEl('text', { x: 14, y: m.t + H / 2, transform: `rotate(-90 14 ${m.t + H / 2})`, 'text-anchor': 'middle', class: 'axis-label y-label' }, yLabel));
  if (xLabel) svg.appendChild(svgEl('text', { x: m.l + W / 2, y: m.t + H + 32 + extraBottom, 'text-anchor': 'middle', class: 'axis-label x-label' }, xLabel));
  if (legendH) drawLegend(svg, series, 12, m.t + H + m.b + 8, width - 24);
  return { svg, m, W, H };
}

// Horizontal grid lines and labels at the y ticks; the y position of a value.
function drawYAxis(svg, m, W, H, scale) {
  const Y = (v) => m.t + H - scale.t(v) * H;
  for (const t of scale.ticks) {
    svg.appendChild(svgEl('line', { x1: m.l, x2: m.l + W, y1: Y(t), y2: Y(t), stroke: '#e4e4e4' }));
    svg.appendChild(svgEl('text', { x: m.l - 4, y: Y(t) + 4, 'text-anchor': 'end', class: 'tick' }, tickText(t)));
  }
  return Y;
}

function border(svg, m, W, H) {
  svg.appendChild(svgEl('rect', { x: m.l, y: m.t, width: W, height: H, fill: 'none', stroke: '#999' }));
}

// Each series' colour: its own `colour`, else the palette's in order.
function coloured(series) {
  return series.map((s, i) => ({ ...s, colour: s.colour || PALETTE[i % PALETTE.length] }));
}

// series: [{name, points: [[x, y], ...], colour?}]; `log`: log10 y axis.
function lineChart({ title, series, xLabel, yLabel, width = defaultWidth(), height = 220, log = false }) {
  series = coloured(series);
  const { svg, m, W, H } = frame({ title, width, plotHeight: height, xLabel, yLabel, series });
  const finite = (p) => Number.isFinite(p[0]) && Number.isFinite(p[1]);
  const pts = series.flatMap((s) => s.points).filter(finite);
  const xs = pts.map((p) => p[0]);
  const x0 = xs.length ? Math.min(...xs) : 0, x1 = xs.length ? Math.max(...xs) : 1;
  const scale = yScale(pts.map((p) => p[1]), log);
  const Y = drawYAxis(svg, m, W, H, scale);
  // The x axis runs from 0 (or the least value, if negative) to the last point, so
  // that the series end at the right frame; ticks fall inside.
  const [xa, xb] = [Math.min(0, x0), x1 > Math.min(0, x0) ? x1 : Math.min(0, x0) + 1];
  const xt = niceTicks(xa, xb, Math.max(3, Math.floor(W / 80))).filter((t) => t >= xa && t <= xb * (1 + 1e-9));
  const X = (v) => m.l + ((v - xa) / (xb - xa || 1)) * W;
  for (const t of xt) svg.appendChild(svgEl('text', { x: X(t), y: m.t + H + 14, 'text-anchor': 'middle', class: 'tick' }, tickText(t)));
  for (const s of series) {
    const shown = s.points.filter((p) => finite(p) && scale.ok(p[1]));
    const d = shown.map((p, k) => `${k ? 'L' : 'M'}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join('');
    if (d) svg.appendChild(svgEl('path', { d, fill: 'none', stroke: s.colour, 'stroke-width': 1.8, class: 'series', 'data-series': s.name }));
    if (shown.length === 1) svg.appendChild(svgEl('circle', { cx: X(shown[0][0]), cy: Y(shown[0][1]), r: 3, fill: s.colour }));
  }
  border(svg, m, W, H);
  svg.dataset.points = String(pts.length);
  return svg;
}

// Grouped bars. categories: names on the x axis; series: [{name, values: [..per category], colour?}].
function barChart({ title, categories, series, xLabel, yLabel, width = defaultWidth(), height = 200, log = false }) {
  series = coloured(series);
  const { svg, m, W, H } = frame({ title, width, plotHeight: height, xLabel, yLabel, series });
  const scale = yScale(series.flatMap((s) => s.values), log);
  const Y = drawYAxis(svg, m, W, H, scale);
  const base = scale.log ? m.t + H : Y(Math.max(0, scale.ticks[0]));
  const group = W / Math.max(1, categories.length), bar = (group * 0.8) / Math.max(1, series.length);
  categories.forEach((c, ci) => {
    const gx = m.l + ci * group + group * 0.1;
    series.forEach((s, si) => {
      const v = s.values[ci];
      if (!Number.isFinite(v) || !scale.ok(v)) return;
      const top = Y(v);
      const rect = svgEl('rect', { x: gx + si * bar, y: Math.min(top, base), width: Math.max(1, bar - 2), height: Math.max(0.5, Math.abs(base - top)), fill: s.colour, class: 'bar', 'data-series': s.name });
      rect.appendChild(svgEl('title', {}, `${s.name}: ${fmt(v)}`));
      svg.appendChild(rect);
    });
    for (const [k, l] of wrapText(c, group - 4).entries()) svg.appendChild(svgEl('text', { x: gx + group * 0.4, y: m.t + H + 14 + k * 12, 'text-anchor': 'middle', class: 'tick' }, l));
  });
  border(svg, m, W, H);
  return svg;
}

// One bar per category, the series stacked bottom to top (non-finite values count as 0).
function stackedBarChart({ title, categories, series, xLabel, yLabel, width = defaultWidth(), height = 200 }) {
  series = coloured(series);
  const { svg, m, W, H } = frame({ title, width, plotHeight: height, xLabel, yLabel, series });
  const v = (s, ci) => (Number.isFinite(s.values[ci]) ? Math.max(0, s.values[ci]) : 0);
  const totals = categories.map((_, ci) => series.reduce((sum, s) => sum + v(s, ci), 0));
  const scale = yScale(totals, false);
  const Y = drawYAxis(svg, m, W, H, scale);
  const group = W / Math.max(1, categories.length);
  categories.forEach((c, ci) => {
    const gx = m.l + ci * group + group * 0.15;
    let below = 0;
    series.forEach((s) => {
      const h = v(s, ci);
      if (h > 0) {
        const rect = svgEl('rect', { x: gx, y: Y(below + h), width: Math.max(1, group * 0.7), height: Y(below) - Y(below + h), fill: s.colour, class: 'bar', 'data-series': s.name });
        rect.appendChild(svgEl('title', {}, `${c}, ${s.name}: ${fmt(h)}`));
        svg.appendChild(rect);
      }
      below += h;
    });
    for (const [k, l] of wrapText(c, group - 2).entries()) svg.appendChild(svgEl('text', { x: gx + group * 0.35, y: m.t + H + 14 + k * 12, 'text-anchor': 'middle', class: 'tick' }, l));
  });
  border(svg, m, W, H);
  return svg;
}

// Viridis (van der Walt & Smith, matplotlib 2015): perceptually uniform and readable
// with colour-vision deficiencies; nine stops, interpolated.
const VIRIDIS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21918c', '#28ae80', '#5ec962', '#addc30', '#fde725'];
function viridis(t) {
  const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x)), f = x - i;
  const rgb = (h) => [1, 3, 5].map((k) => parseInt(h.slice(k, k + 2), 16));
  const [a, b] = [rgb(VIRIDIS[i]), rgb(VIRIDIS[i + 1])];
  return `rgb(${a.map((c, k) => Math.round(c + (b[k] - c) * f)).join(',')})`;
}

// Erases per block: a row per chip (chip axis), blocks along x (block axis), each cell
// coloured on a continuous scale. Every chip belongs to a scale (`scales`: [{name, chips,
// lo, hi}], e.g. one per region) so that a region erased much more (the log) does not
// wash out the others; each scale has its own legend bar. `value(chip, block)` is the
// erase count, `tip(chip, block)` the hover text.
function heatMap({ title, chips, blocks, value, scales, tip, width = defaultWidth() }) {
  const rowH = Math.max(16, Math.min(32, Math.floor(260 / Math.max(1, chips))));
  const legendRows = scales.length;
  const { svg, m, W, H } = frame({ title, width, plotHeight: chips * rowH, xLabel: 'block', yLabel: 'chip' });
  const height = +svg.getAttribute('height') + legendRows * 30 + 8;
  svg.setAttribute('height', height);
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.firstChild.setAttribute('height', height);
  const cw = W / Math.max(1, blocks);
  const scaleOf = new Map();
  for (const s of scales) for (const c of s.chips) if (!scaleOf.has(c)) scaleOf.set(c, s);
  const colour = (s, v) => viridis(s.hi > s.lo ? (v - s.lo) / (s.hi - s.lo) : 0);
  for (let c = 0; c < chips; c++) {
    const y = m.t + c * rowH;
    svg.appendChild(svgEl('text', { x: m.l - 4, y: y + rowH / 2 + 4, 'text-anchor': 'end', class: 'tick' }, String(c)));
    const s = scaleOf.get(c);
    // Runs of equal value are drawn as one rectangle (a 4096-block chip stays small).
    let start = 0;
    for (let k = 1; k <= blocks; k++) {
      if (k === blocks || value(c, k) !== value(c, start)) {
        svg.appendChild(svgEl('rect', { x: m.l + start * cw, y, width: Math.max(cw * (k - start), 0.5), height: rowH - 1, fill: s ? colour(s, value(c, start)) : '#eee', class: 'cell' }));
        start = k;
      }
    }
  }
  const xt = niceTicks(0, blocks - 1, Math.max(3, Math.floor(W / 70))).filter((t) => t <= blocks - 1);
  for (const t of xt) svg.appendChild(svgEl('text', { x: m.l + (t + 0.5) * cw, y: m.t + H + 14, 'text-anchor': 'middle', class: 'tick' }, tickText(t)));
  border(svg, m, W, H);
  // One continuous legend bar per scale: its name, its chips, low and high ends.
  const defs = svgEl('defs');
  const grad = svgEl('linearGradient', { id: 'viridis-' + Math.random().toString(36).slice(2) });
  VIRIDIS.forEach((c, k) => grad.appendChild(svgEl('stop', { offset: `${(k / (VIRIDIS.length - 1)) * 100}%`, 'stop-color': c })));
  defs.appendChild(grad);
  svg.appendChild(defs);
  const top = m.t + H + m.b;
  const barW = Math.min(200, W * 0.45);
  scales.forEach((s, k) => {
    const y = top + k * 30;
    const name = `${s.name} (chips ${s.chips.join(', ')})`;
    const g = svgEl('g', { class: 'legend' });
    g.appendChild(svgEl('text', { x: 12, y: y + 11, class: 'legend-text' }, wrapText(name, width - barW - 120)[0]));
    const bx = width - barW - 70;
    g.appendChild(svgEl('text', { x: bx - 4, y: y + 11, 'text-anchor': 'end', class: 'legend-text' }, fmt(s.lo)));
    g.appendChild(svgEl('rect', { x: bx, y: y + 1, width: barW, height: 12, fill: s.hi > s.lo ? `url(#${grad.id})` : viridis(0), stroke: '#666', 'stroke-width': 0.5, class: 'scale-bar' }));
    g.appendChild(svgEl('text', { x: bx + barW + 4, y: y + 11, class: 'legend-text' }, `${fmt(s.hi)} ${s.hi === 1 ? 'erase' : 'erases'}`));
    svg.appendChild(g);
  });
  if (tip) {
    svg.dataset.hover = 'cells';
    svg._tip = (x, y) => {
      const c = Math.floor((y - m.t) / rowH), b = Math.floor((x - m.l) / cw);
      return c >= 0 && c < chips && b >= 0 && b < blocks ? tip(c, b) : null;
    };
  }
  return svg;
}

// A hover box for a chart that offers `svg._tip(x, y)` (in its own coordinates).
function attachTip(svg) {
  if (!svg._tip) return;
  let box = document.getElementById('chart-tip');
  if (!box) {
    box = document.createElement('div');
    box.id = 'chart-tip';
    box.hidden = true;
    document.body.appendChild(box);
  }
  svg.addEventListener('mousemove', (e) => {
    const p = new DOMPoint(e.clientX, e.clientY).matrixTransform(svg.getScreenCTM().inverse());
    const text = svg._tip(p.x, p.y);
    box.hidden = !text;
    if (!text) return;
    box.textContent = text;
    box.style.left = `${e.pageX + 12}px`;
    box.style.top = `${e.pageY + 12}px`;
  });
  svg.addEventListener('mouseleave', () => { box.hidden = true; });
}

function download(name, blob) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

function svgText(svg) {
  return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(svg);
}

function exportSvg(svg, name) {
  download(name + '.svg', new Blob([svgText(svg)], { type: 'image/svg+xml' }));
}

function exportPng(svg, name) {
  const w = +svg.getAttribute('width') || 640, h = +svg.getAttribute('height') || 260;
  const img = new Image();
  img.onload = () => {
    const canvas = document.createElement('canvas');
    canvas.width = w * 2; canvas.height = h * 2;
    const ctx = canvas.getContext('2d');
    ctx.scale(2, 2);
    ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, w, h);
    ctx.drawImage(img, 0, 0, w, h);
    canvas.toBlob((blob) => download(name + '.png', blob), 'image/png');
  };
  img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(svgText(svg));
}

window.Charts = { lineChart, barChart, stackedBarChart, heatMap, attachTip, exportSvg, exportPng, download, fmt, STATE_COLOURS };
