// SIGTERM: the server drains, every client gets `bye` (code `draining`) with
// `reconnect_ms`, and comes back no sooner than that and within 1.5 times it
// (jitter); then publishing and delivery resume in order, nothing lost or twice.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { awaitPublished, assertDeliveredOnce } from '../lib/checks.mjs';

// Harness clock vs the SDK's: the disconnect line is read a little after the
// SDK chose its delay, and a loaded machine runs timers late.
const EARLY_MS = 30;
const LATE_MS = 500;

scenario('a drain: bye honoured with its reconnect_ms, then everything resumes', async (w) => {
  const server = await w.server();
  const [pub, sub] = await w.clients(server, 'pub-drain', 'sub-drain');
  const ch = 'chat:drain';
  await w.joinAll(ch, pub, sub);
  const N = 300;
  pub.send({ cmd: 'publish', ch, n: N });
  await pub.nth({ ev: 'published', ch }, 100, { what: '100 acks before the drain' });
  // The reconnect is the first connection after the ones open now (a drain
  // soon after the first connect would otherwise find that one).
  const opened = new Map([pub, sub].map((d) => [d, d.proxy.connects.length]));
  const exit = await w.restart(server, 'SIGTERM');
  assert.equal(exit.code, 0, 'a drain exits 0');
  await awaitPublished(pub, ch, N, 0, 30000);
  for (const d of [pub, sub]) {
    const byes = d.all({ ev: 'bye' });
    assert.equal(byes.length, 1, `${d.name}: one bye`);
    assert.equal(byes[0].code, 'draining');
    const r = byes[0].reconnectMs;
    assert.ok(Number.isInteger(r) && r > 0, `${d.name}: bye carries reconnect_ms (${r})`);
    const k = d.events.indexOf(byes[0]);
    const drop = d.events.slice(k).find((e) => e.ev === 'disconnect');
    assert.ok(drop?.willReconnect, `${d.name}: the drop after bye reconnects`);
    assert.ok(drop.delayMs >= r && drop.delayMs <= r * 1.5,
      `${d.name}: delay ${drop.delayMs} ms outside [reconnect_ms, 1.5 reconnect_ms] = [${r}, ${r * 1.5}]`);
    const again = d.proxy.connects[opened.get(d)];
    assert.ok(again, `${d.name}: reconnected through the proxy`);
    const waited = again.t - drop.t;
    assert.ok(waited >= drop.delayMs - EARLY_MS && waited <= drop.delayMs + LATE_MS,
      `${d.name}: came back ${waited.toFixed(0)} ms after the drop, chose ${drop.delayMs} ms`);
  }
  await assertDeliveredOnce(pub, ch, N, [pub, sub]);
});
