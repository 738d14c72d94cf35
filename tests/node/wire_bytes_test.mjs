// Byte accounting (/metrics parley_namespace_wire_bytes_out_total): one channel
// in namespace `wb` (state_delta on) with a JSON client over WebSocket, a
// MessagePack one over WebSocket, a JSON one over TCP and a MessagePack one
// over TCP with state deltas. After msgs, states, presence and replies, the
// server's counters by (namespace, encoding) must equal exactly what the
// clients read: fan-out frames (msg, state, sd, presence) under demo/wb,
// every other frame (welcome, joined, ack, pong) under demo/-, framing
// included, each in its connection's encoding.
//
//   node wire_bytes_test.mjs HTTP_PORT TCP_PORT TOKEN x 4
// Exits 0 when everything holds, non-zero naming the first failure.
import assert from 'node:assert/strict';
import { fetchMetrics, makeClients } from './wire_clients.mjs';

const [httpPort, tcpPort, ...tokens] = process.argv.slice(2);
if (tokens.length !== 4) {
  console.error('usage: node wire_bytes_test.mjs HTTP_PORT TCP_PORT TOKEN x 4');
  process.exit(2);
}
setTimeout(() => fail(new Error('gave up after 45000 ms')), 45000).unref();

let step = 'connect';
function fail(err) {
  console.error(`wire bytes test FAILED at step "${step}": ${err.stack ?? err.message}`);
  process.exit(1);
}
const { WsClient, TcpClient } = makeClients({ httpPort, tcpPort, fail: (e) => fail(e) });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const kFanout = new Set(['msg', 'state', 'sd', 'presence']);

const metrics = () => fetchMetrics(httpPort);

function counter(text, ns, enc) {
  const m = text.match(new RegExp(
    `parley_namespace_wire_bytes_out_total\\{namespace="${ns}",encoding="${enc.replace('+', '\\+')}"\\} (\\d+)`));
  return m ? Number(m[1]) : 0;
}

// What the clients read, by namespace and encoding, and the server's counters.
async function tallyOf(clients) {
  const want = {};
  for (const c of clients) {
    const framed = c.frames.reduce((n, f) => n + f.wire, 0);
    assert.equal(framed, c.raw, `${c.name}: frames with framing add up to the bytes read`);
    for (const f of c.frames) {
      const ops = [f.value].flat().map((o) => o.op);
      const fanout = ops.every((op) => kFanout.has(op));
      assert.ok(fanout || !ops.some((op) => kFanout.has(op)), `${c.name}: a frame mixing replies and fan-out: ${ops}`);
      const key = `${fanout ? 'demo/wb' : 'demo/-'} ${c.form}`;
      want[key] = (want[key] ?? 0) + f.wire;
    }
  }
  return { want, text: await metrics() };
}

async function main() {
  const clients = [
    Object.assign(new WsClient('json ws', 'json'), { form: 'json' }),
    Object.assign(new WsClient('msgpack ws', 'msgpack'), { form: 'msgpack' }),
    Object.assign(new TcpClient('json tcp'), { form: 'json' }),
    Object.assign(new TcpClient('msgpack tcp, deltas'), { form: 'msgpack+delta' }),
  ];
  await Promise.all(clients.map((c) => c.open()));

  step = 'hello';
  clients[0].send({ op: 'hello', v: 1, token: tokens[0], rid: 1 });
  clients[1].send({ op: 'hello', v: 1, token: tokens[1], rid: 1 });
  clients[2].send({ op: 'hello', v: 1, token: tokens[2], rid: 1 });
  clients[3].send({ op: 'hello', v: 1, token: tokens[3], rid: 1, enc: 'msgpack', caps: ['state_delta'] });
  await Promise.all(clients.map((c) => c.expectOp('welcome', 1)));

  step = 'join';
  const ch = `wb:${process.pid}-${Date.now()}`;
  for (const c of clients) {
    c.send({ op: 'join', ch, rid: 2 });
    await c.expectOp('joined', 2);  // one at a time: each later join is presence to the others
  }

  step = 'msgs and states';
  const kMsgs = 5;
  const kStates = 6;
  for (let i = 0; i < kMsgs; ++i) {
    clients[i % 4].send({ op: 'pub', ch, id: `m${i}`, rid: 10 + i, body: { text: 'x'.repeat(20 * i), i } });
  }
  for (let i = 0; i < kStates; ++i) {
    // One per tick, so deltas go out; the one over 126 bytes takes a longer WebSocket header.
    clients[2].send({ op: 'state', ch, key: 'pos', body: { x: i, y: 2, name: 'ann', pad: i === 3 ? 'p'.repeat(200) : '' } });
    await sleep(45);
  }
  for (const c of clients) c.send({ op: 'ping', rid: 99 });
  for (const [n, c] of clients.entries()) {
    await c.expectOp('pong', 99);
    for (let i = 0; i < kMsgs; ++i) await c.expect((o) => o.op === 'msg' && o.id === `m${i}`, `msg m${i}`);
    if (n !== 2) {
      for (let i = 0; i < kStates; ++i) await c.expect((o) => o.op === 'state' || o.op === 'sd', `state ${i}`);
    }
  }
  assert.ok(clients[3].frames.some((f) => [f.value].flat().some((o) => o.op === 'sd')), 'the delta member got sd frames');
  step = 'counters equal the bytes read';
  // The server counts a frame when it queues it; on a loaded machine a frame
  // may still be on its way after the last expected one was read. So the
  // counters are read until they equal what the clients have read, for up to
  // 3 s; the last reading is the one asserted.
  const encodings = ['json', 'msgpack', 'msgpack+delta'];
  const deadline = Date.now() + 3000;
  let tally;
  for (;;) {
    await sleep(100);
    tally = await tallyOf(clients);
    const equal = ['demo/wb', 'demo/-'].every((ns) =>
      encodings.every((enc) => counter(tally.text, ns, enc) === (tally.want[`${ns} ${enc}`] ?? 0)));
    if (equal || Date.now() > deadline) break;
  }
  const { want, text } = tally;
  const lines = text.split('\n').filter((l) => l.startsWith('parley_namespace_wire_bytes_out_total')).join('\n');
  for (const ns of ['demo/wb', 'demo/-']) {
    for (const enc of ['json', 'msgpack', 'msgpack+delta']) {
      const w = want[`${ns} ${enc}`] ?? 0;
      assert.ok(w > 0, `the clients read ${ns} ${enc} bytes`);
      assert.equal(counter(text, ns, enc), w, `${ns} ${enc}: counted vs read\n${lines}`);
    }
  }
  assert.equal(counter(text, 'demo/wb', 'json+delta'), 0, `no json+delta member\n${lines}`);

  console.log(`wire bytes test passed:\n${lines}`);
  process.exit(0);
}

main().catch(fail);
