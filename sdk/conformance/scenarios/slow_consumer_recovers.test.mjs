// A subscriber that stops reading (its proxy stalls: nothing passes, nothing
// closes) while the channel keeps going: once its queue is over the tenant's
// max_queue_bytes the server sends `bye` `slow_consumer` and closes with
// 4010 (PROTOCOL.md "Errors"). When the link flows again the SDK gets the
// bye and the close, reconnects, rejoins with `since` and recovers what it
// missed: one gap-free stream, every message once.
import assert from 'node:assert/strict';
import { scenario, demoTenant } from '../lib/world.mjs';
import { range, awaitSeq, awaitPublished, assertStream } from '../lib/checks.mjs';

const tenants = demoTenant({
  extra: 'max_queue_bytes = 1048576\npublish_per_conn_sec = 0\npublish_per_sec = 0',
  more: '\n[tenants.demo.namespaces.feed]\nhistory = 10000\n',
});
const ROUND = 100;
const PAD = 4000;
const MAX_ROUNDS = 25; // 10 MB: well past any loopback socket buffers

scenario('slow consumer: cut with bye slow_consumer and 4010, then recovers everything', async (w) => {
  const server = await w.server({ tenants });
  const [pub, sub] = await w.clients(server, 'pub-slow', 'sub-slow');
  const ch = 'feed:slow';
  await w.joinAll(ch, pub, sub);
  pub.send({ cmd: 'publish', ch, n: 5 });
  await awaitSeq(sub, ch, 5);

  sub.proxy.stall();
  let sent = 5;
  for (let r = 0; r < MAX_ROUNDS && !(await server.metric('parley_slow_consumer_disconnects_total')); r++) {
    pub.send({ cmd: 'publish', ch, n: ROUND, start: sent, pad: PAD });
    await awaitPublished(pub, ch, ROUND, sent, 20000);
    sent += ROUND;
  }
  assert.equal(await server.metric('parley_slow_consumer_disconnects_total'), 1,
    `the server cut the stalled subscriber after ${sent} messages`);
  const from = sub.events.length;
  sub.proxy.resume();
  const bye = await sub.next({ ev: 'bye' }, { from, what: 'the bye behind what was queued' });
  assert.equal(bye.code, 'slow_consumer');
  const drop = await sub.next({ ev: 'disconnect' }, { from });
  assert.equal(drop.code, 4010, 'closed with 4010');
  assert.equal(drop.willReconnect, true);
  await sub.next({ ev: 'joined', ch }, { from, timeoutMs: 10000, what: 'the rejoin' });
  pub.send({ cmd: 'publish', ch, n: 5, start: sent });
  sent += 5;
  await awaitSeq(sub, ch, sent, 30000);
  assertStream(sub, ch, range(1, sent));
});
