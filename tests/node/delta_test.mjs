// PROTOCOL.md "State deltas", with independent clients (wire_clients.mjs) that
// apply deltas by the page's rule alone (`Applier` below). One channel in a
// namespace with state_delta: a sender (JSON over WebSocket), plain members
// (JSON, MessagePack) and delta members (MessagePack over WebSocket, JSON over
// TCP, MessagePack over TCP). Every member must see the same bodies in the same
// order as the plain ones, delta members must actually get `sd` frames, and a
// full body must come first, after a re-join, and after an interest-area move.
// Batched deltas ("Batched state deltas"): members with state_delta_batch
// (MessagePack over WebSocket, JSON over TCP) get the same bodies in the same
// order, their deltas as `sds` entries (several in one when two senders share
// a tick); one asking for state_delta_batch without state_delta is granted
// nothing and gets full bodies. Also: /metrics counts the bytes of each encoding.
//
//   node delta_test.mjs HTTP_PORT TCP_PORT TOKEN_SENDER TOKEN_A ... (11 tokens)
// Exits 0 when everything holds, non-zero naming the first failure.
import assert from 'node:assert/strict';
import { asJson, fetchMetrics, makeClients } from './wire_clients.mjs';

const [httpPort, tcpPort, ...tokens] = process.argv.slice(2);
if (tokens.length !== 11) {
  console.error('usage: node delta_test.mjs HTTP_PORT TCP_PORT TOKEN x 11');
  process.exit(2);
}
setTimeout(() => fail(new Error('gave up after 45000 ms')), 45000).unref();

let step = 'connect';
function fail(err) {
  console.error(`delta test FAILED at step "${step}": ${err.stack ?? err.message}`);
  process.exit(1);
}
const { WsClient, TcpClient } = makeClients({ httpPort, tcpPort, fail: (e) => fail(e) });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array);

// The page's rule: per sid the stream and its base; an `sd` is the base minus
// `unset`, plus `body`'s fields; what the application sees is a state either way.
class Applier {
  constructor(name) {
    this.name = name;
    this.streams = new Map();
    this.seen = [];   // {ch, from, key, body, pos} as the application would get them
    this.kinds = [];  // 'plain' | 'full' | 'sd', per delivery
  }
  take(o) {
    if (o.op === 'sds') {
      // Each entry is the sd of the frame's tick and ts and its own parts.
      assert.ok(Array.isArray(o.d) && o.d.length > 0 && o.d.length % 2 === 0, `${this.name}: sds d`);
      assert.ok(Number.isInteger(o.tick) && Number.isInteger(o.ts), `${this.name}: sds carries tick and ts`);
      for (let i = 0; i < o.d.length; i += 2) {
        const v = o.d[i + 1];
        const sd = { op: 'sd', tick: o.tick, ts: o.ts, sid: o.d[i] };
        if (Array.isArray(v)) {
          assert.ok(v.length === 2 || v.length === 3, `${this.name}: entry ${JSON.stringify(v)}`);
          if (v[0] !== null) sd.pos = v[0];
          sd.body = v[1];
          if (v.length === 3) {
            assert.ok(v[2].length > 0, `${this.name}: an unset is never empty`);
            sd.unset = v[2];
          }
        } else {
          sd.body = v;
        }
        this.take(sd);
        this.kinds[this.kinds.length - 1] = 'sds';
      }
      this.sdsFrames = (this.sdsFrames ?? 0) + 1;
      this.sdsEntries = (this.sdsEntries ?? 0) + o.d.length / 2;
      return;
    }
    if (o.op === 'state') {
      if (o.sid !== undefined) {
        assert.ok(Number.isInteger(o.sid) && o.sid > 0, `${this.name}: sid ${o.sid}`);
        this.streams.set(o.sid, { ch: o.ch, from: o.from, key: o.key, body: o.body });
      }
      this.seen.push({ ch: o.ch, from: o.from, key: o.key, body: o.body, pos: o.pos });
      this.kinds.push(o.sid === undefined ? 'plain' : 'full');
      return;
    }
    assert.equal(o.op, 'sd');
    const s = this.streams.get(o.sid);
    assert.ok(s, `${this.name}: an sd for sid ${o.sid} it has no base for`);
    assert.ok(isObject(s.body) && isObject(o.body), `${this.name}: sd bodies are objects`);
    assert.ok(Number.isInteger(o.tick) && Number.isInteger(o.ts), `${this.name}: sd carries tick and ts`);
    const body = { ...s.body };
    for (const k of o.unset ?? []) delete body[k];
    for (const [k, v] of Object.entries(o.body)) body[k] = v;
    s.body = body;
    this.seen.push({ ch: s.ch, from: s.from, key: s.key, body, pos: o.pos });
    this.kinds.push('sd');
  }
}

