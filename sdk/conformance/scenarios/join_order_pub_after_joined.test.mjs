// PROTOCOL.md: `joined` comes before anything else of that channel. An
// application that publishes right after `join`, before `joined` arrived,
// sees the channel's `joined` first and only then that publish's ack (or its
// error), whether the SDK sends the `pub` pipelined behind the `join` or
// waits for `joined`; the same after a cut, where the rejoin (with `since`,
// reading a backlog from history) and the resent publishes go out together.
// The channel has 200 messages of history, so a join from seq 0 takes the
// server a while (join_order_test in tests/ is the wire-level twin).
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { awaitPublished, awaitSeq, assertPublished, assertStream, range } from '../lib/checks.mjs';

const HISTORY = 200;

// `n` messages on `ch` through the HTTP API, 25 at a time (their order does
// not matter here; one publisher's round trips would cost seconds). Each has
// an id, so a request that failed in flight (a kept-alive connection the
// server closed as it was reused) is sent again without a second copy.
let backlogs = 0;
async function backlog(server, ch, n) {
  const tag = `backlog-${++backlogs}`;
  const publish = async (j) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await server.api('POST', '/v1/publish', { ch, id: `${tag}-${j}`, body: { backlog: j, pad: 'x'.repeat(200) } });
      } catch (err) {
        if (attempt === 3) throw err;
      }
    }
  };
  for (let k = 0; k < n; k += 25) {
    const batch = [];
    for (let j = k; j < Math.min(n, k + 25); j++) batch.push(publish(j));
    for (const r of await Promise.all(batch)) assert.equal(r.status, 200, JSON.stringify(r.body));
  }
}

// Every resolution of `ch` at index >= from comes after the first joined of
// `ch` at index >= from.
function assertJoinedFirst(d, ch, from, what) {
  const evs = d.events.slice(from);
  const joined = evs.findIndex((e) => e.ev === 'joined' && e.ch === ch);
  const first = evs.findIndex((e) => (e.ev === 'published' || e.ev === 'publish_failed') && e.ch === ch);
  assert.ok(first >= 0, `${d.name}: no resolution ${what}`);
  assert.ok(joined >= 0 && joined < first,
    `${d.name}: ${JSON.stringify(evs[first])} came before ${ch}'s joined ${what}`);
}

scenario('a publish right after join resolves after the channel\'s joined, also after a cut', async (w) => {
  const server = await w.server();
  const c = await w.client(server, 'order-client');
  const ch = 'chat:order';
  await backlog(server, ch, HISTORY);

  // Join from seq 0 (the whole backlog) and publish at once, in one go: the
  // driver reads both commands before the SDK has heard anything back.
  const from = c.events.length;
  c.send({ cmd: 'join', ch, since: 0 });
  c.send({ cmd: 'publish', ch, n: 5 });
  // One too large for the tenant's max_message_bytes (64 KiB): its error too
  // comes after joined.
  c.send({ cmd: 'publish', ch, n: 1, start: 100, pad: 70000 });
  await awaitPublished(c, ch, 5);
  await c.next((e) => e.ev === 'publish_failed' && e.i === 100, { from, what: 'the too large publish failed' });
  assertJoinedFirst(c, ch, from, 'after the first join');
  const failed = c.all((e) => e.ev === 'publish_failed' && e.i === 100);
  assert.deepEqual(failed.map((e) => e.code), ['too_large']);
  const fi = c.events.indexOf(failed[0]);
  const ji = c.events.findIndex((e, k) => k >= from && e.ev === 'joined' && e.ch === ch);
  assert.ok(ji < fi, 'the too_large error came after joined');
  const acks = assertPublished(c, ch, 5, { failing: [100] });
  assert.deepEqual(acks.map((a) => a.seq), range(HISTORY + 1, HISTORY + 5));
  await awaitSeq(c, ch, HISTORY + 5);
  assertStream(c, ch, range(1, HISTORY + 5));

  // A cut with publishes in flight: while the client is away a backlog
  // grows that the rejoin's `since` reads back; the client's resent
  // publishes resolve only after its new joined.
  c.proxy.refuse();
  c.send({ cmd: 'publish', ch, n: 8, start: 10 });
  await c.nth((e) => e.ev === 'published' && e.ch === ch && e.i >= 10, 2, { what: 'two acks of the second batch' });
  const opens = c.count({ ev: 'open' });
  c.proxy.cut();
  await backlog(server, ch, HISTORY);
  c.proxy.accept();
  const reopen = await c.nth({ ev: 'open' }, opens + 1, { what: 'reopened after the cut' });
  await awaitPublished(c, ch, 8, 10, 20000);
  const pending = c.events.slice(c.events.indexOf(reopen)).filter((e) => e.ev === 'published' && e.ch === ch);
  assert.ok(pending.length >= 1, 'publishes were still in flight at the cut');
  assertJoinedFirst(c, ch, c.events.indexOf(reopen), 'after the rejoin');
  assertPublished(c, ch, 8, { start: 10, failing: [100] });
  const last = HISTORY + 5 + 8 + HISTORY;
  await awaitSeq(c, ch, last);
  assertStream(c, ch, range(1, last));
});
