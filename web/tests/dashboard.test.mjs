// Browser test of `deltaflash serve`: starts the server on a free port with a fresh
// data directory, drives Debian's chromium through playwright-core, and checks the
// pages a user goes through: a short run whose live chart updates, the compare view
// of two runs with a numeric CSV, the analyzer's full advice, the device heat map with
// its hover, runs tagged, put into a run set, compared and deleted, and an invalid DDL
// shown at its line and column.
//
// Every page is also rendered at 1280 and 390 px wide and checked for what a figure in
// a paper needs: no legend or title text runs out of its chart, no two series of a
// chart share a colour, every axis has a label, the charts use the page's width (none
// narrower than 40% of a 1280 px viewport, together spanning most of it) and nothing
// is wider than a phone's screen. Screenshots of each page at both widths go to
// target/screenshots/ (to $SCREENSHOTS if set: `make screenshots` refreshes the
// README's in docs/figures/).
//
// Environment: DELTAFLASH_BIN (default target/debug/deltaflash), CHROMIUM (default
// /usr/bin/chromium).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const bin = process.env.DELTAFLASH_BIN || join(root, 'target/debug/deltaflash');
const figures = process.env.SCREENSHOTS || join(root, 'target/screenshots');
const data = mkdtempSync(join(tmpdir(), 'deltaflash-dashboard-'));
let server, base, browser, page;
// Runs the tests below make: the analysed baseline and the selective run.
const runs = {};
// A label as long as the ones the dashboard writes itself ("selective IPA (advised on run 1)").
const SELECTIVE_LABEL = 'selective IPA, subscriber table in the IPA region';

// A run that finishes in seconds even in a debug build.
async function fillSmallRun(label, scenario) {
  await page.click(`.scenarios button[data-scenario="${scenario}"]`);
  await page.selectOption('#f-workload', 'tatp');
  await page.waitForSelector('#run-form:not([data-busy])');
  await page.fill('#f-param-subscribers', '1000');
  await page.fill('#f-chips', '8');
  await page.fill('#f-blocks', '32');
  await page.fill('#f-warmup', '0');
  await page.fill('#f-duration', '0.5');
  await page.fill('#f-terminals', '4');
  await page.fill('#f-label', label);
  if (scenario === 'selective') {
    await page.fill('#f-schema', 'CREATE REGION hot (${IPA}, MAX_CHIPS=1);\nCREATE TABLESPACE ts_subscriber (REGION=hot);\nCREATE REGION cold (IPA_MODE=none);\nCREATE TABLESPACE ts_data (REGION=cold);');
  }
}

// A run to its end; `seconds` of measured simulated time (3 s wrap the log several
// times and erase blocks of the IPA region: the heat map has something to show).
async function runToEnd(label, scenario, seconds = 0.5) {
  await page.goto(`${base}/#new`);
  await page.waitForSelector('body[data-ready="true"]');
  await fillSmallRun(label, scenario);
  await page.fill('#f-duration', String(seconds));
  await page.click('#submit-run');
  await page.waitForURL(/#live\/\d+$/);
  await page.waitForSelector('#live-status[data-status="done"]', { timeout: 90_000 });
  await page.waitForSelector('#live-tiles .links');
  return Number(new URL(page.url()).hash.split('/')[1]);
}

// What a figure in a paper needs, on the page shown: a list of problems.
async function layoutProblems(width) {
  return page.evaluate((width) => {
    const problems = [];
    const visible = (e) => e.getClientRects().length > 0 && !e.closest('[hidden]');
    const charts = [...document.querySelectorAll('svg.chart')].filter(visible);
    for (const svg of charts) {
      const name = svg.closest('figure')?.dataset.name || '?';
      const box = svg.getBoundingClientRect();
      if (box.right > width + 1) problems.push(`${name}: the chart is ${Math.round(box.width)} px wide, past the ${width} px screen`);
      if (svg.classList.contains('advisor-plot')) continue; // the advisor's own SVGs
      // Every text: legends, titles, labels, ticks.
      for (const t of svg.querySelectorAll('text')) {
        const r = t.getBoundingClientRect();
        if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) {
          problems.push(`${name}: "${t.textContent.slice(0, 40)}" runs out of its chart`);
        }
      }
      const fills = [...svg.querySelectorAll('.legend .swatch')].map((s) => s.getAttribute('fill').toLowerCase());
      if (new Set(fills).size !== fills.length) problems.push(`${name}: two series share a colour (${fills.join(' ')})`);
      for (const axis of ['x-label', 'y-label']) {
        const label = svg.querySelector(`.${axis}`);
        if (!label || !label.textContent.trim()) problems.push(`${name}: no ${axis.replace('-', ' ')}`);
      }
    }
    const figures = [...document.querySelectorAll('figure.chart-box')].filter(visible);
    if (width >= 1200) {
      for (const f of figures) {
        const w = f.getBoundingClientRect().width;
        if (w < 0.4 * width) problems.push(`${f.dataset.name}: ${Math.round(w)} px wide, under 40% of ${width} px`);
      }
      if (figures.length >= 2) {
        const left = Math.min(...figures.map((f) => f.getBoundingClientRect().left));
        const right = Math.max(...figures.map((f) => f.getBoundingClientRect().right));
        if (right - left < 0.8 * width) problems.push(`the charts span ${Math.round(right - left)} px of ${width} px`);
      }
    }
    if (document.documentElement.scrollWidth > width + 1) problems.push(`the page is ${document.documentElement.scrollWidth} px wide on a ${width} px screen`);
    return problems;
  }, width);
}

