// kill -9 of the server mid-stream and a restart on the same data: the
// publisher's unacknowledged publishes are resent with their client ids and
// resolve once each, in call order; subscribers rejoin with `since` and see
// every message once, in order, with no gap; the server stored each once.
// Two channels interleaved on the same connections: each stream stands alone.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { awaitPublished, assertStoredOnce, assertDeliveredOnce } from '../lib/checks.mjs';

scenario('kill -9 and restart mid-stream: resent once, resumed with no gap', async (w) => {
  const server = await w.server();
  const [pub, sub] = await w.clients(server, 'pub-kill', 'sub-kill');
  const chans = { 'chat:kill': 300, 'chat:kill-2': 150 };
  for (const ch of Object.keys(chans)) await w.joinAll(ch, pub, sub);
  for (const [ch, n] of Object.entries(chans)) pub.send({ cmd: 'publish', ch, n });
  await pub.nth({ ev: 'published', ch: 'chat:kill' }, 100, { what: '100 acks before the kill' });
  await w.restart(server, 'SIGKILL', { downMs: 200 });
  for (const [ch, n] of Object.entries(chans)) await awaitPublished(pub, ch, n, 0, 30000);
  for (const d of [pub, sub]) {
    assert.ok(d.count({ ev: 'disconnect' }) >= 1, `${d.name} saw the server die`);
    assert.ok(d.count({ ev: 'open', reconnect: true }) >= 1, `${d.name} reconnected`);
  }
  for (const [ch, n] of Object.entries(chans)) {
    await assertDeliveredOnce(pub, ch, n, [pub, sub]);
    await assertStoredOnce(server, ch, n);
  }
});
