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

async function joined(net) {
  const client = new ParleyClient({ url: 'ws://scripted.invalid/v1/ws', token: 't', WebSocket: net.WebSocket });
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
