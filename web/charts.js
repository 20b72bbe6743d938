// DeltaFlash dashboard charts: small SVG line, bar and heat-map charts drawn in the
// page (no library, nothing fetched), so every chart exports as SVG as drawn and as
// PNG through a canvas. Every function returns a detached <svg> element.
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

function svgEl(tag, attrs, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

// A "nice" step for about `n` ticks over [lo, hi].
function niceTicks(lo, hi, n) {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  // From the step at or below `lo` to the one at or above `hi`, so the data fits inside.
  const ticks = [];
  const last = Math.ceil(hi / step - 1e-9) * step;
  for (let t = Math.floor(lo / step + 1e-9) * step; t <= last + step * 1e-9; t += step) ticks.push(+t.toPrecision(12));
  return ticks;
}

function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  const a = Math.abs(v);
  if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
  if (a >= 1e4) return (v / 1e3).toFixed(0) + 'k';
  if (a >= 100 || v === Math.round(v)) return v.toFixed(0);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(2);
}

function frame(width, height, title) {
  const svg = svgEl('svg', { xmlns: SVG_NS, width, height, viewBox: `0 0 ${width} ${height}`, class: 'chart', 'font-family': 'sans-serif', 'font-size': 11 });
  svg.appendChild(svgEl('rect', { x: 0, y: 0, width, height, fill: '#fff' }));
  if (title) svg.appendChild(svgEl('text', { x: width / 2, y: 16, 'text-anchor': 'middle', 'font-size': 13, 'font-weight': 'bold' }, title));
  return svg;
}

function legend(svg, names, x, y) {
  names.forEach((name, i) => {
    svg.appendChild(svgEl('rect', { x, y: y + i * 15 - 8, width: 10, height: 10, fill: PALETTE[i % PALETTE.length] }));
    svg.appendChild(svgEl('text', { x: x + 14, y: y + i * 15 + 1 }, name));
  });
}

// The plot area inside margins `m`, with horizontal grid lines and labels at the y
// ticks; returns its size and the y scale (first tick at the bottom, last at the top).
function yAxis(svg, m, width, height, ticks) {
  const ya = ticks[0], yb = ticks[ticks.length - 1];
  const W = width - m.l - m.r, H = height - m.t - m.b;
  const Y = (v) => m.t + H - ((v - ya) / (yb - ya || 1)) * H;
  for (const t of ticks) {
    svg.appendChild(svgEl('line', { x1: m.l, x2: m.l + W, y1: Y(t), y2: Y(t), stroke: '#e4e4e4' }));
    svg.appendChild(svgEl('text', { x: m.l - 4, y: Y(t) + 4, 'text-anchor': 'end' }, fmt(t)));
  }
  return { W, H, Y };
}

// The plot area's border, the rotated y label and the legend right of the area.
function finishPlot(svg, m, W, H, yLabel, names) {
  svg.appendChild(svgEl('rect', { x: m.l, y: m.t, width: W, height: H, fill: 'none', stroke: '#999' }));
  if (yLabel) svg.appendChild(svgEl('text', { x: 12, y: m.t + H / 2, transform: `rotate(-90 12 ${m.t + H / 2})`, 'text-anchor': 'middle' }, yLabel));
  legend(svg, names, m.l + W + 10, m.t + 10);
}

