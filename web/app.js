// DeltaFlash dashboard: the single page. Pages are chosen by the URL hash
// (#new, #live/ID, #runs, #compare/ID,ID, #analyzer/ID, #device/ID); all data comes
// from the server's JSON API, and every table and chart carries its export buttons.
// Charts sit in a responsive grid (two or three a row on a wide screen, one on a
// phone); a run keeps its colour on every chart of a page, a page state its colour on
// every chart of the Device page.
'use strict';

const $ = (sel, root = document) => root.querySelector(sel);
let META = null;
let liveSource = null;

// ---------- helpers ----------

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'onclick') e.addEventListener('click', v);
    else if (k === 'onchange') e.addEventListener('change', v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw Object.assign(new Error(body.error || `HTTP ${response.status}`), { body, status: response.status });
  return body;
}

function sendJson(method, path, value) {
  return api(path, { method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(value) });
}
const postJson = (path, value) => sendJson('POST', path, value);

const num = Charts.fmt;
const pct = (v) => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${num(v)}%` : '–');

function csvOf(columns, rows) {
  const cell = (v) => {
    const s = v === null || v === undefined ? '' : String(v);
    return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  };
  return [columns.map(cell).join(','), ...rows.map((r) => r.map(cell).join(','))].join('\n') + '\n';
}

// A table cell: a number (shown with separators, exported as the number), a string,
// a Node, or {show, value} (shown one way, exported and sorted by the value).
function cellShow(c) {
  if (c instanceof Node) return c;
  if (c && typeof c === 'object') return c.show instanceof Node ? c.show : String(c.show ?? '–');
  return typeof c === 'number' || c === null || c === undefined ? num(c) : String(c);
}
function cellValue(c) {
  if (c instanceof Node) return c.textContent;
  if (c && typeof c === 'object') return c.value ?? null;
  return c === undefined ? null : c;
}

// A sortable table (click a header) with CSV and JSON export of the raw values.
function dataTable(name, columns, rows) {
  const values = rows.map((r) => r.map(cellValue));
  const json = values.map((r) => Object.fromEntries(columns.map((c, i) => [c, r[i]])));
  const bar = el('div', { class: 'exports' },
    el('button', { class: 'export-csv', 'data-name': name, onclick: () => Charts.download(name + '.csv', new Blob([csvOf(columns, values)], { type: 'text/csv' })) }, 'CSV'),
    el('button', { class: 'export-json', 'data-name': name, onclick: () => Charts.download(name + '.json', new Blob([JSON.stringify(json, null, 2)], { type: 'application/json' })) }, 'JSON'));
  const trs = rows.map((r, k) => el('tr', { 'data-row': k }, r.map((c) => el('td', { class: typeof cellValue(c) === 'number' ? 'num' : '' }, cellShow(c)))));
  const tbody = el('tbody', {}, trs);
  let sorted = { col: -1, dir: 1 };
  const sortBy = (col) => {
    sorted = { col, dir: sorted.col === col ? -sorted.dir : 1 };
    const key = (k) => values[k][col];
    const order = trs.map((_, k) => k).sort((a, b) => {
      const [x, y] = [key(a), key(b)];
      if (x === null || x === '') return 1;
      if (y === null || y === '') return -1;
      return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y), 'en', { numeric: true })) * sorted.dir;
    });
    tbody.replaceChildren(...order.map((k) => trs[k]));
    for (const [i, th] of [...head.children].entries()) th.dataset.sort = i === col ? (sorted.dir > 0 ? 'asc' : 'desc') : '';
  };
  const head = el('tr', {}, columns.map((c, i) => el('th', { title: 'sort', onclick: () => sortBy(i) }, c)));
  const table = el('table', { class: 'data', 'data-name': name }, el('thead', {}, head), tbody);
  return el('div', { class: 'table-box' }, bar, el('div', { class: 'scroll' }, table));
}

// A chart with SVG and PNG export; `draw(options)` makes its <svg>. With `log`, a
// toggle redraws it on a log scale.
function chartBox(name, draw, { log = false } = {}) {
  const box = el('figure', { class: 'chart-box', 'data-name': name });
  let svg = draw({ log: false });
  const exports = el('div', { class: 'exports' },
    el('button', { class: 'export-svg', onclick: () => Charts.exportSvg(svg, name) }, 'SVG'),
    el('button', { class: 'export-png', onclick: () => Charts.exportPng(svg, name) }, 'PNG'));
  if (log) {
    const toggle = el('input', { type: 'checkbox', class: 'log-toggle', onchange: () => {
      const next = draw({ log: toggle.checked });
      svg.replaceWith(next);
      svg = next;
      Charts.attachTip(svg);
    } });
    exports.append(el('label', { class: 'log' }, toggle, ' log scale'));
  }
  box.append(svg, exports);
  Charts.attachTip(svg);
  return box;
}

const grid = (...boxes) => el('div', { class: 'grid' }, boxes.flat().filter(Boolean));

function showError(box, error) {
  box.hidden = false;
  box.textContent = error.message || String(error);
}

function tiles(pairs) {
  return pairs.map(([k, v]) => el('div', { class: 'tile' }, el('span', {}, k), el('b', {}, v)));
}

// ---------- routing ----------

function route() {
  const [page, arg] = (location.hash.slice(1) || 'new').split('/');
  for (const s of document.querySelectorAll('.page')) s.hidden = s.id !== 'page-' + page;
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.page === page);
  if (page !== 'live' && liveSource) { liveSource.close(); liveSource = null; }
  const pages = { live: showLive, runs: showRuns, compare: showCompare, analyzer: showAnalyzer, device: showDevice };
  if (pages[page]) pages[page](arg).catch((e) => console.error(e));
}

// The newest run matching `pred`, for pages opened without an id.
async function newestRun(pred) {
  const { runs } = await api('/api/runs');
  const found = runs.filter(pred);
  return found.length ? found[found.length - 1].id : null;
}

// ---------- New run ----------

function selectedWorkload() {
  return META.workloads.find((x) => x.name === $('#f-workload').value) || META.workloads[0];
}

// One field per workload parameter, from the workload's defaults: numbers as number
// fields, true/false as a tick box, lists and objects as JSON text.
function paramFields() {
  const w = selectedWorkload();
  const small = { tpcb: { scale: 1 }, tpcc: { warehouses: 1 }, tatp: { subscribers: 10000 } }[w.name] || {};
  const fields = Object.entries(w.defaults || {}).map(([key, def]) => {
    const value = key in small ? small[key] : def;
    const kind = typeof def === 'number' ? 'number' : typeof def === 'boolean' ? 'bool' : typeof def === 'string' ? 'text' : 'json';
    const attrs = { id: `f-param-${key}`, class: 'param', 'data-key': key, 'data-kind': kind };
    const input = kind === 'bool'
      ? el('input', { ...attrs, type: 'checkbox', checked: value })
      : el('input', { ...attrs, type: kind === 'number' ? 'number' : 'text', step: 'any', value: kind === 'json' ? JSON.stringify(value) : String(value), size: kind === 'json' ? 24 : 10 });
    return el('label', {}, key.replace(/_/g, ' ') + (kind === 'json' ? ' (JSON)' : ''), ' ', input);
  });
  $('#f-params').replaceChildren(...(fields.length ? fields : [el('span', { class: 'hint' }, 'no parameters')]));
}

// The workload parameters that differ from the workload's defaults.
function paramValues() {
  const w = selectedWorkload();
  const out = {};
  for (const input of document.querySelectorAll('#f-params input.param')) {
    const { key, kind } = input.dataset;
    let v;
    if (kind === 'bool') v = input.checked;
    else if (kind === 'number') {
      v = Number(input.value);
      if (input.value.trim() === '' || !Number.isFinite(v)) throw new Error(`workload.${key}: not a number`);
    } else if (kind === 'json') {
      try { v = JSON.parse(input.value); } catch (e) { throw new Error(`workload.${key}: not JSON: ${e.message}`); }
    } else v = input.value;
    if (JSON.stringify(v) !== JSON.stringify(w.defaults[key])) out[key] = v;
  }
  return out;
}

// The selective layout: the IPA advisor's, from the newest analysed run of this
// workload; without one, a template to edit and a pointer to the Analyzer scenario.
async function selectiveLayout(workload) {
  const id = await newestRun((r) => r.has_analysis && r.workload === workload);
  if (id !== null) {
    const a = (await api(`/api/runs/${id}`)).analysis || {};
    const engine = (a.selective_config || {}).engine || {};
    if (engine.schema) return { schema: engine.schema, ipa: engine.ipa, mode: engine.ipa_mode, v: engine.v, from: id };
  }
  const first = (selectedWorkload().tables || [])[0] || 'hot';
  return { schema: [
    `-- No analysed run of ${workload} yet: run scenario 2 (Analyzer) and its advice fills this in.`,
    '-- Until then, a template: put the tables with small updates into the IPA region.',
    'CREATE REGION hot (${IPA});',
    `CREATE TABLESPACE ts_${first} (REGION=hot);`,
    'CREATE REGION cold (IPA_MODE=none);',
    'CREATE TABLESPACE ts_data (REGION=cold);',
  ].join('\n') };
}

let scenarioTurn = 0;
// Fills the form for one of the demo's scenarios. The form is `data-busy` while the
// selective layout is fetched; a later click wins over an earlier one still loading.
async function applyScenario(name) {
  const turn = ++scenarioTurn;
  const form = $('#run-form');
  form.dataset.busy = 'true';
  $('#f-storage').value = 'noftl';
  const set = { baseline: ['0x0', '', 'baseline'], analyzer: ['0x0', '', 'analyzer baseline'], global: ['2x4', '', 'global IPA'], selective: ['2x4', null, 'selective IPA'] }[name];
  $('#f-ipa').value = set[0];
  $('#f-schema').value = set[1] || '';
  $('#f-label').value = set[2];
  for (const b of document.querySelectorAll('.scenarios button')) b.classList.toggle('active', b.dataset.scenario === name);
  try {
    if (set[1] === null) {
      const layout = await selectiveLayout($('#f-workload').value);
      if (turn !== scenarioTurn) return;
      $('#f-schema').value = layout.schema;
      if (layout.ipa) $('#f-ipa').value = layout.ipa;
      if (layout.mode) $('#f-mode').value = layout.mode;
      if (layout.v) $('#f-v').value = layout.v;
      if (layout.from !== undefined) $('#f-label').value = `selective IPA (advised on run ${layout.from})`;
    }
  } finally {
    if (turn === scenarioTurn) delete form.dataset.busy;
  }
  checkSchema();
}

function splitNames(text) {
  return text.split(',').map((s) => s.trim()).filter(Boolean);
}

function formRequest() {
  const f = (id) => $(id).value.trim();
  const number = (id, name) => {
    const v = Number(f(id));
    if (f(id) === '' || !Number.isFinite(v)) throw new Error(`${name}: not a number`);
    return v;
  };
  const device = { preset: f('#f-preset'), blocks_per_chip: number('#f-blocks', 'blocks per chip') };
  if (f('#f-chips')) device.chips = number('#f-chips', 'chips');
  const storage = META.storages.find((s) => s.name === f('#f-storage'));
  const engine = { ipa: f('#f-ipa'), ipa_mode: f('#f-mode'), v: number('#f-v', 'V'), buffer_share: number('#f-buffer', 'buffer share') };
  if ($('#f-schema').value.trim()) engine.schema = $('#f-schema').value;
  const [tags, sets] = [splitNames(f('#f-tags')), splitNames(f('#f-sets'))];
  return {
    label: f('#f-label'),
    ...(tags.length ? { tags } : {}),
    ...(sets.length ? { sets } : {}),
    config: {
      seed: number('#f-seed', 'seed'),
      device,
      storage: storage ? storage.config : 'noftl',
      engine,
      workload: { name: f('#f-workload'), ...paramValues() },
      driver: { warmup_s: number('#f-warmup', 'warm-up'), sim_time_s: number('#f-duration', 'duration'), terminals: number('#f-terminals', 'terminals') },
    },
  };
}

function showRefusal(error) {
  const body = error.body || {};
  const schemaBox = $('#schema-error');
  if (body.field === 'engine.schema') {
    schemaBox.hidden = false;
    schemaBox.textContent = body.error;
    if (body.line) selectPosition($('#f-schema'), body.line, body.column);
  }
  showError($('#form-error'), error);
}

// Puts the caret at a 1-based line/column of a textarea.
function selectPosition(area, line, column) {
  const lines = area.value.split('\n');
  let at = 0;
  for (let k = 0; k < line - 1 && k < lines.length; k++) at += lines[k].length + 1;
  at += Math.max(0, column - 1);
  area.setSelectionRange(at, Math.min(at + 1, area.value.length));
}

let schemaTimer = null;
function checkSchema() {
  clearTimeout(schemaTimer);
  schemaTimer = setTimeout(async () => {
    const box = $('#schema-error');
    let request;
    try { request = formRequest(); } catch (e) { return; }
    try {
      await postJson('/api/validate', request);
      box.hidden = true;
    } catch (e) {
      if (e.body && e.body.field === 'engine.schema') {
        box.hidden = false;
        box.textContent = e.body.error;
      } else box.hidden = true;
    }
  }, 300);
}

async function submitRun(event) {
  event.preventDefault();
  const errorBox = $('#form-error');
  errorBox.hidden = true;
  $('#schema-error').hidden = true;
  try {
    // Several schemes (`0x0, 2x4, 2x8`) are a sweep: one run each, same everything else.
    const request = formRequest();
    const schemes = request.config.engine.ipa.split(',').map((x) => x.trim()).filter(Boolean);
    if (!schemes.length) schemes.push(request.config.engine.ipa);
    if (schemes.length > 8) throw new Error('IPA scheme: at most 8 schemes at once');
    const withScheme = (ipa) => ({ ...request, config: { ...request.config, engine: { ...request.config.engine, ipa } } });
    for (const ipa of schemes.slice(1)) await postJson('/api/validate', withScheme(ipa));
    const ids = [];
    for (const ipa of schemes) {
      const label = schemes.length > 1 ? `${request.label} [${ipa}]`.trim() : request.label;
      ids.push((await postJson('/api/runs', { ...withScheme(ipa), label })).id);
    }
    location.hash = ids.length > 1 ? '#runs' : `#live/${ids[0]}`;
  } catch (e) {
    showRefusal(e);
  }
}

