// Over the connection's publish rate the server answers `rate_limited` with
// `retry_ms`; the SDK retries with the same client id, so every publish still
// resolves once, in call order, one seq each, and the stream has no gap.
import assert from 'node:assert/strict';
import { scenario, demoTenant } from '../lib/world.mjs';
import { awaitPublished, assertStoredOnce, assertDeliveredOnce } from '../lib/checks.mjs';

scenario('rate_limited: retried after retry_ms, every publish resolved once in order', async (w) => {
  const server = await w.server({ tenants: demoTenant({ extra: 'publish_per_conn_sec = 10' }) });
  const [pub, sub] = await w.clients(server, 'pub-rate', 'sub-rate');
  const ch = 'chat:rate';
  await w.joinAll(ch, pub, sub);
  const N = 25; // a burst of 10, then 10 per second
  const t0 = performance.now();
  pub.send({ cmd: 'publish', ch, n: N });
  await awaitPublished(pub, ch, N, 0, 20000);
  const elapsed = performance.now() - t0;
  const retries = pub.all({ ev: 'retry' });
  assert.ok(retries.length > 0, 'the server rate-limited some publishes and the SDK said it retries');
  for (const r of retries) {
    assert.equal(r.code, 'rate_limited');
    assert.ok(r.retryMs > 0, `retry carries the server's retry_ms (${r.retryMs})`);
  }
  assert.ok(elapsed >= 1200, `25 publishes at 10/s with a burst of 10 took only ${elapsed.toFixed(0)} ms`);
  const acks = await assertDeliveredOnce(pub, ch, N, [sub]);
  assert.ok(acks.every((a) => a.dup === false), 'a refused publish was not stored');
  await assertStoredOnce(server, ch, N);
});
