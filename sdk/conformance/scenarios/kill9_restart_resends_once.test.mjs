// kill -9 of the server mid-stream and a restart on the same data: the
// publisher's unacknowledged publishes are resent with their client ids and
// resolve once each, in call order; subscribers rejoin with `since` and see
// every message once, in order, with no gap; the server stored each once.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { range, awaitPublished, assertPublished, awaitSeq, assertStream, assertAcksDelivered,
  assertStoredOnce } from '../lib/checks.mjs';

scenario('kill -9 and restart mid-stream: resent once, resumed with no gap', async (w) => {
  const server = await w.server();
  const [pub, sub] = await w.clients(server, 'pub-kill', 'sub-kill');
  const ch = 'chat:kill';
  await w.joinAll(ch, pub, sub);
  const N = 400;
  pub.send({ cmd: 'publish', ch, n: N });
  await pub.nth({ ev: 'published', ch }, 120, { what: '120 acks before the kill' });
  await w.restart(server, 'SIGKILL', { downMs: 200 });
  await awaitPublished(pub, ch, N, 0, 30000);
  for (const d of [pub, sub]) {
    assert.ok(d.count({ ev: 'disconnect' }) >= 1, `${d.name} saw the server die`);
    assert.ok(d.count({ ev: 'open', reconnect: true }) >= 1, `${d.name} reconnected`);
  }
  const acks = assertPublished(pub, ch, N);
  assert.deepEqual(acks.map((a) => a.seq), range(1, N), 'the acks are seqs 1..N');
  for (const d of [pub, sub]) {
    await awaitSeq(d, ch, N);
    assertStream(d, ch, range(1, N));
    assertAcksDelivered(d, ch, acks);
  }
  await assertStoredOnce(server, ch, N);
});