function setupForm() {
  const opt = (value, text) => el('option', { value }, text ?? value);
  $('#f-workload').append(...META.workloads.map((w) => opt(w.name, `${w.name} — ${w.about}`)));
  $('#f-preset').append(...META.device_presets.map((p) => opt(p.name, `${p.name} (${p.chips} chips × ${p.blocks_per_chip} blocks, ${p.cell})`)));
  $('#f-storage').append(...META.storages.map((s) => opt(s.name)));
  $('#f-mode').append(...META.ipa_modes.map((m) => opt(m)));
  $('#f-workload').addEventListener('change', () => {
    paramFields();
    if ($('.scenarios button.active[data-scenario="selective"]')) applyScenario('selective');
  });
  paramFields();
  for (const s of META.scenarios) {
    $('#scenarios').append(el('button', { type: 'button', 'data-scenario': s.name, title: s.about, onclick: () => applyScenario(s.name) }, s.title));
  }
  $('#scenarios').append(el('span', { class: 'hint' }, META.analyzer ? 'Baseline runs are analysed by the IPA advisor; Selective IPA takes its advice.' : 'The analyzer is not available in this server.'));
  $('#f-schema').addEventListener('input', checkSchema);
  $('#run-form').addEventListener('submit', submitRun);
}

// ---------- Live ----------

