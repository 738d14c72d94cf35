// PROTOCOL.md "State deltas" and "Time for games" in the SDK: the page's test
// vectors through the applier and through the client (a scripted server, in
// both encodings), what the client does with an `sd` it cannot apply (drops
// it, re-joins the channel with `since`, never invents a body), the clock
// estimate from pongs, and the same against the real server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ParleyClient, applyStateDelta } from '../src/index.js';
import { scriptedServer } from './support/scripted_server.mjs';
import { serverForFile, demoTenant, until } from './support/server.mjs';

// The real server, for the tests at the end; every client is closed after
// the file (track(): also the scripted ones, when a test fails before its close()).
const file = serverForFile({ tenants: demoTenant({ more: 'state_delta = true\n' }) });

const CH = 'world:7';
const settle = () => new Promise((r) => setTimeout(r, 20));

// PROTOCOL.md's table: base, new, what the sd carries after `sid`, applied.
// (JSON.parse makes 1.0 the number 1: the vector's text difference is the
// server's to see, the client only applies what comes.)
const VECTORS = [
  [{ x: 1, y: 2, name: 'ann' }, { body: { x: 1.5 } }, { x: 1.5, y: 2, name: 'ann' }],
  [{ x: 1 }, { body: {} }, { x: 1 }],
  [{ x: 1, hp: 9, fx: null }, { body: { x: 1.0, emote: 'wave' }, unset: ['fx'] }, { x: 1.0, hp: 9, emote: 'wave' }],
  [{ inv: [1, 2], o: { a: 1, b: 2 } }, { body: { o: { a: 1, b: 3 } } }, { inv: [1, 2], o: { a: 1, b: 3 } }],
  [{ a: 1 }, { body: {}, unset: ['a'] }, {}],
];

test('applyStateDelta gives the applied column of the test vectors and leaves the base alone', () => {
  for (const [base, sd, applied] of VECTORS) {
    const copy = structuredClone(base);
    assert.deepEqual(applyStateDelta(base, sd.body, sd.unset), applied, JSON.stringify(sd));
    assert.deepEqual(base, copy);
  }
  // A key both unset and set is set (unset applies first); "__proto__" is a key like any other.
  assert.deepEqual(applyStateDelta({ a: 1, b: 2 }, { a: 3 }, ['a']), { a: 3, b: 2 });
  const odd = applyStateDelta(JSON.parse('{"__proto__":1}'), JSON.parse('{"__proto__":{"polluted":true}}'));
  assert.deepEqual(Object.keys(odd), ['__proto__']);
  assert.equal(Object.getPrototypeOf(odd), Object.prototype);
  assert.equal({}.polluted, undefined);
  for (const [base, set, unset] of [[null, {}], [[], {}], [{}, 1], [{}, []], [{}, {}, 'a'], [{}, {}, [1]], [{}, null]]) {
    assert.throws(() => applyStateDelta(base, set, unset), TypeError, JSON.stringify([base, set, unset]));
  }
});

async function deltaClient(net, opts = {}) {
  const client = new ParleyClient({ url: 'ws://scripted.invalid/v1/ws', token: 't', WebSocket: net.WebSocket,
    stateDeltas: true, ...opts });
  file.track(client);
  const ch = client.channel(CH);
  const got = [];
  const errors = [];
  ch.on('state', (s) => got.push(s));
  client.on('error', (e) => errors.push(e));
  await ch.join();
  return { client, ch, got, errors };
}

