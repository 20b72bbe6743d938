// DeltaFlash dashboard: the single page. Pages are chosen by the URL hash
// (#new, #live/ID, #runs, #compare/ID,ID, #analyzer/ID, #device/ID); all data comes
// from the server's JSON API, and every table and chart carries its export buttons.
'use strict';

const $ = (sel, root = document) => root.querySelector(sel);
let META = null;
let liveSource = null;

// ---------- helpers ----------

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'onclick') e.addEventListener('click', v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
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

function postJson(path, value) {
  return api(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(value) });
}

const num = (v, digits = 2) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(digits)) : v ?? '–');

function csvOf(columns, rows) {
  const cell = (v) => {
    const s = v === null || v === undefined ? '' : String(v);
    return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  };
  return [columns.map(cell).join(','), ...rows.map((r) => r.map(cell).join(','))].join('\n') + '\n';
}

// A table with CSV and JSON export. rows: arrays of cells (strings, numbers or Nodes).
function dataTable(name, columns, rows) {
  const plain = rows.map((r) => r.map((c) => (c instanceof Node ? c.textContent : c)));
  const json = plain.map((r) => Object.fromEntries(columns.map((c, i) => [c, r[i]])));
  const bar = el('div', { class: 'exports' },
    el('button', { class: 'export-csv', 'data-name': name, onclick: () => Charts.download(name + '.csv', new Blob([csvOf(columns, plain)], { type: 'text/csv' })) }, 'CSV'),
    el('button', { class: 'export-json', 'data-name': name, onclick: () => Charts.download(name + '.json', new Blob([JSON.stringify(json, null, 2)], { type: 'application/json' })) }, 'JSON'));
  const table = el('table', { class: 'data', 'data-name': name },
    el('thead', {}, el('tr', {}, columns.map((c) => el('th', {}, c)))),
    el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c) => el('td', {}, c))))));
  return el('div', { class: 'table-box' }, bar, table);
}

// A chart with SVG and PNG export.
function chartBox(name, svg) {
  return el('figure', { class: 'chart-box', 'data-name': name },
    svg,
    el('div', { class: 'exports' },
      el('button', { class: 'export-svg', onclick: () => Charts.exportSvg(svg, name) }, 'SVG'),
      el('button', { class: 'export-png', onclick: () => Charts.exportPng(svg, name) }, 'PNG')));
}