const SIM_TIME = 'simulated time [s]';

// The interval lines as charts: each per interval, the GC erases too (from the
// cumulative count); latencies and counts with a log-scale toggle.
function intervalCharts(intervals) {
  const pts = (key) => intervals.map((i) => [i.sim_seconds, i[key]]);
  const line = (name, spec, log) => chartBox(name, (o) => Charts.lineChart({ xLabel: SIM_TIME, ...spec, ...o }), { log });
  const erases = intervals.map((i, k) => [i.sim_seconds, k ? i.gc_erases_so_far - intervals[k - 1].gc_erases_so_far : i.gc_erases_so_far]);
  return [
    line('throughput', { title: 'Throughput per interval', series: [{ name: 'transactions per second', points: pts('throughput_tps') }], yLabel: 'throughput [tps]' }),
    ...['read', 'write'].map((io) => line(`${io}-latency`, { title: `Page ${io} latency per interval`, series: [
      { name: 'p99', points: pts(`${io}_latency_p99_ms`) }, { name: 'p50', points: pts(`${io}_latency_p50_ms`) }, { name: 'mean', points: pts(`${io}_latency_ms`) }], yLabel: 'latency [ms]' }, true)),
    line('transaction-latency', { title: 'Transaction latency per interval', series: [
      { name: 'p99', points: pts('transaction_latency_p99_ms') }, { name: 'p50', points: pts('transaction_latency_p50_ms') }], yLabel: 'latency [ms]' }, true),
    line('writes', { title: 'Page writes per interval', series: [{ name: 'out-of-place', points: pts('out_of_place_writes') }, { name: 'in-place appends', points: pts('in_place_appends') }, { name: 'GC migrations', points: pts('gc_page_migrations') }], yLabel: 'pages per interval' }, true),
    line('gc-write-amplification', { title: 'Data-region write amplification per interval', series: [{ name: '(host + GC) / host page writes', points: intervals.map((i) => {
      const host = i.out_of_place_writes + i.in_place_appends;
      return [i.sim_seconds, host ? (host + i.gc_page_migrations) / host : NaN];
    }) }], yLabel: 'page writes per host write' }),
    line('erases', { title: 'GC erases per interval', series: [{ name: 'erases in the interval', points: erases }], yLabel: 'erases per interval' }, true),
  ];
}

