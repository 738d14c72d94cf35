// Every publish resolves once with a seq, in call order, one seq per client
// id; every subscriber (the publisher included) gets the channel's stream
// gap-free, in order, every message once, with the ids the acks named.
import { scenario } from '../lib/world.mjs';
import { awaitPublished, assertStoredOnce, assertDeliveredOnce } from '../lib/checks.mjs';

scenario('publishes resolve once in order; every member sees one gap-free stream', async (w) => {
  const server = await w.server();
  const [pub, subA, subB] = await w.clients(server, 'pub-basic', 'sub-basic-a', 'sub-basic-b');
  const ch = 'chat:basic';
  await w.joinAll(ch, pub, subA, subB);
  const N = 200;
  pub.send({ cmd: 'publish', ch, n: N, tag: 'basic' });
  await awaitPublished(pub, ch, N);
  await assertDeliveredOnce(pub, ch, N, [pub, subA, subB]);
  await assertStoredOnce(server, ch, N);
});
