// With an append queue of one (append_queue_limit = 1), publishers racing on
// one channel are refused with `backpressure`; each SDK retries after
// retry_ms with the same id, so every publish of every publisher resolves
// once, each publisher's in call order, and the channel's stream is one
// gap-free sequence holding each of them once.
import assert from 'node:assert/strict';
import { scenario, demoTenant } from '../lib/world.mjs';
import { range, awaitPublished, assertPublished, awaitSeq, assertStream, assertAcksDelivered,
  assertStoredOnce } from '../lib/checks.mjs';

scenario('backpressure: retried, every publish of every publisher resolved once', async (w) => {
  const server = await w.server({
    serverExtra: 'append_queue_limit = 1',
    tenants: demoTenant({ extra: 'publish_per_conn_sec = 0\npublish_per_sec = 0' }),
  });
  const ch = 'chat:pressure';
  const [sub, ...pubs] = await w.clients(server, 'sub-pressure',
    ...Array.from({ length: 4 }, (_, k) => `pub-pressure-${k}`));
  await w.joinAll(ch, sub, ...pubs);
  const N = 150;
  for (let round = 0; round < 3; round++) {
    const start = round * N;
    for (const p of pubs) p.send({ cmd: 'publish', ch, n: N, start });
    await Promise.all(pubs.map((p) => awaitPublished(p, ch, N, start, 30000)));
    if (pubs.some((p) => p.count({ ev: 'retry', code: 'backpressure' }) > 0)) break;
  }
  const retries = pubs.flatMap((p) => p.all({ ev: 'retry' }));
  assert.ok(retries.some((r) => r.code === 'backpressure'),
    'no publish was refused with backpressure: the scenario did not exercise it');
  for (const r of retries) {
    assert.equal(r.code, 'backpressure');
    assert.ok(r.retryMs > 0);
  }
  const total = pubs[0].count({ ev: 'published' });
  const all = [];
  for (const p of pubs) all.push(...assertPublished(p, ch, total).map((a) => ({ ...a, name: p.name })));
  const seqs = all.map((a) => a.seq).sort((x, y) => x - y);
  const T = total * pubs.length;
  assert.deepEqual(seqs, range(1, T), 'the acks of all publishers are seqs 1..T, each once');
  await awaitSeq(sub, ch, T, 20000);
  assertStream(sub, ch, range(1, T));
  for (const p of pubs) assertAcksDelivered(sub, ch, p.all({ ev: 'published', ch }));
  await assertStoredOnce(server, ch, T);
});