// Shows `hash` at `width` px, waits for `ready`, saves a screenshot; the layout's problems.
async function checkPage(hash, ready, shot, width) {
  await page.setViewportSize({ width, height: 900 });
  await page.goto(`${base}/${hash}`);
  await page.reload(); // charts are drawn for the window's width
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForSelector(ready, { timeout: 20_000 });
  const problems = await layoutProblems(width);
  await page.screenshot({ path: join(figures, width >= 1200 ? `${shot}.png` : `${shot}-phone.png`), fullPage: true });
  return problems.map((p) => `${hash} at ${width} px: ${p}`);
}

before(async () => {
  assert.ok(existsSync(bin), `${bin} is missing: cargo build --bin deltaflash`);
  mkdirSync(figures, { recursive: true });
  server = spawn(bin, ['serve', '--port', '0', '--data', data, '--jobs', '2'], { stdio: ['ignore', 'pipe', 'inherit'] });
  base = await new Promise((ok, fail) => {
    let out = '';
    server.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/http:\/\/[\d.:]+/);
      if (m) ok(m[0]);
    });
    server.on('exit', (code) => fail(new Error(`deltaflash serve exited with ${code}`)));
  });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on('pageerror', (e) => { throw e; });
});

after(async () => {
  if (browser) await browser.close();
  if (server && server.exitCode === null) {
    const exited = new Promise((ok) => server.on('exit', ok));
    server.kill('SIGINT');
    await exited;
  }
  rmSync(data, { recursive: true, force: true });
});

