// `join` with `since` given by the application delivers exactly what came
// after it, in order, before anything live; a join without `since` starts at
// the latest message. Publishes made while the connection is down wait in the
// SDK and resolve once, in order, after the reconnect.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { range, awaitPublished, assertPublished, awaitSeq, assertStream, assertAcksDelivered } from '../lib/checks.mjs';

scenario('join with since: the backfill, then live; publishes made while down resolve once', async (w) => {
  const server = await w.server();
  const [pub, late, fresh] = await w.clients(server, 'pub-since', 'late-since', 'fresh-since');
  const ch = 'chat:since';
  await w.joinAll(ch, pub);
  pub.send({ cmd: 'publish', ch, n: 30 });
  await awaitPublished(pub, ch, 30);

  late.send({ cmd: 'join', ch, since: 10 });
  fresh.send({ cmd: 'join', ch });
  const joined = await late.next({ ev: 'joined', ch });
  assert.equal(joined.seq, 30, 'joined carries the latest seq');
  assert.equal(joined.recovered, true, 'history holds everything after since');
  await awaitSeq(late, ch, 30);
  assert.equal((await fresh.next({ ev: 'joined', ch })).seq, 30);
  pub.send({ cmd: 'publish', ch, n: 10, start: 30 });
  await awaitSeq(late, ch, 40);
  await awaitSeq(fresh, ch, 40);
  assertStream(late, ch, range(11, 40));
  assertStream(fresh, ch, range(31, 40));

  late.proxy.refuse();
  const from = late.events.length;
  late.proxy.cut();
  await late.next({ ev: 'disconnect' }, { from });
  late.send({ cmd: 'publish', ch, n: 5, start: 100 });
  late.proxy.accept();
  await awaitPublished(late, ch, 5, 100, 10000);
  const acks = assertPublished(late, ch, 5, { start: 100 });
  assert.deepEqual(acks.map((a) => a.seq), range(41, 45), 'queued while down, sequenced after the reconnect in call order');
  for (const d of [pub, late, fresh]) {
    await awaitSeq(d, ch, 45);
    assertAcksDelivered(d, ch, acks);
  }
  assertStream(late, ch, range(11, 45));
  assertStream(fresh, ch, range(31, 45));
});
