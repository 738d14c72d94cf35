// The /admin page in headless Chromium during a small load: the real parley
// binary (embedded store, port 0, admin_key set), parley-bench publishing, and
// Debian's /usr/bin/chromium driven by playwright-core. Checks that the stats
// endpoint refuses a missing or wrong key, that the page sends the key only as
// a bearer header (never in a URL), that its figures move while the load runs,
// that the moderation panel mutes, lifts and kicks a player connected from a
// second page, and saves a screenshot.
//
// Usage: node admin_page_test.mjs PARLEY_BIN PARLEY_BENCH SCREENSHOT_PNG
// Exit 77 (skipped) without /usr/bin/chromium or playwright-core.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHmac } from 'node:crypto';
import assert from 'node:assert/strict';

const [parleyBin, benchBin, screenshot] = process.argv.slice(2);
if (!parleyBin || !benchBin || !screenshot) {
  console.error('usage: node admin_page_test.mjs PARLEY_BIN PARLEY_BENCH SCREENSHOT_PNG');
  process.exit(2);
}
const CHROMIUM = '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) {
  console.log('SKIP: /usr/bin/chromium is not installed (scripts/setup.sh installs it)');
  process.exit(77);
}
let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch {
  console.log('SKIP: playwright-core is not installed (scripts/setup_node.sh installs it)');
  process.exit(77);
}

const ADMIN_KEY = 'admin-key-for-the-page-test-0123';
const SECRET = 'admin-test-secret-0123456789abcdef';
const limitS = 120 + Number(process.env.PARLEY_ADMIN_WATCH_S || 0);
const deadline = setTimeout(() => { console.error(`FAIL: the test took over ${limitS} s`); cleanup(1); }, limitS * 1000);
const dir = mkdtempSync(join(tmpdir(), 'parley-admin-'));
const children = [];
let browser = null;

async function cleanup(code) {
  clearTimeout(deadline);
  if (browser) await browser.close().catch(() => {});
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  await Promise.all(children.map((c) => c.exitCode === null
      ? new Promise((r) => { c.once('exit', r); setTimeout(() => { c.kill('SIGKILL'); r(); }, 10_000); })
      : null));
  rmSync(dir, { recursive: true, force: true });
  process.exit(code);
}

