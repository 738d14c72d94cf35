// A tenant at its `max_connections`: the next `hello` gets `error`
// `quota_exceeded` and close 4008 (PROTOCOL.md "Errors"; on raw TCP, which has
// no close codes, the SDK reports 4008 for it all the same). The SDK surfaces
// it and keeps trying with its backoff, not in a hot loop: every attempt's
// delay is within attempt k's bounds, measured at the proxy too; once a slot
// frees it gets in and works.
import assert from 'node:assert/strict';
import { scenario, demoTenant } from '../lib/world.mjs';
import { backoffBounds, awaitSeq, assertStream, range } from '../lib/checks.mjs';

const BACKOFF = { minMs: 100, maxMs: 400, factor: 2 };
const REFUSED = 5; // caps 100, 200, 400, 400, 400: about 1.2 s refused
const EARLY_MS = 5; // timer granularity
const LATE_MS = 1000; // a loaded machine's timers, and the hello's round trip

scenario('quota_exceeded at hello: surfaced, retried with backoff, in once a slot frees', async (w) => {
  const server = await w.server({ tenants: demoTenant({ extra: 'max_connections = 1' }) });
  const first = await w.client(server, 'quota-first');
  const second = await w.client(server, 'quota-second', { reconnect: BACKOFF, awaitOpen: false });
  const isRefusal = (e) => e.ev === 'disconnect' && e.code === 4008;
  await second.nth(isRefusal, REFUSED + 1, { timeoutMs: 10000, what: `${REFUSED + 1} closes with 4008` });
  assert.equal(second.count({ ev: 'open' }), 0, 'no welcome past the quota');
  assert.ok(second.count((e) => e.ev === 'error' && e.code === 'quota_exceeded') >= 1,
    'the hello\'s quota_exceeded reached the application');
  const drops = second.all({ ev: 'disconnect' });
  assert.ok(drops.every(isRefusal), `every drop is a 4008: ${JSON.stringify(drops.map((d) => d.code))}`);
  // Attempt k (0 = the first connect) was refused; the SDK waited k's delay
  // before attempt k + 1, and the proxy saw that attempt no sooner.
  const connects = second.proxy.connects;
  for (let k = 0; k < REFUSED; k++) {
    const [lo, hi] = backoffBounds(k, BACKOFF);
    const d = drops[k];
    assert.equal(d.willReconnect, true, `attempt ${k}: the SDK gave up on quota_exceeded`);
    assert.ok(d.delayMs >= lo && d.delayMs <= hi, `attempt ${k}: delay ${d.delayMs} ms outside [${lo}, ${hi}]`);
    const next = connects[k + 1];
    assert.ok(next, `no attempt ${k + 1} reached the proxy`);
    // Lower bound on the proxy's clock alone (attempt k reached it before
    // the SDK was refused and chose its delay); upper bound from the drop
    // line, which a loaded harness may read late but never early.
    const apart = next.t - connects[k].t;
    assert.ok(apart >= d.delayMs - EARLY_MS,
      `attempts ${k} and ${k + 1} reached the proxy ${apart.toFixed(0)} ms apart; the SDK chose ${d.delayMs} ms`);
    const waited = next.t - d.t;
    assert.ok(waited <= d.delayMs + LATE_MS,
      `attempt ${k + 1} came ${waited.toFixed(0)} ms after the refusal; the SDK chose ${d.delayMs} ms`);
  }
  // Not a hot loop: from the first connect to the last refusal seen, no more
  // attempts than the backoff allows (each waits at least cap/2).
  const span = drops[REFUSED].t - connects[0].t;
  const attempts = connects.filter((c) => c.t <= drops[REFUSED].t).length;
  assert.ok(attempts <= REFUSED + 2, `${attempts} connection attempts in ${span.toFixed(0)} ms`);

  first.send({ cmd: 'close' });
  await first.next({ ev: 'closed' });
  await second.next({ ev: 'open' }, { timeoutMs: 5000, what: 'in once the slot freed' });
  const ch = 'chat:quota';
  await w.joinAll(ch, second);
  second.send({ cmd: 'publish', ch, n: 3 });
  await awaitSeq(second, ch, 3);
  assertStream(second, ch, range(1, 3));
});