for (const encoding of ['json', 'msgpack']) {
  test(`${encoding}: the vectors and the whole exchange reach the application as full states`, async () => {
    const net = scriptedServer({ encoding, caps: ['state_delta'] });
    const { client, got, errors } = await deltaClient(net, { encoding });
    assert.deepEqual(net.hellos[0].caps, ['state_delta']);
    assert.equal(client.welcome.stateDeltas, true);
    assert.deepEqual(client.welcome.caps, ['state_delta']);
    // The exchange of PROTOCOL.md.
    net.sock.push({ op: 'state', tick: 100, ts: 1764460800000, sid: 1, ch: CH, from: 'b', key: 'pos', body: { x: 1, y: 2 } });
    net.sock.push({ op: 'sd', tick: 101, ts: 1764460800020, sid: 1, body: { x: 2 } });
    // Each vector on a stream of its own, in one batch.
    VECTORS.forEach(([base], k) => net.sock.push([{ op: 'state', sid: 10 + k, ch: CH, from: `v${k}`, key: 'k', body: base }]));
    net.sock.push(VECTORS.map(([, sd], k) => ({ op: 'sd', tick: 102, ts: 1764460800040, sid: 10 + k, pos: [k, k + 1], ...sd })));
    await settle();
    assert.deepEqual(errors, []);
    const exchange = got.slice(0, 2);
    assert.deepEqual(exchange.map((s) => [s.op, s.ch, s.from, s.key, s.tick, s.ts, s.body]), [
      ['state', CH, 'b', 'pos', 100, 1764460800000, { x: 1, y: 2 }],
      ['state', CH, 'b', 'pos', 101, 1764460800020, { x: 2, y: 2 }],
    ]);
    const applied = got.slice(2 + VECTORS.length);
    assert.equal(applied.length, VECTORS.length);
    applied.forEach((s, k) => {
      assert.deepEqual(s.body, VECTORS[k][2], `vector ${k + 1}`);
      assert.deepEqual([s.ch, s.from, s.key, s.tick, s.ts, s.pos], [CH, `v${k}`, 'k', 102, 1764460800040, [k, k + 1]]);
    });
    client.close();
  });
}

test('without stateDeltas the hello asks for nothing; a welcome without caps grants nothing', async () => {
  const net = scriptedServer({ caps: ['state_delta'] });
  const plain = new ParleyClient({ url: 'ws://scripted.invalid/v1/ws', token: 't', WebSocket: net.WebSocket });
  file.track(plain);
  await plain.connect();
  assert.equal(net.hellos[0].caps, undefined);
  assert.equal(plain.welcome.stateDeltas, false);
  plain.close();
  const old = scriptedServer(); // an older server: no caps in its welcome
  const asking = new ParleyClient({ url: 'ws://scripted.invalid/v1/ws', token: 't', WebSocket: old.WebSocket, stateDeltas: true });
  file.track(asking);
  await asking.connect();
  assert.deepEqual(old.hellos[0].caps, ['state_delta']);
  assert.deepEqual([asking.welcome.caps, asking.welcome.stateDeltas], [[], false]);
  asking.close();
});

test('the application may change the bodies it gets: the next delta applies to what the server sent', async () => {
  const net = scriptedServer({ caps: ['state_delta'] });
  const { client, got } = await deltaClient(net);
  net.sock.push({ op: 'state', sid: 3, ch: CH, from: 'b', key: 'pos', body: { x: 1, y: 2 } });
  await settle();
  got[0].body.y = 'mine';
  net.sock.push({ op: 'sd', sid: 3, body: { x: 2 } });
  await settle();
  got[1].body.x = 'mine too';
  net.sock.push({ op: 'sd', sid: 3, body: {} });
  await settle();
  assert.deepEqual(got.map((s) => s.body).slice(2), [{ x: 2, y: 2 }]);
  client.close();
});

test('an sd the client has no base for is dropped, reported, and the channel re-joined with since', async () => {
  const net = scriptedServer({ caps: ['state_delta'], joinedSeq: 5 });
  const { client, got, errors } = await deltaClient(net);
  net.sock.push({ op: 'sd', sid: 99, body: { x: 1 } });
  const leave = await net.request();
  assert.deepEqual([leave.op, leave.ch], ['leave', CH]);
  await settle();
  assert.deepEqual(got, [], 'no state was invented');
  assert.equal(errors.length, 1);
  assert.equal(errors[0].code, 'bad_frame');
  assert.deepEqual(net.joins.map((j) => j.since), [undefined, 5], 'joined again after what was delivered');
  // Once joined again, full bodies and deltas apply as before.
  net.sock.push({ op: 'state', sid: 99, ch: CH, from: 'b', key: 'pos', body: { x: 1, y: 1 } });
  net.sock.push({ op: 'sd', sid: 99, body: { y: 2 } });
  await settle();
  assert.deepEqual(got.map((s) => s.body), [{ x: 1, y: 1 }, { x: 1, y: 2 }]);
  client.close();
});