function startParley() {
  writeFileSync(join(dir, 'parley.toml'), `[server]
listen = "127.0.0.1:0"
store = "embedded"
data_dir = "${dir}/data"
threads = 2
log_level = "warn"
admin_key = "${ADMIN_KEY}"

[tenants.demo]
secret = "${SECRET}"
api_key = "admin-test-api-key"

[tenants.other]
secret = "other-secret-0123456789abcdef"
api_key = "admin-test-other-key"
`);
  const p = spawn(parleyBin, ['serve', '--config', join(dir, 'parley.toml')], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(p);
  return new Promise((resolve, reject) => {
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/parley ready http=(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    p.once('exit', (code) => reject(new Error(`parley exited ${code} before ready: ${out}`)));
  });
}

// A client token of tenant demo (PROTOCOL.md "Connecting": HS256 with its secret).
function jwt(sub) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub, tenant: 'demo', exp: Math.floor(Date.now() / 1000) + 3600 })}`;
  return `${head}.${createHmac('sha256', SECRET).update(head).digest('base64url')}`;
}

async function main() {
  const port = await startParley();
  const base = `http://127.0.0.1:${port}`;

  // The endpoint itself: no key, a wrong key -> 401; the right key -> JSON.
  assert.equal((await fetch(`${base}/admin/api/stats`)).status, 401);
  assert.equal((await fetch(`${base}/admin/api/stats`, { headers: { Authorization: 'Bearer nope' } })).status, 401);
  const ok = await fetch(`${base}/admin/api/stats`, { headers: { Authorization: `Bearer ${ADMIN_KEY}` } });
  assert.equal(ok.status, 200);
  assert.deepEqual((await ok.json()).tenants.map((t) => t.id).sort(), ['demo', 'other']);

  // A small load: 40 connections in channels of 10, 150 msg/s, for 30 s.
  const bench = spawn(benchBin, ['chat', '--target', `127.0.0.1:${port}`, '--secret', SECRET,
    '--conns', '40', '--channel-size', '10', '--rate', '150',
    '--duration', String(30 + Number(process.env.PARLEY_ADMIN_WATCH_S || 0)), '--ramp-up', '1',
    '--src-addrs', '1', '--no-progress', '--no-history'], { stdio: 'ignore' });
  children.push(bench);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // playwright-core runs it headless with a fresh temporary profile of its own.
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1360, height: 1000 } });
  // Recorded here, checked at the end (a throw inside an event handler would
  // escape main()).
  const urls = [];
  const statsAuth = [];
  page.on('request', (req) => {
    urls.push(req.url());
    if (req.url().endsWith('/admin/api/stats')) statsAuth.push(req.headers()['authorization']);
  });
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));

  // A wrong key is refused by the page too.
  await page.goto(`${base}/admin`);
  await page.fill('#key', 'wrong-key-0123456789');
  await page.click('button[type=submit]');
  await page.waitForSelector('#login-error:not([hidden])', { timeout: 10_000 });
  assert.match(await page.textContent('#login-error'), /refused/);

  // The right key: the dashboard goes live.
  await page.fill('#key', ADMIN_KEY);
  await page.click('button[type=submit]');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('live'),
                             null, { timeout: 10_000 });
  const num = (text) => {
    const m = text.replace(/,/g, '').match(/-?[0-9.]+(k|M)?/);
    if (!m) return NaN;
    return parseFloat(m[0]) * (m[1] === 'k' ? 1e3 : m[1] === 'M' ? 1e6 : 1);
  };
  const read = async () => ({
    connections: num(await page.textContent('#connections')),
    msgsPerS: num(await page.textContent('#msgs-per-s')),
    msgsTotal: num(await page.textContent('#msgs-total')),
    ackP50: await page.textContent('#ack-p50'),
    ackCount: num(await page.textContent('#latency tbody tr:first-child td:last-child')),
    channelRows: await page.$$eval('#channels tbody tr', (rows) => rows.map((r) =>
        [...r.querySelectorAll('td')].map((td) => td.textContent))),
    demo: await page.$$eval('#tenants tbody tr', (rows) => rows.map((r) =>
        [...r.querySelectorAll('td')].map((td) => td.textContent)).find((c) => c[0] === 'demo')),
  });
  // Wait for the load to be seen: connections up and messages flowing.
  await page.waitForFunction(() => {
    const c = parseFloat(document.getElementById('connections').textContent);
    const r = parseFloat(document.getElementById('msgs-per-s').textContent);
    return c >= 40 && r > 0;
  }, null, { timeout: 20_000 });
  const a = await read();
  await page.waitForTimeout(4000);
  const b = await read();
  console.log('first reading ', JSON.stringify({ ...a, channelRows: a.channelRows.length }));
  console.log('second reading', JSON.stringify({ ...b, channelRows: b.channelRows.length }));

  assert.ok(b.connections >= 40, `connections ${b.connections}`);
  assert.ok(b.msgsPerS > 50 && b.msgsPerS < 400, `msgs/s ${b.msgsPerS} (load is 150/s)`);
  assert.ok(b.msgsTotal > a.msgsTotal, `messages did not move: ${a.msgsTotal} -> ${b.msgsTotal}`);
  assert.ok(b.ackCount > a.ackCount, `ack count did not move: ${a.ackCount} -> ${b.ackCount}`);
  assert.match(b.ackP50, /[0-9.]+ (µs|ms|s)/);
  assert.ok(b.demo && num(b.demo[1]) >= 40 && num(b.demo[2]) > 0, `demo row ${b.demo}`);
  // 40 connections in channels of 10: 4 channels publishing.
  const busy = b.channelRows.filter((r) => r[0] === 'demo' && num(r[2]) > 0);
  assert.ok(busy.length >= 4, `busiest channels: ${JSON.stringify(b.channelRows)}`);
  assert.ok(busy.every((r) => num(r[3]) === 10), `members per channel: ${JSON.stringify(busy)}`);
  // The bench's 40 connections speak JSON; the talkers table names them.
  const forms = await page.$$eval('#conn-forms tbody tr', (rows) => rows.map((r) =>
      [...r.querySelectorAll('td')].map((td) => td.textContent)));
  const json = forms.find((r) => r[0] === 'json');
  assert.ok(json && num(json[1]) >= 40 && num(json[3]) > 0, `connections by encoding: ${JSON.stringify(forms)}`);
  const talkers = await page.$$eval('#talkers tbody tr', (rows) => rows.map((r) =>
      [...r.querySelectorAll('td')].map((td) => td.textContent)));
  assert.equal(talkers.length, 10, `top talkers: ${JSON.stringify(talkers)}`);
  assert.ok(talkers.every((r) => r[1] === 'demo' && r[3] === 'json'), `top talkers: ${JSON.stringify(talkers)}`);
  const stageRows = await page.$$eval('#latency tbody tr', (rows) => rows.length);
  assert.equal(stageRows, 6);
  assert.equal(await page.textContent('#store-state'), 'healthy');

  assert.equal(await page.isVisible('#login'), false);

  // The moderation panel (PROTOCOL.md "Moderation"): a player connected from a
  // second page (one without the admin page's CSP) is muted, kicked with a
  // reason and lifted from the panel, and sees each.
  const player = await browser.newPage();
  await player.goto(`${base}/healthz`);
  await player.evaluate(({ port, token }) => new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
    window.frames_ = [];
    window.ws_ = ws;
    ws.onmessage = (ev) => {
      const v = JSON.parse(ev.data);
      for (const o of Array.isArray(v) ? v : [v]) window.frames_.push(o);
      if (window.frames_.some((o) => o.op === 'joined')) resolve();
    };
    ws.onerror = () => reject(new Error('player socket failed'));
    ws.onopen = () => {
      ws.send(JSON.stringify({ op: 'hello', v: 1, token, rid: 1 }));
      ws.send(JSON.stringify({ op: 'join', ch: 'chat:mod', rid: 2 }));
    };
  }), { port, token: jwt('mod-target') });
  const playerFrame = (pred) => player.waitForFunction(pred, null, { timeout: 10_000 });
  const apply = async (action, fields) => {
    await page.fill('#mod-tenant', 'demo');
    await page.selectOption('#mod-action', action);
    await page.fill('#mod-user', 'mod-target');
    await page.fill('#mod-ch', fields.ch ?? '');
    await page.fill('#mod-for', String(fields.forS ?? 600));
    await page.fill('#mod-reason', fields.reason ?? '');
    await page.click('#mod-form button[type=submit]');
    await page.waitForFunction((a) => document.getElementById('mod-result').textContent.startsWith(`${a} mod-target:`),
                               action, { timeout: 10_000 });
  };
  await apply('mute', { ch: 'chat:mod' });
  assert.match(await page.textContent('#mod-result'), /^mute mod-target: until /);
  await page.waitForFunction(() => [...document.querySelectorAll('#sanctions tbody tr')]
      .some((r) => r.textContent.includes('mod-target') && r.textContent.includes('chat:mod')), null, { timeout: 10_000 });
  await player.evaluate(() => window.ws_.send(JSON.stringify({ op: 'pub', ch: 'chat:mod', id: 'm1', body: {}, rid: 3 })));
  await playerFrame(() => window.frames_.some((o) => o.op === 'error' && o.rid === 3 && o.code === 'forbidden' && o.msg === 'muted'));
  // Lifted from the table: the next pub is acknowledged.
  await page.click('#sanctions tbody tr button');
  await page.waitForFunction(() => !document.querySelector('#sanctions tbody').textContent.includes('mod-target'),
                             null, { timeout: 10_000 });
  await player.evaluate(() => window.ws_.send(JSON.stringify({ op: 'pub', ch: 'chat:mod', id: 'm2', body: {}, rid: 4 })));
  await playerFrame(() => window.frames_.some((o) => o.op === 'ack' && o.rid === 4));
  await apply('kick', { ch: 'chat:mod', reason: 'from the admin page' });
  assert.match(await page.textContent('#mod-result'), /1 connection\(s\) of this node removed/);
  await playerFrame(() => window.frames_.some((o) => o.op === 'kicked' && o.ch === 'chat:mod' &&
                                                     o.reason === 'from the admin page'));
  await player.close();
  // PARLEY_ADMIN_WATCH_S: watch longer before the screenshot (for docs/admin-page.png).
  const watch = Number(process.env.PARLEY_ADMIN_WATCH_S || 0);
  if (watch > 0) await page.waitForTimeout(watch * 1000);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`screenshot: ${screenshot}`);

  // The key never appeared in a URL; the page polled with the header.
  assert.equal(statsAuth[0], 'Bearer wrong-key-0123456789');
  const withKey = statsAuth.filter((a) => a === `Bearer ${ADMIN_KEY}`).length;
  assert.equal(withKey, statsAuth.length - 1, `stats requests' headers: ${statsAuth}`);
  assert.ok(withKey >= 5, `stats requests with the key: ${withKey}`);
  for (const u of urls) assert.ok(!u.includes(ADMIN_KEY), `key in a URL: ${u}`);
  assert.deepEqual(consoleErrors.filter((e) => !e.includes('401')), []);
  console.log('PASS');
}

process.on('uncaughtException', (e) => { console.error('FAIL:', e); cleanup(1); });
process.on('unhandledRejection', (e) => { console.error('FAIL:', e); cleanup(1); });
main().then(() => cleanup(0), (e) => { console.error('FAIL:', e); cleanup(1); });