function resultTiles(r) {
  return tiles([
    ['throughput [tps]', num(r.throughput_tps)], ['host writes', num(r.host_writes)], ['in-place appends', num(r.in_place_appends)],
    ['out-of-place writes', num(r.out_of_place_writes)], ['GC migrations', num(r.gc_page_migrations)], ['GC erases (total)', num(r.gc_erases)],
    ['write amplification', num(r.write_amplification)], ['read latency [ms]', num(r.read_latency_ms)], ['write latency [ms]', num(r.write_latency_ms)],
    ['read p99 [ms]', num(r.read_latency_p99_ms)], ['write p99 [ms]', num(r.write_latency_p99_ms)], ['transaction p99 [ms]', num(r.transaction_latency_p99_ms)],
  ]);
}

async function showLive(arg) {
  if (liveSource) { liveSource.close(); liveSource = null; }
  const id = arg || (await newestRun(() => true));
  const title = $('#live-title'), status = $('#live-status'), bar = $('#live-bar'), charts = $('#live-charts'), tileBox = $('#live-tiles');
  const cancel = $('#live-cancel');
  // Nothing of the previous run stays on the page (a test or a user could read it as this one's).
  delete status.dataset.status;
  status.textContent = 'connecting…';
  bar.style.width = '0';
  tileBox.replaceChildren();
  charts.replaceChildren();
  delete charts.dataset.points;
  if (id === null) { status.textContent = 'No runs yet.'; return; }
  title.textContent = `run ${id}`;
  let intervals = [];
  const draw = () => {
    charts.replaceChildren(grid(intervalCharts(intervals)));
    charts.dataset.points = String(intervals.length);
  };
  const render = (s) => {
    bar.style.width = `${Math.round((s.progress || 0) * 100)}%`;
    bar.parentElement.dataset.progress = String(s.progress || 0);
    const eta = s.eta_s === null || s.eta_s === undefined ? '' : ` — ETA ${Math.ceil(s.eta_s)} s`;
    status.textContent = `${s.label}: ${s.status} (${s.phase}) — ${num(s.sim_seconds)} / ${num(s.total_sim_seconds)} simulated s${eta}` + (s.error ? ` — ${s.error}` : '');
    status.dataset.status = s.status;
    const last = intervals[intervals.length - 1];
    tileBox.replaceChildren(...tiles([['throughput now [tps]', num(s.throughput_tps)], ['transactions', num(s.transactions)],
      ['GC erases so far (cumulative)', num(last ? last.gc_erases_so_far : 0)], ['interval lines', num(intervals.length)], ['wall time [s]', num(s.wall_s)]]));
    draw();
    cancel.hidden = ['done', 'failed', 'cancelled'].includes(s.status);
  };
  const finished = async () => {
    const record = await api(`/api/runs/${id}`);
    intervals = record.intervals || intervals;
    status.textContent = `${record.label}: ${record.status}` + (record.error ? ` — ${record.error}` : '');
    status.dataset.status = record.status;
    bar.style.width = record.status === 'done' ? '100%' : bar.style.width;
    cancel.hidden = true;
    draw();
    const links = el('p', { class: 'links' }, el('a', { href: `#compare/${id}` }, 'Compare'), ' · ', el('a', { href: `#device/${id}` }, 'Device'),
      record.analysis ? [' · ', el('a', { href: `#analyzer/${id}` }, 'Analyzer')] : []);
    tileBox.replaceChildren(...(record.result ? resultTiles(record.result) : []), links);
  };
  cancel.onclick = () => postJson(`/api/runs/${id}/cancel`, {}).catch((e) => { status.textContent = e.message; });
  const source = new EventSource(`/api/runs/${id}/events`);
  liveSource = source;
  source.addEventListener('state', (event) => {
    const s = JSON.parse(event.data);
    if (s.intervals_from === intervals.length) intervals = intervals.concat(s.intervals);
    render(s);
    if (['done', 'failed', 'cancelled'].includes(s.status)) { source.close(); finished(); }
  });
  // Not in this server's memory (a run of an earlier process): show its record.
  source.onerror = () => { if (source.readyState !== EventSource.OPEN) { source.close(); finished().catch((e) => { status.textContent = e.message; }); } };
}

// ---------- Runs ----------

const dateOf = (s) => new Date(s * 1000).toISOString().slice(0, 16).replace('T', ' ');
const paramsText = (p) => Object.entries(p || {}).map(([k, v]) => `${k}=${typeof v === 'number' ? num(v) : JSON.stringify(v)}`).join(', ') || 'defaults';

let RUNS = [];

function pickedRuns() {
  const ids = [...document.querySelectorAll('#runs-table input.pick:checked')].map((c) => Number(c.value));
  return RUNS.filter((r) => ids.includes(r.id));
}

function runsMessage(text) {
  $('#runs-message').textContent = text;
}

