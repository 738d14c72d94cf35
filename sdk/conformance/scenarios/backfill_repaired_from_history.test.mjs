// A rejoin's backfill is bounded (4 × max_queue_bytes): after an absence
// longer than that but within the channel's history, `recovered` is false
// and the SDK reads the rest with `history` before delivering anything newer:
// every seq once, in order, and no `gap` (history still had everything).
import assert from 'node:assert/strict';
import { scenario, demoTenant } from '../lib/world.mjs';
import { range, awaitSeq, awaitPublished, assertStream } from '../lib/checks.mjs';

scenario('a backfill cut short by its allowance is repaired from history, no gap', async (w) => {
  const server = await w.server({ tenants: demoTenant({ extra: 'max_queue_bytes = 65536\npublish_per_conn_sec = 0' }) });
  const [pub, sub] = await w.clients(server, 'pub-repair', 'sub-repair');
  const ch = 'chat:repair';
  await w.joinAll(ch, pub, sub);
  pub.send({ cmd: 'publish', ch, n: 1 });
  await awaitSeq(sub, ch, 1);

  sub.proxy.refuse();
  const from = sub.events.length;
  sub.proxy.cut();
  await sub.next({ ev: 'disconnect' }, { from });
  const N = 400; // 2 KB each: ~800 KB missed, over the 256 KB allowance
  pub.send({ cmd: 'publish', ch, n: N, start: 1, pad: 2000 });
  await awaitPublished(pub, ch, N, 1, 30000);
  sub.proxy.accept();
  await awaitSeq(sub, ch, N + 1, 20000);
  const rejoin = sub.all({ ev: 'joined', ch }).at(-1);
  assert.equal(rejoin.recovered, false, 'the backfill alone could not recover everything');
  assertStream(sub, ch, range(1, N + 1));
});
