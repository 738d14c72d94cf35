// A slow link (the proxy holds every chunk, both ways, for 100 ms) on the
// publisher and on one subscriber, with a cut of the slow subscriber midway:
// nothing is reordered, lost or doubled by latency, and a message from the
// app server (`direct`, POST /v1/send) reaches the slow client too.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { awaitPublished, assertDeliveredOnce } from '../lib/checks.mjs';

const DELAY_MS = 100;

scenario('a slow link: everything in order, once, across a cut', async (w) => {
  const server = await w.server();
  const [pub, slow, fast] = await w.clients(server, 'pub-slowlink', 'sub-slowlink', 'sub-fastlink');
  const ch = 'chat:slowlink';
  await w.joinAll(ch, pub, slow, fast);
  pub.proxy.slow(DELAY_MS);
  slow.proxy.slow(DELAY_MS);
  const N = 20;
  const t0 = performance.now();
  pub.send({ cmd: 'publish', ch, n: N });
  await slow.nth({ ev: 'msg', ch }, 8, { what: '8 msgs over the slow link' });
  const from = slow.events.length;
  slow.proxy.cut();
  await slow.next({ ev: 'joined', ch }, { from, timeoutMs: 10000, what: 'the rejoin over the slow link' });
  await awaitPublished(pub, ch, N, 0, 30000);
  // One publish in flight at a time over a 2 x 100 ms round trip.
  assert.ok(performance.now() - t0 >= N * 2 * DELAY_MS * 0.9, 'the link was slow');
  await assertDeliveredOnce(pub, ch, N, [pub, slow, fast], 20000);
  const r = await server.api('POST', '/v1/send', { user: 'sub-slowlink', body: { hello: 'slow' } });
  assert.equal(r.status, 200);
  const direct = await slow.next({ ev: 'direct' }, { what: 'the direct message' });
  assert.deepEqual(direct.body, { hello: 'slow' });
  assert.equal(fast.count({ ev: 'direct' }), 0, 'a direct message reaches only its user');
});
