// PROTOCOL.md "Binary encoding: MessagePack": members of one channel may use
// different encodings, and bodies round-trip between them. A JSON client, a
// MessagePack client and one in the run's encoding (run.sh --encoding) share
// a channel; each publishes bodies holding binary values ({"$bin"} objects,
// which travel as MessagePack `bin`), objects that only look like them,
// floats, the largest safe integers, escapes and nesting; the HTTP API adds
// one. Every member (the publisher included) sees every body exactly as it
// was published, in one order, and so does a `state`, both ways. The proxy
// reads each client's encoding from its first bytes (World.client).
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';
import { awaitPublished, assertPublished, assertStream, awaitSeq, range } from '../lib/checks.mjs';

// Fields added to every body. `{"$bin"}` with canonical padded base64 in a
// body is binary (MessagePack `bin`); the unpadded one and the one with a
// second key are plain objects in both encodings.
const EXTRA = {
  data: { $bin: 'AAECAwQF/w==' },
  one: { $bin: 'AQ==' },
  loose: { $bin: 'AAE' },
  two: { $bin: 'AA==', x: 1 },
  nested: { list: [1, -2, 3.5, 'ü', null, true, false, { $bin: 'AQI=' }, []], deep: { a: { b: { c: [[{}]] } } } },
  big: 9007199254740991,
  neg: -9007199254740991,
  small: -33,
  f: 0.1,
  e: 1e300,
  s: 'q"b\\c\n\u0001\u00e9\u{1F600}',
};

function bodiesOf(d, ch) {
  return d.all({ ev: 'msg', ch }).map((m) => [m.seq, m.body]);
}

scenario('bodies reach JSON and MessagePack members exactly as published, in one order', async (w) => {
  const server = await w.server();
  const [j, m, r] = await w.clients(server,
    { user: 'enc-json', enc: 'json' }, { user: 'enc-msgpack', enc: 'msgpack' }, 'enc-run');
  const ch = 'chat:encodings';
  await w.joinAll(ch, j, m, r);
  const expected = new Map(); // i -> body
  let start = 0;
  for (const d of [j, m, r]) {
    d.send({ cmd: 'publish', ch, n: 2, start, tag: d.user, body: EXTRA });
    for (let i = start; i < start + 2; i++) expected.set(i, { ...EXTRA, i, tag: d.user });
    await awaitPublished(d, ch, 2, start);
    assertPublished(d, ch, 2, { start });
    start += 2;
  }
  const http = await server.api('POST', '/v1/publish', { ch, body: { ...EXTRA, i: 100, tag: 'http' }, id: 'http-1' });
  assert.equal(http.status, 200, JSON.stringify(http.body));
  expected.set(100, { ...EXTRA, i: 100, tag: 'http' });
  const last = 7;
  for (const d of [j, m, r]) await awaitSeq(d, ch, last);
  const streams = [j, m, r].map((d) => bodiesOf(d, ch));
  for (const [k, d] of [j, m, r].entries()) {
    assertStream(d, ch, range(1, last));
    for (const [seq, body] of streams[k]) {
      assert.deepEqual(body, expected.get(body.i), `${d.user} got seq ${seq} with another body than was published`);
    }
    assert.deepEqual(streams[k], streams[0], `${d.user} and ${j.user} saw different streams`);
  }
  // The store kept the JSON form: history (GET /v1/history) has the same bodies.
  const stored = await server.stored(ch);
  assert.deepEqual(stored.map((s) => s.body), streams[0].map(([, b]) => b), 'stored bodies');

  // state, both ways: the MessagePack member's to the others, and the JSON member's to it.
  const pos = { ...EXTRA, x: 1.25 };
  m.send({ cmd: 'state', ch, key: 'pos', body: pos });
  j.send({ cmd: 'state', ch, key: 'pos', body: { ...pos, x: -1 } });
  const fromM = (e) => e.ev === 'state' && e.ch === ch && e.from === 'enc-msgpack';
  const fromJ = (e) => e.ev === 'state' && e.ch === ch && e.from === 'enc-json';
  for (const d of [j, r]) {
    const s = await d.next(fromM, { what: `${d.user}: state from enc-msgpack` });
    assert.deepEqual(s.body, pos, `${d.user}: the MessagePack member's state body`);
  }
  for (const d of [m, r]) {
    const s = await d.next(fromJ, { what: `${d.user}: state from enc-json` });
    assert.deepEqual(s.body, { ...pos, x: -1 }, `${d.user}: the JSON member's state body`);
  }
});
