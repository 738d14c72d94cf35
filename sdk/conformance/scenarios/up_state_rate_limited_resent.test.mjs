// `up` and `state` count against the connection's publish rate too
// (PROTOCOL.md "Errors"). Over it, the server refuses them with
// `rate_limited`; the SDK sends a refused `up` again after retry_ms, so the
// app server still gets every one exactly once, and a refused `state` is
// superseded by the key's latest body, which still reaches the other member.
import assert from 'node:assert/strict';
import { scenario, demoTenant } from '../lib/world.mjs';

scenario('rate_limited up and state: every up once, the latest state delivered', async (w) => {
  const app = await w.app();
  const server = await w.server({
    tenants: demoTenant({
      extra: 'publish_per_conn_sec = 5',
      more: `\n[tenants.demo.namespaces.game]\ndurable = false\nupstream = "${app.url}"\n`,
    }),
  });
  const [c, other] = await w.clients(server, 'up-rate', 'state-rate-peer');
  const ch = 'game:rate';
  await w.joinAll(ch, c, other);
  const N = 8; // 16 ops: a burst of 5, then 5 per second
  for (let n = 0; n < N; n++) c.send({ cmd: 'up', ch, body: { n } });
  for (let x = 1; x <= N; x++) c.send({ cmd: 'state', ch, key: 'pos', body: { x } });
  await Promise.all(Array.from({ length: N }, (_, n) =>
    app.next((e) => e.type === 'up' && e.body?.n === n, { timeoutMs: 15000, what: `up n=${n}` })));
  await other.next((e) => e.ev === 'state' && e.key === 'pos' && e.body?.x === N,
    { timeoutMs: 15000, what: `the latest state x=${N}` });
  assert.ok(c.all({ ev: 'retry' }).some((r) => r.code === 'rate_limited'), 'the server rate-limited some of them');
  const ups = app.events.filter((e) => e.type === 'up').map((e) => e.body.n).sort((a, b) => a - b);
  assert.deepEqual(ups, Array.from({ length: N }, (_, n) => n), 'every up reached the app server exactly once');
  const xs = other.all((e) => e.ev === 'state' && e.key === 'pos').map((e) => e.body.x);
  for (let k = 1; k < xs.length; k++) assert.ok(xs[k] > xs[k - 1], `state x=${xs[k]} after x=${xs[k - 1]}`);
});