// Takes the client's next state, sd or sds into its applier: at least one state.
async function receive(cl, what) {
  cl.applier.take(await cl.expect((o) => o.op === 'state' || o.op === 'sd' || o.op === 'sds', what));
}
// Takes frames until the client has seen n states in all.
async function receiveUntil(cl, n, what) {
  while (cl.applier.seen.length < n) await receive(cl, what);
}

const metrics = () => fetchMetrics(httpPort);

async function main() {
  const sender = new WsClient('S (json ws)', 'json');
  const plainJson = new WsClient('A (json ws)', 'json');
  const plainMp = new WsClient('B (msgpack ws)', 'msgpack');
  const deltaMpWs = new WsClient('C (msgpack ws, deltas)', 'msgpack');
  const deltaJsonTcp = new TcpClient('D (json tcp, deltas)');
  const deltaMpTcp = new TcpClient('E (msgpack tcp, deltas)');
  const roamer = new WsClient('R (msgpack ws, deltas, moves)', 'msgpack');
  const batchMpWs = new WsClient('F (msgpack ws, batched deltas)', 'msgpack');
  const batchJsonTcp = new TcpClient('G (json tcp, batched deltas)');
  const batchAlone = new WsClient('H (json ws, state_delta_batch alone)', 'json');
  const sender2 = new WsClient('T (msgpack ws, second sender)', 'msgpack');
  const all = [sender, plainJson, plainMp, deltaMpWs, deltaJsonTcp, deltaMpTcp, roamer, batchMpWs, batchJsonTcp,
    batchAlone, sender2];
  await Promise.all(all.map((c) => c.open()));

  step = 'hello with caps';
  const caps = ['state_delta', 'some_future_cap'];
  sender.send({ op: 'hello', v: 1, token: tokens[0], rid: 1 });
  plainJson.send({ op: 'hello', v: 1, token: tokens[1], rid: 1 });
  plainMp.send({ op: 'hello', v: 1, token: tokens[2], rid: 1 });
  deltaMpWs.send({ op: 'hello', v: 1, token: tokens[3], rid: 1, caps });
  deltaJsonTcp.send({ op: 'hello', v: 1, token: tokens[4], rid: 1, caps });
  deltaMpTcp.send({ op: 'hello', v: 1, token: tokens[5], rid: 1, caps, enc: 'msgpack' });
  roamer.send({ op: 'hello', v: 1, token: tokens[6], rid: 1, caps });
  const batchCaps = ['state_delta_batch', 'state_delta', 'another_future_cap'];
  batchMpWs.send({ op: 'hello', v: 1, token: tokens[7], rid: 1, caps: batchCaps });
  batchJsonTcp.send({ op: 'hello', v: 1, token: tokens[8], rid: 1, caps: batchCaps });
  batchAlone.send({ op: 'hello', v: 1, token: tokens[9], rid: 1, caps: ['state_delta_batch'] });
  sender2.send({ op: 'hello', v: 1, token: tokens[10], rid: 1 });
  const welcomes = await Promise.all(all.map((c) => c.expectOp('welcome', 1)));
  for (const [i, w] of welcomes.entries()) {
    if (all[i] === batchMpWs || all[i] === batchJsonTcp) {
      assert.deepEqual(w.caps, ['state_delta', 'state_delta_batch'], `${all[i].name}: granted caps`);
    } else if (i >= 3 && i <= 6) {
      assert.deepEqual(w.caps, ['state_delta'], `${all[i].name}: granted caps`);
    } else {
      assert.equal(w.caps, undefined, `${all[i].name}: nothing granted`);
    }
  }
  const members = [plainJson, plainMp, deltaMpWs, deltaJsonTcp, deltaMpTcp, batchMpWs, batchJsonTcp, batchAlone];
  for (const cl of members) cl.applier = new Applier(cl.name);

  step = 'join';
  const ch = `dw:${process.pid}-${Date.now()}`;
  for (const cl of [sender, sender2, ...members]) cl.send({ op: 'join', ch, rid: 2 });
  await Promise.all([sender, sender2, ...members].map((c) => c.expectOp('joined', 2)));

  step = 'a sequence of bodies, one per tick';
  const bodies = [
    { x: 1, y: 2, name: 'ann', inv: [1, 2] },
    { x: 1.5, y: 2, name: 'ann', inv: [1, 2] },
    { x: 1.5, y: 2, name: 'ann', inv: [1, 2] },       // nothing changed
    { x: 2.5, y: 2, inv: [1, 2, 3] },                  // name unset, inv whole
    { x: 2.5, y: 3, o: { a: 1, b: { c: 2 } } },
    'not an object',                                  // plain, no sid
    { x: 9, y: 9 },                                   // whole again
    { x: 10, y: 9 },
  ];
  for (const body of bodies) {
    sender.send({ op: 'state', ch, key: 'pos', body });
    for (const cl of members) await receive(cl, `state ${JSON.stringify(body)}`);
    await sleep(45);
  }
  // A body with a key twice is stored as written: deltas leave it alone.
  sender.sendRaw(`{"op":"state","ch":"${ch}","key":"pos","body":{"x":11,"x":12}}`, false);
  for (const cl of members) await receive(cl, 'the duplicate-key state');
  await sleep(45);
  sender.send({ op: 'state', ch, key: 'pos', body: { x: 13, y: 9 } });
  for (const cl of members) await receive(cl, 'the state after it');
  await sleep(45);

  step = 'coalescing: three states at once, the latest wins within a tick';
  // Usually one tick holds all three; should a tick fall between them, two
  // arrive. Either way every member ends on x 22 with the same bodies.
  for (const x of [20, 21, 22]) sender.send({ op: 'state', ch, key: 'pos', body: { x, y: 9, t: x } });
  for (const cl of members) {
    do await receive(cl, 'the coalesced state'); while (cl.applier.seen.at(-1).body.x !== 22);
  }
  await sleep(45);
  sender.send({ op: 'state', ch, key: 'pos', body: { x: 23, y: 9, t: 22 } });
  for (const cl of members) await receive(cl, 'the state after the coalesced one');

  step = 'same bodies in the same order';
  const want = plainJson.applier.seen.map((s) => asJson(s.body));
  assert.ok(want.length >= bodies.length + 4 && want.length <= bodies.length + 6, `${want.length} states`);
  assert.deepEqual(want.at(-2), { x: 22, y: 9, t: 22 }, 'latest wins within a tick');
  for (const cl of members) {
    assert.deepEqual(cl.applier.seen.map((s) => asJson(s.body)), want, `${cl.name}: bodies`);
    for (const s of cl.applier.seen) {
      assert.equal(s.ch, ch);
      assert.equal(s.key, 'pos');
    }
  }
  assert.deepEqual(plainJson.applier.kinds, want.map(() => 'plain'));
  assert.deepEqual(plainMp.applier.kinds, want.map(() => 'plain'));
  assert.deepEqual(batchAlone.applier.kinds, want.map(() => 'plain'), 'state_delta_batch alone: full bodies');
  assert.equal(batchAlone.inbox.filter((o) => o.op === 'sd' || o.op === 'sds').length, 0);
  for (const cl of [batchMpWs, batchJsonTcp]) {
    assert.deepEqual(cl.applier.kinds, deltaMpTcp.applier.kinds.map((k) => (k === 'sd' ? 'sds' : k)),
      `${cl.name}: the same frames whole, every delta an sds entry`);
    assert.equal(cl.inbox.filter((o) => o.op === 'sd').length, 0, `${cl.name}: no sd frames`);
  }
  for (const cl of [deltaMpWs, deltaJsonTcp, deltaMpTcp]) {
    const k = cl.applier.kinds;
    // first whole; a non-object plain and the next whole; the duplicate-key
    // body plain and the next whole; everything else a delta.
    assert.deepEqual(k.slice(0, 10), ['full', 'sd', 'sd', 'sd', 'sd', 'plain', 'full', 'sd', 'plain', 'full'],
      `${cl.name}: which frames were deltas`);
    assert.ok(k.slice(10).every((x) => x === 'sd'), `${cl.name}: coalesced states are deltas: ${k}`);
  }

  step = 'two senders in one tick: one sds with both entries, the same order for everyone';
  // Both senders' states are usually in one tick; either way every member
  // sees the same bodies in the same order.
  const before = plainJson.applier.seen.length;
  for (let k = 0; k < 5; k++) {
    sender.send({ op: 'state', ch, key: 'pos', body: { x: 30 + k, y: 9, t: 22 } });
    sender2.send({ op: 'state', ch, key: 'pos', body: { x: 40 + k, y: 1, ...(k % 2 ? {} : { fx: k }) } });
    for (const cl of members) await receiveUntil(cl, before + 2 * (k + 1), `the two senders' states ${k}`);
    await sleep(45);
  }
  const want2 = plainJson.applier.seen.map((s) => [s.from, asJson(s.body)]);
  for (const cl of members) {
    assert.deepEqual(cl.applier.seen.map((s) => [s.from, asJson(s.body)]), want2, `${cl.name}: bodies and order`);
  }
  for (const cl of [batchMpWs, batchJsonTcp]) {
    assert.ok(cl.applier.sdsEntries > cl.applier.sdsFrames,
      `${cl.name}: some sds held more than one entry (${cl.applier.sdsEntries} in ${cl.applier.sdsFrames})`);
  }

  step = 're-join: the next body is whole';
  deltaMpWs.send({ op: 'leave', ch, rid: 3 });
  await deltaMpWs.expectOp('left', 3);
  deltaMpWs.send({ op: 'join', ch, rid: 4 });
  await deltaMpWs.expectOp('joined', 4);
  await sleep(45);
  sender.send({ op: 'state', ch, key: 'pos', body: { x: 24, y: 9, t: 22 } });
  for (const cl of members) await receive(cl, 'the state after the re-join');
  assert.equal(deltaMpWs.applier.kinds.at(-1), 'full', 'after a re-join');
  assert.equal(deltaMpTcp.applier.kinds.at(-1), 'sd', 'a member that stayed');
  assert.deepEqual(asJson(deltaMpWs.applier.seen.at(-1).body), { x: 24, y: 9, t: 22 });

  step = 'interest areas: a receiver that moved away and back gets the body whole';
  const grid = `dg:${process.pid}-${Date.now()}`;
  roamer.applier = new Applier(roamer.name);
  for (const cl of [sender, roamer]) cl.send({ op: 'join', ch: grid, rid: 5 });
  await Promise.all([sender, roamer].map((c) => c.expectOp('joined', 5)));
  roamer.send({ op: 'state', ch: grid, key: 'me', pos: [5, 5], body: { here: 1 } });
  await sleep(45);
  const move = async (x, label) => {
    sender.send({ op: 'state', ch: grid, key: 'pos', pos: [5, 5], body: { x, hp: 10 } });
    if (label) await receive(roamer, label);
    await sleep(45);
  };
  await move(1, 'first grid state');
  await move(2, 'second grid state');
  roamer.send({ op: 'state', ch: grid, key: 'me', pos: [500, 500], body: { here: 2 } });
  await sleep(45);
  await move(3, null);  // out of range: not delivered
  await move(4, null);
  roamer.send({ op: 'state', ch: grid, key: 'me', pos: [6, 6], body: { here: 3 } });
  await sleep(45);
  await move(5, 'the state after moving back');
  await move(6, 'and the next');
  assert.deepEqual(roamer.applier.kinds, ['full', 'sd', 'full', 'sd'], 'grid frames');
  assert.deepEqual(roamer.applier.seen.map((s) => s.body), [{ x: 1, hp: 10 }, { x: 2, hp: 10 }, { x: 5, hp: 10 }, { x: 6, hp: 10 }]);
  assert.deepEqual(roamer.applier.seen.map((s) => s.pos), [[5, 5], [5, 5], [5, 5], [5, 5]], 'sd carries pos');
  assert.equal(roamer.inbox.filter((o) => o.op === 'state' || o.op === 'sd').length, 0, 'nothing out of range');

  step = 'metrics: bytes by namespace and encoding';
  const text = await metrics();
  for (const enc of ['json', 'msgpack', 'json+delta', 'msgpack+delta']) {
    const m = text.match(new RegExp(`parley_namespace_bytes_out_total\\{namespace="demo/dw",encoding="${enc.replace('+', '\\+')}"\\} (\\d+)`));
    assert.ok(m && Number(m[1]) > 0, `bytes of ${enc} in demo/dw:\n${text.split('\n').filter((l) => l.includes('namespace_')).join('\n')}`);
  }

  console.log('delta test passed');
  process.exit(0);
}

main().catch(fail);