test('hostile sd frames are refused, never delivered; the stream is full again after the re-join', async () => {
  const hostile = [
    { op: 'sd', sid: 1, body: 'x' }, { op: 'sd', sid: 1, body: [1] }, { op: 'sd', sid: 1, body: null },
    { op: 'sd', sid: 1 }, { op: 'sd', sid: 1, body: {}, unset: 'x' }, { op: 'sd', sid: 1, body: {}, unset: [1] },
    { op: 'sd', sid: '1', body: {} }, { op: 'sd', sid: -1, body: {} }, { op: 'sd', sid: 1.5, body: {} },
    { op: 'sd', body: {} }, { op: 'sd', sid: { a: 1 }, body: {} },
  ];
  for (const frame of hostile) {
    const net = scriptedServer({ caps: ['state_delta'] });
    const { client, got, errors } = await deltaClient(net);
    net.sock.push({ op: 'state', sid: 1, ch: CH, from: 'b', key: 'pos', body: { x: 1 } });
    net.sock.push(frame);
    await settle();
    assert.equal(got.length, 1, JSON.stringify(frame));
    assert.equal(errors[0]?.code, 'bad_frame', JSON.stringify(frame));
    assert.equal(net.joins.length, 2, `${JSON.stringify(frame)}: re-joined`);
    // Applying to the stream without a new full body would be guessing.
    net.sock.push({ op: 'sd', sid: 1, body: { x: 2 } });
    await settle();
    assert.equal(got.length, 1, `${JSON.stringify(frame)}: no delta on a dropped base`);
    client.close();
  }
});

test('an sd sent before the server saw a leave is dropped quietly; a base of a non-object body is none', async () => {
  const net = scriptedServer({ caps: ['state_delta'] });
  const { client, ch, got, errors } = await deltaClient(net);
  net.sock.push({ op: 'state', sid: 1, ch: CH, from: 'b', key: 'pos', body: { x: 1 } });
  await settle();
  const left = ch.leave();
  const leave = await net.request();
  net.sock.push({ op: 'sd', sid: 1, body: { x: 2 } }); // in flight when the leave went out
  net.sock.push({ op: 'left', rid: leave.rid, ch: CH });
  await left;
  await settle();
  assert.deepEqual([got.length, errors.length], [1, 0]);
  await ch.join();
  net.sock.push({ op: 'state', sid: 2, ch: CH, from: 'b', key: 'k', body: [1, 2] });
  net.sock.push({ op: 'sd', sid: 2, body: { x: 1 } });
  await settle();
  assert.deepEqual(got.map((s) => s.body), [{ x: 1 }, [1, 2]]);
  assert.equal(errors.length, 1, 'an sd on an array base is refused');
  client.close();
});

test('pongs with ts give the clock: the offset of the smallest rtt, serverNow and toLocalTime', async () => {
  const net = scriptedServer();
  const client = new ParleyClient({ url: 'ws://scripted.invalid/v1/ws', token: 't', WebSocket: net.WebSocket });
  file.track(client);
  await client.connect();
  assert.equal(client.clock, null);
  assert.equal(client.serverNow(), null);
  const skew = 1_000_000; // the server's clock is 1000 s ahead
  const p = client.ping();
  const ping = await net.request();
  net.sock.push({ op: 'pong', rid: ping.rid, ts: Date.now() + skew });
  const rtt = await p;
  const c = client.clock;
  assert.equal(c.rtt, rtt);
  assert.ok(Math.abs(c.offset - skew) <= rtt / 2 + 1, JSON.stringify(c));
  assert.ok(Math.abs(client.serverNow() - (Date.now() + skew)) <= rtt / 2 + 5);
  assert.equal(client.toLocalTime(5 + skew), 5 + skew - c.offset);
  // A slower ping with a worse answer does not replace the better sample.
  const q = client.ping();
  const ping2 = await net.request();
  await new Promise((r) => setTimeout(r, 60));
  net.sock.push({ op: 'pong', rid: ping2.rid, ts: Date.now() + skew + 50000 });
  await q;
  assert.deepEqual(client.clock, c);
  client.close();
});

test('clockSyncMs pings after the welcome and every period', async () => {
  const net = scriptedServer();
  const client = new ParleyClient({ url: 'ws://scripted.invalid/v1/ws', token: 't', WebSocket: net.WebSocket, clockSyncMs: 100 });
  file.track(client);
  await client.connect();
  const first = await net.request(500);
  assert.equal(first.op, 'ping');
  net.sock.push({ op: 'pong', rid: first.rid, ts: 42 });
  await settle();
  assert.ok(client.clock, 'a pong to a clock ping feeds the clock');
  const second = await net.request(500);
  assert.equal(second.op, 'ping');
  client.close();
});