test('an invalid region layout is refused at its line and column', async () => {
  await page.goto(`${base}/#new`);
  await page.waitForSelector('body[data-ready="true"]');
  await fillSmallRun('broken', 'selective');
  await page.fill('#f-schema', 'CREATE REGION hot (${IPA});\nCREATE TABLESPACE ts_data REGION=hot);');
  await page.click('#submit-run');
  const error = page.locator('#schema-error');
  await error.waitFor({ state: 'visible' });
  assert.match(await error.textContent(), /^engine\.schema: line 2, column \d+: /);
  assert.match(page.url(), /#new$/, 'nothing was started');
  // A number out of the dashboard's bounds is refused naming the field.
  await fillSmallRun('too long', 'baseline');
  await page.fill('#f-duration', '100000');
  await page.click('#submit-run');
  await page.locator('#form-error').waitFor({ state: 'visible' });
  assert.match(await page.locator('#form-error').textContent(), /driver\.sim_time_s/);
  // The workload's parameters are a form, not JSON: a bad number is named.
  await fillSmallRun('bad scale', 'baseline');
  await page.fill('#f-param-subscribers', '');
  await page.click('#submit-run');
  assert.match(await page.locator('#form-error').textContent(), /workload\.subscribers: not a number/);
});

test('a run goes live: the chart grows, then the result shows', async () => {
  await page.goto(`${base}/#new`);
  await fillSmallRun('baseline tatp', 'analyzer');
  await page.fill('#f-duration', '3'); // as long as the selective run it is compared with
  await page.fill('#f-sets', 'tatp study');
  await page.click('#submit-run');
  await page.waitForURL(/#live\/\d+$/);
  runs.baseline = Number(new URL(page.url()).hash.split('/')[1]);
  // The throughput chart gets points while the run is under way.
  await page.waitForFunction(() => Number(document.querySelector('#live-charts').dataset.points) > 0, null, { timeout: 90_000 });
  const early = Number(await page.locator('#live-charts').getAttribute('data-points'));
  await page.waitForSelector('#live-status[data-status="done"]', { timeout: 90_000 });
  const late = Number(await page.locator('#live-charts').getAttribute('data-points'));
  assert.ok(late > early || late >= 50, `the chart grew: ${early} → ${late}`);
  assert.ok((await page.locator('#live-charts svg path.series').count()) >= 4);
  // Latency per interval: p99, p50 and mean lines for reads and writes, p99 on top.
  for (const io of ['read', 'write']) {
    const chart = page.locator(`figure[data-name="${io}-latency"] svg`);
    assert.equal(await chart.locator('path.series').count(), 3, `${io}: p99, p50 and mean lines`);
    assert.match(await chart.textContent(), /p99.*p50.*mean/);
    assert.ok(Number(await chart.getAttribute('data-points')) > 0, `${io} latency points`);
  }
  assert.equal(await page.locator('figure[data-name="transaction-latency"] path.series').count(), 2);
  // Per interval and cumulative are told apart.
  assert.match(await page.locator('figure[data-name="erases"] .title').textContent(), /per interval/);
  assert.match(await page.locator('#live-tiles').textContent(), /read p99 \[ms\]\d/);
  assert.match(await page.locator('#live-tiles').textContent(), /throughput \[tps\]/);
  // The log-scale toggle redraws the chart with decade ticks.
  await page.check('figure[data-name="read-latency"] input.log-toggle');
  const ticks = await page.locator('figure[data-name="read-latency"] svg text.tick').allTextContents();
  assert.ok(ticks.some((t) => /^(0\.0*1|1|10|100)$/.test(t)), `decades: ${ticks}`);
});

test('two runs compare in the Table 7 layout and export a numeric CSV', async () => {
  runs.selective = await runToEnd(SELECTIVE_LABEL, 'selective', 3);
  await page.goto(`${base}/#runs`);
  await page.waitForSelector('#runs-table table');
  await page.check(`#runs-table input.pick[value="${runs.baseline}"]`);
  await page.check(`#runs-table input.pick[value="${runs.selective}"]`);
  await page.click('#compare-selected');
  await page.waitForSelector('table[data-name="compare"]');
  const header = await page.locator('table[data-name="compare"] thead').textContent();
  assert.match(header, /baseline, absolute/);
  assert.match(header, /relative to baseline\) \[%\]/);
  const cells = await page.locator('table[data-name="compare"] tbody tr:first-child td').allTextContents();
  assert.equal(cells[0], 'throughput [tps]');
  assert.match(cells[1], /^\d{1,3}(,\d{3})*$|^\d+(\.\d+)?$/, 'separators, at most 3 significant decimals');
  assert.match(cells[2], /^[+-]\d[\d,.]*%$|^–$/);
  assert.ok(await page.locator('figure[data-name="throughput-overlay"] path.series').count() === 2, 'two throughput lines');
  // One panel per ratio, each with its own y axis.
  for (const name of ['per-host-write', 'per-host-write-gc_erases_per_host_write', 'per-host-write-write_amplification']) {
    assert.equal(await page.locator(`figure[data-name="${name}"] rect.bar`).count(), 2, name);
  }
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('.export-csv[data-name="compare"]')]);
  assert.equal(download.suggestedFilename(), 'compare.csv');
  const csv = readFileSync(await download.path(), 'utf8');
  assert.match(csv.split('\n')[0], /^metric,.*\[%\]"?$/);
  assert.match(csv, /\nthroughput \[tps\],\d+(\.\d+)?,-?\d+(\.\d+)?\n/, 'numbers, no % signs or separators');
  const [svg] = await Promise.all([page.waitForEvent('download'), page.click('figure[data-name="per-host-write"] .export-svg')]);
  assert.match(readFileSync(await svg.path(), 'utf8'), /<svg/);
  assert.equal(await page.locator('figure[data-name="read-p99-overlay"] path.series').count(), 2, 'two read p99 lines');
  // The selective run appends in place: its hot region's chip has appended pages.
  await page.goto(`${base}/#device/${runs.selective}`);
  await page.waitForSelector('figure[data-name="chip-page-states"] svg');
  assert.ok((await page.locator('figure[data-name="chip-page-states"] rect.bar[data-series="appended"]').count()) >= 1, 'appended pages shown');
});