// Adds or removes a tag or run set on the ticked runs, server-side.
async function changeNames(kind, add) {
  const name = $(kind === 'tags' ? '#runs-tag' : '#runs-set').value.trim();
  const runs = pickedRuns();
  if (!name || !runs.length) { runsMessage(`Tick runs and type a ${kind === 'tags' ? 'tag' : 'run set'} first.`); return; }
  try {
    for (const r of runs) {
      const names = add ? [...new Set([...r[kind], name])] : r[kind].filter((n) => n !== name);
      await sendJson('PUT', `/api/runs/${r.id}/tags`, { tags: r.tags, sets: r.sets, [kind]: names });
    }
    runsMessage('');
  } catch (e) { runsMessage(e.message); }
  await showRuns();
}

async function deletePicked() {
  const runs = pickedRuns();
  if (!runs.length) { runsMessage('Tick the runs to delete first.'); return; }
  if (!confirm(`Delete ${runs.length} run record(s) (${runs.map((r) => r.id).join(', ')})? This cannot be undone.`)) return;
  const problems = [];
  for (const r of runs) {
    try { await api(`/api/runs/${r.id}`, { method: 'DELETE' }); } catch (e) { problems.push(`run ${r.id}: ${e.message}`); }
  }
  runsMessage(problems.join('\n'));
  await showRuns();
}

async function showRuns() {
  RUNS = (await api('/api/runs')).runs.map((r) => ({ ...r, tags: r.tags || [], sets: r.sets || [] }));
  const sets = [...new Set(RUNS.flatMap((r) => r.sets))].sort();
  const filter = $('#runs-filter');
  const chosen = filter.value;
  filter.replaceChildren(el('option', { value: '' }, 'all runs'), ...sets.map((s) => el('option', { value: s }, `run set: ${s}`)));
  filter.value = sets.includes(chosen) ? chosen : '';
  const shown = RUNS.filter((r) => !filter.value || r.sets.includes(filter.value)).slice().reverse();
  const chips = (names, cls) => el('span', {}, names.map((n) => el('span', { class: cls }, n)));
  const rows = shown.map((r) => [
    el('input', { type: 'checkbox', class: 'pick', value: r.id, 'aria-label': `select run ${r.id}` }),
    r.id, { show: dateOf(r.submitted_unix_s), value: dateOf(r.submitted_unix_s) }, r.label, r.status, r.workload,
    paramsText(r.params), r.ipa, r.storage, r.seed ?? null,
    { show: r.sim_time_s === null ? '–' : `${num(r.warmup_s)} + ${num(r.sim_time_s)}`, value: r.sim_time_s },
    r.wall_seconds ?? null, r.throughput_tps ?? null,
    { show: chips(r.tags, 'tag'), value: r.tags.join(' ') }, { show: chips(r.sets, 'set'), value: r.sets.join(' ') },
    el('span', {}, el('a', { href: `#live/${r.id}` }, 'live'), ' ', r.has_device ? el('a', { href: `#device/${r.id}` }, 'device') : '', ' ', r.has_analysis ? el('a', { href: `#analyzer/${r.id}` }, 'analyzer') : ''),
  ]);
  const table = dataTable('runs', ['', 'id', 'date (UTC)', 'label', 'status', 'workload', 'scale', 'IPA scheme', 'storage', 'seed',
    'warm-up + measured [sim s]', 'duration [wall s]', 'throughput [tps]', 'tags', 'run sets', 'open'], rows);
  const all = el('input', { type: 'checkbox', id: 'pick-all', 'aria-label': 'select all shown', onchange: () => {
    for (const c of table.querySelectorAll('input.pick')) c.checked = all.checked;
  } });
  table.querySelector('th').replaceChildren(all);
  $('#runs-table').replaceChildren(table);
}

function compareSelected() {
  const ids = pickedRuns().map((r) => r.id).sort((a, b) => a - b);
  if (ids.length) location.hash = `#compare/${ids.join(',')}`;
  else runsMessage('Tick the runs to compare first (the first ticked by id is the baseline).');
}

// ---------- Compare ----------

const TABLE7 = [
  ['throughput [tps]', 'throughput_tps'], ['host reads [pages]', 'host_reads'], ['host writes [pages]', 'host_writes'],
  ['out-of-place writes [pages]', 'out_of_place_writes'], ['in-place appends [pages]', 'in_place_appends'], ['GC page migrations [pages]', 'gc_page_migrations'],
  ['GC erases [blocks]', 'gc_erases'], ['GC migrations per host write', 'gc_migrations_per_host_write'], ['GC erases per host write', 'gc_erases_per_host_write'],
  ['write amplification [programs per host write]', 'write_amplification'], ['read latency mean [ms]', 'read_latency_ms'], ['write latency mean [ms]', 'write_latency_ms'],
  ['read latency p50 [ms]', 'read_latency_p50_ms'], ['read latency p99 [ms]', 'read_latency_p99_ms'],
  ['write latency p50 [ms]', 'write_latency_p50_ms'], ['write latency p99 [ms]', 'write_latency_p99_ms'],
];

// The result's latency percentiles (p50, p95, p99, p99.9 …) of transactions, reads and
// writes that the Table 7 list does not name, so that whatever the result has shows.
function latencyRows(result) {
  const named = new Set(TABLE7.map(([, k]) => k));
  return Object.keys(result).filter((k) => /^(transaction|read|write)_latency_p\d+_ms$/.test(k) && !named.has(k))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
    .map((k) => {
      const [, what, p] = k.match(/^(\w+?)_latency_p(\d+)_ms$/);
      const q = p.length > 2 ? `${p.slice(0, 2)}.${p.slice(2)}` : p;
      return [`${what} latency p${q} [ms]`, k];
    });
}

