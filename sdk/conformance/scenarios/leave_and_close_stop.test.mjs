// `leave` ends a channel for good: nothing more of it is delivered, and it is
// not rejoined after a reconnect, while the channels still joined are.
// `close` ends the client for good: `closed`, and no connection attempt after.
import assert from 'node:assert/strict';
import { scenario, FAST } from '../lib/world.mjs';
import { awaitSeq, awaitPublished } from '../lib/checks.mjs';

scenario('leave: not delivered, not rejoined; close: no reconnect', async (w) => {
  const server = await w.server();
  const [pub, c] = await w.clients(server, 'pub-leave', 'sub-leave');
  const kept = 'world:kept'; // presence: pub sees the client go
  const left = 'chat:left';
  await w.joinAll(kept, pub, c);
  await w.joinAll(left, pub, c);
  pub.send({ cmd: 'publish', ch: left, n: 3 });
  await awaitSeq(c, left, 3);

  c.send({ cmd: 'leave', ch: left });
  // One connection's frames are handled in order: once this publish is acked,
  // the server has processed the leave sent before it.
  c.send({ cmd: 'publish', ch: kept, n: 1 });
  await awaitPublished(c, kept, 1);
  pub.send({ cmd: 'publish', ch: left, n: 3, start: 3 });
  pub.send({ cmd: 'publish', ch: kept, n: 3, start: 1 });
  await awaitSeq(c, kept, 4);
  await awaitPublished(pub, left, 3, 3);

  const from = c.events.length;
  c.proxy.cut();
  await c.next({ ev: 'joined', ch: kept }, { from, timeoutMs: 10000, what: 'the kept channel rejoined' });
  pub.send({ cmd: 'publish', ch: left, n: 3, start: 6 });
  pub.send({ cmd: 'publish', ch: kept, n: 1, start: 4 });
  await awaitSeq(c, kept, 5);
  await awaitPublished(pub, left, 3, 6);
  assert.deepEqual(c.all({ ev: 'msg', ch: left }).map((m) => m.seq), [1, 2, 3], 'nothing of the left channel after the leave');
  assert.equal(c.all({ ev: 'joined', ch: left }).length, 1, 'the left channel was not rejoined');

  const connects = c.proxy.connects.length;
  const before = pub.events.length;
  c.send({ cmd: 'close' });
  await c.next({ ev: 'closed' }, { what: 'closed' });
  await pub.next({ ev: 'presence', ch: kept }, { from: before, what: 'the server saw the client go' });
  // A reconnect would come within the backoff's largest delay; wait twice that.
  await new Promise((r) => setTimeout(r, 2 * FAST.maxMs));
  assert.equal(c.proxy.connects.length, connects, 'no connection attempt after close');
});