function showError(box, error) {
  box.hidden = false;
  box.textContent = error.message || String(error);
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

const HOT_TABLES = { tpcb: ['branch', 'teller', 'account'], tpcc: ['warehouse', 'district', 'customer', 'stock'], tatp: ['subscriber', 'special_facility'] };

function selectedPreset() {
  return META.device_presets.find((p) => p.name === $('#f-preset').value) || META.device_presets[0];
}

function selectiveDdl(workload) {
  const w = META.workloads.find((x) => x.name === workload);
  const hot = HOT_TABLES[workload] || (w ? w.tables.slice(0, Math.ceil(w.tables.length / 2)) : []);
  const chips = +$('#f-chips').value || selectedPreset().chips;
  const free = Math.max(2, chips - Math.max(1, Math.floor(chips / 4)) - 1);
  return [
    '-- IPA only for the objects with small updates; the rest without.',
    `CREATE REGION hot (\${IPA}, MAX_CHIPS=${Math.max(1, Math.floor(free / 2))});`,
    ...hot.map((t) => `CREATE TABLESPACE ts_${t} (REGION=hot);`),
    'CREATE REGION cold (IPA_MODE=none);',
    'CREATE TABLESPACE ts_data (REGION=cold);',
  ].join('\n');
}

function applyScenario(name) {
  $('#f-storage').value = 'noftl';
  const set = { baseline: ['0x0', '', 'baseline'], analyzer: ['0x0', '', 'analyzer baseline'], global: ['2x4', '', 'global IPA'], selective: ['2x4', null, 'selective IPA'] }[name];
  $('#f-ipa').value = set[0];
  $('#f-schema').value = set[1] === null ? selectiveDdl($('#f-workload').value) : set[1];
  $("#f-label").value = set[2];
  for (const b of document.querySelectorAll('.scenarios button')) b.classList.toggle('active', b.dataset.scenario === name);
  checkSchema();
}

function formRequest() {
  const f = (id) => $(id).value.trim();
  let params = {};
  const text = f('#f-params');
  if (text) {
    try { params = JSON.parse(text); } catch (e) { throw new Error(`workload parameters: not JSON: ${e.message}`); }
    if (typeof params !== 'object' || Array.isArray(params) || params === null) throw new Error('workload parameters: a JSON object, e.g. {"scale": 1}');
  }
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
  return {
    label: f('#f-label'),
    config: {
      seed: number('#f-seed', 'seed'),
      device,
      storage: storage ? storage.config : 'noftl',
      engine,
      workload: { name: f('#f-workload'), ...params },
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
    for (const ipa of schemes.slice(1)) await postJson('/api/validate', { ...request, config: { ...request.config, engine: { ...request.config.engine, ipa } } });
    const ids = [];
    for (const ipa of schemes) {
      const label = schemes.length > 1 ? `${request.label} [${ipa}]`.trim() : request.label;
      ids.push((await postJson('/api/runs', { label, config: { ...request.config, engine: { ...request.config.engine, ipa } } })).id);
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
  const params = () => {
    const w = META.workloads.find((x) => x.name === $('#f-workload').value);
    const small = { tpcb: { scale: 1 }, tpcc: { warehouses: 1 }, tatp: { subscribers: 10000 } }[w.name];
    const p = {};
    for (const [k, v] of Object.entries(small || {})) if (k in w.defaults) p[k] = v;
    $('#f-params').value = JSON.stringify(Object.keys(p).length ? p : {});
  };
  $('#f-workload').addEventListener('change', params);
  params();
  // The selective layout follows the workload's tables and the device's chips.
  for (const id of ['#f-workload', '#f-preset', '#f-chips']) {
    $(id).addEventListener('change', () => {
      if ($('.scenarios button.active[data-scenario="selective"]')) $('#f-schema').value = selectiveDdl($('#f-workload').value);
    });
  }
  for (const s of META.scenarios) {
    $('#scenarios').append(el('button', { type: 'button', 'data-scenario': s.name, title: s.about, onclick: () => applyScenario(s.name) }, s.title));
  }
  $('#scenarios').append(el('span', { class: 'hint' }, META.analyzer ? 'Baseline runs are analysed by the IPA advisor.' : 'The analyzer is not available in this server.'));
  $('#f-schema').addEventListener('input', checkSchema);
  $('#run-form').addEventListener('submit', submitRun);
}

// ---------- Live ----------

function intervalCharts(intervals) {
  const pts = (key) => intervals.map((i) => [i.sim_seconds, i[key]]);
  return [
    chartBox('throughput', Charts.lineChart({ title: 'Throughput', series: [{ name: 'tps', points: pts('throughput_tps') }], xLabel: 'simulated s', yLabel: 'tps' })),
    ...['read', 'write'].map((io) => chartBox(`${io}-latency`, Charts.lineChart({ title: `Page ${io} latency per interval`, series: [
      { name: 'p99', points: pts(`${io}_latency_p99_ms`) }, { name: 'p50', points: pts(`${io}_latency_p50_ms`) }, { name: 'mean', points: pts(`${io}_latency_ms`) }], xLabel: 'simulated s', yLabel: 'ms' }))),
    chartBox('transaction-latency', Charts.lineChart({ title: 'Transaction latency per interval', series: [
      { name: 'p99', points: pts('transaction_latency_p99_ms') }, { name: 'p50', points: pts('transaction_latency_p50_ms') }], xLabel: 'simulated s', yLabel: 'ms' })),
    chartBox('writes', Charts.lineChart({ title: 'Page writes per interval', series: [{ name: 'out-of-place', points: pts('out_of_place_writes') }, { name: 'in-place appends', points: pts('in_place_appends') }, { name: 'GC migrations', points: pts('gc_page_migrations') }], xLabel: 'simulated s', yLabel: 'pages' })),
    chartBox('gc-write-amplification', Charts.lineChart({ title: 'Data-region write amplification per interval', series: [{ name: '(host + GC) / host', points: intervals.map((i) => {
      const host = i.out_of_place_writes + i.in_place_appends;
      return [i.sim_seconds, host ? (host + i.gc_page_migrations) / host : NaN];
    }) }], xLabel: 'simulated s', yLabel: 'page writes per host write' })),
    chartBox('erases', Charts.lineChart({ title: 'GC erases so far', series: [{ name: 'erases', points: pts('gc_erases_so_far') }], xLabel: 'simulated s', yLabel: 'erases' })),
  ];
}

function tiles(pairs) {
  return pairs.map(([k, v]) => el('div', { class: 'tile' }, el('span', {}, k), el('b', {}, v)));
}

function resultTiles(r) {
  return tiles([
    ['throughput [tps]', num(r.throughput_tps, 1)], ['host writes', num(r.host_writes)], ['in-place appends', num(r.in_place_appends)],
    ['out-of-place writes', num(r.out_of_place_writes)], ['GC migrations', num(r.gc_page_migrations)], ['GC erases', num(r.gc_erases)],
    ['WAF', num(r.write_amplification, 3)], ['read latency [ms]', num(r.read_latency_ms, 3)], ['write latency [ms]', num(r.write_latency_ms, 3)],
    ['read p99 [ms]', num(r.read_latency_p99_ms, 3)], ['write p99 [ms]', num(r.write_latency_p99_ms, 3)], ['transaction p99 [ms]', num(r.transaction_latency_p99_ms, 3)],
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
  const render = (s) => {
    bar.style.width = `${Math.round((s.progress || 0) * 100)}%`;
    bar.parentElement.dataset.progress = String(s.progress || 0);
    const eta = s.eta_s === null || s.eta_s === undefined ? '' : ` — ETA ${Math.ceil(s.eta_s)} s`;
    status.textContent = `${s.label}: ${s.status} (${s.phase}) — ${num(s.sim_seconds, 1)} / ${num(s.total_sim_seconds, 1)} simulated s${eta}` + (s.error ? ` — ${s.error}` : '');
    status.dataset.status = s.status;
    tileBox.replaceChildren(...tiles([['throughput now [tps]', num(s.throughput_tps, 1)], ['transactions', num(s.transactions)], ['interval lines', intervals.length], ['wall s', num(s.wall_s, 1)]]));
    charts.replaceChildren(...intervalCharts(intervals));
    charts.dataset.points = String(intervals.length);
    cancel.hidden = ['done', 'failed', 'cancelled'].includes(s.status);
  };
  const finished = async () => {
    const record = await api(`/api/runs/${id}`);
    intervals = record.intervals || intervals;
    status.textContent = `${record.label}: ${record.status}` + (record.error ? ` — ${record.error}` : '');
    status.dataset.status = record.status;
    bar.style.width = record.status === 'done' ? '100%' : bar.style.width;
    cancel.hidden = true;
    charts.replaceChildren(...intervalCharts(intervals));
    charts.dataset.points = String(intervals.length);
    const links = el('p', {}, el('a', { href: `#compare/${id}` }, 'Compare'), ' · ', el('a', { href: `#device/${id}` }, 'Device'),
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

async function showRuns() {
  const { runs } = await api('/api/runs');
  const rows = runs.slice().reverse().map((r) => [
    el('input', { type: 'checkbox', class: 'pick', value: r.id, 'aria-label': `select run ${r.id}` }),
    r.id, r.label, r.status, r.workload, r.storage, r.ipa, r.throughput_tps === undefined ? '' : num(r.throughput_tps, 1),
    el('span', {}, el('a', { href: `#live/${r.id}` }, 'live'), ' ', r.has_device ? el('a', { href: `#device/${r.id}` }, 'device') : '', ' ', r.has_analysis ? el('a', { href: `#analyzer/${r.id}` }, 'analyzer') : ''),
  ]);
  $('#runs-table').replaceChildren(dataTable('runs', ['', 'id', 'label', 'status', 'workload', 'storage', 'IPA', 'tps', 'open'], rows));
}

function compareSelected() {
  const ids = [...document.querySelectorAll('#runs-table input.pick:checked')].map((c) => c.value).sort((a, b) => a - b);
  if (ids.length) location.hash = `#compare/${ids.join(',')}`;
}

// ---------- Compare ----------

const TABLE7 = [
  ['throughput [tps]', 'throughput_tps'], ['host reads', 'host_reads'], ['host writes', 'host_writes'],
  ['out-of-place writes', 'out_of_place_writes'], ['in-place appends', 'in_place_appends'], ['GC page migrations', 'gc_page_migrations'],
  ['GC erases', 'gc_erases'], ['GC migrations per host write', 'gc_migrations_per_host_write'], ['GC erases per host write', 'gc_erases_per_host_write'],
  ['write amplification', 'write_amplification'], ['read latency [ms]', 'read_latency_ms'], ['write latency [ms]', 'write_latency_ms'],
  ['read latency p50 [ms]', 'read_latency_p50_ms'], ['read latency p99 [ms]', 'read_latency_p99_ms'],
  ['write latency p50 [ms]', 'write_latency_p50_ms'], ['write latency p99 [ms]', 'write_latency_p99_ms'],
  ['transaction latency p50 [ms]', 'transaction_latency_p50_ms'], ['transaction latency p99 [ms]', 'transaction_latency_p99_ms'],
  ['database [MiB]', 'database_mib'], ['space overhead [%]', 'space_overhead_pct'],
];

async function showCompare(arg) {
  const body = $('#compare-body');
  const ids = (arg || '').split(',').filter((s) => /^\d+$/.test(s));
  if (!ids.length) { body.replaceChildren(el('p', {}, 'Pick runs on the Runs page.')); return; }
  const records = await Promise.all(ids.map((id) => api(`/api/runs/${id}`)));
  const done = records.filter((r) => r.result);
  if (!done.length) { body.replaceChildren(el('p', {}, 'None of these runs has a result yet.')); return; }
  const base = done[0].result;
  const name = (r) => `${r.id} ${r.label}`;
  const rows = TABLE7.map(([title, key]) => [title, num(base[key], 3), ...done.slice(1).map((r) => {
    const v = r.result[key], b = base[key];
    if (typeof v !== 'number') return '–';
    if (!b) return num(v, 3);
    const pct = (v / b - 1) * 100;
    return `${pct >= 0 ? '+' : ''}${pct.toFixed(1)}%`;
  })]);
  const columns = ['metric', `${name(done[0])} (baseline, absolute)`, ...done.slice(1).map((r) => `${name(r)} (relative to baseline)`)];
  const ratios = [['GC migr./host write', 'gc_migrations_per_host_write'], ['GC erases/host write', 'gc_erases_per_host_write'], ['WAF', 'write_amplification']];
  const bars = Charts.barChart({ title: 'Per host write', categories: ratios.map((r) => r[0]), series: done.map((r) => ({ name: name(r), values: ratios.map(([, k]) => r.result[k]) })) });
  const shares = Charts.barChart({ title: 'Host writes', categories: ['out-of-place', 'in-place appends'], series: done.map((r) => ({ name: name(r), values: [r.result.out_of_place_writes, r.result.in_place_appends] })) });
  const overlay = (key) => done.map((r) => ({ name: name(r), points: (r.intervals || []).map((i) => [i.sim_seconds, i[key]]) }));
  const tps = Charts.lineChart({ title: 'Throughput over time', series: overlay('throughput_tps'), xLabel: 'simulated s', yLabel: 'tps' });
  const p99 = (io) => Charts.lineChart({ title: `Page ${io} latency p99 over time`, series: overlay(`${io}_latency_p99_ms`), xLabel: 'simulated s', yLabel: 'ms' });
  body.replaceChildren(
    el('p', {}, `Table 7 layout: the first run absolute, the others in percent of it. Runs: ${done.map(name).join(', ')}.`),
    dataTable('compare', columns, rows), chartBox('per-host-write', bars), chartBox('host-writes', shares), chartBox('throughput-overlay', tps),
    chartBox('read-p99-overlay', p99('read')), chartBox('write-p99-overlay', p99('write')));
}

// ---------- Analyzer ----------

function svgBox(name, markup) {
  const holder = el('div');
  holder.innerHTML = markup;
  const svg = holder.querySelector('svg');
  return svg ? chartBox(name, svg) : el('p', {}, 'no plot');
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
  const objects = a.objects || [];
  const scalar = objects.length ? Object.keys(objects[0]).filter((k) => objects.every((o) => typeof o[k] !== 'object')) : [];
  const start = (config, label) => postJson('/api/runs', { label, config }).then(({ id: nid }) => { location.hash = `#live/${nid}`; }).catch((e) => showError($('#analyzer-error'), e));
  body.replaceChildren(
    el('p', {}, `Run ${id} (${record.label}): per-object statistics from the log and the engine's counters.`),
    dataTable('objects', scalar, objects.map((o) => scalar.map((k) => num(o[k], 3)))),
    svgBox('update-size-cdf', a.cdf_svg || ''), svgBox('skew', a.skew_svg || ''),
    el('h3', {}, 'Recommended layout'),
    el('pre', { id: 'recommended-ddl' }, a.ddl || ''),
    el('button', { id: 'run-selective', onclick: () => start(a.selective_config, `selective IPA (advised on run ${id})`) }, 'Run the recommended layout'),
    ' ',
    el('button', { id: 'run-global', onclick: () => start(a.global_config, `global IPA (advised on run ${id})`) }, 'Run global IPA'),
    el('div', { id: 'analyzer-error', class: 'error', hidden: '' }));
}

// ---------- Device ----------

async function showDevice(arg) {
  const body = $('#device-body');
  const id = arg || (await newestRun((r) => r.has_device));
  if (id === null) return;
  const record = await api(`/api/runs/${id}`);
  const d = record.device;
  if (!d) { body.replaceChildren(el('p', {}, `Run ${id} has no device snapshot${record.device_error ? ': ' + record.device_error : ' (it did not finish)'}.`)); return; }
  const rows = [];
  for (let c = 0; c < d.chips; c++) rows.push({ name: `chip ${c}`, cells: d.erase_counts.slice(c * d.blocks_per_chip, (c + 1) * d.blocks_per_chip) });
  const heat = Charts.heatMap({ title: `Erase count per block (run ${id})`, rows });
  const regionRows = d.regions.map((r) => [r.name, r.chips.join(' '), r.ipa_mode, r.free_pages, r.valid_pages, r.invalid_pages, r.tombstone_pages, `${r.erase_min}–${r.erase_max}`]);
  const states = Charts.barChart({ title: 'Page states per region', categories: d.regions.map((r) => r.name), series: [
    { name: 'free', values: d.regions.map((r) => r.free_pages) }, { name: 'valid', values: d.regions.map((r) => r.valid_pages) },
    { name: 'invalid', values: d.regions.map((r) => r.invalid_pages) }, { name: 'trim records', values: d.regions.map((r) => r.tombstone_pages) }], yLabel: 'pages' });
  // Per chip: the states add up to the chip's pages; "programmed" only where no NoFTL
  // region covers the chip (an FTL's valid and invalid pages are not told apart).
  const chipPages = d.chip_pages || [];
  const STATES = [['free', 'free_pages'], ['valid', 'valid_pages'], ['appended', 'appended_pages'], ['invalid', 'invalid_pages'], ['unused', 'unused_pages'], ['programmed', 'programmed_pages']];
  const shown = STATES.filter(([, key]) => key !== 'programmed_pages' || chipPages.some((c) => c[key] > 0));
  const perChip = Charts.stackedBarChart({ title: 'Page states per chip', categories: chipPages.map((c) => `chip ${c.chip}`),
    series: shown.map(([label, key]) => ({ name: label, values: chipPages.map((c) => c[key]) })), yLabel: 'pages' });
  const chipRows = chipPages.map((c) => [c.chip, ...shown.map(([, key]) => c[key])]);
  const appended = record.result && record.result.regions ? Object.entries(record.result.regions).map(([name, c]) => [name, c.host_write_deltas ?? '–', c.host_writes ?? '–', c.gc_page_migrations ?? '–', c.gc_erases ?? '–']) : [];
  body.replaceChildren(
    el('p', {}, `${d.chips} chips × ${d.blocks_per_chip} blocks of ${d.pages_per_block} pages.` + (d.note ? ` ${d.note}.` : '')),
    chartBox('erase-heat-map', heat),
    chipPages.length ? chartBox('chip-page-states', perChip) : '',
    chipPages.length ? dataTable('chips', ['chip', ...shown.map(([label]) => label)], chipRows) : '',
    d.regions.length ? chartBox('page-states', states) : '',
    dataTable('regions', ['region', 'chips', 'IPA mode', 'free', 'valid', 'invalid', 'trim records', 'erases min–max'], regionRows),
    appended.length ? dataTable('appends', ['region', 'in-place appends', 'out-of-place writes', 'GC migrations', 'GC erases'], appended) : '');
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
  window.addEventListener('hashchange', route);
  route();
  document.body.dataset.ready = 'true';
}

main();