// Per transaction type latencies where the result has them: under a key naming types
// (`…type…`), an object of types (or a list of objects with a name) whose entries
// carry `…latency…` numbers.
function perTypeLatency(result) {
  for (const [key, v] of Object.entries(result).filter(([k]) => /type/.test(k))) {
    const entries = Array.isArray(v) ? v.filter((x) => x && typeof x === 'object').map((x) => [x.name ?? x.type ?? '', x])
      : v && typeof v === 'object' ? Object.entries(v) : [];
    if (!entries.length || !entries.every(([, x]) => x && typeof x === 'object' && Object.keys(x).some((k) => /latency/.test(k)))) continue;
    const columns = [...new Set(entries.flatMap(([, x]) => Object.keys(x).filter((k) => typeof x[k] === 'number')))];
    return { key, columns, rows: entries.map(([name, x]) => [name, ...columns.map((c) => x[c] ?? null)]) };
  }
  return null;
}

const label = (key) => key.replace(/_ms$/, ' [ms]').replace(/_pct$/, ' [%]').replace(/_tps$/, ' [tps]').replace(/_/g, ' ');

async function showCompare(arg) {
  const body = $('#compare-body');
  const ids = (arg || '').split(',').filter((s) => /^\d+$/.test(s));
  if (!ids.length) { body.replaceChildren(el('p', {}, 'Pick runs on the Runs page.')); return; }
  const records = await Promise.all(ids.map((id) => api(`/api/runs/${id}`)));
  const done = records.filter((r) => r.result);
  if (!done.length) { body.replaceChildren(el('p', {}, 'None of these runs has a result yet.')); return; }
  const base = done[0].result;
  const name = (r) => `${r.id} ${r.label}`;
  const metrics = [...TABLE7, ...latencyRows(base), ['database [MiB]', 'database_mib'], ['space overhead [%]', 'space_overhead_pct']];
  const rows = metrics.map(([title, key]) => [title, base[key] ?? null, ...done.slice(1).map((r) => {
    const v = r.result[key], b = base[key];
    if (typeof v !== 'number' || typeof b !== 'number' || b === 0) return { show: '–', value: null };
    const rel = +((v / b - 1) * 100).toPrecision(3);
    return { show: pct(rel), value: rel };
  })]);
  const columns = ['metric', `${name(done[0])} (baseline, absolute)`, ...done.slice(1).map((r) => `${name(r)} (relative to baseline) [%]`)];
  // Per host write: one panel per metric with its own y scale (WA near 1 beside GC
  // ratios near 0.01), every run in its colour.
  const ratios = [['GC migrations per host write', 'gc_migrations_per_host_write', 'migrations per host write'], ['GC erases per host write', 'gc_erases_per_host_write', 'erases per host write'], ['Write amplification', 'write_amplification', 'programs per host write']];
  const runSeries = (f) => done.map((r) => ({ name: name(r), values: [f(r)] }));
  const panels = ratios.map(([title, key, unit], k) => chartBox(k ? `per-host-write-${key}` : 'per-host-write', (o) => Charts.barChart({ title, categories: [''], series: runSeries((r) => r.result[key]), xLabel: 'run (see legend)', yLabel: unit, ...o })));
  const shares = chartBox('host-writes', (o) => Charts.barChart({ title: 'Host page writes (whole run)', categories: ['out-of-place', 'in-place appends'], series: done.map((r) => ({ name: name(r), values: [r.result.out_of_place_writes, r.result.in_place_appends] })), xLabel: 'kind of write', yLabel: 'pages', ...o }), { log: true });
  const overlay = (key) => done.map((r) => ({ name: name(r), points: (r.intervals || []).map((i) => [i.sim_seconds, i[key]]) }));
  const over = (boxName, title, key, yLabel, log) => chartBox(boxName, (o) => Charts.lineChart({ title, series: overlay(key), xLabel: SIM_TIME, yLabel, ...o }), { log });
  const types = done.map((r) => [r, perTypeLatency(r.result)]).filter(([, t]) => t);
  body.replaceChildren(
    el('p', {}, `Table 7 layout: the first run absolute, the others in percent of it. Runs: ${done.map(name).join(', ')}.`),
    dataTable('compare', columns, rows),
    ...types.map(([r, t]) => el('div', {}, el('h3', {}, `Latency per transaction type, run ${name(r)}`), dataTable(`latency-per-type-${r.id}`, ['transaction type', ...t.columns.map(label)], t.rows))),
    grid(panels, shares,
      over('throughput-overlay', 'Throughput per interval', 'throughput_tps', 'throughput [tps]', false),
      over('read-p99-overlay', 'Page read latency p99 per interval', 'read_latency_p99_ms', 'latency [ms]', true),
      over('write-p99-overlay', 'Page write latency p99 per interval', 'write_latency_p99_ms', 'latency [ms]', true),
      over('transaction-p99-overlay', 'Transaction latency p99 per interval', 'transaction_latency_p99_ms', 'latency [ms]', true)));
}

// ---------- Analyzer ----------

function svgBox(name, markup) {
  const holder = el('div');
  holder.innerHTML = markup;
  const svg = holder.querySelector('svg');
  if (!svg) return el('p', {}, 'no plot');
  svg.classList.add('chart', 'advisor-plot');
  return chartBox(name, () => svg);
}

