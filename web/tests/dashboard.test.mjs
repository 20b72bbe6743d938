// Browser test of `deltaflash serve`: starts the server on a free port with a fresh
// data directory, drives Debian's chromium through playwright-core, and checks the
// pages a user goes through: a short run whose live chart updates, the compare view
// of two runs, a CSV export, the analyzer, the device heat map and page states per
// chip (appended pages on a run with IPA), latency p50/p99 charts, and an invalid DDL
// shown at its line and column. Screenshots of each page go to target/screenshots/ (to
// $SCREENSHOTS if set: `make screenshots` refreshes the README's in docs/figures/).
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

// A run that finishes in seconds even in a debug build.
async function fillSmallRun(label, scenario) {
  await page.click(`.scenarios button[data-scenario="${scenario}"]`);
  await page.selectOption('#f-workload', 'tatp');
  await page.fill('#f-params', '{"subscribers": 1000}');
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

async function runToEnd(label, scenario) {
  await page.goto(`${base}/#new`);
  await fillSmallRun(label, scenario);
  await page.click('#submit-run');
  await page.waitForURL(/#live\/\d+$/);
  await page.waitForSelector('#live-status[data-status="done"]', { timeout: 90_000 });
  return Number(new URL(page.url()).hash.split('/')[1]);
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
  await page.screenshot({ path: join(figures, 'dashboard-new-run.png'), fullPage: true });
  // A number out of the dashboard's bounds is refused naming the field.
  await fillSmallRun('too long', 'baseline');
  await page.fill('#f-duration', '100000');
  await page.click('#submit-run');
  await page.locator('#form-error').waitFor({ state: 'visible' });
  assert.match(await page.locator('#form-error').textContent(), /driver\.sim_time_s/);
});

test('a run goes live: the chart grows, then the result shows', async () => {
  await page.goto(`${base}/#new`);
  await fillSmallRun('baseline tatp', 'analyzer');
  await page.click('#submit-run');
  await page.waitForURL(/#live\/\d+$/);
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
  assert.match(await page.locator('#live-tiles').textContent(), /read p99 \[ms\]\d/);
  assert.match(await page.locator('#live-tiles').textContent(), /throughput \[tps\]/);
  await page.screenshot({ path: join(figures, 'dashboard-live.png'), fullPage: true });
});

test('the analyzer shows the advice and the device its heat map', async () => {
  await page.goto(`${base}/#analyzer`);
  await page.waitForSelector('#recommended-ddl', { timeout: 20_000 });
  assert.match(await page.locator('#recommended-ddl').textContent(), /CREATE REGION/);
  assert.ok((await page.locator('#analyzer-body figure svg').count()) >= 1, 'the CDF/skew plots');
  await page.screenshot({ path: join(figures, 'dashboard-analyzer.png'), fullPage: true });
  await page.goto(`${base}/#device`);
  await page.waitForSelector('figure[data-name="erase-heat-map"] svg');
  assert.match(await page.locator('table[data-name="regions"]').textContent(), /data/);
  // Page states per chip: one stacked bar per chip (8 in these runs), no appends without IPA.
  const chips = page.locator('figure[data-name="chip-page-states"] svg');
  assert.ok((await chips.locator('rect.bar[data-series="free"]').count()) + (await chips.locator('rect.bar[data-series="valid"]').count()) > 0);
  assert.equal(await page.locator('table[data-name="chips"] tbody tr').count(), 8);
  assert.equal(await chips.locator('rect.bar[data-series="appended"]').count(), 0, 'the baseline has IPA off');
  await page.screenshot({ path: join(figures, 'dashboard-device.png'), fullPage: true });
});

test('two runs compare in the Table 7 layout and export as CSV', async () => {
  const selective = await runToEnd('selective tatp', 'selective');
  await page.goto(`${base}/#runs`);
  await page.waitForSelector('#runs-table table');
  const ids = await page.locator('#runs-table input.pick').evaluateAll((boxes) => boxes.map((b) => Number(b.value)));
  const baseline = Math.min(...ids);
  await page.check(`#runs-table input.pick[value="${baseline}"]`);
  await page.check(`#runs-table input.pick[value="${selective}"]`);
  await page.screenshot({ path: join(figures, 'dashboard-runs.png'), fullPage: true });
  await page.click('#compare-selected');
  await page.waitForSelector('table[data-name="compare"]');
  const header = await page.locator('table[data-name="compare"] thead').textContent();
  assert.match(header, /baseline, absolute/);
  assert.match(header, /relative to baseline/);
  const cells = await page.locator('table[data-name="compare"] tbody tr:first-child td').allTextContents();
  assert.equal(cells[0], 'throughput [tps]');
  assert.match(cells[2], /^[+-]\d+\.\d%$|^–$/);
  assert.ok(await page.locator('figure[data-name="throughput-overlay"] path.series').count() === 2, 'two throughput lines');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('.export-csv[data-name="compare"]')]);
  assert.equal(download.suggestedFilename(), 'compare.csv');
  const csv = readFileSync(await download.path(), 'utf8');
  assert.match(csv.split('\n')[0], /^metric,/);
  assert.match(csv, /\nthroughput \[tps\],\d/);
  const [svg] = await Promise.all([page.waitForEvent('download'), page.click('figure[data-name="per-host-write"] .export-svg')]);
  assert.match(readFileSync(await svg.path(), 'utf8'), /<svg/);
  assert.equal(await page.locator('figure[data-name="read-p99-overlay"] path.series').count(), 2, 'two read p99 lines');
  await page.screenshot({ path: join(figures, 'dashboard-compare.png'), fullPage: true });
  // The selective run appends in place: its hot region's chip has appended pages.
  await page.goto(`${base}/#device/${selective}`);
  await page.waitForSelector('figure[data-name="chip-page-states"] svg');
  assert.ok((await page.locator('figure[data-name="chip-page-states"] rect.bar[data-series="appended"]').count()) >= 1, 'appended pages shown');
});
