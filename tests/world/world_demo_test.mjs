// examples/world in headless Chromium: the real parley binary and the
// example's app server started as `node examples/world/start.mjs` starts them
// (ports 0), two browser pages of the example, Debian's /usr/bin/chromium
// driven by playwright-core (tests/admin's copy). Checks that the simulated
// avatars move, that a click moves this page's own avatar through the app
// server (up -> forwarded -> authoritative world -> /v1/publish -> every page),
// that each page sees the other's avatar, that chat reaches the other page,
// and saves a screenshot.
//
// Usage: node world_demo_test.mjs PARLEY_BIN SCREENSHOT_PNG
// Exit 77 (skipped) without /usr/bin/chromium or playwright-core.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');
const [parleyBin, screenshot] = process.argv.slice(2);
if (!parleyBin || !screenshot) {
  console.error('usage: node world_demo_test.mjs PARLEY_BIN SCREENSHOT_PNG');
  process.exit(2);
}
const CHROMIUM = '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) {
  console.log('SKIP: /usr/bin/chromium is not installed (scripts/setup.sh installs it)');
  process.exit(77);
}
let chromium;
try {
  ({ chromium } = createRequire(join(ROOT, 'tests/admin/package.json'))('playwright-core'));
} catch {
  console.log('SKIP: playwright-core is not installed in tests/admin (scripts/setup_node.sh)');
  process.exit(77);
}
const { startWorld } = await import(join(ROOT, 'examples/world/start.mjs'));

let world = null;
let browser = null;
const deadline = setTimeout(() => { console.error('FAIL: the test took over 120 s'); cleanup(1); }, 120_000);

async function cleanup(code) {
  clearTimeout(deadline);
  if (browser) await browser.close().catch(() => {});
  if (world) await world.stop().catch(() => {});
  process.exit(code);
}

async function openPage(name) {
  const page = await browser.newPage({ viewport: { width: 1320, height: 700 } });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${world.url}?name=${name}`);
  // Joined, welcomed by the app server, and drawing.
  await page.waitForFunction((me) => window.worldDemo?.you === me && window.worldDemo.frames > 5,
                             name, { timeout: 15_000 });
  return { page, errors };
}

const avatars = (page) => page.evaluate(() => window.worldDemo.avatars());
const byId = (list) => Object.fromEntries(list.map((a) => [a.id, a]));

async function main() {
  world = await startWorld({ parleyBin, port: 0, parleyPort: 0, bots: 4, quiet: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  const a = await openPage('ann');
  const b = await openPage('bob');

  // Each page sees the four bots, itself and the other.
  for (const p of [a.page, b.page]) {
    await p.waitForFunction(() => {
      const ids = window.worldDemo.avatars().map((x) => x.id);
      return ['ann', 'bob', 'bot-1', 'bot-2', 'bot-3', 'bot-4'].every((id) => ids.includes(id));
    }, null, { timeout: 10_000 });
  }

  // The simulated avatars move: positions a second apart differ, and updates keep coming.
  const first = byId(await avatars(a.page));
  const updates0 = await a.page.evaluate(() => window.worldDemo.updates);
  await a.page.waitForTimeout(1200);
  const second = byId(await avatars(a.page));
  const updates1 = await a.page.evaluate(() => window.worldDemo.updates);
  const botsMoved = ['bot-1', 'bot-2', 'bot-3', 'bot-4']
    .filter((id) => Math.hypot(second[id].x - first[id].x, second[id].y - first[id].y) > 20).length;
  console.log(`bots moved: ${botsMoved}/4 in 1.2 s; world updates ${updates0} -> ${updates1}`);
  assert.ok(botsMoved >= 3, `only ${botsMoved} bots moved`);
  // 10/s published; on a loaded 2-core machine two rendering pages may take fewer.
  assert.ok(updates1 - updates0 >= 4, `only ${updates1 - updates0} world updates in 1.2 s (10/s published)`);

  // A click on ann's page: ann walks there, seen by ann and by bob.
  const start = byId(await avatars(a.page)).ann;
  const target = { x: start.x < 480 ? 800 : 160, y: start.y < 300 ? 480 : 120 };
  const box = await a.page.locator('#world').boundingBox();
  await a.page.mouse.click(box.x + (target.x / 960) * box.width, box.y + (target.y / 600) * box.height);
  const arrived = (t) => {
    const me = window.worldDemo.avatars().find((x) => x.id === 'ann');
    return me && Math.hypot(me.x - t.x, me.y - t.y) < 3;
  };
  await a.page.waitForFunction(arrived, target, { timeout: 15_000 });
  await b.page.waitForFunction(arrived, target, { timeout: 5_000 });
  console.log(`ann walked from (${start.x}, ${start.y}) to (${target.x}, ${target.y}), seen by bob`);

  // Arrow keys: a step of 48 units to the left.
  await a.page.keyboard.press('ArrowLeft');
  await a.page.waitForFunction((t) => {
    const me = window.worldDemo.avatars().find((x) => x.id === 'ann');
    return me && Math.abs(me.x - (t.x - 48)) < 3;
  }, target, { timeout: 5_000 });

  // Chat from bob reaches ann.
  await b.page.fill('#line', 'hello from bob');
  await b.page.press('#line', 'Enter');
  await a.page.waitForFunction(() => window.worldDemo.chat.some(([f, t]) => f === 'bob' && t === 'hello from bob'),
                               null, { timeout: 5_000 });
  await a.page.fill('#line', 'hi bob, watch me walk');
  await a.page.press('#line', 'Enter');
  await b.page.waitForFunction(() => window.worldDemo.chat.some(([f]) => f === 'ann'), null, { timeout: 5_000 });

  // The app server saw the forwarded events and kept publishing.
  const stats = await (await fetch(`${world.url}stats.json`)).json();
  console.log('app server', JSON.stringify(stats));
  assert.ok(stats.moves >= 2, `app server accepted ${stats.moves} moves`);
  assert.ok(stats.sends >= 2, `app server sent ${stats.sends} welcomes`);
  assert.equal(stats.publishFailures, 0);

  // Both walking, mid-way, for the picture.
  await a.page.click('#world', { position: { x: 480, y: 300 } });
  await b.page.click('#world', { position: { x: 700, y: 150 } });
  await a.page.waitForTimeout(700);
  await a.page.screenshot({ path: screenshot });
  console.log(`screenshot: ${screenshot}`);

  // Bob leaves: his avatar goes from ann's page.
  await b.page.close();
  await a.page.waitForFunction(() => !window.worldDemo.avatars().some((x) => x.id === 'bob'), null, { timeout: 10_000 });
  assert.deepEqual(a.errors, [], `console errors: ${a.errors.join('\n')}`);
  assert.deepEqual(b.errors, [], `console errors: ${b.errors.join('\n')}`);
}

main().then(() => { console.log('PASS'); return cleanup(0); },
            (e) => { console.error('FAIL:', e); return cleanup(1); });
