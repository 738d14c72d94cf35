// The proxy resets the publisher's and the subscriber's sockets mid-stream,
// several times, while the server stays up: the SDK reconnects, rejoins with
// `since` and resends what was in flight, so the application still sees
// every publish resolved once and one gap-free stream.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { awaitPublished, assertStoredOnce, assertDeliveredOnce } from '../lib/checks.mjs';

scenario('sockets cut mid-stream: resent once, resumed with no gap', async (w) => {
  const server = await w.server();
  const [pub, sub] = await w.clients(server, 'pub-cut', 'sub-cut');
  const ch = 'chat:cut';
  await w.joinAll(ch, pub, sub);
  const N = 400;
  pub.send({ cmd: 'publish', ch, n: N });
  for (const [k, victim] of [[80, pub], [160, sub], [240, pub], [240, sub]]) {
    await pub.nth({ ev: 'published', ch }, k, { what: `${k} acks` });
    const opens = victim.count({ ev: 'open' });
    victim.proxy.cut();
    await victim.nth({ ev: 'open' }, opens + 1, { what: `${victim.name} reopened after the cut` });
  }
  await awaitPublished(pub, ch, N, 0, 30000);
  assert.ok(pub.count({ ev: 'disconnect' }) >= 2 && sub.count({ ev: 'disconnect' }) >= 2, 'the cuts were seen');
  await assertDeliveredOnce(pub, ch, N, [pub, sub]);
  await assertStoredOnce(server, ch, N);
});
