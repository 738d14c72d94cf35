// An independent client written against PROTOCOL.md with the Node `ws`
// package: hello / join / pub / ack / msg, exactly as the contract shows them,
// plus a tick batch (a JSON array frame). Exits 0 when every frame matches,
// non-zero with a message naming the first mismatch.
//
//   node client_test.mjs PORT TOKEN        (or PARLEY_PORT / PARLEY_TOKEN)
//
// The token is a demo-tenant JWT; the server runs with default namespaces.
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';

const port = process.argv[2] ?? process.env.PARLEY_PORT;
const token = process.argv[3] ?? process.env.PARLEY_TOKEN;
if (!port || !token) {
  console.error('usage: node client_test.mjs PORT TOKEN');
  process.exit(2);
}

const kStepTimeoutMs = 5000;
const kTotalTimeoutMs = 20000;
setTimeout(() => fail(new Error(`gave up after ${kTotalTimeoutMs} ms`)), kTotalTimeoutMs).unref();

let step = 'connect';
function fail(err) {
  console.error(`node client test FAILED at step "${step}": ${err.message}`);
  process.exit(1);
}

// Every server object in arrival order, each marked with whether it came in
// an array frame (a tick batch) or alone.
const inbox = [];
let wake = null;
let closed = null;

const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
ws.on('message', (data, isBinary) => {
  if (isBinary) return fail(new Error('the server sent a binary frame'));
  let value;
  try {
    value = JSON.parse(data.toString('utf8'));
  } catch (e) {
    return fail(new Error(`the server sent a frame that is not JSON: ${data}`));
  }
  const batched = Array.isArray(value);
  for (const obj of batched ? value : [value]) {
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
      return fail(new Error(`a server frame holds a non-object: ${data}`));
    }
    inbox.push({ obj, batched });
  }
  wake?.();
});
ws.on('close', (code, reason) => {
  closed = { code, reason: reason.toString() };
  wake?.();
});
ws.on('error', (e) => fail(e));

// The next object with this op; others before it are kept for later steps.
async function expectOp(op) {
  const deadline = Date.now() + kStepTimeoutMs;
  for (;;) {
    const i = inbox.findIndex((m) => m.obj.op === op);
    if (i >= 0) return inbox.splice(i, 1)[0];
    if (closed) {
      throw new Error(`closed (${closed.code} ${closed.reason}) while waiting for "${op}"; ` +
        `got ${JSON.stringify(inbox.map((m) => m.obj))}`);
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new Error(`no "${op}" within ${kStepTimeoutMs} ms; got ${JSON.stringify(inbox.map((m) => m.obj))}`);
    }
    let timer;
    await new Promise((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, left);
    });
    clearTimeout(timer);
    wake = null;
  }
}

function send(obj) {
  ws.send(JSON.stringify(obj));
}

async function main() {
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`handshake answered ${res.statusCode}`)));
  });

  step = 'hello';
  send({ op: 'hello', v: 1, token, rid: 1 });
  const { obj: welcome } = await expectOp('welcome');
  assert.equal(welcome.rid, 1, 'welcome.rid');
  assert.equal(typeof welcome.conn, 'string', 'welcome.conn is a string');
  assert.ok(welcome.conn.length > 0, 'welcome.conn is not empty');
  assert.equal(typeof welcome.user, 'string', 'welcome.user is a string');
  assert.equal(welcome.tenant, 'demo', 'welcome.tenant');
  assert.equal(welcome.heartbeat_ms, 25000, 'welcome.heartbeat_ms');
  const user = welcome.user;

  step = 'join';
  const ch = `chat:node-${process.pid}-${Date.now()}`;
  send({ op: 'join', ch, rid: 2 });
  const { obj: joined } = await expectOp('joined');
  assert.deepEqual(
    { op: joined.op, rid: joined.rid, ch: joined.ch, seq: joined.seq, recovered: joined.recovered },
    { op: 'joined', rid: 2, ch, seq: 0, recovered: false },
    'joined frame',
  );
  assert.ok(Array.isArray(joined.members) && joined.members.includes(user),
    `joined.members lists the user (the chat namespace has presence): ${JSON.stringify(joined.members)}`);

  step = 'pub';
  const body = { text: 'hi from node', n: 1.5, tags: ['a', 'ü'], nested: { ok: true } };
  send({ op: 'pub', ch, id: 'node-1', body, rid: 'p1' });
  const { obj: ack } = await expectOp('ack');
  assert.deepEqual(ack, { op: 'ack', rid: 'p1', ch, id: 'node-1', seq: 1, dup: false }, 'ack frame');

  step = 'msg';
  const { obj: msg, batched } = await expectOp('msg');
  assert.ok(batched, 'msg arrives in a tick batch (a JSON array frame)');
  assert.equal(msg.ch, ch, 'msg.ch');
  assert.equal(msg.seq, 1, 'msg.seq');
  assert.equal(msg.from, user, 'msg.from');
  assert.equal(msg.id, 'node-1', 'msg.id');
  assert.ok(Number.isInteger(msg.ts) && Math.abs(msg.ts - Date.now()) < 60000, `msg.ts is ms since the epoch: ${msg.ts}`);
  assert.deepEqual(msg.body, body, 'msg.body');

  step = 'duplicate pub';
  send({ op: 'pub', ch, id: 'node-1', body, rid: 'p2' });
  const { obj: dup } = await expectOp('ack');
  assert.deepEqual(dup, { op: 'ack', rid: 'p2', ch, id: 'node-1', seq: 1, dup: true }, 'duplicate ack');

  step = 'tick batch';
  // msgs are delivered in tick batches, in seq order, whether or not both fall in one tick.
  send({ op: 'pub', ch, id: 'node-2', body: 2, rid: 3 });
  send({ op: 'pub', ch, id: 'node-3', body: 3, rid: 4 });
  for (const [rid, seq] of [[3, 2], [4, 3]]) {
    const { obj } = await expectOp('ack');
    assert.deepEqual(obj, { op: 'ack', rid, ch, id: `node-${seq}`, seq, dup: false }, `ack of rid ${rid}`);
  }
  for (const seq of [2, 3]) {
    const { obj, batched: inArray } = await expectOp('msg');
    assert.ok(inArray, `msg ${seq} arrives in a tick batch`);
    assert.equal(obj.seq, seq, 'msgs of a channel arrive in seq order');
    assert.equal(obj.body, seq, 'msg.body');
  }

  step = 'ping';
  send({ op: 'ping', rid: 5 });
  const { obj: pong } = await expectOp('pong');
  // PROTOCOL.md "Time for games": the server's time rides along.
  const { ts, ...rest } = pong;
  assert.deepEqual(rest, { op: 'pong', rid: 5 }, 'pong frame');
  assert.ok(Number.isInteger(ts) && Math.abs(ts - Date.now()) < 60000, `pong ts ${ts}`);

  step = 'close';
  ws.close(1000, 'done');
  await new Promise((resolve) => (closed ? resolve() : ws.once('close', resolve)));
  assert.equal(closed.code, 1000, 'the server echoes the normal close');
  console.log('node client test passed');
}

main().catch(fail);
