// Gap repair against a scripted server (support/scripted_server.mjs: a
// WebSocket stand-in whose frames the test writes, in the order it chooses), for the orders a real server
// produces only by chance: a history page answered after earlier seqs have
// arrived meanwhile, and a page that starts late and reaches past the first
// held seq. Only what neither the page nor the held messages cover is a gap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ParleyClient } from '../src/index.js';
import { scriptedServer } from './support/scripted_server.mjs';

const CH = 'chat:repair';

function scripted() {
  const net = scriptedServer({ joinedSeq: 3 });
  net.msg = (seq) => ({ op: 'msg', ch: CH, seq, from: 'p', id: `m${seq}`, ts: 1, body: { seq } });
  return net;
}

async function joined(net, opts = {}) {
  const client = new ParleyClient({ url: 'ws://scripted.invalid/v1/ws', token: 't', WebSocket: net.WebSocket, ...opts });
  const ch = client.channel(CH);
  const got = [];
  const gaps = [];
  ch.on('msg', (m) => got.push(m.seq));
  ch.on('gap', (g) => gaps.push([g.from, g.to]));
  await ch.join(); // lastSeq 3
  return { client, got, gaps };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

test('seqs that arrive while a history page is read are not reported as a gap', async () => {
  const net = scripted();
  const { client, got, gaps } = await joined(net);
  net.sock.push(net.msg(10)); // a hole: 4..9
  const h = await net.request();
  assert.deepEqual([h.op, h.after, h.limit], ['history', 3, 6]);
  net.sock.push([net.msg(4), net.msg(5)]); // e.g. a resume after a reconnect
  await settle();
  net.sock.push({ op: 'history', rid: h.rid, ch: CH, msgs: [] }); // history no longer has 4..9
  const h2 = await net.request();
  assert.deepEqual([h2.after, h2.limit], [5, 4], 'the next page asks after what was delivered');
  net.sock.push({ op: 'history', rid: h2.rid, ch: CH, msgs: [] });
  await settle();
  assert.deepEqual(got, [4, 5, 10]);
  assert.deepEqual(gaps, [[6, 9]], 'only what nothing covered is a gap');
  client.close();
});

test('a history page reaching past the first held seq fills the holes after it', async () => {
  const net = scripted();
  const { client, got, gaps } = await joined(net);
  net.sock.push([net.msg(10), net.msg(14)]); // holes: 4..9 and 11..13
  const h = await net.request();
  // History was trimmed: it starts at 8 and the page runs on to 13.
  net.sock.push({ op: 'history', rid: h.rid, ch: CH, msgs: [8, 9, 10, 11, 12, 13].map(net.msg) });
  await settle();
  assert.deepEqual(gaps, [[4, 7]]);
  assert.deepEqual(got, [8, 9, 10, 11, 12, 13, 14]);
  assert.equal(net.requests.length, 0, 'no second page: the first covered the later hole');
  client.close();
});

const page = (net, req, from, to) => {
  const msgs = [];
  for (let s = from; s <= to; s++) msgs.push(net.msg(s));
  net.sock.push({ op: 'history', rid: req.rid, ch: CH, msgs });
};
const seqs = (a, b) => Array.from({ length: b - a + 1 }, (_, k) => a + k);

// The C++ SDK's rule (sdk/cpp channel_core.cc): over the cap the newest held
// is dropped, never the oldest, and read from history once the hole is
// filled, also on a channel that goes quiet; a page is not cut to the cap.
test('a full repair buffer drops the newest and reads it from history later, with no gap', async () => {
  const net = scripted();
  const { client, got, gaps } = await joined(net, { maxRepairBuffer: 5 });
  net.sock.push(net.msg(15)); // a hole: 4..14
  const h = await net.request();
  assert.deepEqual([h.after, h.limit], [3, 11]);
  net.sock.push(seqs(16, 40).map(net.msg)); // 15..19 held, 20..40 dropped
  await settle();
  page(net, h, 4, 14);
  const h2 = await net.request();
  assert.deepEqual(got, seqs(4, 19));
  assert.deepEqual([h2.after, h2.limit], [19, 21], 'the dropped ones are asked for without a later message');
  page(net, h2, 20, 40); // more than the buffer holds: all delivered
  await settle();
  assert.deepEqual(got, seqs(4, 40));
  assert.deepEqual(gaps, []);
  assert.equal(net.requests.length, 0);
  net.sock.push(net.msg(41)); // live again, at once
  await settle();
  assert.equal(got.at(-1), 41);
  client.close();
});

test('of the dropped ones, only what history lost is a gap', async () => {
  const net = scripted();
  const { client, got, gaps } = await joined(net, { maxRepairBuffer: 3 });
  net.sock.push(seqs(6, 13).map(net.msg)); // hole 4..5; 6..8 held, 9..13 dropped
  const h = await net.request();
  page(net, h, 4, 5);
  const h2 = await net.request();
  assert.deepEqual(got, seqs(4, 8));
  assert.equal(h2.after, 8);
  page(net, h2, 11, 13); // history was trimmed to 11
  await settle();
  assert.deepEqual(gaps, [[9, 10]]);
  assert.deepEqual(got, [...seqs(4, 8), 11, 12, 13]);
  client.close();
});

test('a failed repair read is asked again, and a gap only after three in a row', async () => {
  const net = scripted();
  const { client, got, gaps } = await joined(net);
  net.sock.push(net.msg(8)); // a hole: 4..7
  const h = await net.request();
  net.sock.push({ op: 'error', rid: h.rid, code: 'internal', msg: 'history read failed' });
  const h2 = await net.request();
  assert.deepEqual([h2.after, h2.limit], [3, 4], 'asked again');
  assert.deepEqual(gaps, []);
  page(net, h2, 4, 7);
  await settle();
  assert.deepEqual(got, seqs(4, 8));
  net.sock.push(net.msg(12)); // a hole: 9..11, and every read fails
  for (let k = 0; k < 3; k++) {
    const q = await net.request();
    net.sock.push({ op: 'error', rid: q.rid, code: 'internal', msg: 'history read failed' });
  }
  await settle();
  await settle();
  assert.deepEqual(gaps, [[9, 11]]);
  assert.deepEqual(got, [...seqs(4, 8), 12]);
  client.close();
});

test('a page of seqs already delivered is a gap, not a read asked again forever', async () => {
  const net = scripted();
  const { client, got, gaps } = await joined(net);
  net.sock.push([net.msg(4), net.msg(8)]); // a hole: 5..7
  const h = await net.request();
  net.sock.push({ op: 'history', rid: h.rid, ch: CH, msgs: [net.msg(3), net.msg(4)] });
  await settle();
  assert.deepEqual(gaps, [[5, 7]]);
  assert.deepEqual(got, [4, 8]);
  assert.equal(net.requests.length, 0, 'not asked again');
  client.close();
});