// The real server: a namespace with state_delta, a sender and two receivers,
// one with deltas and one without. The delta one gets `sd` frames (seen on
// the client's `frame` event) and both see the same full bodies in order.
const real = file.client;

for (const encoding of ['json', 'msgpack']) {
  test(`${encoding}: against the server, deltas are applied invisibly and states carry tick and ts`, async () => {
    const ch = `world:real-${encoding}`;
    const sender = real(`s-${encoding}`, { encoding });
    const withDeltas = real(`d-${encoding}`, { encoding, stateDeltas: true });
    const plain = real(`p-${encoding}`, { encoding });
    const seen = new Map([[withDeltas, []], [plain, []]]);
    const frames = [];
    withDeltas.on('frame', (f) => frames.push(f.op));
    for (const c of [withDeltas, plain]) c.channel(ch).on('state', (s) => seen.get(c).push(s));
    await Promise.all([sender, withDeltas, plain].map((c) => c.channel(ch).join()));
    assert.equal(withDeltas.welcome.stateDeltas, true);
    assert.equal(plain.welcome.stateDeltas, false);
    const bodies = [];
    for (let k = 0; k < 12; k++) {
      const body = { x: k, y: 7, name: 'ann', ...(k % 3 ? { fx: 'spark' } : {}), o: { hp: k >> 2 } };
      bodies.push(body);
      sender.channel(ch).setState('pos', body);
      // One body per tick, delivered before the next: nothing coalesced.
      await until(() => seen.get(withDeltas).length === k + 1 && seen.get(plain).length === k + 1, 5000, `state ${k}`);
    }
    for (const [c, got] of seen) {
      assert.deepEqual(got.map((s) => s.body), bodies, c === plain ? 'plain' : 'deltas');
      assert.ok(got.every((s) => Number.isInteger(s.tick) && Number.isInteger(s.ts) && s.from === sender.user));
      for (let k = 1; k < got.length; k++) assert.ok(got[k].tick > got[k - 1].tick, 'ticks go up');
    }
    assert.equal(frames.filter((op) => op === 'state').length >= 1, true);
    assert.ok(frames.filter((op) => op === 'sd').length >= 10, `sd frames: ${frames.join(',')}`);
    // pong carries the server's ts: the clock is the server's (same machine: offset ~0).
    await withDeltas.ping();
    assert.ok(Math.abs(withDeltas.clock.offset) <= withDeltas.clock.rtt / 2 + 5, JSON.stringify(withDeltas.clock));
  });
}

// PROTOCOL.md "Batched state deltas": the page's two vectors through the
// client (each entry the sd it stands for, in order, at the sds's place in
// its batch), hostile sds frames refused whole, and the real server's.
for (const encoding of ['json', 'msgpack']) {
  test(`${encoding}: sds entries reach the application as the states they stand for, in order`, async () => {
    const net = scriptedServer({ encoding, caps: ['state_delta', 'state_delta_batch'] });
    const { client, got, errors } = await deltaClient(net, { encoding, stateDeltaBatch: true });
    assert.deepEqual(net.hellos[0].caps, ['state_delta', 'state_delta_batch']);
    assert.deepEqual([client.welcome.stateDeltas, client.welcome.stateDeltaBatch], [true, true]);
    net.sock.push({ op: 'state', tick: 100, ts: 1764460800000, sid: 1, ch: CH, from: 'b', key: 'pos', body: { x: 1, y: 2 } });
    net.sock.push({ op: 'sds', tick: 101, ts: 1764460800020, d: [1, { x: 2 }] });
    net.sock.push([
      { op: 'state', sid: 7, ch: CH, from: 'p', key: 'k', body: { x: 1, y: 2 } },
      { op: 'state', sid: 9, ch: CH, from: 'q', key: 'k', body: { hp: 9, name: 'ann' } },
      { op: 'state', sid: 12, ch: CH, from: 'r', key: 'k', body: { fx: null, hp: 3 } },
    ]);
    net.sock.push([
      { op: 'sds', tick: 8823342, ts: 1764460800140, d: [7, { x: 1.5 }, 9, [[120.5, -3], { hp: 8 }], 12, [null, {}, ['fx']]] },
      { op: 'state', sid: 20, ch: CH, from: 's', key: 'k', body: { after: true } },
    ]);
    await settle();
    assert.deepEqual(errors, []);
    assert.deepEqual(got[1].body, { x: 2, y: 2 });
    assert.deepEqual([got[1].tick, got[1].ts, got[1].from, got[1].key], [101, 1764460800020, 'b', 'pos']);
    const batch = got.slice(5);
    assert.deepEqual(batch.map((s) => [s.from, s.body, s.pos, s.tick, s.ts]), [
      ['p', { x: 1.5, y: 2 }, undefined, 8823342, 1764460800140],
      ['q', { hp: 8, name: 'ann' }, [120.5, -3], 8823342, 1764460800140],
      ['r', { hp: 3 }, undefined, 8823342, 1764460800140],
      ['s', { after: true }, undefined, undefined, undefined],
    ]);
    client.close();
  });
}

