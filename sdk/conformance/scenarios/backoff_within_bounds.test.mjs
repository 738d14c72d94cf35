// Reconnect backoff, measured from outside: the proxy refuses every new
// connection (a server that is down) and records when each attempt arrives.
// Each `disconnect.delayMs` is within attempt k's [cap/2, cap], cap =
// min(maxMs, minMs·factor^k), and the next attempt reaches the proxy that
// long after the previous one failed; after a welcome the backoff starts over.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { backoffBounds } from '../lib/checks.mjs';

const BACKOFF = { minMs: 100, maxMs: 800, factor: 2 };
const ATTEMPTS = 6; // caps 100, 200, 400, 800, 800, 800
// The disconnect line is read after the SDK chose its delay, by up to a scheduler
// slice or two on a loaded machine (more than 30 ms at load 17: an attempt 461 ms after
// the line for a delay of 491). The
// strict lower bound is the proxy's own clock below: refused attempts at least
// delayMs apart.
const EARLY_MS = 150;
const LATE_MS = 400; // timers on a loaded machine

// The disconnects from event `from` on, each paired with the attempt that
// followed it at the proxy: the first drop is the cut, each later one the
// refusal of connection `firstConnect` + k − 1, so attempt k is connection
// `firstConnect` + k.
function attempts(d, from, firstConnect, count) {
  const drops = d.events.slice(from).filter((e) => e.ev === 'disconnect').slice(0, count);
  return drops.map((drop, k) => ({ drop, next: d.proxy.connects[firstConnect + k] }));
}

function checkAttempt(d, k, { drop, next }) {
  const [lo, hi] = backoffBounds(k, BACKOFF);
  assert.equal(drop.willReconnect, true, `${d.name}: attempt ${k} gives up`);
  assert.ok(drop.delayMs >= lo && drop.delayMs <= hi,
    `${d.name}: attempt ${k} chose ${drop.delayMs} ms, outside [${lo}, ${hi}]`);
  assert.ok(next, `${d.name}: no connection reached the proxy after disconnect ${k}`);
  const waited = next.t - drop.t;
  assert.ok(waited >= drop.delayMs - EARLY_MS && waited <= drop.delayMs + LATE_MS,
    `${d.name}: attempt ${k + 1} came ${waited.toFixed(0)} ms after the drop; the SDK chose ${drop.delayMs} ms`);
}

scenario('reconnect delays follow the backoff and start over after a welcome', async (w) => {
  const server = await w.server();
  const c = await w.client(server, 'backoff', { reconnect: BACKOFF });
  await w.joinAll('chat:backoff', c);

  c.proxy.refuse();
  let from = c.events.length;
  let firstConnect = c.proxy.connects.length;
  c.proxy.cut();
  await c.nth((e) => e.ev === 'disconnect' && c.events.indexOf(e) >= from, ATTEMPTS + 1,
    { timeoutMs: 15000, what: `${ATTEMPTS + 1} disconnects while refused` });
  attempts(c, from, firstConnect, ATTEMPTS).forEach((a, k) => checkAttempt(c, k, a));
  // Between two refused attempts the proxy's own clock sees at least the delay.
  const refused = c.proxy.connects.slice(firstConnect);
  const drops = c.events.slice(from).filter((e) => e.ev === 'disconnect');
  for (let k = 1; k < Math.min(refused.length, ATTEMPTS); k++) {
    const gap = refused[k].t - refused[k - 1].t;
    assert.ok(gap >= drops[k].delayMs - 5, `attempts ${k} and ${k + 1} only ${gap.toFixed(0)} ms apart, delay ${drops[k].delayMs}`);
  }

  const opens = c.count({ ev: 'open' });
  c.proxy.accept();
  await c.nth({ ev: 'open' }, opens + 1, { timeoutMs: 5000, what: 'reopened once accepted' });
  await c.next({ ev: 'joined', ch: 'chat:backoff' }, { from: c.events.length - 1, what: 'rejoined' });
  // A welcome resets the attempt count: the next drop waits attempt 0's delay.
  c.proxy.refuse();
  from = c.events.length;
  firstConnect = c.proxy.connects.length;
  c.proxy.cut();
  await c.nth((e) => e.ev === 'disconnect' && c.events.indexOf(e) >= from, 3, { what: 'drops after the reset' });
  attempts(c, from, firstConnect, 2).forEach((a, k) => checkAttempt(c, k, a));
  c.proxy.accept();
});
