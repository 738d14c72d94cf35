// Gap repair against a scripted server (a WebSocket stand-in whose frames the
// test writes, in the order the test chooses), for the orders a real server
// produces only by chance: a history page answered after earlier seqs have
// arrived meanwhile, and a page that starts late and reaches past the first
// held seq. Only what neither the page nor the held messages cover is a gap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ParleyClient } from '../src/index.js';

const CH = 'chat:repair';

// The stand-in: answers hello and join at once; every other request waits in
// `requests` for the test to answer with reply().
function scripted() {
  const net = { sock: null, requests: [], waiters: [] };
  class ScriptedSocket {
    constructor() {
      this.readyState = 0;
      net.sock = this;
      queueMicrotask(() => {
        this.readyState = 1;
        this.onopen?.({});
      });
    }
    send(text) {
      const f = JSON.parse(text);
      if (f.op === 'hello') return this.push({ op: 'welcome', rid: f.rid, conn: 'c1', user: 'u', tenant: 'demo', heartbeat_ms: 25000 });
      if (f.op === 'join') return this.push({ op: 'joined', rid: f.rid, ch: f.ch, seq: 3, recovered: true });
      net.requests.push(f);
      for (const w of net.waiters.splice(0)) w();
    }
    push(obj) {
      queueMicrotask(() => this.onmessage?.({ data: JSON.stringify(obj) }));
    }
    close() {
      this.readyState = 3;
    }
  }
  net.WebSocket = ScriptedSocket;
  net.msg = (seq) => ({ op: 'msg', ch: CH, seq, from: 'p', id: `m${seq}`, ts: 1, body: { seq } });
  net.request = async (ms = 3000) => {
    const deadline = Date.now() + ms;
    while (!net.requests.length) {
      if (Date.now() > deadline) throw new Error('the client sent no request');
      await new Promise((r) => {
        net.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return net.requests.shift();
  };
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