// Column titles for the advisor's keys; any other key reads as its words.
const COLUMN_TITLES = {
  name: 'object', kind: 'kind', table: 'table', pages: 'pages', updates: 'updates (log records)', evictions: 'evictions (page writes)',
  reads: 'reads', read_write_ratio: 'reads per write', changed_bytes_per_eviction_mean: 'changed bytes per eviction (mean)',
  ipa_share: 'share of writes as in-place appends', gc_reduction: 'GC reduction (share)', space_overhead_page_pct: 'space overhead per page [%]',
  space_overhead_db_pct: 'space overhead of the database [%]', predicted_appends: 'predicted appends', in_ipa_region: 'in the IPA region',
  why: 'why', scheme: 'IPA scheme N×M', n: 'N', m: 'M', v: 'V', mode: 'IPA mode', global_mode: 'IPA mode of global IPA',
  ipa_chips: 'chips of the IPA region', tables: 'Per table',
};
// The advisor's columns in reading order: what the object is, how it is used, then
// the skew and the fits; keys not named here follow in their own order.
const COLUMN_ORDER = ['name', 'table', 'kind', 'pages', 'reads', 'updates', 'evictions', 'read_write_ratio', 'changed_bytes_per_eviction_mean'];
const columnRank = (key) => {
  const k = COLUMN_ORDER.indexOf(key);
  const hot = key.match(/^skew\.hottest_(\d+)_pct$/);
  if (k >= 0) return k;
  if (hot) return 100 + hot[1] / 1000; // 1%, 10%, 20%
  return key.startsWith('skew.') ? 100 : key.startsWith('fits.') ? 200 : 300;
};
function columnTitle(key) {
  if (COLUMN_TITLES[key]) return COLUMN_TITLES[key];
  const hot = key.match(/^skew\.hottest_(\d+)_pct$/);
  if (hot) return `updates on hottest ${hot[1]}% of pages (share)`;
  const fit = key.match(/^fits\.(\d+)x(\d+)$/);
  if (fit) return `evictions fitting ${fit[1]}×${fit[2]} (share)`;
  return key.replace(/\./g, ': ').replace(/_pct\b/g, ' [%]').replace(/_ms\b/g, ' [ms]').replace(/_/g, ' ');
}

// An object's fields as flat columns: scalars as they are, an object of scalars as
// `key.sub`, a list of [name, number] pairs (the fits) as `key.name`; other lists (the
// histograms, drawn in the plots) are left out.
function flatten(o) {
  const out = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === null || typeof v !== 'object') out[k] = v;
    else if (Array.isArray(v)) {
      if (v.length && v.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string')) for (const [n, x] of v) out[`${k}.${n}`] = x;
    } else if (Object.values(v).every((x) => x === null || typeof x !== 'object')) for (const [n, x] of Object.entries(v)) out[`${k}.${n}`] = x;
  }
  return out;
}

// A table of objects: every flat column that any of them has, `name` first.
function objectTable(name, objects) {
  const flat = objects.map(flatten);
  const keys = [...new Set(flat.flatMap((f) => Object.keys(f)))].sort((a, b) => columnRank(a) - columnRank(b));
  const show = (v) => (typeof v === 'boolean' ? (v ? 'yes' : 'no') : v === undefined ? null : v);
  return dataTable(name, keys.map(columnTitle), flat.map((f) => keys.map((k) => show(f[k]))));
}

// The predicted effect: layouts as columns ({selective: {...}, global: {...}}), or one
// value per row when the prediction is flat.
function predictionTable(predicted) {
  const entries = Object.entries(predicted || {});
  if (!entries.length) return el('p', {}, 'no prediction');
  if (entries.every(([, v]) => v && typeof v === 'object' && !Array.isArray(v))) {
    const layouts = entries.map(([k]) => k);
    const metrics = [...new Set(entries.flatMap(([, v]) => Object.keys(flatten(v))))];
    return dataTable('predicted', ['predicted', ...layouts], metrics.map((m) => [columnTitle(m), ...entries.map(([, v]) => flatten(v)[m] ?? null)]));
  }
  return dataTable('predicted', ['predicted', 'value'], Object.entries(flatten(predicted)).map(([k, v]) => [columnTitle(k), v]));
}

async function showAnalyzer(arg) {
  const body = $('#analyzer-body');
  const id = arg || (await newestRun((r) => r.has_analysis));
  if (id === null) return;
  const record = await api(`/api/runs/${id}`);
  const a = record.analysis;
  if (!a) {
    body.replaceChildren(el('p', {}, `Run ${id} has no analysis: ${record.analysis_error || 'only baselines without IPA (one region, NoFTL) are analysed.'}`));
    return;
  }
  const rec = a.recommendation || {};
  const reasoning = a.reasoning || rec.reasoning || [];
  const predicted = a.predicted || rec.predicted || Object.fromEntries(Object.entries(rec).filter(([, v]) => v && typeof v === 'object' && !Array.isArray(v)));
  const scalars = Object.entries(rec).filter(([, v]) => v === null || typeof v !== 'object');
  const lists = Object.entries(rec).filter(([, v]) => Array.isArray(v) && v.length && v.every((x) => x && typeof x === 'object'));
  const start = (config, label) => postJson('/api/runs', { label, config }).then(({ id: nid }) => { location.hash = `#live/${nid}`; }).catch((e) => showError($('#analyzer-error'), e));
  body.replaceChildren(
    el('p', {}, `Run ${id} (${record.label}): per-object statistics from the log and the engine's counters; click a column to sort.`),
    objectTable('objects', a.objects || []),
    grid(svgBox('update-size-cdf', a.cdf_svg || ''), svgBox('skew', a.skew_svg || '')),
    el('h3', {}, 'Recommendation'),
    scalars.length ? dataTable('recommendation', ['setting', 'value'], scalars.map(([k, v]) => [columnTitle(k), v])) : '',
    el('h3', {}, 'Reasoning'),
    el('ol', { id: 'reasoning' }, reasoning.map((r) => el('li', {}, r))),
    el('h3', {}, 'Predicted effect'),
    predictionTable(predicted),
    ...lists.map(([k, v]) => el('div', {}, el('h3', {}, columnTitle(k)), objectTable(`recommendation-${k}`, v))),
    el('h3', {}, 'Advised layout'),
    el('pre', { id: 'recommended-ddl' }, a.ddl || ''),
    el('button', { id: 'run-selective', disabled: !a.selective_config, onclick: () => start(a.selective_config, `selective IPA (advised on run ${id})`) }, 'Run the advised layout'),
    ' ',
    el('button', { id: 'run-global', disabled: !a.global_config, onclick: () => start(a.global_config, `global IPA (advised on run ${id})`) }, 'Run global IPA'),
    el('div', { id: 'analyzer-error', class: 'error', hidden: true }));
}

