// A `durable = false` namespace keeps its log in memory: after a kill -9 and
// restart its channels start over at seq 0, which the SDK reports once as
// `reset {lastSeq, seq}` and then delivers the new seqs. A durable channel
// across the same restart is no reset: it continues where it was.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { awaitSeq, awaitPublished, assertStream } from '../lib/checks.mjs';

scenario('a non-durable channel restarted from zero is one reset; a durable one continues', async (w) => {
  const server = await w.server(); // world: durable = false (demoTenant)
  const [pub, sub] = await w.clients(server, 'pub-reset', 'sub-reset');
  const mem = 'world:reset';
  const disk = 'chat:reset';
  await w.joinAll(mem, pub, sub);
  await w.joinAll(disk, pub, sub);
  pub.send({ cmd: 'publish', ch: mem, n: 3 });
  pub.send({ cmd: 'publish', ch: disk, n: 3 });
  await awaitSeq(sub, mem, 3);
  await awaitSeq(sub, disk, 3);

  const pubFrom = pub.events.length;
  await w.restart(server, 'SIGKILL');
  const reset = await sub.next({ ev: 'reset', ch: mem }, { timeoutMs: 10000 });
  assert.equal(reset.lastSeq, 3);
  assert.equal(reset.seq, 0);
  await pub.next({ ev: 'joined', ch: mem }, { from: pubFrom, what: 'the publisher rejoined' });
  await pub.next({ ev: 'joined', ch: disk }, { from: pubFrom, what: 'the publisher rejoined' });
  pub.send({ cmd: 'publish', ch: mem, n: 1, start: 3 });
  pub.send({ cmd: 'publish', ch: disk, n: 1, start: 3 });
  await awaitPublished(pub, mem, 4);
  await awaitPublished(pub, disk, 4);
  const after = pub.all({ ev: 'published', ch: mem }).find((a) => a.i === 3);
  assert.equal(after.seq, 1, 'the restarted channel numbers from 1 again');

  const resetAt = sub.events.indexOf(reset);
  const late = await sub.next({ ev: 'msg', ch: mem, seq: 1 }, { from: resetAt, what: 'seq 1 after the reset' });
  assert.equal(late.body.i, 3);
  const memSeqs = sub.all({ ev: 'msg', ch: mem }).map((m) => m.seq);
  assert.deepEqual(memSeqs, [1, 2, 3, 1], 'before the reset 1..3, after it 1');
  assert.equal(sub.count({ ev: 'reset' }), 1, 'one reset, of the non-durable channel only');

  await awaitSeq(sub, disk, 4);
  assertStream(sub, disk, [1, 2, 3, 4]);
});
