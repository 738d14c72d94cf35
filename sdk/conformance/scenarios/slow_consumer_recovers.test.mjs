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
  // The server gives the bye kCloseTimeoutMs (5 s) to leave before it aborts
  // the socket, so the link flows again as soon as the cut shows, not after
  // the round in flight (a round took seconds on a loaded CI machine).
  const cutMetric = () => server.metric('parley_slow_consumer_disconnects_total');
  let from = null;
  const watching = (async () => {
    while (from === null) {
      if (await cutMetric() && from === null) {
        from = sub.events.length;
        sub.proxy.resume();
        return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  let sent = 5;
  for (let r = 0; r < MAX_ROUNDS && from === null; r++) {
    pub.send({ cmd: 'publish', ch, n: ROUND, start: sent, pad: PAD });
    await awaitPublished(pub, ch, ROUND, sent, 20000);
    sent += ROUND;
  }
  if (from === null) {
    from = sub.events.length; // never cut: stops the watcher; the assert says so
    sub.proxy.resume();
  }
  await watching;
  assert.equal(await cutMetric(), 1, `the server cut the stalled subscriber after ${sent} messages`);
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
