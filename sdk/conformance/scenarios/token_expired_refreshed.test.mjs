// A token that expired while the client was connected: the next reconnect is
// refused (`unauthorized`, close 4001), the SDK asks its token provider again
// instead of giving up, and once the application has a fresh token (minted
// by `parley token --ttl`) it reconnects, rejoins and misses nothing.
//
// The server allows 60 s of leeway on `exp` (PROTOCOL.md "Connecting"), so
// waiting for a short --ttl to run out would cost a minute: the expired token
// is minted with an `exp` already past the leeway.
import assert from 'node:assert/strict';
import { scenario, token } from '../lib/world.mjs';
import { range, awaitSeq, awaitPublished, assertStream } from '../lib/checks.mjs';

// Slow enough that the harness's fresh token arrives before the second try.
const BACKOFF = { minMs: 300, maxMs: 1200, factor: 2 };

scenario('an expired token: refused with 4001, retried with the fresh one, nothing missed', async (w) => {
  const server = await w.server();
  const [pub, sub] = await w.clients(server,
    'pub-token', { user: 'sub-token', reconnect: BACKOFF, tok: await server.mintToken('sub-token', 2) });
  const ch = 'chat:token';
  await w.joinAll(ch, pub, sub);
  pub.send({ cmd: 'publish', ch, n: 10 });
  await awaitSeq(sub, ch, 10);

  sub.send({ cmd: 'token', token: token('sub-token', { expS: Math.floor(Date.now() / 1000) - 3600 }) });
  const from = sub.events.length;
  sub.proxy.cut();
  const refused = await sub.next((e) => e.ev === 'disconnect' && e.code === 4001, { from, what: 'a 4001 close' });
  assert.equal(refused.willReconnect, true, 'a token provider may mint a fresh token: the SDK tries again');
  pub.send({ cmd: 'publish', ch, n: 10, start: 10 });
  sub.send({ cmd: 'token', token: await server.mintToken('sub-token', 60) });
  const back = await sub.next({ ev: 'open' }, { from, timeoutMs: 10000, what: 'reopened with the fresh token' });
  assert.equal(back.reconnect, true);
  await sub.next({ ev: 'joined', ch }, { from });
  await awaitPublished(pub, ch, 10, 10);
  await awaitSeq(sub, ch, 20);
  assertStream(sub, ch, range(1, 20));
  assert.equal(sub.count({ ev: 'closed' }), 0, 'the client did not give up');
});