test('hostile sds frames are dropped whole, reported, and the channel re-joined', async () => {
  const hostile = [
    { op: 'sds', d: [1] }, { op: 'sds', d: [] }, { op: 'sds' }, { op: 'sds', d: {} }, { op: 'sds', d: [0, {}] },
    { op: 'sds', d: ['1', {}] }, { op: 'sds', d: [1, 5] }, { op: 'sds', d: [1, [null]] }, { op: 'sds', d: [1, [5, {}]] },
    { op: 'sds', d: [1, [null, 'x']] }, { op: 'sds', d: [1, [null, {}, 'x']] }, { op: 'sds', d: [1, [null, {}, [1]]] },
    { op: 'sds', d: [1, [null, {}, [], 4]] },
    // A good entry before a bad one is not applied either: the frame is one.
    { op: 'sds', d: [1, { x: 2 }, 1, 'bad'] },
  ];
  for (const frame of hostile) {
    const net = scriptedServer({ caps: ['state_delta', 'state_delta_batch'] });
    const { client, got, errors } = await deltaClient(net, { stateDeltaBatch: true });
    net.sock.push({ op: 'state', sid: 1, ch: CH, from: 'b', key: 'pos', body: { x: 1 } });
    net.sock.push(frame);
    await settle();
    assert.equal(got.length, 1, JSON.stringify(frame));
    assert.equal(errors[0]?.code, 'bad_frame', JSON.stringify(frame));
    assert.equal(net.joins.length, 2, `${JSON.stringify(frame)}: re-joined`);
    net.sock.push({ op: 'sds', d: [1, { x: 3 }] });
    await settle();
    assert.equal(got.length, 1, `${JSON.stringify(frame)}: no delta on a dropped base`);
    client.close();
  }
});

for (const encoding of ['json', 'msgpack']) {
  test(`${encoding}: against the server, batched deltas are applied invisibly`, async () => {
    const ch = `world:batch-${encoding}`;
    const senders = [real(`bs1-${encoding}`, { encoding }), real(`bs2-${encoding}`, { encoding })];
    const batched = real(`bb-${encoding}`, { encoding, stateDeltas: true, stateDeltaBatch: true });
    const plain = real(`bp-${encoding}`, { encoding });
    const seen = new Map([[batched, []], [plain, []]]);
    const frames = [];
    batched.on('frame', (f) => frames.push(f.op));
    for (const c of [batched, plain]) c.channel(ch).on('state', (s) => seen.get(c).push(s));
    await Promise.all([...senders, batched, plain].map((c) => c.channel(ch).join()));
    assert.deepEqual([batched.welcome.stateDeltas, batched.welcome.stateDeltaBatch], [true, true]);
    for (let k = 0; k < 10; k++) {
      // Two senders in one tick: usually one sds of two entries.
      for (const [i, s] of senders.entries()) s.channel(ch).setState('pos', { x: k, y: i, ...(k % 2 ? { fx: 1 } : {}) });
      await until(() => seen.get(batched).length === 2 * (k + 1) && seen.get(plain).length === 2 * (k + 1), 5000, `states ${k}`);
    }
    const view = (got) => got.map((s) => [s.from, JSON.stringify(s.body)]);
    assert.deepEqual(view(seen.get(batched)), view(seen.get(plain)), 'same bodies in the same order');
    assert.ok(frames.filter((op) => op === 'sds').length >= 5, `sds frames: ${frames.join(',')}`);
    assert.equal(frames.filter((op) => op === 'sd').length, 0, 'no sd to a batch client');
  });
}