// series: [{name, points: [[x, y], ...]}]
function lineChart({ title, series, xLabel, yLabel, width = 640, height = 260 }) {
  const svg = frame(width, height, title);
  const m = { l: 56, r: 130, t: 26, b: 36 };
  const pts = series.flatMap((s) => s.points).filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]));
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const x0 = xs.length ? Math.min(...xs) : 0, x1 = xs.length ? Math.max(...xs) : 1;
  const y1 = ys.length ? Math.max(...ys) : 1;
  const yt = niceTicks(0, y1 > 0 ? y1 : 1, 5), xt = niceTicks(x0, x1 > x0 ? x1 : x0 + 1, 6);
  const [xa, xb] = [xt[0], xt[xt.length - 1]];
  const { W, H, Y } = yAxis(svg, m, width, height, yt);
  const X = (v) => m.l + ((v - xa) / (xb - xa || 1)) * W;
  for (const t of xt) svg.appendChild(svgEl('text', { x: X(t), y: m.t + H + 14, 'text-anchor': 'middle' }, fmt(t)));
  if (xLabel) svg.appendChild(svgEl('text', { x: m.l + W / 2, y: height - 4, 'text-anchor': 'middle' }, xLabel));
  series.forEach((s, i) => {
    const d = s.points.filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1])).map((p, k) => `${k ? 'L' : 'M'}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join('');
    if (d) svg.appendChild(svgEl('path', { d, fill: 'none', stroke: PALETTE[i % PALETTE.length], 'stroke-width': 1.8, class: 'series' }));
  });
  finishPlot(svg, m, W, H, yLabel, series.map((s) => s.name));
  svg.dataset.points = String(pts.length);
  return svg;
}

// categories: names on the x axis; series: [{name, values: [..per category]}]
function barChart({ title, categories, series, yLabel, width = 640, height = 260 }) {
  const svg = frame(width, height, title);
  const m = { l: 56, r: 130, t: 26, b: 48 };
  const all = series.flatMap((s) => s.values).filter(Number.isFinite);
  const yt = niceTicks(0, Math.max(0, ...all) || 1, 5);
  const { W, H, Y } = yAxis(svg, m, width, height, yt);
  const group = W / Math.max(1, categories.length), bar = (group * 0.8) / Math.max(1, series.length);
  categories.forEach((c, ci) => {
    const gx = m.l + ci * group + group * 0.1;
    series.forEach((s, si) => {
      const v = s.values[ci];
      if (!Number.isFinite(v)) return;
      svg.appendChild(svgEl('rect', { x: gx + si * bar, y: Y(Math.max(v, 0)), width: Math.max(1, bar - 2), height: Math.abs(Y(0) - Y(Math.max(v, 0))), fill: PALETTE[si % PALETTE.length], class: 'bar' }, undefined));
    });
    svg.appendChild(svgEl('text', { x: gx + group * 0.4, y: m.t + H + 14, 'text-anchor': 'middle' }, c));
  });
  finishPlot(svg, m, W, H, yLabel, series.map((s) => s.name));
  return svg;
}

// One bar per category, the series stacked bottom to top: categories: names on the x
// axis; series: [{name, values: [..per category]}] (non-finite values count as 0).
function stackedBarChart({ title, categories, series, yLabel, width = 640, height = 260 }) {
  const svg = frame(width, height, title);
  const m = { l: 56, r: 130, t: 26, b: 48 };
  const v = (s, ci) => (Number.isFinite(s.values[ci]) ? Math.max(0, s.values[ci]) : 0);
  const totals = categories.map((_, ci) => series.reduce((sum, s) => sum + v(s, ci), 0));
  const yt = niceTicks(0, Math.max(0, ...totals) || 1, 5);
  const { W, H, Y } = yAxis(svg, m, width, height, yt);
  const group = W / Math.max(1, categories.length);
  categories.forEach((c, ci) => {
    const gx = m.l + ci * group + group * 0.15;
    let below = 0;
    series.forEach((s, si) => {
      const h = v(s, ci);
      if (h > 0) {
        svg.appendChild(svgEl('rect', { x: gx, y: Y(below + h), width: Math.max(1, group * 0.7), height: Y(below) - Y(below + h), fill: PALETTE[si % PALETTE.length], class: 'bar', 'data-series': s.name }));
      }
      below += h;
    });
    svg.appendChild(svgEl('text', { x: gx + group * 0.35, y: m.t + H + 14, 'text-anchor': 'middle' }, c));
  });
  finishPlot(svg, m, W, H, yLabel, series.map((s) => s.name));
  return svg;
}

// rows: [{name, cells: [number...]}]; colour by value from white to dark red.
function heatMap({ title, rows, width = 760, cellHeight = 14, label = 'erases' }) {
  const m = { l: 56, r: 90, t: 26, b: 20 };
  const cols = Math.max(1, ...rows.map((r) => r.cells.length));
  const height = m.t + m.b + rows.length * cellHeight;
  const svg = frame(width, height, title);
  const W = width - m.l - m.r, cw = W / cols;
  const all = rows.flatMap((r) => r.cells);
  const lo = all.length ? Math.min(...all) : 0, hi = all.length ? Math.max(...all) : 1;
  const colour = (v) => {
    const t = hi > lo ? (v - lo) / (hi - lo) : 0;
    return `rgb(${255 - Math.round(t * 75)},${Math.round(245 - t * 225)},${Math.round(235 - t * 215)})`;
  };
  rows.forEach((r, ri) => {
    const y = m.t + ri * cellHeight;
    svg.appendChild(svgEl('text', { x: m.l - 4, y: y + cellHeight - 3, 'text-anchor': 'end' }, r.name));
    // Runs of equal value are drawn as one rectangle (a 4096-block chip stays small).
    let start = 0;
    for (let k = 1; k <= r.cells.length; k++) {
      if (k === r.cells.length || r.cells[k] !== r.cells[start]) {
        svg.appendChild(svgEl('rect', { x: m.l + start * cw, y, width: Math.max(cw * (k - start), 0.5), height: cellHeight - 1, fill: colour(r.cells[start]) }));
        start = k;
      }
    }
  });
  const lx = m.l + W + 10;
  svg.appendChild(svgEl('rect', { x: lx, y: m.t, width: 12, height: 12, fill: colour(lo) }));
  svg.appendChild(svgEl('text', { x: lx + 16, y: m.t + 10 }, `${lo} ${label}`));
  svg.appendChild(svgEl('rect', { x: lx, y: m.t + 18, width: 12, height: 12, fill: colour(hi) }));
  svg.appendChild(svgEl('text', { x: lx + 16, y: m.t + 28 }, `${hi} ${label}`));
  return svg;
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

window.Charts = { lineChart, barChart, stackedBarChart, heatMap, exportSvg, exportPng, download, fmt };