// ---------- Device ----------

const stateSeries = (pairs, values) => pairs.map(([name, key]) => ({ name, colour: Charts.STATE_COLOURS[name], values: values(key) }));

async function showDevice(arg) {
  const body = $('#device-body');
  const id = arg || (await newestRun((r) => r.has_device));
  if (id === null) return;
  const record = await api(`/api/runs/${id}`);
  const d = record.device;
  if (!d) { body.replaceChildren(el('p', {}, `Run ${id} has no device snapshot${record.device_error ? ': ' + record.device_error : ' (it did not finish)'}.`)); return; }
  const bpc = d.blocks_per_chip;
  const erases = (c, b) => d.erase_counts[c * bpc + b];
  // A colour scale per region (a log region erased far more does not wash out the data
  // regions); chips outside every region share one.
  const scaleOf = (name, chips) => {
    const values = chips.flatMap((c) => d.erase_counts.slice(c * bpc, (c + 1) * bpc));
    return { name, chips, lo: values.length ? Math.min(...values) : 0, hi: values.length ? Math.max(...values) : 0 };
  };
  const scales = d.regions.map((r) => scaleOf(`region ${r.name}`, r.chips));
  const covered = new Set(d.regions.flatMap((r) => r.chips));
  const rest = [...Array(d.chips).keys()].filter((c) => !covered.has(c));
  if (rest.length) scales.push(scaleOf(d.regions.length ? 'no region' : 'all chips', rest));
  const bp = d.block_pages || {};
  const tip = (c, b) => {
    const at = c * bpc + b;
    const pages = bp.valid && bp.valid.length ? `valid ${num(bp.valid[at])}, appended ${num(bp.appended[at])}, invalid ${num(bp.invalid[at])} pages` : 'page states not known (no NoFTL region layout)';
    return `chip ${c}, block ${b}: ${num(erases(c, b))} erases; ${pages}`;
  };
  const heat = chartBox('erase-heat-map', () => Charts.heatMap({ title: `Erase count per block (run ${id}), colour scale per region`, chips: d.chips, blocks: bpc, value: erases, scales, tip }));
  // Per chip: the states add up to the chip's pages; "programmed" only where no NoFTL
  // region covers the chip (an FTL's valid and invalid pages are not told apart).
  const chipPages = d.chip_pages || [];
  const STATES = [['free', 'free_pages'], ['valid', 'valid_pages'], ['appended', 'appended_pages'], ['invalid', 'invalid_pages'], ['unused', 'unused_pages'], ['programmed', 'programmed_pages']];
  const shown = STATES.filter(([, key]) => key !== 'programmed_pages' || chipPages.some((c) => c[key] > 0));
  const perChip = chartBox('chip-page-states', () => Charts.stackedBarChart({ title: 'Page states per chip', categories: chipPages.map((c) => String(c.chip)),
    series: stateSeries(shown, (key) => chipPages.map((c) => c[key])), xLabel: 'chip', yLabel: 'pages' }));
  const REGION_STATES = [['free', 'free_pages'], ['valid', 'valid_pages'], ['invalid', 'invalid_pages'], ['trim records', 'tombstone_pages']];
  const perRegion = chartBox('page-states', () => Charts.stackedBarChart({ title: 'Page states per region', categories: d.regions.map((r) => r.name),
    series: stateSeries(REGION_STATES, (key) => d.regions.map((r) => r[key])), xLabel: 'region', yLabel: 'pages' }));
  const chipRows = chipPages.map((c) => [c.chip, ...shown.map(([, key]) => c[key])]);
  const regionRows = d.regions.map((r) => [r.name, r.chips.join(' '), r.ipa_mode, r.free_pages, r.valid_pages, r.invalid_pages, r.tombstone_pages, r.erase_min, r.erase_max]);
  const appended = record.result && record.result.regions ? Object.entries(record.result.regions).map(([name, c]) => [name, c.host_write_deltas ?? null, c.host_writes ?? null, c.gc_page_migrations ?? null, c.gc_erases ?? null]) : [];
  body.replaceChildren(
    el('p', {}, `${d.chips} chips × ${d.blocks_per_chip} blocks of ${d.pages_per_block} pages.` + (d.note ? ` ${d.note}.` : '') + ' Hover the heat map for a block\'s pages.'),
    grid(heat, chipPages.length ? perChip : '', d.regions.length ? perRegion : ''),
    chipPages.length ? dataTable('chips', ['chip', ...shown.map(([label]) => `${label} [pages]`)], chipRows) : '',
    dataTable('regions', ['region', 'chips', 'IPA mode', 'free [pages]', 'valid [pages]', 'invalid [pages]', 'trim records [pages]', 'erases min', 'erases max'], regionRows),
    appended.length ? dataTable('appends', ['region', 'in-place appends [pages]', 'out-of-place writes [pages]', 'GC migrations [pages]', 'GC erases [blocks]'], appended) : '');
}

// ---------- start ----------

async function main() {
  try {
    META = await api('/api/meta');
  } catch (e) {
    document.body.prepend(el('div', { class: 'error' }, `The server does not answer: ${e.message}`));
    return;
  }
  setupForm();
  $('#compare-selected').addEventListener('click', compareSelected);
  $('#runs-filter').addEventListener('change', showRuns);
  $('#tag-add').addEventListener('click', () => changeNames('tags', true));
  $('#tag-remove').addEventListener('click', () => changeNames('tags', false));
  $('#set-add').addEventListener('click', () => changeNames('sets', true));
  $('#set-remove').addEventListener('click', () => changeNames('sets', false));
  $('#delete-selected').addEventListener('click', deletePicked);
  window.addEventListener('hashchange', route);
  route();
  document.body.dataset.ready = 'true';
}

main();