test('the analyzer shows the advisor\'s whole table, reasoning and prediction', async () => {
  await page.goto(`${base}/#analyzer/${runs.baseline}`);
  await page.waitForSelector('#recommended-ddl', { timeout: 20_000 });
  assert.match(await page.locator('#recommended-ddl').textContent(), /CREATE REGION/);
  const columns = await page.locator('table[data-name="objects"] thead th').allTextContents();
  assert.equal(columns[0], 'object', 'the name first');
  for (const c of ['reads per write', 'updates on hottest 1% of pages (share)', 'updates on hottest 20% of pages (share)', 'evictions fitting 2×4 (share)']) {
    assert.ok(columns.includes(c), `${c} in ${columns}`);
  }
  assert.ok(!columns.some((c) => /_/.test(c)), `readable names: ${columns}`);
  await page.click('table[data-name="objects"] thead th:nth-child(2)');
  assert.equal(await page.locator('table[data-name="objects"] thead th:nth-child(2)').getAttribute('data-sort'), 'asc');
  assert.ok((await page.locator('#reasoning li').count()) >= 1, 'the reasoning');
  assert.ok((await page.locator('table[data-name="predicted"] tbody tr').count()) >= 1, 'the predicted effect');
  assert.ok((await page.locator('#analyzer-body figure svg').count()) >= 2, 'the CDF and skew plots');
});

test('the device heat map has axes, a scale per region and a hover', async () => {
  await page.goto(`${base}/#device/${runs.selective}`);
  const heat = page.locator('figure[data-name="erase-heat-map"] svg');
  await heat.waitFor();
  assert.match(await page.locator('table[data-name="regions"]').textContent(), /cold/);
  assert.ok((await heat.locator('.scale-bar').count()) >= 2, 'a colour scale per region');
  assert.equal(await heat.locator('.x-label').textContent(), 'block');
  assert.equal(await heat.locator('.y-label').textContent(), 'chip');
  const box = await heat.boundingBox();
  await page.mouse.move(box.x + box.width * 0.5, box.y + 60);
  const tip = page.locator('#chart-tip');
  await tip.waitFor({ state: 'visible' });
  assert.match(await tip.textContent(), /^chip \d+, block \d+: \d+ erases; valid \d+, appended \d+, invalid \d+ pages$/);
  // Page states per chip: one stacked bar per chip (8 in these runs), in the state colours.
  assert.equal(await page.locator('table[data-name="chips"] tbody tr').count(), 8);
  const colour = (chart, state) => page.locator(`figure[data-name="${chart}"] rect.bar[data-series="${state}"]`).first().getAttribute('fill');
  assert.equal(await colour('chip-page-states', 'invalid'), await colour('page-states', 'invalid'), 'one colour per page state');
  await page.goto(`${base}/#device/${runs.baseline}`);
  await page.waitForSelector('figure[data-name="chip-page-states"] svg');
  assert.equal(await page.locator('figure[data-name="chip-page-states"] rect.bar[data-series="appended"]').count(), 0, 'the baseline has IPA off');
});

