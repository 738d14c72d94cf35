// A connection that goes silent without closing (the proxy stalls it: a NAT
// that forgot the flow) is noticed by the SDK's own liveness check: with
// `heartbeatMs` H it pings after H of quiet and drops the connection after
// 2H plus up to one more H (DRIVER.md), then reconnects on a fresh socket,
// rejoins with `since` and misses nothing published meanwhile.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { range, awaitSeq, awaitPublished, assertStream } from '../lib/checks.mjs';

const H = 400;
const LATE_MS = 600; // the check's own period (H/2) and a loaded machine's timers

scenario('a stalled socket: dropped by the heartbeat, reconnected, nothing missed', async (w) => {
  const server = await w.server();
  const [pub, sub] = await w.clients(server, 'pub-stall', { user: 'sub-stall', heartbeatMs: H });
  const ch = 'chat:stall';
  await w.joinAll(ch, pub, sub);
  pub.send({ cmd: 'publish', ch, n: 20 });
  await awaitSeq(sub, ch, 20);

  const from = sub.events.length;
  const stalledAt = performance.now();
  sub.proxy.stall();
  pub.send({ cmd: 'publish', ch, n: 30, start: 20 });
  const drop = await sub.next({ ev: 'disconnect' }, { from, timeoutMs: 10000, what: 'the heartbeat drop' });
  const after = drop.t - stalledAt;
  assert.ok(after >= 2 * H && after <= 3 * H + LATE_MS,
    `dropped ${after.toFixed(0)} ms after the stall; heartbeatMs ${H} allows [${2 * H}, ${3 * H}]`);
  assert.equal(drop.willReconnect, true);
  await sub.next({ ev: 'joined', ch }, { from, timeoutMs: 10000, what: 'the rejoin' });
  await awaitPublished(pub, ch, 30, 20);
  await awaitSeq(sub, ch, 50);
  assertStream(sub, ch, range(1, 50));
  sub.proxy.cut(); // the stalled pair
});