// The two runs through the API, when the tests above did not make them (run alone,
// e.g. against another version of the page).
async function ensureRuns() {
  const small = (label, ipa, schema, seconds) => ({ label, config: { device: { chips: 8, blocks_per_chip: 32 }, engine: { ipa, ...(schema ? { schema } : {}) },
    workload: { name: 'tatp', subscribers: 1000 }, driver: { warmup_s: 0, sim_time_s: seconds, terminals: 4 } } });
  const start = async (key, request) => {
    if (runs[key]) return;
    runs[key] = (await (await page.request.post(`${base}/api/runs`, { data: request })).json()).id;
  };
  await start('baseline', small('baseline tatp', '0x0', null, 3));
  await start('selective', small(SELECTIVE_LABEL, '2x4', 'CREATE REGION hot (${IPA}, MAX_CHIPS=1);\nCREATE TABLESPACE ts_subscriber (REGION=hot);\nCREATE REGION cold (IPA_MODE=none);\nCREATE TABLESPACE ts_data (REGION=cold);', 3));
  for (const id of [runs.baseline, runs.selective]) {
    for (let k = 0; k < 600; k++) {
      const r = await (await page.request.get(`${base}/api/runs/${id}`)).json();
      if (r.result !== undefined && ['done', 'failed', 'cancelled'].includes(r.status)) break;
      await new Promise((ok) => setTimeout(ok, 200));
    }
  }
}

test('every page at 1280 and 390 px: legends fit, colours differ, axes are labelled, the width is used', async () => {
  await ensureRuns();
  const pages = [
    ['#new', '#run-form', 'dashboard-new-run'],
    [`#live/${runs.baseline}`, '#live-tiles a[href^="#device"]', 'dashboard-live'],
    ['#runs', '#runs-table table', 'dashboard-runs'],
    [`#compare/${runs.baseline},${runs.selective}`, 'table[data-name="compare"]', 'dashboard-compare'],
    [`#analyzer/${runs.baseline}`, '#recommended-ddl', 'dashboard-analyzer'],
    [`#device/${runs.selective}`, 'figure[data-name="erase-heat-map"]', 'dashboard-device'],
  ];
  const problems = [];
  for (const width of [1280, 390]) {
    for (const [hash, ready, shot] of pages) problems.push(...(await checkPage(hash, ready, shot, width)));
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.deepEqual(problems, []);
});

test('runs are tagged, grouped in run sets, compared from the list and deleted', async () => {
  await page.goto(`${base}/#runs`);
  await page.waitForSelector('#runs-table table');
  const header = await page.locator('table[data-name="runs"] thead').textContent();
  for (const c of ['date (UTC)', 'workload', 'scale', 'IPA scheme', 'storage', 'seed', 'warm-up + measured [sim s]', 'status']) assert.ok(header.includes(c), c);
  const row = (id) => page.locator(`table[data-name="runs"] tr:has(input.pick[value="${id}"])`);
  assert.match(await row(runs.baseline).textContent(), /subscribers=1,000/);
  assert.match(await row(runs.baseline).textContent(), /tatp study/, 'the set given at submission');
  // Tag both, put the selective run into the baseline's set, show the set, compare it.
  await page.check(`input.pick[value="${runs.baseline}"]`);
  await page.check(`input.pick[value="${runs.selective}"]`);
  await page.fill('#runs-tag', 'paper');
  await page.click('#tag-add');
  await page.waitForFunction((id) => document.querySelector(`input.pick[value="${id}"]`)?.closest('tr').textContent.includes('paper'), runs.selective);
  await page.check(`input.pick[value="${runs.selective}"]`);
  await page.fill('#runs-set', 'tatp study');
  await page.click('#set-add');
  await page.waitForFunction(() => [...document.querySelectorAll('#runs-filter option')].some((o) => o.value === 'tatp study'));
  await page.selectOption('#runs-filter', 'tatp study');
  await page.waitForFunction(() => document.querySelectorAll('table[data-name="runs"] tbody tr').length === 2);
  await page.check('#pick-all');
  await page.click('#compare-selected');
  await page.waitForURL(new RegExp(`#compare/${runs.baseline},${runs.selective}$`));
  // The tags are stored with the runs: a reload shows them.
  await page.goto(`${base}/#runs`);
  await page.reload();
  await page.waitForSelector('#runs-table table');
  assert.match(await row(runs.baseline).textContent(), /paper/);
  // Delete the selective run (after a confirmation).
  await page.check(`input.pick[value="${runs.selective}"]`);
  page.once('dialog', (d) => d.accept());
  await page.click('#delete-selected');
  await page.waitForFunction((id) => !document.querySelector(`input.pick[value="${id}"]`), runs.selective);
  assert.equal(await page.locator('#runs-message').textContent(), '');
  assert.equal((await page.request.get(`${base}/api/runs/${runs.selective}`)).status(), 404);
});
